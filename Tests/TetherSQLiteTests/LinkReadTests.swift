import Foundation
import Testing
import Tether
@testable import TetherSQLite

/// What a write transaction remembers of the links it has read (``SQLiteTransaction/linkReads``)
/// so that the link batch after an import's read does not read them again, and the rows it knows
/// are stored (``KnownRows``): never used once the links or rows may have changed.
@Suite struct LinkReadTests {
    static let schema = try! Schema {
        Entity("Issue", identity: "id") {
            Attribute("id", .int64)
            Relationship.toOne("assignee", "User", inverse: "assigned")
            Relationship.toMany("labels", "Label", inverse: "issues", ordered: true)
        }
        Entity("User", identity: "id") {
            Attribute("id", .int64)
            Relationship.toMany("assigned", "Issue", inverse: "assignee")
        }
        Entity("Label", identity: "id") {
            Attribute("id", .int64)
            Relationship.toMany("issues", "Issue", inverse: "labels")
        }
    }

    /// A store with issues 1 and 2, users 10 and 11, labels 20, 21 and 22: issue 1 has labels
    /// 20, 21, 22 and assignee 10; issue 2 label 20 and assignee 11.
    static func store(_ directory: TemporaryDirectory) async throws -> (SQLiteStore, Client) {
        let store = try SQLiteStore(path: directory.path())
        let client = try Client.Builder(schema: Self.schema).store(store).build()
        let result = try await client.import(.array([
            .object(["id": .int(1), "assignee": .object(["id": .int(10)]), "labels": .array([20, 21, 22].map { .object(["id": .int($0)]) })]),
            .object(["id": .int(2), "assignee": .object(["id": .int(11)]), "labels": .array([.object(["id": .int(20)])])]),
        ]), as: "Issue")
        #expect(result.diagnostics.isEmpty)
        return (store, client)
    }

    /// The ids of every object of `entity`, by their `id` attribute.
    static func ids(of entity: String, in db: SQLiteTransaction) throws -> [ObjectID] {
        try db.fetch(Query(entity, sortedBy: [Sort("id")])).map(\.id)
    }

    static func ids(_ client: Client, _ relationship: String, of issue: Int64) async throws -> [Value?] {
        let object = try #require(try await client.object("Issue", identity: .int(issue)))
        return try await client.related(relationship, of: object.id).map { $0["id"] }
    }

    /// A reorder by ``SQLiteTransaction/setRelated(_:of:to:)`` moves positions without adding or
    /// removing a link: the batch after it must not diff against the positions read before it.
    @Test func aBatchAfterAReorderReadsTheLinksAgain() async throws {
        let directory = try TemporaryDirectory()
        let (store, client) = try await Self.store(directory)
        try await store.writeSQL { db in
            let issues = try Self.ids(of: "Issue", in: db)
            let labels = try Self.ids(of: "Label", in: db)
            _ = try db.related("labels", of: issues)  // remembered for the next batch
            try db.setRelated("labels", of: issues[0], to: [labels[1], labels[0], labels[2]])
            // Back to the order read: against the read, nothing would change.
            var batch = LinkBatch(entity: "Issue", relationship: "labels")
            batch.append(issues[0], to: [labels[0], labels[1], labels[2]])
            batch.append(issues[1], to: [labels[1], labels[2]])
            try db.setRelated(batch)
        }
        #expect(try await Self.ids(client, "labels", of: 1) == [.int(20), .int(21), .int(22)])
        #expect(try await Self.ids(client, "labels", of: 2) == [.int(21), .int(22)])
    }

