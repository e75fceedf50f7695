import Foundation
import Testing
import Tether
@testable import TetherSQLite

/// A write transaction remembers what it has just read so that an import does not read it twice:
/// the rows it found or inserted (a link write does not check again that they exist) and the links
/// `related(_:of:)` read from a join table (the link batch that follows diffs against them). What
/// it remembers must never outlive a change: each test changes the rows or links after they were
/// read and before the write that would use them.
@Suite struct TransactionMemoryTests {
    static let schema = issuesAndLabels

    /// A store with issue 1 linked to labels 10 and 11, and a label 12 linked to nothing.
    static func store(_ directory: TemporaryDirectory) async throws -> SQLiteStore {
        let store = try SQLiteStore(path: directory.path())
        let client = try Client.Builder(schema: schema).store(store).build()
        let result = try await client.import(
            .array([.object(["id": .int(1), "labels": .array([.object(["id": .int(10)]), .object(["id": .int(11)])])])]), as: "Issue")
        #expect(result.diagnostics.isEmpty)
        _ = try await store.write { try $0.insert("Label", values: ["id": .int(12)]) }
        return store
    }

    static func ids(_ writer: any StoreReader, _ entity: String, _ keys: [Int64]) throws -> [ObjectID] {
        try writer.find(entity, identities: keys.map { IdentityKey(.int($0)) }, attributes: []).map { try #require($0?.id) }
    }

    static func labels(of store: SQLiteStore) async throws -> [Int64] {
        try await store.read { reader in
            let issue = try ids(reader, "Issue", [1])[0]
            return try (reader.related("labels", of: [issue])[issue] ?? []).map { try #require(reader.object($0)?["id", as: Int64.self]) }
        }
    }

    @Test(arguments: ["delete", "sql"])
    func aRowDeletedAfterItWasFoundCannotBeLinked(_ how: String) async throws {
        let directory = try TemporaryDirectory()
        let store = try await Self.store(directory)
        await #expect(throws: StoreError.self) {
            try await store.writeSQL { transaction in
                let issue = try Self.ids(transaction, "Issue", [1])[0]
                let label = try Self.ids(transaction, "Label", [12])[0]  // found: known to exist
                if how == "delete" {
                    try transaction.delete(label)
                } else {
                    try transaction.execute(#"DELETE FROM "Label" WHERE "id" = 12"#)
                }
                var batch = LinkBatch(entity: "Issue", relationship: "labels")
                batch.append(issue, to: [label])
                try transaction.setRelated(batch)
            }
        }
        #expect(try await Self.labels(of: store) == [10, 11])
    }

    @Test(arguments: ["one link", "sql"])
    func linksChangedAfterTheyWereReadAreReadAgain(_ how: String) async throws {
        let directory = try TemporaryDirectory()
        let store = try await Self.store(directory)
        try await store.writeSQL { transaction in
            let issue = try Self.ids(transaction, "Issue", [1])[0]
            let labels = try Self.ids(transaction, "Label", [10, 11, 12])
            #expect(try transaction.related("labels", of: [issue])[issue] == [labels[0], labels[1]])  // remembered
            if how == "one link" {
                try transaction.setRelated("labels", of: issue, to: [labels[2]])
            } else {
                try transaction.execute(#"DELETE FROM "Issue.labels""#)
            }
            // Diffed against what is stored now, not against what was read: 12 stays (a stale
            // diff would insert it again and fail), 10 is linked again (a stale one keeps it).
            var batch = LinkBatch(entity: "Issue", relationship: "labels")
            batch.append(issue, to: [labels[0], labels[2]])
            try transaction.setRelated(batch)
        }
        #expect(try await Self.labels(of: store) == [10, 12])
    }

    @Test func linksReadAndUnchangedAreNotReadAgain() async throws {
        let directory = try TemporaryDirectory()
        let store = try await Self.store(directory)
        try await store.writeSQL { transaction in
            let issue = try Self.ids(transaction, "Issue", [1])[0]
            let labels = try Self.ids(transaction, "Label", [10, 11, 12])
            _ = try transaction.related("labels", of: [issue])
            transaction.connection.startMeter()
            var batch = LinkBatch(entity: "Issue", relationship: "labels")
            batch.append(issue, to: [labels[1], labels[2]])
            try transaction.setRelated(batch)
            // The existence checks and the read of the current links were answered from memory.
            #expect(!transaction.connection.meterBySQL.keys.contains { $0.hasPrefix("SELECT") && !$0.contains("max(") })
            transaction.connection.metering = false
        }
        #expect(try await Self.labels(of: store) == [11, 12])
    }
}
