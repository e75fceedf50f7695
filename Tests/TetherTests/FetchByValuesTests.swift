import Foundation
import Testing
import Tether
import TetherTesting

/// Fetching by plain values (issue 20): a login held in a String, escaped as templates escape,
/// without a placeholder object.
@Suite struct FetchByValuesTests {
    static let schema = usersAndRepositories

    @Test func aLoginInAStringIsOneEscapedSegment() async throws {
        let stub = StubTransport()
        stub.on(.get, "/users/octocat", json: ["id": 1, "login": "octocat"])
        stub.on(.get, "/users/x%2F..%2F..%2Fadmin", status: 404, json: ["message": "Not Found"])
        stub.on(.get, "/users/octocat/repos", json: [["id": 10, "name": "hello"]])
        let client = try Client.Builder(schema: Self.schema).transport(stub).baseURL(URL(string: "https://api.example")!).build()

        let user = try await client.fetchObject("User", at: "/users/:login", values: ["login": .string("octocat")])
        #expect(user["id"] == .int(1))
        #expect(try await client.count(Query("User")) == 1, "no placeholder object")

        let error = await #expect(throws: HTTPError.self) {
            _ = try await client.fetchObject("User", at: "/users/:login", values: ["login": .string("x/../../admin")])
        }
        #expect(error?.status == 404)
        #expect(stub.requests.last?.url.absoluteString == "https://api.example/users/x%2F..%2F..%2Fadmin")

        let repositories = try await client.fetchObjects("Repository", at: "/users/:login/repos", values: ["login": .string("octocat")])
        #expect(repositories.objects.map { $0["name"] } == [.string("hello")])
        #expect(try client.url("/repositories/:id", values: ["id": .int(10)]).absoluteString == "https://api.example/repositories/10")

        let missing = await #expect(throws: RequestError.self) { _ = try await client.fetchObject("User", at: "/users/:login", values: [:]) }
        #expect(missing?.kind == .missingValue)
        #expect(stub.requests.count == 3, "nothing sent for a missing value")
    }
}
