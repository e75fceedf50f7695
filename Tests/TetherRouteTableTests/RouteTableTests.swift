import Foundation
import Testing
import Tether
import TetherRouteTable

// RSAPI's models: a User identified by `id` (JSON `user_id`) with an `avatar_sm` exception,
// Groups, and Messages addressed by group and message id.
let schema = try! Schema {
    Entity("User") {
        Attribute("id", .int64)
        Attribute("name", .string)
        Attribute("avatarSm", .url)
        Relationship.toMany("groups", "Group", inverse: "members")
    }
    Entity("Group") {
        Attribute("id", .int64)
        Attribute("title", .string)
        Relationship.toMany("members", "User", inverse: "groups")
    }
    Entity("Message", identity: "mid") {
        Attribute("mid", .int64)
        Attribute("gid", .int64)
        Attribute("text", .string)
    }
}

let dev = URL(string: "http://localhost:8000")!
let prod = URL(string: "https://api.example.com/v2/")!

let table = RouteTable(
    development: dev, production: prod,
    keys: ["User": RouteTable.EntityKeys(id: "user_id", properties: ["avatarSm": "avatar_sm"])]
) {
    Route("getUser", .get, "/api/users/:id", entity: "User")
    Route("getUserByKey", .get, "/api/users/:user_id", entity: "User")
    Route("users", .get, "/api/users", entity: "User")
    Route("createUser", .post, "/api/users", entity: "User")
    Route("renameUser", .patch, "/api/users/:id", entity: "User")
    Route("deleteUser", .delete, "/api/users/:id", entity: "User")
    Route("message", .get, "/api/groups/:gid/messages/:mid", entity: "Message")
    Route("userStats", .get, "/api/users/:id/stats", entity: "User", kind: .data)
    Route("sync", .get, "/api/sync", kind: .envelope)
}

func makeClient(_ transport: RecordingTransport, environment: RouteTable.Environment? = nil) throws -> Client {
    var builder = Client.Builder(schema: schema).routes(table).transport(transport)
    if let environment { builder = builder.environment(environment) }
    return try builder.build()
}

@Suite struct RouteCallTests {
    let transport = RecordingTransport()

