import Foundation
import Testing
import Tether
import TetherRouteTable

// The example of Docs/Strategy-RouteTable.md, compiled and run against the recording transport.
func routeTableDocExample(transport: some Transport, development: Bool) async throws -> (Client, JSON?) {
    let schema = try Schema {
        Entity("User") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Attribute("avatarSm", .url)
        }
        Entity("Group") {
            Attribute("id", .int64)
            Attribute("title", .string)
        }
    }

    let api = RouteTable(
        development: URL(string: "http://localhost:8000")!,
        production: URL(string: "https://api.example.com")!,
        keys: ["User": RouteTable.EntityKeys(id: "user_id", properties: ["avatarSm": "avatar_sm"])]
    ) {
        Route("getUser", .get, "/api/users/:id", entity: "User")
        Route("searchUsers", .get, "/api/users", entity: "User")
        Route("createUser", .post, "/api/users", entity: "User")
        Route("userStats", .get, "/api/users/:user_id/stats", entity: "User", kind: .data)
        Route("sync", .get, "/api/sync", kind: .envelope)
    }

    let client = try Client.Builder(schema: schema)
        .routes(api)
        .environment(development ? .development : .production)
        .transport(transport)
        .build()

    // GET /api/users/42 -> imports {"user_id": 42, "avatar_sm": ...} as User 42
    let user = try await client.call("getUser", parameters: ["id": 42])
    _ = user.objects.first?["avatarSm"]

    // GET /api/users?name=Ada%20L.&page=2
    _ = try await client.call("searchUsers", parameters: ["name": "Ada L.", "page": 2])

    // POST /api/users with the body {"name":"Grace"}
    _ = try await client.call("createUser", parameters: ["name": "Grace"])

    // DATA: the JSON comes back, the store is untouched
    let stats = try await client.call("userStats", parameters: ["user_id": 42]).json

    // MANY: {"User": [...], "Group": [...]} in one transaction
    _ = try await client.call("sync")

    do {
        _ = try await client.call("getUser", parameters: ["id": 404])
    } catch let error as HTTPError {
        _ = (error.status, error.headers, error.body.fieldErrors)
    }
    return (client, stats)
}

@Test func routeTableDocExampleRuns() async throws {
    let transport = RecordingTransport([
        "GET /api/users/42": .json(#"{"user_id": 42, "name": "Ada", "avatar_sm": "https://img/a.png"}"#),
        "GET /api/users": .json(#"[{"user_id": 42, "name": "Ada L."}]"#),
        "POST /api/users": .json(#"{"user_id": 43, "name": "Grace"}"#, status: 201),
        "GET /api/users/42/stats": .json(#"{"posts": 3}"#),
        "GET /api/sync": .json(#"{"User": [{"user_id": 44}], "Group": [{"id": 1, "title": "Admins"}]}"#),
    ])
    let (client, stats) = try await routeTableDocExample(transport: transport, development: true)
    #expect(stats == ["posts": 3])
    #expect(try await client.count(Query("User")) == 3)
    #expect(try await client.count(Query("Group")) == 1)
    #expect(transport.requests.map { "\($0.method) \($0.url.absoluteString)" } == [
        "GET http://localhost:8000/api/users/42",
        "GET http://localhost:8000/api/users?name=Ada%20L.&page=2",
        "POST http://localhost:8000/api/users",
        "GET http://localhost:8000/api/users/42/stats",
        "GET http://localhost:8000/api/sync",
        "GET http://localhost:8000/api/users/404",
    ])
}
