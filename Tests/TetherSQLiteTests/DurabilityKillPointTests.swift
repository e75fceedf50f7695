import Foundation
import Testing
import Tether
import TetherSQLite
import TetherTestSupport
import TetherTesting

/// The kill points after a commit (issue 18, crash safety): the `SQLiteCrashHelper` imports a
/// batch, and is killed with SIGKILL at a random moment between the commit and the end of
/// `close()`: while the log is checkpointed into the file in the background (after a commit that
/// left more than 1,000 pages in the log) and while `close()` checkpoints the rest. A committed
/// import must survive whole, and the file stay intact. `DurabilityTests` covers the kills inside
/// the transaction; `Scripts/crash-loop.sh` runs both many times.
@Suite struct DurabilityKillPointTests {
    enum Phase: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// 2,500 objects of 2 KB: the commit leaves about 1,500 pages in the log, which the
        /// store's checkpointer copies into the file in the background; `close()` waits for it.
        case checkpoint
        /// 800 objects of 2 KB: under the threshold, the log stays until `close()` checkpoints it.
        case close

        var count: Int { self == .checkpoint ? 2_500 : 800 }
        var testDescription: String { rawValue }
    }

    /// Where a kill landed, from the markers the helper left.
    enum Landing: Hashable, CustomStringConvertible {
        case beforeCheckpointFinished, duringClose, afterClose, completed
        var description: String {
            switch self {
            case .beforeCheckpointFinished: "during-checkpoint"
            case .duringClose: "during-close"
            case .afterClose: "after-close"
            case .completed: "not-killed"
            }
        }
    }

    static let runs = 12

    /// Runs the helper for `batch`; kills it `delay` after the commit, if given. With `pausing`,
    /// the helper waits after the commit until it is killed (a kill before close() by
    /// construction, however slow the machine).
    func run(
        _ helper: URL, _ phase: Phase, path: String, batch: Int, marker: String, killAfter delay: Duration?, pausing: Bool = false
    ) async throws -> (Landing, Duration) {
        for suffix in ["", ".checkpointed", ".closed", ".pause"] { try? FileManager.default.removeItem(atPath: marker + suffix) }
        if pausing { _ = FileManager.default.createFile(atPath: marker + ".pause", contents: Data()) }
        defer { try? FileManager.default.removeItem(atPath: marker + ".pause") }
        let process = try ChildProcess(helper.path, [phase.rawValue, path, String(batch), String(phase.count), marker])
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(120)
        while !FileManager.default.fileExists(atPath: marker) {
            if !process.isRunning || clock.now > deadline {
                process.kill()
                throw StoreError(.storage, "the helper did not commit its import (\(String(describing: process.termination)))")
            }
            try await Task.sleep(for: .milliseconds(1))
        }
        let committed = clock.now
        if let delay {
            try await Task.sleep(for: delay)
            process.kill()
        }
        let termination = try await process.wait(timeout: .seconds(120))
        let elapsed = clock.now - committed
        guard termination == .signalled(SIGKILL) else {
            #expect(termination == .exited(0), "the helper failed: \(termination)")
            return (.completed, elapsed)
        }
        let fileManager = FileManager.default
        if fileManager.fileExists(atPath: marker + ".closed") { return (.afterClose, elapsed) }
        if phase == .checkpoint && !fileManager.fileExists(atPath: marker + ".checkpointed") { return (.beforeCheckpointFinished, elapsed) }
        return (.duringClose, elapsed)
    }

    @Test(arguments: Phase.allCases)
    func sigkillAfterTheCommitKeepsTheImport(_ phase: Phase) async throws {
        let helper = try DurabilityTests.helperURL()
        let directory = try TemporaryDirectory()
        let path = directory.path()
        let marker = directory.path("committed")
        // A first run, not killed, measures the time from the commit to the end of close().
        let (first, window) = try await run(helper, phase, path: path, batch: 0, marker: marker, killAfter: nil)
        #expect(first == .completed)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"), "close() removed the log")
        let microseconds = max(1, window.components.seconds * 1_000_000 + window.components.attoseconds / 1_000_000_000_000)
        var landings: [Landing: Int] = [:]
        for batch in 1...Self.runs {
            // The first run is killed at the pause after its commit; the others at random moments
            // from the commit to the end of close() as the first run measured it.
            let delay = Duration.microseconds(batch == 1 ? 0 : Int64.random(in: 0...(microseconds * 11 / 10)))
            let (landing, _) = try await run(helper, phase, path: path, batch: batch, marker: marker, killAfter: delay, pausing: batch == 1)
            landings[landing, default: 0] += 1
            let store = try SQLiteStore(path: path)
            try store.prepare(for: DurabilityTests.schema)
            let integrity = try await store.readSQL { try $0.rows("PRAGMA integrity_check") }
            #expect(integrity == [["integrity_check": .string("ok")]], "integrity after a kill \(landing) (batch \(batch))")
            let items = try await store.read { try $0.count(Query("Item", where: .equal("batch", .int(Int64(batch))))) }
            let groups = try await store.read { try $0.count(Query("Group", where: .equal("batch", .int(Int64(batch))))) }
            #expect(items == phase.count, "a kill \(landing) lost part of committed batch \(batch): \(items) of \(phase.count) items")
            #expect(groups * 10 == items, "batch \(batch): \(groups) groups for \(items) items")
            let linked = try await store.read { reader in
                let ids = try reader.fetch(Query("Item", where: .equal("batch", .int(Int64(batch))))).map(\.id)
                return try reader.related("group", of: ids).count
            }
            #expect(linked == items, "items of batch \(batch) linked to their group")
            let total = try await store.read { try $0.count(Query("Item")) }
            #expect(total == (batch + 1) * phase.count, "earlier batches intact after batch \(batch)")
            store.close()
        }
        if ProcessInfo.processInfo.environment["TETHER_CRASH_LOOP"] != nil {
            // Scripts/crash-loop.sh adds these up.
            print("crash-loop: \(phase) window \(window): " + [Landing.beforeCheckpointFinished, .duringClose, .afterClose, .completed].map { "\($0)=\(landings[$0, default: 0])" }.joined(separator: ", "))
        }
        let killedBeforeClosing = landings[.beforeCheckpointFinished, default: 0] + landings[.duringClose, default: 0]
        #expect(killedBeforeClosing > 0, "no kill landed before close() finished: \(landings)")
    }
}
