import Foundation
import Synchronization
import Testing
import Tether
import TetherSQLite
import TetherTestSupport
import TetherTesting

/// Issue 18, load: eight overlapping imports of the same identities into one SQLite file, from
/// eight stores (clients) in this process and from eight processes, while a reader of its own reads
/// the file over and over. No identity is stored twice, the file ends up exactly as one of the
/// imports left it, and every read sees one whole import or none.
@Suite struct LoadTests {
    static let schema = DurabilityTests.schema
    static let imports = 8
    static let count = 1_000
    static var groups: Int { count / 10 }
    /// Long enough for seven other imports to commit first, on a loaded machine.
    static let busyTimeout = Duration.seconds(300)

    /// The payload of import `batch`: the same as `loadPayload` of the SQLiteCrashHelper. Items
    /// 0..<count, each in the group `(id / 10 + batch) % groups`, in an order of the batch's own,
    /// every value stamped with the batch.
    static func payload(batch: Int) -> Data {
        let order = (0..<count).map { (($0 * 7919) + batch * 131) % count }
        let items = order.map { i in
            #"{"id": \#(i), "batch": \#(batch), "text": "item \#(i) of batch \#(batch)", "group": {"id": \#((i / 10 + batch) % groups), "batch": \#(batch)}}"#
        }
        return Data(("[" + items.joined(separator: ",") + "]").utf8)
    }

    /// What one read transaction saw.
    struct Snapshot: Sendable, Equatable {
        /// Rows per batch stamp, items and groups.
        var items: [Int64: Int64] = [:]
        var groups: [Int64: Int64] = [:]
        var distinctItemIDs: Int64 = 0
        var distinctGroupIDs: Int64 = 0
        /// Items whose group is not the one their batch gives them, or of another batch.
        var misplaced: Int64 = 0
        /// Items with the text of another batch.
        var wrongText: Int64 = 0

        var isEmpty: Bool { items.isEmpty && groups.isEmpty }

        /// The batch whose import this is, whole: every item and group, each once, all of that
        /// batch, with that batch's links; nil for anything else.
        var wholeImport: Int64? {
            guard items.count == 1, groups.count == 1, let (batch, rows) = items.first, groups[batch] == Int64(LoadTests.groups),
                rows == Int64(LoadTests.count), distinctItemIDs == rows, distinctGroupIDs == Int64(LoadTests.groups),
                misplaced == 0, wrongText == 0
            else { return nil }
            return batch
        }
    }

