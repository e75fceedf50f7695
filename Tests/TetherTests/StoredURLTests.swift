import Foundation
import Testing
import Tether
import TetherTesting

/// A URL template that starts with a variable whose value is a whole URL (a stored `url` or
/// `links.self`) uses that URL as it is, on the client's own origin or a page host only.
@Suite struct StoredURLTests {
    static let schema = try! Schema {
        Entity("Repository", identity: "id") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Attribute("url", .string)
            Relationship.toMany("issues", "Issue", inverse: "repository")
        }
        Entity("Issue", identity: "id") {
            Attribute("id", .int64)
            Attribute("title", .string)
            Relationship.toOne("repository", "Repository", inverse: "issues")
        }
    }

    static func client(_ stub: StubTransport, pageHosts: Set<String> = []) throws -> Client {
        try Client.Builder(schema: schema).transport(stub).baseURL(URL(string: "https://api.example/v3")!).pageHosts(pageHosts).build()
    }

    @Test func aStoredURLIsUsedAsItIsAndTheRestOfTheTemplateAppended() async throws {
        let stub = StubTransport()
        stub.on(.get, "/v3/repos/octo/hello%20world", json: ["id": 1, "name": "hello world (renamed)", "url": "https://api.example/v3/repos/octo/hello%20world"])
        stub.on(.get, "/v3/repos/octo/hello%20world/issues", json: [["id": 7, "title": "Bug"]])
        let client = try Self.client(stub)
        let repository = try await client.import(
            JSON(parsing: #"{"id": 1, "name": "hello world", "url": "https://api.example/v3/repos/octo/hello%20world"}"#), as: "Repository"
        ).objects[0]

        let refreshed = try await client.fetchObject("Repository", from: ":url", for: repository)
        #expect(refreshed.values["name"] == .string("hello world (renamed)"))
        #expect(stub.requests.last?.url.absoluteString == "https://api.example/v3/repos/octo/hello%20world")

        let issue = try await client.import(JSON(parsing: #"{"id": 7, "repository": {"id": 1}}"#), as: "Issue").objects[0]
        let issues = try await client.fetchObjects("Issue", from: ":repository.url/issues", for: issue)
        #expect(issues.objects.count == 1)
        #expect(stub.requests.last?.url.absoluteString == "https://api.example/v3/repos/octo/hello%20world/issues")
    }

    @Test func aStoredURLOnAnotherOriginIsRefusedAndNothingIsSent() async throws {
        let stub = StubTransport()
        stub.on(.get, nil, json: ["id": 1])
        let client = try Self.client(stub)
        for url in ["https://evil.example/v3/repos/1", "http://api.example/v3/repos/1", "https://api.example:8443/v3/repos/1"] {
            let repository = try await client.import(JSON.object(["id": .int(1), "url": .string(url)]), as: "Repository").objects[0]
            let error = await #expect(throws: RequestError.self) { try await client.fetchObject("Repository", from: ":url", for: repository) }
            #expect(error?.kind == .untrustedLink, "\(url)")
        }
        #expect(stub.requests.isEmpty)

        // A host the app names as a page host is followed (same scheme).
        let trusting = try Self.client(stub, pageHosts: ["evil.example"])
        let repository = try await trusting.import(JSON.object(["id": .int(1), "url": .string("https://evil.example/v3/repos/1")]), as: "Repository").objects[0]
        _ = try await trusting.fetchObject("Repository", from: ":url", for: repository)
        #expect(stub.requests.count == 1)
    }

    @Test func aValueThatIsNotAWholeURLIsStillOneEscapedSegment() throws {
        let template = URLTemplate(":name/issues")
        let url = try template.url(baseURL: URL(string: "https://api.example")!, values: ["name": "a/b"])
        #expect(url.absoluteString == "https://api.example/a%2Fb/issues")
        // Only the template's first variable may be a stored URL.
        let later = try URLTemplate("/go/:url").url(baseURL: URL(string: "https://api.example")!, values: ["url": "https://x.example/"])
        #expect(later.absoluteString == "https://api.example/go/https%3A%2F%2Fx.example%2F")
    }
}
