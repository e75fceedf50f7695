import Foundation
import Testing
import Tether
import TetherSQLite
import TetherTesting

/// Issue 41's per-attribute date formats and composite identities in foreign keys and
/// relationship removal, on both stores (the SQLite store reopened, so what is read back is what
/// the file holds; pending references to a composite identity are kept in the file).
@Suite struct AttributeGapsStoreTests {
    static let stores = ["memory", "sqlite"]

    static let schema = try! Schema {
        Entity("Person") {
            Attribute("id", .int64)
            Attribute("birthday", .date)
            Attribute("created", .date)
            Attribute("holidays", .array(.date))
        }
        Entity("Repository", identity: "owner", "name") {
            Attribute("owner", .string)
            Attribute("name", .string)
            Relationship.toMany("issues", "Issue", inverse: "repository")
        }
        Entity("Issue") {
            Attribute("id", .int64)
            Relationship.toOne("repository", "Repository", inverse: "issues")
        }
        Entity("Team") {
            Attribute("id", .int64)
            Relationship.toMany("repositories", "Repository")
        }
    }

    static func builder(_ stub: StubTransport) -> Client.Builder {
        Client.Builder(schema: schema)
            .keyMapping(KeyOverrides(
                [:], foreignKeys: ["Issue": ["repository": "repository_id"], "Team": ["repositories": "repository_ids"]],
                dateFormats: ["Person": [
                    "birthday": DateDecoding([.format("yyyy-MM-dd")]), "created": DateDecoding([.secondsSince1970]),
                    "holidays": DateDecoding([.format("yyyy-MM-dd")]),
                ]]))
            .relationshipResource("/teams/:id/repos", for: "repositories", of: "Team")
            .transport(stub).baseURL(URL(string: "https://api.example")!)
    }

    /// A client over `store`; for SQLite, a new client over the same file each time.
    static func client(_ store: String, _ directory: TemporaryDirectory, _ stub: StubTransport = StubTransport()) throws -> Client {
        let builder = builder(stub)
        return store == "sqlite" ? try builder.store(try SQLiteStore(path: directory.path())).build() : try builder.build()
    }

    private static func day(_ text: String) -> Date { ISO8601DateFormatter().date(from: text + "T00:00:00Z")! }

    @Test(arguments: stores) func datesInTheirOwnFormatsAreStoredAndWrittenBack(_ store: String) async throws {
        let directory = try TemporaryDirectory()
        var client = try Self.client(store, directory)
        let result = try await client.import(Data(#"""
            [{"id": 1, "birthday": "1990-05-17", "created": 1700000000, "holidays": ["2024-12-24", "2024-12-31"]},
             {"id": 2, "birthday": "1990-05-17T00:00:00Z", "created": 1700000000}]
            """#.utf8), as: "Person")
        #expect(result.diagnostics.map(\.path.description) == ["$[1].birthday"])
        if store == "sqlite" { client = try Self.client(store, directory) }
        let person = try #require(try await client.object("Person", identity: .int(1)))
        #expect(person["birthday"] == .date(Self.day("1990-05-17")))
        #expect(person["holidays"] == .array([.date(Self.day("2024-12-24")), .date(Self.day("2024-12-31"))]))
        #expect(try await client.object("Person", identity: .int(2))?["birthday"] == nil)
        let body = try await client.export(person.id)
        #expect(body["birthday"] == .string("1990-05-17"))
        #expect(body["created"] == .int(1_700_000_000))
        #expect(body["holidays"] == .array([.string("2024-12-24"), .string("2024-12-31")]))
        // An unchanged re-import changes nothing.
        let again = try await client.import(Data(#"[{"id": 1, "birthday": "1990-05-17", "created": 1700000000}]"#.utf8), as: "Person")
        #expect(again.updated.isEmpty)
    }

    @Test(arguments: stores) func compositeForeignKeysLinkWaitAndAreRemoved(_ store: String) async throws {
        let directory = try TemporaryDirectory()
        let stub = StubTransport()
        stub.on(.delete, "/teams/7/repos/octocat/hello", status: 204, body: Data())
        var client = try Self.client(store, directory, stub)
        try await client.import(Data(#"""
            [{"id": 1, "repository_id": {"owner": "octocat", "name": "hello"}}]
            """#.utf8), as: "Issue")
        try await client.import(Data(#"""
            [{"id": 7, "repository_ids": [{"owner": "octocat", "name": "hello"}, {"owner": "octocat", "name": "world"}]}]
            """#.utf8), as: "Team")
        // The repositories arrive later (after a reopen, for SQLite): the waiting references link them.
        if store == "sqlite" { client = try Self.client(store, directory, stub) }
        try await client.import(Data(#"[{"owner": "octocat", "name": "hello"}, {"owner": "octocat", "name": "world"}]"#.utf8), as: "Repository")
        let hello = try #require(try await client.object("Repository", identity: .string("octocat"), .string("hello")))
        let world = try #require(try await client.object("Repository", identity: .string("octocat"), .string("world")))
        let issue = try #require(try await client.object("Issue", identity: .int(1)))
        let team = try #require(try await client.object("Team", identity: .int(7)))
        #expect(try await client.related("repository", of: issue.id).map(\.id) == [hello.id])
        #expect(Set(try await client.related("repositories", of: team.id).map(\.id)) == [hello.id, world.id])
        #expect(try await client.export(issue.id)["repository_id"] == .object(["owner": .string("octocat"), "name": .string("hello")]))

        #expect(try await client.relationship("repositories", of: team.id).remove(hello.id) == 204)
        #expect(stub.requests.last?.url.absoluteString == "https://api.example/teams/7/repos/octocat/hello")
        #expect(try await client.related("repositories", of: team.id).map(\.id) == [world.id])
    }
}
