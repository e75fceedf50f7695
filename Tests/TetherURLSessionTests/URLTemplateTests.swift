import Foundation
import Testing
import Tether
import TetherTesting

@Suite struct URLTemplateTests {
    @Test func parsesVariablesAndLiterals() {
        let template = URLTemplate("/repos/:repository.full_name/issues/:number?state=open")
        #expect(template.variables == [JSONKeyPath("repository.full_name"), JSONKeyPath("number")])
        #expect(template.parts.first == .literal("/repos/"))
        #expect(URLTemplate("http://127.0.0.1:8000/api/users/:login").variables == [JSONKeyPath("login")])
        #expect(URLTemplate("/a::b/:id").parts == [.literal("/a:b/"), .variable(JSONKeyPath("id"))])
    }

    @Test(arguments: [
        ("a/b", "a%2Fb"),
        ("a?x=1", "a%3Fx%3D1"),
        ("a#frag", "a%23frag"),
        ("..", "%2E%2E"),
        (".", "%2E"),
        ("...", "..."),
        ("../etc", "..%2Fetc"),
        ("two words", "two%20words"),
        ("zoë-ünicode", "zo%C3%AB-%C3%BCnicode"),
        ("🐙", "%F0%9F%90%99"),
        ("100%", "100%25"),
        ("a&b;c=d", "a%26b%3Bc%3Dd"),
        ("back\\slash", "back%5Cslash"),
        ("plus+tilde~", "plus%2Btilde~"),
    ])
    func escapesEveryDangerousValueAsOneSegment(value: String, escaped: String) throws {
        #expect(URLTemplate.escapeSegment(value) == escaped)
        let url = try URLTemplate("/users/:login/repos").url(baseURL: stubBase, values: [JSONKeyPath("login"): value])
        #expect(url.absoluteString == "https://api.example.com/users/\(escaped)/repos")
        // The value never changes the path's shape nor adds a query or fragment.
        let components = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false))
        let segments = components.percentEncodedPath.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        #expect(segments == ["", "users", escaped, "repos"])
        #expect(components.query == nil)
        #expect(components.fragment == nil)
        #expect(url.standardized.absoluteString == url.absoluteString)
    }

    @Test func evaluatesAgainstAStoredObjectThroughTheNaming() async throws {
        let stub = StubTransport()
        let client = try makeClient(stub)
        let issue = try await seed(client, "Issue", [
            "id": 7, "number": 3, "repository": ["id": 1, "full_name": "octocat/hello world", "owner": ["id": 1, "login": "octo/cat"]],
        ])[0]
        #expect(try await client.url("/repos/:repository.full_name/issues/:number", for: issue.id).absoluteString
            == "https://api.example.com/repos/octocat%2Fhello%20world/issues/3")
        // two relationships deep, and a foreign key
        #expect(try await client.url("/users/:repository.owner.login/x/:repository_id", for: issue.id).absoluteString
            == "https://api.example.com/users/octo%2Fcat/x/1")
        #expect(stub.requests.isEmpty)
    }

    @Test func aMissingValueIsAnErrorBeforeAnyRequest() async throws {
        let stub = StubTransport()
        stub.on(nil, nil, json: [:])
        let client = try makeClient(stub)
        let user = try await seed(client, "User", ["id": 1])[0]  // no login
        let issue = try await seed(client, "Issue", ["id": 2])[0]  // no repository
        let empty = try await seed(client, "User", ["id": 3, "login": ""])[0]

        for (template, id, member) in [
            ("/users/:login", user.id, "login"), ("/repos/:repository.full_name/issues", issue.id, "repository.full_name"),
            ("/users/:login", empty.id, "login"),
        ] as [(URLTemplate, ObjectID, String)] {
            let error = await #expect(throws: RequestError.self) {
                _ = try await client.fetchObject("User", from: template, for: id)
            }
            #expect(error?.kind == .missingValue)
            #expect(error?.member == member)
        }
        await #expect(throws: RequestError.self) { _ = try await client.fetchObjects("Repository", from: "/users/:login/repos") }
        #expect(stub.requests.isEmpty)
    }

    @Test func unknownVariablesAreRejectedWhenTheClientIsBuilt() throws {
        let stub = StubTransport()
        #expect(throws: ConfigurationError.self) {
            _ = try makeBuilder(transport: stub).resource("/repos/:repository.nope/issues", for: "Issue").build()
        }
        #expect(throws: ConfigurationError.self) {
            _ = try makeBuilder(transport: stub).relationshipResource("/users/:login/repos", for: "nothing", of: "User").build()
        }
        // to-many relationships cannot be followed
        #expect(throws: ConfigurationError.self) {
            _ = try makeBuilder(transport: stub).resource("/x/:repositories.name", for: "User").build()
        }
        _ = try makeBuilder(transport: stub)
            .resource("/repos/:repository.full_name/issues", item: "/repos/:repository.full_name/issues/:number", for: "Issue")
            .relationshipResource("/users/:login/repos", for: "repositories", of: "User")
            .build()
    }
}
