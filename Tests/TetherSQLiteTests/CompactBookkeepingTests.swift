import Foundation
import Testing
import Tether
import TetherSQLite

/// SQLite numbers each entity's rows on its own, so a big import's change set and result lists are
/// a handful of runs (``ObjectIDSet``, ``ObjectIDList``) whatever the number of objects.
@Suite struct CompactBookkeepingTests {
    static let schema = try! Schema {
        Entity("Repository", identity: "id") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Relationship.toOne("owner", "User", inverse: "repositories")
        }
        Entity("User", identity: "id") {
            Attribute("id", .int64)
            Relationship.toMany("repositories", "Repository", inverse: "owner")
        }
    }

    @Test func aStreamedImportKeepsOneRunPerEntity() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path())
        let client = try Client.Builder(schema: Self.schema).store(store).importOptions(ImportOptions(batchSize: 100)).build()
        let changes = store.changes()
        // 1,000 repositories of 10 owners, each owner first seen at repository 100 * k.
        let json = JSON.array((0..<1_000).map { i in
            ["id": .int(Int64(i)), "name": .string("r\(i)"), "owner": ["id": .int(Int64(i / 100))]]
        })
        let file = directory.url.appendingPathComponent("repositories.json")
        try json.serialized().write(to: file)
        let result = try await client.import(contentsOf: file, as: "Repository")
        #expect(result.objects.count == 1_000)
        #expect(result.objects.runCount == 1)
        #expect(result.inserted.count == 1_010)
        #expect(result.inserted.runCount == 21)  // Repository#1, User#1, Repository#2...100, User#2, ...
        var iterator = changes.makeAsyncIterator()
        let inserted = try #require(await iterator.next())
        #expect(inserted.inserted.count == 1_010)
        #expect(inserted.inserted.runCount == 2)
        #expect(inserted.inserted.rowIDRanges(of: "Repository").count == 1)
        #expect(inserted.inserted.rowIDRanges(of: "User").count == 1)
        #expect(Set(inserted.inserted) == Set(result.inserted))

        // Every repository renamed: all updated (one run each), the owners unchanged.
        let renamed = JSON.array((0..<1_000).map { i in
            ["id": .int(Int64(i)), "name": .string("renamed \(i)"), "owner": ["id": .int(Int64(i / 100))]]
        })
        try renamed.serialized().write(to: file)
        let again = try await client.import(contentsOf: file, as: "Repository")
        #expect(again.objects == result.objects)
        #expect(again.updated == result.objects)
        #expect(again.unchanged.count == 10 && again.unchanged.allSatisfy { $0.entity == "User" })
        let updated = try #require(await iterator.next())
        #expect(updated.updated == ObjectIDSet(result.objects))
        #expect(updated.updated.runCount == 1)
        #expect(updated.inserted.isEmpty && updated.deleted.isEmpty)
    }
}
