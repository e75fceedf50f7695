import Foundation
import Testing
import Tether
import TetherTesting

/// The seed's own GitHub template, `/repos/:repository.full_name/issues`, as written, against
/// recorded GitHub traffic (octokit/fixtures' paginate-issues, replayed from its nock recording).
@Suite struct GitHubTemplateTests {
    static let schema = try! Schema {
        Entity("Repository", identity: "identifier") {
            Attribute("identifier", .int64)
            Attribute("fullName", .string)
            Relationship.toMany("issues", "Issue", inverse: "repository")
        }
        Entity("Issue", identity: "number") {
            Attribute("number", .int64)
            Attribute("title", .string)
            Attribute("state", .string)
            Relationship.toOne("repository", "Repository", inverse: "issues")
        }
    }

    static func client() throws -> (Client, ReplayTransport) {
        let recording = Bundle.module.resourceURL!.appendingPathComponent("Fixtures/octokit/paginate-issues.json")
        let replay = try ReplayTransport(nockRecording: recording)
        let client = try Client.Builder(schema: schema)
            .keyMapping(KeyOverrides(["Repository": ["identifier": "id", "fullName": "full_name"]]))
            .transport(replay)
            .baseURL(URL(string: "https://api.github.com")!)
            .pathAttribute("fullName", of: "Repository")   // `octokit-fixture-org/paginate-issues` is two segments
            .resource("/repos/:repository.full_name/issues", for: "Issue")
            .build()
        return (client, replay)
    }

    @Test func theSeedTemplateWorksAsWritten() async throws {
        let (client, replay) = try Self.client()
        try await client.import(Data(#"[{"id": 1000, "full_name": "octokit-fixture-org/paginate-issues"}]"#.utf8), as: "Repository")
        let repository = try #require(try await client.object("Repository", identity: .int(1000)))
        let issue = try await client.insertLocally("Issue", values: ["title": .string("new")], related: ["repository": [repository.id]])
        #expect(try await client.url("/repos/:repository.full_name/issues", for: issue.id).absoluteString
                == "https://api.github.com/repos/octokit-fixture-org/paginate-issues/issues")
        try await client.deleteLocally(issue.id)

        // Every page, by the Link headers of the recording; the relationship set to all of them.
        let fetched = try await client.fetchRelationship("issues", of: repository.id, from: "/repos/:full_name/issues?per_page=3")
        #expect(fetched.pages == 5)
        #expect(fetched.objects.count == 13)
        #expect(try await client.related("issues", of: repository.id).count == 13)
        #expect(replay.unused.isEmpty)
    }

    @Test func aPathValueCannotClimbOut() async throws {
        let (client, _) = try Self.client()
        for name in ["../../admin", "org//repo", "org/./repo", "org/"] {
            try await client.import(Data(#"[{"id": 1, "full_name": "\#(name)"}]"#.utf8), as: "Repository")
            let repository = try #require(try await client.object("Repository", identity: .int(1)))
            let error = await #expect(throws: RequestError.self) { _ = try await client.url("/repos/:full_name/issues", for: repository.id) }
            #expect(error?.kind == .missingValue, "\(name)")
        }
        // Each segment is still escaped; other attributes stay one segment.
        try await client.import(Data(#"[{"id": 1, "full_name": "a b/c?d"}]"#.utf8), as: "Repository")
        let repository = try #require(try await client.object("Repository", identity: .int(1)))
        #expect(try await client.url("/repos/:full_name", for: repository.id).absoluteString == "https://api.github.com/repos/a%20b/c%3Fd")
        #expect(try await client.url("/repositories/:id", for: repository.id).absoluteString == "https://api.github.com/repositories/1")

        #expect(throws: ConfigurationError.self) {
            _ = try Client.Builder(schema: Self.schema).pathAttribute("nope", of: "Repository").build()
        }
    }
}
