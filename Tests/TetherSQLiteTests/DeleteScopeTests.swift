import Foundation
import Testing
import Tether
import TetherSQLite

/// `DeleteScope.relatedMatching`: a filtered list of one parent's children (GET
/// /repos/:full_name/issues?state=open) deletes only what is missing within both the parent and
/// the filter, on both stores (issue 41's small gaps).
@Suite struct DeleteScopeTests {
    static let schema = try! Schema {
        Entity("Repository") {
            Attribute("id", .int64)
            Relationship.toMany("issues", "Issue", inverse: "repository")
        }
        Entity("Issue") {
            Attribute("id", .int64)
            Attribute("state", .string)
            Relationship.toOne("repository", "Repository", inverse: "issues")
        }
    }

    static let seed = Data(#"""
        [{"id": 1, "issues": [{"id": 10, "state": "open"}, {"id": 11, "state": "open"}, {"id": 12, "state": "closed"}]},
         {"id": 2, "issues": [{"id": 20, "state": "open"}]}]
        """#.utf8)

    @Test(arguments: ["memory", "sqlite"])
    func aParentsFilteredListDeletesOnlyWithinTheParentAndTheFilter(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let store: any Store = kind == "memory" ? InMemoryStore() : try SQLiteStore(path: folder.path())
        let client = try Client.Builder(schema: Self.schema).store(store).build()
        try await client.import(Self.seed, as: "Repository")
        let repository = try #require(try await client.object("Repository", identity: .int(1)))

        let open = Data(#"[{"id": 10, "state": "open", "repository": {"id": 1}}]"#.utf8)
        let result = try await client.import(open, as: "Issue", options: ImportOptions(
            deleteMissing: .relatedMatching("issues", of: repository.id, where: .equal("state", .string("open")))))
        #expect(result.deleted.map(\.entity) == ["Issue"])
        let left = try await client.fetch(Query("Issue", sortedBy: [.ascending("id")])).map { $0["id"] }
        #expect(left == [.int(10), .int(12), .int(20)])  // 11 went; the closed one and the other repository's stay
    }

    @Test func aScopeWhoseRelationshipLeadsElsewhereIsRefused() async throws {
        let client = try Client.Builder(schema: Self.schema).build()
        try await client.import(Self.seed, as: "Repository")
        let repository = try #require(try await client.object("Repository", identity: .int(1)))
        await #expect(throws: ImportError.self) {
            try await client.import(Data(#"[{"id": 3}]"#.utf8), as: "Repository", options: ImportOptions(
                deleteMissing: .relatedMatching("issues", of: repository.id, where: .equal("state", .string("open")))))
        }
    }
}
