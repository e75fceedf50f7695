import Foundation
import Synchronization
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

    // MARK: The seed's GitHub client: list, create, get, save, delete on recorded traffic

    static let crudSchema = try! Schema {
        Entity("Repository", identity: "identifier") {
            Attribute("identifier", .int64)
            Attribute("fullName", .string)
            Relationship.toMany("issues", "Issue", inverse: "repository")
            Relationship.toMany("labels", "Label", inverse: "repository")
        }
        Entity("Issue", identity: "identifier") {
            Attribute("identifier", .int64)
            Attribute("number", .int64)
            Attribute("title", .string)
            Attribute("state", .string)
            Relationship.toOne("repository", "Repository", inverse: "issues")
            Relationship.toMany("labels", "Label", inverse: "issues")
        }
        Entity("Label", identity: "identifier") {
            Attribute("identifier", .int64)
            Attribute("name", .string)
            Attribute("color", .string)
            Relationship.toOne("repository", "Repository", inverse: "labels")
            Relationship.toMany("issues", "Issue", inverse: "labels")
        }
    }

    /// Records the requests it passes on.
    final class Spy: Transport {
        let next: any Transport
        let sent = Mutex<[TransportRequest]>([])
        init(_ next: any Transport) { self.next = next }
        func send(_ request: TransportRequest) async throws -> TransportResponse {
            sent.withLock { $0.append(request) }
            return try await next.send(request)
        }
    }

    @Test func theSeedsGitHubClientListsCreatesGetsSavesAndDeletes() async throws {
        let fixtures = Bundle.module.resourceURL!.appendingPathComponent("Fixtures/octokit")
        let replay = ReplayTransport(exchanges:
            try ReplayTransport(nockRecording: fixtures.appendingPathComponent("labels.json")).unused
                + ReplayTransport(nockRecording: fixtures.appendingPathComponent("add-labels-to-issue.json")).unused)
        let spy = Spy(replay)
        let client = try Client.Builder(schema: Self.crudSchema)
            .keyMapping(KeyOverrides([
                "Repository": ["identifier": "id", "fullName": "full_name"],
                "Issue": ["identifier": "id"], "Label": ["identifier": "id"],
            ]))
            .transport(spy)
            .baseURL(URL(string: "https://api.github.com")!)
            .pathAttribute("fullName", of: "Repository")
            // The seed's templates, as written; issues by number, labels by name.
            .resource("/repos/:repository.full_name/issues", item: "/repos/:repository.full_name/issues/:number", for: "Issue")
            .resource("/repos/:repository.full_name/labels", item: "/repos/:repository.full_name/labels/:name", for: "Label")
            .relationshipResource("/repos/:full_name/labels", for: "labels", of: "Repository")
            // GitHub takes the repository from the URL, not from the body.
            .readOnly(["repository", "labels"], of: "Issue")
            .readOnly(["repository"], of: "Label")
            .build()
        try await client.import(Data(#"""
            [{"id": 1000, "full_name": "octokit-fixture-org/labels"}, {"id": 1001, "full_name": "octokit-fixture-org/add-labels-to-issue"}]
            """#.utf8), as: "Repository")
        let labels = try #require(try await client.object("Repository", identity: .int(1000)))

        // List.
        let listed = try await client.relationship("labels", of: labels.id).list()
        #expect(!listed.objects.isEmpty)

        // Create: POST to the collection of the repository the label belongs to.
        let created = try await client.create("Label", values: ["name": .string("test-label"), "color": .string("663399")],
                                              related: ["repository": [labels.id]])
        #expect(created["identifier"] != nil)
        #expect(try JSON(parsing: try #require(spy.sent.withLock { $0.last?.body })) == .object(["name": "test-label", "color": "663399"]))

        // Get it again, by name, with the ETag of the answer.
        let got = try await client.refresh(created.id)
        #expect(got["name"] == .string("test-label"))
        #expect(spy.sent.withLock { $0.last?.headers["If-None-Match"] } != nil)

        // Save: only the changed color, at the URL of its name.
        try await client.updateLocally(created.id, setting: ["color": .string("BADA55")])
        let saved = try await client.save(created.id)
        let patch = try #require(spy.sent.withLock { $0.last })
        #expect(patch.method == .patch)
        #expect(patch.url.path == "/repos/octokit-fixture-org/labels/labels/test-label")
        #expect(try JSON(parsing: try #require(patch.body)) == .object(["color": "BADA55"]))
        #expect(saved["name"] == .string("test-label-updated"))   // renamed on the server (the recording)

        // Delete: at its new name; gone locally too.
        #expect(try await client.delete(created.id) == 204)
        #expect(try await client.object(created.id) == nil)

        // An issue created in its repository's collection, as the seed's template says.
        let repository = try #require(try await client.object("Repository", identity: .int(1001)))
        let issue = try await client.create("Issue", values: ["title": .string("Issue without a label")], related: ["repository": [repository.id]])
        #expect(issue["number"] == .int(1))
        #expect(try JSON(parsing: try #require(spy.sent.withLock { $0.last?.body })) == .object(["title": "Issue without a label"]))
        #expect(try await client.related("repository", of: issue.id).map(\.id) == [repository.id])

        // A call Tether has no verb for: POST the label names, import the answer, link it.
        let url = try await client.url("/repos/:repository.full_name/issues/:number/labels", for: issue.id)
        let answer = try await client.send(.post, url, body: ["labels": ["Foo", "bAr", "baZ"]], entity: "Label")
        let added = try await client.import(try #require(try Client.jsonBody(of: answer)), as: "Label")
        try await client.updateLocally(issue.id, setting: [:], relating: ["labels": Array(added.objects)])
        #expect(try await client.related("labels", of: issue.id).count == 3)
        #expect(replay.unused.isEmpty)
    }
}
