import Dispatch
import Foundation
import Synchronization

/// Checkpoints the write-ahead log of a store's file off the writer's path.
///
/// SQLite's own automatic checkpoint runs inside the `COMMIT` that grows the log past 1,000
/// pages: the write that crossed the line copies the whole log into the database file and syncs
/// it before it returns (a tenth of a second or more after a large import). The store turns that
/// off on its writing connection and, after such a commit, asks this object for a checkpoint
/// instead: it runs on a serial queue of its own with a connection of its own, in SQLite's
/// `PASSIVE` mode, which never waits for (or blocks) readers and writers.
///
/// Durability does not change: a committed transaction is in the log either way, and the log is
/// synced before its pages are copied. A checkpoint that cannot finish (another process reading
/// an old snapshot, or checkpointing itself) is simply tried again after the next large commit;
/// closing the file checkpoints what is left.
final class Checkpointer: Sendable {
    /// Log pages after which a commit asks for a checkpoint (SQLite's default for its own).
    static let threshold: Int32 = 1_000
    /// Log pages after which the next write waits for the checkpoint before it begins (smaller
    /// logs are checkpointed beside the writes that follow).
    static let waitThreshold: Int32 = 4 * threshold

    private let path: String
    private let queue = DispatchQueue(label: "Tether.SQLiteStore.checkpoint", qos: .utility)
    private struct State {
        var running = false
        /// A commit asked while a checkpoint was running: run another one after it.
        var again = false
        var closed = false
    }
    private let state = Mutex(State())
    /// Used on `queue` only; opened at the first checkpoint.
    private let connection = Mutex<Connection?>(nil)

    init(path: String) {
        self.path = path
    }

    /// Called after a commit that left `frames` pages in the log.
    func committed(frames: Int32) {
        guard frames >= Self.threshold else { return }
        let start = state.withLock { state -> Bool in
            if state.closed { return false }
            if state.running {
                state.again = true
                return false
            }
            state.running = true
            return true
        }
        if start { queue.async { self.run() } }
    }

    private func run() {
        repeat {
            checkpoint()
        } while state.withLock { state -> Bool in
            if state.again && !state.closed {
                state.again = false
                return true
            }
            state.running = false
            return false
        }
    }

    private func checkpoint() {
        connection.withLock { connection in
            if connection == nil {
                // Opened lazily: a store that never writes much never opens it. A file that cannot
                // be opened now is checkpointed when the store closes. Reading the journal mode
                // opens the file: until then the connection does not know that the file is in WAL
                // mode, and a checkpoint would do nothing.
                connection = try? Connection(path: path, readOnly: false, busyTimeout: .zero)
                _ = try? connection?.query("PRAGMA journal_mode", []) { $0.text(0) }
            }
            connection?.checkpoint()
        }
    }

    /// Waits for a running checkpoint (and the one asked for after it) to finish. The store's
    /// writes call this before they begin when the last commit left a large log
    /// (``waitThreshold``), so that the log stays bounded: a write that follows a large one
    /// closely pays what is left of its checkpoint instead of reading through a growing log. A
    /// write after small commits runs beside the checkpoint (`PASSIVE` does not block it).
    func wait() {
        queue.sync {}
    }

    /// Runs a checkpoint after any running one, and calls `done` when it has finished.
    func checkpointNow(_ done: @escaping @Sendable () -> Void) {
        queue.async {
            self.checkpoint()
            done()
        }
    }

    /// Waits for a running checkpoint, then closes the connection; later commits ask for nothing.
    func close() {
        state.withLock { $0.closed = true }
        queue.sync {}
        connection.withLock { $0 = nil }
    }
}
