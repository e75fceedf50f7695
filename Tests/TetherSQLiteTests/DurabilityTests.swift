import Foundation
import Testing
import Tether
import TetherSQLite
import TetherTestSupport
import TetherTesting

/// Kills an importing child process (the `SQLiteCrashHelper` executable target, built with the
/// tests and found next to the test bundle) with SIGKILL at random points of its transaction; the
/// file must stay intact and hold all or none of each import.
@Suite struct DurabilityTests {
    static let schema = try! Schema {
        Entity("Item", identity: "id") {
            Attribute("id", .int64)
            Attribute("batch", .int64)
            Attribute("text", .string)
            Relationship.toOne("group", "Group", inverse: "items")
        }
        Entity("Group", identity: "id") {
            Attribute("id", .int64)
            Attribute("batch", .int64)
            Relationship.toMany("items", "Item", inverse: "group")
        }
    }

    static let count = 1500

    static func helperURL() throws -> URL {
        var directories = [URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()]
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            directories.append(bundle.bundleURL.deletingLastPathComponent())
        }
        directories.append(URL(fileURLWithPath: Bundle.main.bundlePath))
        for directory in directories {
            let candidate = directory.appendingPathComponent("SQLiteCrashHelper")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw StoreError(.unsupported, "SQLiteCrashHelper not found near \(directories.map(\.path))")
    }

    enum Outcome { case completed, killed }

    /// Runs the helper for `batch`; kills it `delay` after its transaction began, if given.
    func runHelper(_ helper: URL, path: String, batch: Int, marker: String, killAfter delay: Duration?) async throws -> (Outcome, Duration) {
        try? FileManager.default.removeItem(atPath: marker)
        // posix_spawn rather than Foundation's Process, whose run() crashes now and then on Linux
        // (see ChildProcess).
        let process = try ChildProcess(helper.path, [path, String(batch), String(Self.count), marker])
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(60)
        while !FileManager.default.fileExists(atPath: marker) {
            if !process.isRunning || clock.now > deadline {
                process.kill()
                throw StoreError(.storage, "the helper did not begin its import (\(String(describing: process.termination)))")
            }
            try await Task.sleep(for: .milliseconds(1))
        }
        let began = clock.now
        if let delay {
            try await Task.sleep(for: delay)
            process.kill()
        }
        let termination = try await process.wait(timeout: .seconds(60))
        let elapsed = clock.now - began
        if termination == .signalled(SIGKILL) { return (.killed, elapsed) }
        #expect(termination == .exited(0), "the helper failed: \(termination)")
        return (.completed, elapsed)
    }

    @Test func sigkillDuringImportLeavesAllOrNothing() async throws {
        let helper = try Self.helperURL()
        let directory = try TemporaryDirectory()
        let path = directory.path()
        let marker = directory.path("began")
        // A first, complete import measures how long the transaction takes.
        let (first, duration) = try await runHelper(helper, path: path, batch: 0, marker: marker, killAfter: nil)
        #expect(first == .completed)
        var committed: Set<Int> = [0]
        var killedMidway = 0
        var generator = SystemRandomNumberGenerator()
        for batch in 1...20 {
            let delay = Duration.microseconds(Int64.random(in: 0...max(1, Int64(duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000) * 11 / 10), using: &generator))
            let (outcome, _) = try await runHelper(helper, path: path, batch: batch, marker: marker, killAfter: delay)
            let store = try SQLiteStore(path: path)
            try store.prepare(for: Self.schema)
            let integrity = try await store.readSQL { try $0.rows("PRAGMA integrity_check") }
            #expect(integrity == [["integrity_check": .string("ok")]], "integrity after killing batch \(batch)")
            let items = try await store.read { try $0.count(Query("Item", where: .equal("batch", .int(Int64(batch))))) }
            let groups = try await store.read { try $0.count(Query("Group", where: .equal("batch", .int(Int64(batch))))) }
            #expect(items == 0 || items == Self.count, "batch \(batch) holds \(items) of \(Self.count) items")
            #expect(groups * 10 == items, "batch \(batch) holds \(groups) groups for \(items) items")
            if items == Self.count {
                committed.insert(batch)
                let linked = try await store.read { reader in
                    let ids = try reader.fetch(Query("Item", where: .equal("batch", .int(Int64(batch))))).map(\.id)
                    return try reader.related("group", of: ids).count
                }
                #expect(linked == Self.count, "items of batch \(batch) linked to their group")
            } else if outcome == .killed {
                killedMidway += 1
            }
            let total = try await store.read { try $0.count(Query("Item")) }
            #expect(total == committed.count * Self.count, "earlier batches intact after batch \(batch)")
            store.close()
        }
        #expect(killedMidway > 0, "no kill landed inside a transaction")
    }
}
