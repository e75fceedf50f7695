import Dispatch

/// A serial thread of a store's own, for the work of a store that blocks: waiting for a lock or
/// another writer, file I/O, an import's wait for its mapping thread.
///
/// Swift's cooperative thread pool has one thread per core; work that blocks one of them stalls
/// every other task of the app (the main actor's continuations, other requests) for as long as
/// it blocks. A store runs such work through ``run(_:)`` instead: the calling task suspends,
/// holding no thread, while the body runs on the executor's own thread, and tasks queued behind
/// it wait without holding a thread either.
///
/// ```swift
/// public func write<T: Sendable>(_ body: @Sendable (any StoreWriter) throws -> T) async throws -> T {
///     try await writes.run { try lock.withLock { try body(transaction) } }
/// }
/// ```
/// `InMemoryStore` and `SQLiteStore` run their writes (and the SQLite store its reads) on
/// executors of their own; a store of yours can do the same.
public final class StoreExecutor: TaskExecutor, @unchecked Sendable {
    // A serial queue runs on a thread of Dispatch's overcommitting pool, never on one of the
    // cooperative pool's: it gets a thread even while every core's thread is busy or blocked.
    private let queue: DispatchQueue

    /// An executor that runs its jobs one at a time, in order, on a thread of its own.
    ///
    /// - Parameter label: the thread's name in a debugger or profile (`tether.sqlite.write`).
    public init(label: String) {
        queue = DispatchQueue(label: label, qos: .userInitiated)
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    /// Runs `body` on the executor's thread, one body at a time, and returns what it returns. The
    /// calling task is suspended meanwhile, holding no thread of the cooperative pool.
    public func run<T: Sendable>(_ body: () throws -> T) async throws -> T {
        try await withTaskExecutorPreference(self) { try body() }
    }
}