    @Test func rsapiUserWithIdKeyAndException() async throws {
        transport.respond(.get, "/v2/api/users/42", with: .json(#"{"user_id": 42, "name": "Ada", "avatar_sm": "https://img/42.png"}"#))
        let client = try makeClient(transport)
        let result = try await client.call("getUser", parameters: ["id": 42])
        #expect(result.status == 200)
        #expect(result.importResult?.inserted.count == 1)
        let user = try #require(result.objects.first)
        #expect(user["id"] == .int(42))
        #expect(user["name"] == .string("Ada"))
        #expect(user["avatarSm"] == .url(URL(string: "https://img/42.png")!))
        // Same id again: the same object, updated.
        transport.respond(.get, "/v2/api/users/42", with: .json(#"{"user_id": "42", "name": "Ada L."}"#))
        let again = try await client.call("getUserByKey", parameters: ["user_id": 42])
        #expect(again.objects.map(\.id) == [user.id])
        #expect(try await client.count(Query("User")) == 1)
        #expect(transport.requests.map(\.url.absoluteString) == [
            "https://api.example.com/v2/api/users/42", "https://api.example.com/v2/api/users/42",
        ])
        #expect(transport.requests[0].headers["Accept"] == "application/json")
    }

    @Test func remainingParametersGoToTheQueryForGetAndDelete() async throws {
        transport.respond(.get, "/v2/api/users", with: .json(#"[{"user_id": 1}, {"user_id": 2}]"#))
        transport.respond(.delete, "/v2/api/users/1", with: TransportResponse(status: 204))
        let client = try makeClient(transport)
        let result = try await client.call("users", parameters: ["page": 2, "q": "a&b=c d", "tags": ["x", "y"], "skip": nil])
        #expect(result.objects.count == 2)
        #expect(transport.requests[0].url.absoluteString == "https://api.example.com/v2/api/users?page=2&q=a%26b%3Dc%20d&tags=x&tags=y")
        #expect(transport.requests[0].body == nil)

        let deleted = try await client.call("deleteUser", parameters: ["id": 1, "force": true])
        #expect(deleted.json == nil)
        #expect(deleted.objects.isEmpty)
        #expect(transport.requests[1].method == .delete)
        #expect(transport.requests[1].url.absoluteString == "https://api.example.com/v2/api/users/1?force=true")
    }

    @Test func remainingParametersGoToAJSONBodyForPostPutPatch() async throws {
        transport.respond(.post, "/v2/api/users", with: .json(#"{"user_id": 9, "name": "Grace"}"#, status: 201))
        transport.respond(.patch, "/v2/api/users/9", with: .json(#"{"user_id": 9, "name": "Grace H."}"#))
        let client = try makeClient(transport)
        let created = try await client.call("createUser", parameters: ["name": "Grace", "admin": false])
        #expect(created.status == 201)
        #expect(created.objects.first?["name"] == .string("Grace"))
        let body = try JSON(parsing: try #require(transport.requests[0].body))
        #expect(body == ["name": "Grace", "admin": false])
        #expect(transport.requests[0].headers["Content-Type"] == "application/json; charset=utf-8")
        #expect(transport.requests[0].url.query == nil)

        _ = try await client.call("renameUser", parameters: ["id": 9, "name": "Grace H."])
        #expect(try JSON(parsing: try #require(transport.requests[1].body)) == ["name": "Grace H."])
        #expect(try await client.object("User", identity: .int(9))?["name"] == .string("Grace H."))
    }

    @Test func twoVariablesInOnePath() async throws {
        transport.respond(.get, "/v2/api/groups/3/messages/77", with: .json(#"{"mid": 77, "gid": 3, "text": "hi"}"#))
        let client = try makeClient(transport)
        let result = try await client.call("message", parameters: ["gid": 3, "mid": 77])
        #expect(result.objects.first?["text"] == .string("hi"))
    }

    @Test func dataRouteLeavesTheStoreAlone() async throws {
        transport.respond(.get, "/v2/api/users/5/stats", with: .json(#"{"user_id": 5, "posts": 12, "likes": [1, 2]}"#))
        let client = try makeClient(transport)
        let changes = client.store.changes()
        let result = try await client.call("userStats", parameters: ["id": 5])
        #expect(result.json == ["user_id": 5, "posts": 12, "likes": [1, 2]])
        #expect(result.importResult == nil)
        #expect(result.objects.isEmpty)
        #expect(try await client.count(Query("User")) == 0)
        // No transaction was committed: the next change set seen is the one of this import.
        _ = try await client.import(["id": 1] as JSON, as: "Group")
        var iterator = changes.makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.entities == ["Group"])
    }

    @Test func manyEnvelopeImportsEachEntityInOneTransaction() async throws {
        transport.respond(.get, "/v2/api/sync", with: .json(#"""
            {"User": [{"user_id": 1, "name": "Ada", "groups": [10]}, {"user_id": 2, "name": "Bob"}],
             "Group": [{"id": 10, "title": "Admins"}, {"id": 11, "title": "Users", "members": [2]}]}
            """#))
        let client = try makeClient(transport)
        let changes = client.store.changes()
        let result = try await client.call("sync")
        // Schema order: users first, then groups (whose member ids then resolve).
        #expect(result.objects.map(\.entity) == ["User", "User", "Group", "Group"])
        #expect(result.importResult?.inserted.count == 4)
        let bob = try #require(try await client.object("User", identity: .int(2)))
        #expect(try await client.related("groups", of: bob.id).map { $0["title"] } == [.string("Users")])
        var iterator = changes.makeAsyncIterator()
        let change = await iterator.next()
        #expect(change?.inserted.count == 4)   // one change set: one transaction
    }

    @Test func envelopeWithABadEntityWritesNothing() async throws {
        transport.respond(.get, "/v2/api/sync", with: .json(#"{"User": [{"user_id": 1}], "Gruop": [{"id": 1}]}"#))
        let client = try makeClient(transport)
        let error = await #expect(throws: RouteError.self) { _ = try await client.call("sync") }
        #expect(error?.kind == .invalidResponse)
        #expect(error?.parameter == "Gruop")
        #expect(try await client.count(Query("User")) == 0)
    }

    @Test func envelopeFailingHalfwayRollsBack() async throws {
        transport.respond(.get, "/v2/api/sync", with: .json(#"{"User": [{"user_id": 1}], "Group": [{"id": 1, "title": {"en": 5}}]}"#))
        let client = try makeClient(transport)
        await #expect(throws: ImportError.self) { _ = try await client.call("sync", options: ImportOptions(policy: .fail)) }
        #expect(try await client.count(Query("User")) == 0)
        #expect(try await client.count(Query("Group")) == 0)
    }

    @Test func dangerousValuesStayInOneSegment() async throws {
        let client = try makeClient(transport, environment: .development)
        let cases: [(JSON, String)] = [
            ("a/b", "a%2Fb"), ("x?admin=1", "x%3Fadmin%3D1"), ("frag#top", "frag%23top"), ("../../etc/passwd", "..%2F..%2Fetc%2Fpasswd"),
            ("with space", "with%20space"), ("zoë ✓", "zo%C3%AB%20%E2%9C%93"), ("100%", "100%25"), ("a;b&c=d+e", "a%3Bb%26c%3Dd%2Be"),
            (-3, "-3"), (true, "true"),
        ]
        for (value, escaped) in cases {
            _ = try? await client.call("getUser", parameters: ["id": value])
            let url = try #require(transport.requests.last?.url)
            #expect(url.absoluteString == "http://localhost:8000/api/users/" + escaped)
            #expect(url.query == nil && url.fragment == nil)
            #expect(url.pathComponents.count == 4)   // "/", "api", "users", the value
        }
        for bad in [JSON.string(""), ".", "..", ["x"], ["k": "v"]] {
            let error = await #expect(throws: RouteError.self) { _ = try await client.call("getUser", parameters: ["id": bad]) }
            #expect(error?.kind == .invalidParameter)
            #expect(error?.parameter == "id")
        }
        let missing = await #expect(throws: RouteError.self) { _ = try await client.call("message", parameters: ["gid": 1]) }
        #expect(missing?.kind == .missingParameter)
        #expect(missing?.parameter == "mid")
        #expect(transport.requests.count == cases.count)   // nothing sent for a bad call
    }

    @Test func httpErrorsCarryStatusHeadersAndBody() async throws {
        transport.respond(.post, "/v2/api/users", with: .json(#"{"name": ["has already been taken"]}"#, status: 422))
        let client = try makeClient(transport)
        let error = await #expect(throws: HTTPError.self) { _ = try await client.call("createUser", parameters: ["name": "Ada"]) }
        #expect(error?.status == 422)
        #expect(error?.body.messages(for: "name") == ["has already been taken"])
        #expect(try await client.count(Query("User")) == 0)

        let notFound = await #expect(throws: HTTPError.self) { _ = try await client.call("getUser", parameters: ["id": 1]) }
        #expect(notFound?.status == 404)
        #expect(notFound?.body.isJSON == false)   // an HTML page is not JSON
        #expect(notFound?.body.text == "<h1>Not Found</h1>")
        #expect(notFound?.headers["content-type"] == "text/html")
    }

    @Test func routeCallsGoThroughTheRequestHooks() async throws {
        transport.respond(.get, "/v2/api/users/1", with: .json(#"{"user_id": 1, "name": "Ada"}"#))
        let client = try Client.Builder(schema: schema).routes(table).transport(transport)
            .requestHook(AuthorizationHook(scheme: "Bearer", credential: "s3cret"))
            .build()
        _ = try await client.call("getUser", parameters: ["id": 1])
        #expect(transport.requests.last?.headers["Authorization"] == "Bearer s3cret")
        #expect(transport.requests.last?.headers["Accept"] == "application/json")
    }

    @Test func unknownRouteAndMissingTransport() async throws {
        let client = try makeClient(transport)
        let error = await #expect(throws: RouteError.self) { _ = try await client.call("nope") }
        #expect(error?.kind == .unknownRoute)
        let noTransport = try Client.Builder(schema: schema).routes(table).build()
        let missing = await #expect(throws: RouteError.self) { _ = try await noTransport.call("users") }
        #expect(missing?.kind == .noTransport)
    }

    @Test func perEntityTransportIsUsed() async throws {
        let users = RecordingTransport()
        users.respond(.get, "/v2/api/users", with: .json("[]"))
        let client = try Client.Builder(schema: schema).routes(table).transport(transport).transport(users, for: "User").build()
        _ = try await client.call("users")
        #expect(users.requests.count == 1)
        #expect(transport.requests.isEmpty)
    }
}

@Suite struct RouteTableConfigurationTests {
    @Test func baseURLSwitching() throws {
        let transport = RecordingTransport()
        #expect(try makeClient(transport).baseURL == prod)
        #expect(try makeClient(transport, environment: .development).baseURL == dev)
        #expect(try makeClient(transport, environment: .production).baseURL == prod)
        // Order does not matter.
        let before = try Client.Builder(schema: schema).environment(.development).routes(table).build()
        #expect(before.baseURL == dev)
        let staging = RouteTable.Environment("staging")
        let error = #expect(throws: ConfigurationError.self) {
            try Client.Builder(schema: schema).routes(table).environment(staging).build()
        }
        #expect(error?.kind == .invalidURL)
    }

    @Test func developmentRequestsGoToTheDevelopmentServer() async throws {
        let transport = RecordingTransport()
        transport.respond(.get, "/api/users", with: .json("[]"))
        _ = try await makeClient(transport, environment: .development).call("users")
        #expect(transport.requests.first?.url.absoluteString == "http://localhost:8000/api/users")
    }

    private func buildError(_ routes: [Route], keys: [String: RouteTable.EntityKeys] = [:]) -> ConfigurationError? {
        let table = RouteTable(baseURLs: [.production: prod], keys: keys, routes: routes)
        return #expect(throws: ConfigurationError.self) { try Client.Builder(schema: schema).routes(table).build() }
    }

    @Test func variableMustNameAnAttribute() {
        let error = buildError([Route("bad", .get, "/api/users/:login", entity: "User")])
        #expect(error?.kind == .unknownProperty)
        #expect(error?.entity == "User")
        #expect(error?.member == "login")
        // By JSON key (after the table's keys) or by model name, both are fine.
        let ok = RouteTable(baseURLs: [.production: prod], keys: table.keys, routes: [
            Route("a", .get, "/u/:avatar_sm", entity: "User"), Route("b", .get, "/u/:avatarSm", entity: "User"),
            Route("c", .get, "/u/:user_id", entity: "User"),
        ])
        #expect(throws: Never.self) { try Client.Builder(schema: schema).routes(ok).build() }
    }

    @Test func unknownEntity() {
        let error = buildError([Route("bad", .get, "/api/people", entity: "Person")])
        #expect(error?.kind == .unknownEntity)
        #expect(error?.entity == "Person")
        #expect(error?.member == "bad")
    }

    @Test func malformedRoutes() {
        #expect(buildError([Route("q", .get, "/api/users?page=1", entity: "User")])?.kind == .invalidRoute)
        #expect(buildError([Route("colon", .get, "/api/users/:", entity: "User")])?.kind == .invalidRoute)
        #expect(buildError([Route("twice", .get, "/a/:id/b/:id", entity: "User")])?.kind == .invalidRoute)
        #expect(buildError([Route("space", .get, "/api/all users", entity: "User")])?.kind == .invalidRoute)
        #expect(buildError([Route("noEntity", .get, "/api/users")])?.kind == .invalidRoute)
        let duplicate = buildError([Route("x", .get, "/a", entity: "User"), Route("x", .get, "/b", entity: "User")])
        #expect(duplicate?.kind == .invalidRoute)
        #expect(duplicate?.member == "x")
    }

    @Test func keysNamingUnknownThingsFail() {
        let entity = buildError([], keys: ["Person": .init(id: "person_id")])
        #expect(entity?.kind == .unknownEntity)
        let property = buildError([], keys: ["User": .init(properties: ["avatarLg": "avatar_lg"])])
        #expect(property?.kind == .unknownProperty)
        #expect(property?.member == "avatarLg")
    }

    @Test func noBaseURL() {
        let table = RouteTable(routes: [Route("users", .get, "/api/users", entity: "User")])
        let error = #expect(throws: ConfigurationError.self) { try Client.Builder(schema: schema).routes(table).build() }
        #expect(error?.kind == .invalidURL)
        // The builder's own base URL will do.
        #expect(throws: Never.self) { try Client.Builder(schema: schema).routes(table).baseURL(dev).build() }
    }

    @Test func templateVariables() {
        #expect(Route("m", .get, "/api/groups/:gid/messages/:mid.json").variables == ["gid", "mid"])
    }
}

@Suite struct RouteSourceTests {
    @Test func aRouteFeedsARemoteBackedObservation() async throws {
        let transport = RecordingTransport()
        transport.respond(.get, "/v2/api/users", with: .json(#"[{"user_id": 1, "name": "Ada"}, {"user_id": 2, "name": "Bo"}]"#))
        let client = try makeClient(transport)
        try await client.import(Data(#"[{"user_id": 9, "name": "Gone"}]"#.utf8), as: "User")
        var users = client.observe(Query("User", sortedBy: [.ascending("name")]), from: .route("users")).makeAsyncIterator()
        #expect(try await users.next()?.objects.map { $0["name"] } == [.string("Gone")])
        while true {
            let snapshot = try #require(try await users.next())
            guard snapshot.remote?.isLoading == false else { continue }
            #expect(snapshot.remote?.lastError == nil)
            #expect(snapshot.objects.map { $0["name"] } == [.string("Ada"), .string("Bo")], "9 is not listed by the route: deleted")
            break
        }
        #expect(transport.requests.map(\.url.path) == ["/v2/api/users"])
    }
}

@Suite struct RouteResponseShapeTests {
    static let shaped = RouteTable(development: dev, production: prod,
                                   keys: ["User": RouteTable.EntityKeys(id: "user_id")]) {
        Route("wrapped", .get, "/api/wrapped", entity: "User", shape: .keyPath("data.users"))
        Route("undeclared", .get, "/api/undeclared", entity: "User")
        Route("bundle", .get, "/api/bundle", kind: .envelope, envelopeKeys: ["users": "User", "groups": "Group"])
    }

    static func client(_ transport: RecordingTransport) throws -> Client {
        try Client.Builder(schema: schema).routes(shaped).transport(transport).build()
    }

    @Test func aRouteDeclaresWhereItsObjectsAre() async throws {
        let transport = RecordingTransport()
        transport.respond(.get, "/v2/api/wrapped", with: .json(#"{"data": {"users": [{"user_id": 1}, {"user_id": 2}]}}"#))
        transport.respond(.get, "/v2/api/undeclared", with: .json(#"{"users": [{"user_id": 3}]}"#))
        let client = try Self.client(transport)
        #expect(try await client.call("wrapped").objects.count == 2)
        // Not declared, not of the entity: an error naming the keys, nothing imported.
        let error = await #expect(throws: ImportError.self) { _ = try await client.call("undeclared") }
        #expect(error?.message.contains("users") == true)
        #expect(try await client.count(Query("User")) == 2)
    }

    @Test func anEnvelopeMapsItsKeysToEntities() async throws {
        let transport = RecordingTransport()
        transport.respond(.get, "/v2/api/bundle", with: .json(#"{"users": [{"user_id": 1, "name": "Ada"}], "groups": [{"id": 7, "title": "Core"}]}"#))
        let client = try Self.client(transport)
        let result = try await client.call("bundle")
        #expect(result.objects.map(\.entity).sorted() == ["Group", "User"])
        #expect(try await client.count(Query("Group")) == 1)

        transport.respond(.get, "/v2/api/bundle", with: .json(#"{"users": [], "meta": {"page": 1}}"#))
        let error = await #expect(throws: RouteError.self) { _ = try await client.call("bundle") }
        #expect(error?.parameter == "meta")
    }
}

/// Typed calls: a route's imported objects read back as EntityModel structs.
@Suite struct TypedRouteCallTests {
    struct User: EntityModel {
        var id: Int64
        var name: String
        var avatarSm: URL?
        var groups: [Group] = []
    }
    struct Group: EntityModel {
        var id: Int64
        var title: String
        var members: [User] = []
    }

    @Test func routesReturnModels() async throws {
        let transport = RecordingTransport()
        transport.respond(.get, "/api/users/42", with: .json(#"{"user_id": 42, "name": "Ada", "avatar_sm": "https://img/42.png"}"#))
        transport.respond(.get, "/api/sync", with: .json(#"{"User": [{"user_id": 7, "name": "Grace"}], "Group": [{"id": 1, "title": "Engines"}]}"#))
        let typedTable = RouteTable(keys: ["User": RouteTable.EntityKeys(id: "user_id", properties: ["avatarSm": "avatar_sm"])]) {
            Route("getUser", .get, "/api/users/:id", entity: "User")
            Route("userStats", .get, "/api/users/:id/stats", entity: "User", kind: .data)
            Route("sync", .get, "/api/sync", kind: .envelope)
        }
        let client = try Client.Builder(models: [User.self, Group.self]).routes(typedTable).transport(transport)
            .baseURL(URL(string: "https://api.example.com")!).build()

        let users = try await client.call("getUser", as: User.self, parameters: ["id": 42])
        #expect(users.map(\.name) == ["Ada"] && users[0].avatarSm?.absoluteString == "https://img/42.png")
        #expect(try await client.call("sync", as: Group.self).map(\.title) == ["Engines"])
        #expect(try await client.fetch(User.self, sortedBy: [.ascending(\.id)]).map(\.name) == ["Grace", "Ada"])

        let sent = transport.requests.count
        let other = await #expect(throws: RouteError.self) { try await client.call("getUser", as: Group.self, parameters: ["id": 1]) }
        #expect(other?.kind == .entityMismatch)
        let data = await #expect(throws: RouteError.self) { try await client.call("userStats", as: User.self, parameters: ["id": 1]) }
        #expect(data?.kind == .entityMismatch)
        #expect(transport.requests.count == sent)   // nothing was sent
    }
}