    /// Reads the whole state in one read transaction (one snapshot of the file).
    static func snapshot(_ store: SQLiteStore) async throws -> Snapshot {
        try await store.readSQL { db in
            var snapshot = Snapshot()
            for row in try db.rows(#"SELECT "batch" AS b, count(*) AS n FROM "Item" GROUP BY "batch""#) {
                if case .int(let b)? = row["b"], case .int(let n)? = row["n"] { snapshot.items[b] = n }
            }
            for row in try db.rows(#"SELECT "batch" AS b, count(*) AS n FROM "Group" GROUP BY "batch""#) {
                if case .int(let b)? = row["b"], case .int(let n)? = row["n"] { snapshot.groups[b] = n }
            }
            func number(_ sql: String) throws -> Int64 {
                if case .int(let n)? = try db.rows(sql).first?["n"] { return n }
                return -1
            }
            snapshot.distinctItemIDs = try number(#"SELECT count(DISTINCT "id") AS n FROM "Item""#)
            snapshot.distinctGroupIDs = try number(#"SELECT count(DISTINCT "id") AS n FROM "Group""#)
            snapshot.misplaced = try number(#"""
                SELECT count(*) AS n FROM "Item" AS i LEFT JOIN "Group" AS g ON g."rowid" = i."group"
                WHERE g."rowid" IS NULL OR g."batch" IS NOT i."batch" OR g."id" IS NOT (i."id" / 10 + i."batch") % \#(groups)
                """#)
            snapshot.wrongText = try number(#"SELECT count(*) AS n FROM "Item" WHERE "text" IS NOT ('item ' || "id" || ' of batch ' || "batch")"#)
            return snapshot
        }
    }

    /// Starts reading snapshots until `done` is set, and returns once the first read is made;
    /// the task's value is each distinct snapshot. The loop runs on a thread of its own (a task
    /// executor), not on the cooperative pool, so that it keeps reading while the imports (and
    /// other tests) keep the pool busy.
    static func startReading(_ store: SQLiteStore, until done: @escaping @Sendable () -> Bool) async -> Task<[Snapshot], any Error> {
        let executor = StoreExecutor(label: "tether.tests.load.reader")
        let (started, signal) = AsyncStream<Void>.makeStream()
        let task = Task(executorPreference: executor) {
            defer { signal.finish() }
            var seen: [Snapshot] = []
            repeat {
                let snapshot = try await snapshot(store)
                if !seen.contains(snapshot) { seen.append(snapshot) }
                signal.yield()
            } while !done()
            return seen
        }
        for await _ in started { break }
        return task
    }

    /// The final state: one import's, whole, and the reads each saw a whole import or none.
    static func check(final: Snapshot, snapshots: [Snapshot]) {
        #expect(final.wholeImport != nil, "the final state is not one import's: \(final)")
        for snapshot in snapshots {
            #expect(snapshot.isEmpty || snapshot.wholeImport != nil, "a read saw a mix of imports: \(snapshot)")
        }
    }

    /// A flag set once, read from any task.
    final class Flag: Sendable {
        private let value = Atomic(false)
        func set() { value.store(true, ordering: .releasing) }
        var isSet: Bool { value.load(ordering: .acquiring) }
    }

    @Test func eightClientsImportIntoOneFile() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path()
        // Eight stores on one file, each with its own client (and connections).
        var clients: [Client] = []
        var stores: [SQLiteStore] = []
        for _ in 0..<Self.imports {
            let store = try SQLiteStore(path: path, busyTimeout: Self.busyTimeout)
            stores.append(store)
            clients.append(try Client.Builder(schema: Self.schema).store(store).build())
        }
        let reader = try SQLiteStore(path: path, busyTimeout: Self.busyTimeout)
        _ = try Client.Builder(schema: Self.schema).store(reader).build()
        let payloads = (0..<Self.imports).map { Self.payload(batch: $0 + 1) }

        let done = Flag()
        let reading = await Self.startReading(reader, until: { done.isSet })
        let results = try await withThrowingTaskGroup(of: (Int, ImportResult).self) { group in
            for (k, client) in clients.enumerated() {
                let payload = payloads[k]
                group.addTask { (k + 1, try await client.import(payload, as: "Item")) }
            }
            var results: [Int: ImportResult] = [:]
            do {
                for try await (batch, result) in group { results[batch] = result }
            } catch {
                done.set()
                throw error
            }
            done.set()
            return results
        }
        let snapshots = try await reading.value

        // Every import ran whole: it inserted what no earlier one had, and updated the rest.
        #expect(results.count == Self.imports)
        #expect(results.values.map { $0.inserted.count }.reduce(0, +) == Self.count + Self.groups, "each identity inserted once")
        for (batch, result) in results {
            #expect(result.diagnostics.isEmpty, "import \(batch): \(result.diagnostics.prefix(3))")
            #expect(result.objects.count == Self.count)
        }
        let final = try await Self.snapshot(reader)
        Self.check(final: final, snapshots: snapshots)
        // The state of the import that committed last: through another store, it reads the same.
        let other = try await Self.snapshot(stores[0])
        #expect(other == final)
        for store in stores { store.close() }
        reader.close()
        let reopened = try SQLiteStore(path: path)
        _ = try Client.Builder(schema: Self.schema).store(reopened).build()
        #expect(try await Self.snapshot(reopened) == final)
        let integrity = try await reopened.readSQL { try $0.rows("PRAGMA integrity_check") }
        #expect(integrity == [["integrity_check": .string("ok")]])
    }

    @Test func eightProcessesImportIntoOneFile() async throws {
        let helper = try DurabilityTests.helperURL()
        let directory = try TemporaryDirectory()
        let path = directory.path()
        let go = directory.path("go")
        // The file exists and is prepared before the processes start; each prepares it again.
        let reader = try SQLiteStore(path: path, busyTimeout: Self.busyTimeout)
        _ = try Client.Builder(schema: Self.schema).store(reader).build()

        var processes: [ChildProcess] = []
        for batch in 1...Self.imports {
            processes.append(try ChildProcess(helper.path, ["import", path, String(batch), String(Self.count), go]))
        }
        defer { for process in processes { process.kill() } }

        let done = Flag()
        let reading = await Self.startReading(reader, until: { done.isSet })
        defer { done.set() }
        // Let the processes start (build their payloads, open the file), then let them go at once.
        try await Task.sleep(for: .milliseconds(300))
        _ = FileManager.default.createFile(atPath: go, contents: Data())
        var terminations: [ChildProcess.Termination] = []
        for process in processes { terminations.append(try await process.wait(timeout: .seconds(300))) }
        done.set()
        let snapshots = try await reading.value
        for (k, termination) in terminations.enumerated() {
            #expect(termination == .exited(0), "import \(k + 1) failed: \(termination)")
        }
        let final = try await Self.snapshot(reader)
        Self.check(final: final, snapshots: snapshots)
        reader.close()
        let reopened = try SQLiteStore(path: path)
        _ = try Client.Builder(schema: Self.schema).store(reopened).build()
        #expect(try await Self.snapshot(reopened) == final)
        let integrity = try await reopened.readSQL { try $0.rows("PRAGMA integrity_check") }
        #expect(integrity == [["integrity_check": .string("ok")]])
    }
}
