import Foundation
import Testing
import Tether
import TetherSQLite

/// The SQLite side of issue 18: closing leaves one self-contained file, a huge string is a clean
/// error, and no import stores a row without its identity, in either store.
@Suite struct SQLiteHardeningTests {
    static let schema = try! Schema {
        Entity("Repository") {
            Attribute("id", .int64)
            Attribute("name", .string)
        }
        Entity("Note") {
            Attribute("text", .string)
        }
    }

    @Test func closingCheckpointsIntoTheFileAlone() async throws {
        let folder = try TemporaryDirectory()
        let store = try SQLiteStore(path: folder.path())
        let client = try Client.Builder(schema: Self.schema).store(store).build()
        let rows = (0..<2000).map { i in JSON.object(["id": .int(Int64(i)), "name": .string("r\(i)")]) }
        _ = try await client.import(.array(rows), as: "Repository")
        _ = try await client.fetch(Query("Repository", limit: 1))  // the reader has the file open too
        store.close()
        #expect(!FileManager.default.fileExists(atPath: folder.path() + "-wal"), "the log is gone after close()")
        // A copy of the .sqlite file alone holds everything.
        let copy = folder.path("copy.sqlite")
        try FileManager.default.copyItem(atPath: folder.path(), toPath: copy)
        let reopened = try Client.Builder(schema: Self.schema).store(try SQLiteStore(path: copy)).build()
        #expect(try await reopened.count(Query("Repository")) == 2000)
    }

    @Test func aStoreThatGoesAwayLeavesOneFileToo() async throws {
        let folder = try TemporaryDirectory()
        do {
            let client = try Client.Builder(schema: Self.schema).store(try SQLiteStore(path: folder.path())).build()
            _ = try await client.import([["id": 1, "name": "a"]], as: "Repository")
        }
        let copy = folder.path("copy.sqlite")
        try FileManager.default.copyItem(atPath: folder.path(), toPath: copy)
        let reopened = try Client.Builder(schema: Self.schema).store(try SQLiteStore(path: copy)).build()
        #expect(try await reopened.count(Query("Repository")) == 1)
    }

    @Test func aStringOf2GiBIsAStoreErrorNotATrap() async throws {
        let folder = try TemporaryDirectory()
        let store = try SQLiteStore(path: folder.path())
        let client = try Client.Builder(schema: Self.schema).store(store).build()
        let huge = String(unsafeUninitializedCapacity: 1 << 31) { buffer in
            _ = memset(buffer.baseAddress!, Int32(UInt8(ascii: "a")), buffer.count)
            return buffer.count
        }
        let error = await #expect(throws: StoreError.self) {
            _ = try await client.insertLocally("Note", values: ["text": .string(huge)])
        }
        #expect(error?.kind == .storage)
        // The store still works, and holds nothing of the failed write.
        _ = try await client.insertLocally("Note", values: ["text": .string("small")])
        #expect(try await client.count(Query("Note")) == 1)
    }

    @Test(arguments: ["memory", "sqlite"])
    func aNumericStringIdentityIsOneRowWithItsIdentity(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let store: any Store = kind == "memory" ? InMemoryStore() : try SQLiteStore(path: folder.path())
        let client = try Client.Builder(schema: Self.schema).store(store).build()
        for _ in 0..<2 {
            _ = try await client.import(Data(#"[{"id":"7000","name":"a"},{"id":7001}]"#.utf8), as: "Repository")
            _ = try await client.import(try JSON(parsing: Data(#"[{"id":7000},{"id":"7001"}]"#.utf8)), as: "Repository")
        }
        let rows = try await client.fetch(Query("Repository", sortedBy: [.ascending("id")]))
        #expect(rows.map { $0["id"] } == [.int(7000), .int(7001)])
        #expect(rows[0]["name"] == .string("a"))
    }
}