    /// `compare(_:)` reads the issues' `assignee` column; a batch of the inverse side then moves an
    /// issue to another user: the `assignee` batch after it must not diff against the column read.
    @Test func aForeignKeyBatchAfterTheInverseSideWasWrittenReadsTheColumnAgain() async throws {
        let directory = try TemporaryDirectory()
        let (store, client) = try await Self.store(directory)
        try await store.writeSQL { db in
            var lookup = LookupBatch(entity: "Issue", attributes: [], relationships: ["assignee"])
            lookup.append(IdentityKey(.int(1)), values: [], given: [])
            lookup.append(IdentityKey(.int(2)), values: [], given: [])
            let found = try db.compare(lookup).map { try #require($0) }
            let users = try Self.ids(of: "User", in: db)
            #expect(found.map(\.targets) == [[users[0]], [users[1]]])
            // User 11 takes issue 1 (issue 1's assignee column changes to 11).
            var assigned = LinkBatch(entity: "User", relationship: "assigned")
            assigned.append(users[1], to: [found[0].id, found[1].id])
            try db.setRelated(assigned)
            // Issue 1 back to user 10, issue 2 to nobody.
            var assignee = LinkBatch(entity: "Issue", relationship: "assignee")
            assignee.append(found[0].id, to: [users[0]])
            assignee.append(found[1].id, to: [])
            try db.setRelated(assignee)
        }
        #expect(try await Self.ids(client, "assignee", of: 1) == [.int(10)])
        #expect(try await Self.ids(client, "assignee", of: 2) == [])
        let user = try #require(try await client.object("User", identity: .int(11)))
        #expect(try await client.related("assigned", of: user.id).isEmpty)
    }

    /// The column `compare(_:)` read is what the batch after it diffs against: only the issue
    /// whose assignee changes is written and recorded.
    @Test func aForeignKeyBatchAfterALookupWritesOnlyWhatChanged() async throws {
        let directory = try TemporaryDirectory()
        let (store, _) = try await Self.store(directory)
        let changes = try await store.writeSQL { db in
            var lookup = LookupBatch(entity: "Issue", attributes: [], relationships: ["assignee"])
            lookup.append(IdentityKey(.int(1)), values: [], given: [])
            lookup.append(IdentityKey(.int(2)), values: [], given: [])
            let found = try db.compare(lookup).map { try #require($0) }
            var assignee = LinkBatch(entity: "Issue", relationship: "assignee")
            assignee.append(found[0].id, to: found[0].targets.compactMap { $0 })
            assignee.append(found[1].id, to: found[0].targets.compactMap { $0 })
            try db.setRelated(assignee)
            return (found[1].id, db.changes.updated)
        }
        #expect(changes.1.contains(changes.0))
        #expect(changes.1.filter { $0.entity == "Issue" }.count == 1)
    }

    @Test func aReadGivesTheLinksOfTheRowsItReadInAnyOrder() {
        var joined = JoinLinks()
        joined.append(1, (10, 0, 0))
        joined.append(3, (30, 0, 0))
        joined.append(3, (31, 1, 0))
        joined.finish()
        let joinRead = LinkRead(sideA: true, rows: [5, 1, 9, 3], links: .joinTable(joined))
        let columnRead = LinkRead(sideA: true, rows: [5, 1, 9, 3], links: .column([nil, 10, nil, 30]))
        for (read, three) in [(joinRead, [30, 31] as [Int64]), (columnRead, [30])] {
            func targets(_ sources: [Int64]) -> [[Int64]]? {
                read.links(of: sources).map { links in sources.map { links[$0].map(\.target) } }
            }
            #expect(targets([]) == [])
            #expect(targets([5, 9]) == [[], []])
            #expect(targets([1, 3]) == [[10], three])
            #expect(targets([3, 1]) == [three, [10]])  // out of order: hashed
            #expect(targets([5, 7]) == nil)
            #expect(targets([4]) == nil)
        }
    }

    @Test func joinLinksKeepEachRowsRunAndTheFirstReadOfARow() {
        var links = JoinLinks()
        links.append(7, (70, 0, 0))
        links.append(7, (71, 1, 0))
        links.append(3, (30, 0, 2))
        links.append(7, (99, 0, 0))  // a row named twice is read twice: the first read stands
        links.finish()
        #expect(links[7].map(\.target) == [70, 71])
        #expect(links[3].map(\.otherPosition) == [2])
        #expect(links[4].isEmpty)
        var seen: [Int64: [Int64]] = [:]
        links.forEach { row, run in seen[row] = run.map(\.target) }
        #expect(seen == [7: [70, 71], 3: [30]])
    }

    @Test func knownRowsAreBitsInPages() {
        var known = KnownRows()
        let rows: [Int64] = [1, 2, 4095, 4096, 1 << 40, -1, -4097, .max, .min]
        known.insert(rows, table: "T")
        #expect(known.unknown(rows, table: "T").isEmpty)
        #expect(known.unknown([0, 3, 4097, (1 << 40) + 1, -2, .max - 1], table: "T") == [0, 3, 4097, (1 << 40) + 1, -2, .max - 1])
        #expect(known.unknown([1], table: "U") == [1])
        // Past the page limit a table's rows are started again: bounded, never wrong.
        let scattered = (0..<Int64(KnownRows.pageLimit + 10)).map { $0 << 20 }
        known.insert(scattered, table: "T")
        #expect(known.unknown(scattered.suffix(10), table: "T").isEmpty)
        #expect(known.unknown([1], table: "T") == [1])
        known.forget()
        #expect(known.unknown([scattered.last!], table: "T") == [scattered.last!])
    }

    @Test func aRowSetHashesOnlyPastItsPages() {
        var set = RowSet()
        // Dense rows fill a few pages; scattered ones go past the page limit into the hashed set.
        let rows = Array(Int64(1)...5_000) + (0..<Int64(RowSet.pageLimit * 2)).map { ($0 + 10) << 20 } + [-1, .min, .max]
        for row in rows {
            let inserted = set.insert(row)
            #expect(inserted, "\(row) is new")
        }
        for row in rows {
            #expect(set.contains(row))
            let again = set.insert(row)
            #expect(!again, "\(row) is in the set already")
        }
        for row: Int64 in [0, 5_001, (9 << 20), (11 << 20) + 1, -2, .max - 1] { #expect(!set.contains(row), "\(row) was never added") }
    }

    /// A source that keeps none of its links has them deleted by its row: from either side of a
    /// join table, beside sources that keep some, and the other side's lists stay in order.
    @Test func sourcesThatKeepNoneOfTheirLinksAreClearedByRow() async throws {
        let directory = try TemporaryDirectory()
        let (store, client) = try await Self.store(directory)
        try await store.writeSQL { db in
            let issues = try Self.ids(of: "Issue", in: db)
            let labels = try Self.ids(of: "Label", in: db)
            var batch = LinkBatch(entity: "Issue", relationship: "labels")
            batch.append(issues[0], to: [labels[1], labels[0]])  // keeps two, reordered
            batch.append(issues[1], to: [labels[2], labels[1]])  // keeps none of one
            try db.setRelated(batch)
            // From the labels' side (the table's unordered side): label 21 keeps none of its two
            // issues; label 20 keeps issue 1 and gains issue 2 (last in issue 2's labels).
            var byLabel = LinkBatch(entity: "Label", relationship: "issues")
            byLabel.append(labels[1], to: [])
            byLabel.append(labels[0], to: [issues[1], issues[0]])
            try db.setRelated(byLabel)
            #expect(try db.related("labels", of: issues[0]) == [labels[0]])
            #expect(try db.related("labels", of: issues[1]) == [labels[2], labels[0]])
            var again = LinkBatch(entity: "Issue", relationship: "labels")
            again.append(issues[0], to: [labels[2]])  // keeps none of one
            again.append(issues[1], to: [labels[1]])  // keeps none of two
            try db.setRelated(again)
        }
        #expect(try await Self.ids(client, "labels", of: 1) == [.int(22)])
        #expect(try await Self.ids(client, "labels", of: 2) == [.int(21)])
        for (label, issues) in [(20, []), (21, [2]), (22, [1])] as [(Int64, [Int64])] {
            let object = try #require(try await client.object("Label", identity: .int(label)))
            #expect(Set(try await client.related("issues", of: object.id).map { $0["id"] }) == Set(issues.map { Value.int($0) }), "label \(label)")
        }
    }
}
