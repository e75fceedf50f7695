import Foundation
import Testing
import Tether
@testable import TetherSQLite

/// A connection caches its prepared statements and starts the cache again past
/// `Connection.cacheLimit`. Emptying the cache used to finalize every statement in it, also one a
/// caller was still binding or stepping: a batch insert whose rows' links prepared statements of
/// their own, in an app that had run a few hundred distinct statements, stepped a freed statement
/// (a crash in SQLite, or worse). Found by `ChangeSetCompletenessTests` in a long run.
@Suite struct StatementCacheTests {
    @Test func aStatementHeldAcrossTheCacheStartingAgainStaysPrepared() throws {
        let directory = try TemporaryDirectory()
        let connection = try Connection(path: directory.path("cache.sqlite"), readOnly: false, busyTimeout: .seconds(1))
        try connection.exec("CREATE TABLE t (x INTEGER)", "creating a table")
        let held = try (0..<4).map { try connection.prepared("INSERT INTO t (x) VALUES (?) -- \($0)") }
        // The cache fills and starts again, three times over, while the statements above are held.
        for i in 0..<(Connection.cacheLimit * 3) {
            #expect(try connection.query("SELECT \(i)", []) { $0.int(0) } == [Int64(i)])
        }
        for (i, statement) in held.enumerated() {
            try statement.bind(1, Int64(i))
            try statement.execute("inserting")
        }
        #expect(try connection.query("SELECT x FROM t ORDER BY x", []) { $0.int(0) } == [0, 1, 2, 3])
    }

    static let schema = try! Schema {
        Entity("Person", identity: "id") {
            Attribute("id", .int64)
            Relationship.toOne("profile", "Profile", inverse: "person")   // one-to-one: linked after each row
        }
        Entity("Profile", identity: "id") {
            Attribute("id", .int64)
            Relationship.toOne("person", "Person", inverse: "profile")
        }
    }

    /// The store's own path to the same case: an insert batch keeps its multi-row statement while
    /// each row's one-to-one link prepares statements, with the cache one statement from its limit.
    @Test func anInsertBatchWhoseLinksEmptyTheCache() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path())
        try store.prepare(for: Self.schema)
        let (people, profiles) = try await store.writeSQL { db in
            let profiles = try (1...100).map { try db.insert("Profile", values: ["id": .int(Int64($0))]).id }
            for i in 0..<Connection.cacheLimit { _ = try db.rows("SELECT \(i) AS n") }
            var batch = InsertBatch(entity: "Person", attributes: ["id"], relationships: ["profile"])
            for (i, profile) in profiles.enumerated() { batch.append([.int(Int64(i + 1))], targets: [profile]) }
            return (try db.insert(batch), profiles)
        }
        #expect(people.count == 100)
        let linked = try await store.read { reader in try people.map { try reader.related("profile", of: $0) } }
        #expect(linked == profiles.map { [$0] })
    }
}
