import Foundation

/// Runs the two halves of an import on two cores: `produce` (reading and mapping batches) on a
/// thread of its own, one item ahead of `consume` (writing them into the store) on the calling
/// thread.
///
/// `produce` hands each item to `emit`, which waits until the consumer takes it: the producer
/// makes item k + 1 while the consumer works on item k, and no further ahead. Items are consumed
/// in order; then the producer's error, if any, is thrown. When `consume` throws, the producer is
/// stopped at its next `emit`, and this function returns only after the producer has finished:
/// `produce` may use memory that lives only as long as this call (the bytes of the payload, a
/// tape).
///
/// Each item, once consumed, goes back to the producer's thread to be freed there: freeing a
/// written batch (its values and strings) is a good part of a batch's cost, and the producer is
/// usually the one with time to spare.
///
/// The calling thread only ever waits for the producer's thread, an idle one of
/// ``ProducerThreads`` or one started for it, never for async work or a thread of a shared pool,
/// so it cannot deadlock, however busy the pools are (a thread blocked on work queued to a pool
/// can wait forever on Linux).
func readAhead<T: Sendable>(
    on threads: ProducerThreads, produce: @escaping (_ emit: (T) throws -> Void) throws -> Void, consume: (inout T) throws -> Void
) throws {
    let handoff = Handoff<T>()
    let job = ProducerJob(run: produce)
    threads.run {
        do {
            try job.run { item in try handoff.put(item) }
            handoff.finish(nil)
        } catch {
            handoff.finish(error)
        }
    }
    defer { handoff.cancelAndWait() }
    while var item = try handoff.take() {
        try consume(&item)
        handoff.giveBack(item)
    }
}

/// The producers' threads, kept between imports instead of one started and ended for each.
///
/// glibc's malloc gives each thread an arena of its own, and when a thread ends its arena, with
/// the memory the thread freed in it (the tapes and batches of a whole import, about 100 MB at
/// 100k objects), goes to whichever thread allocates for the first time next. When that is not
/// the next import's producer (a thread of the cooperative pool, say), the memory stays resident
/// unused and the next producer fills a new arena: tens of MB more peak RSS, and page faults, on
/// the second and later imports of a process. A kept thread keeps its arena, and each import
/// reuses what the one before freed.
///
/// A job never waits for a busy thread: it goes to an idle thread, or to a new one. Each client
/// has its own (made by ``Client/Builder/build()``; nothing is shared between clients).
final class ProducerThreads: @unchecked Sendable {
    /// Idle threads kept at most; beyond them, a thread ends when its job is done.
    private let keep = max(2, ProcessInfo.processInfo.activeProcessorCount)
    // Every field below is read and written with `condition` locked.
    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []
    private var waiting = 0
    /// How long an idle thread waits for the next import before it ends (seconds).
    static let idleTime: TimeInterval = 10

    /// Runs `job` on an idle thread, or on a new one when none is.
    func run(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        defer { condition.unlock() }
        jobs.append(job)
        if waiting >= jobs.count {
            condition.signal()
            return
        }
        let thread = Thread { [self] in work() }
        // Nested payloads recurse in the parser and the mapper (up to JSONParser.maximumDepth):
        // give the thread the stack of a main thread, not the 512 KiB of a secondary one.
        thread.stackSize = 8 << 20
        thread.start()
    }

    private func work() {
        condition.lock()
        defer { condition.unlock() }
        while true {
            while jobs.isEmpty {
                if waiting >= keep { return }
                waiting += 1
                // An idle thread ends after a while, so a client that stops importing (or is
                // dropped) leaves no thread behind for long.
                let signalled = condition.wait(until: Date(timeIntervalSinceNow: Self.idleTime))
                waiting -= 1
                if !signalled && jobs.isEmpty { return }
            }
            do {
                let job = jobs.removeFirst()
                condition.unlock()
                job()
            }  // the job and what it captures are released here, unlocked and before the next wait
            condition.lock()
        }
    }
}

/// The producer's closure, handed to its thread. It is not `Sendable` (it captures the reader, the
/// tape and the mapper of one import): it is called on that thread only, and the caller of
/// ``readAhead(produce:consume:)`` leaves what it captures alone until the producer has finished.
private struct ProducerJob<T>: @unchecked Sendable {
    let run: (_ emit: (T) throws -> Void) throws -> Void
}

/// A one-item handoff between a producer thread and a consumer thread.
private final class Handoff<T: Sendable>: @unchecked Sendable {
    // Every field below is read and written with `condition` locked.
    private let condition = NSCondition()
    private var item: T?
    private var finished = false
    private var failure: (any Error)?
    private var cancelled = false
    /// Consumed items, to be freed on the producer's thread.
    private var spent: [T] = []

    /// Producer: offers `value` and waits until the consumer takes it, so that the producer is
    /// never more than one item ahead (two batches in memory, not three). Throws when the
    /// consumer has stopped.
    func put(_ value: T) throws {
        var spent: [T] = []
        defer { spent = [] }  // freed after the lock is released
        condition.lock()
        defer { condition.unlock() }
        if cancelled { throw CancellationError() }
        item = value
        condition.broadcast()
        while item != nil && !cancelled { condition.wait() }
        swap(&spent, &self.spent)
        if cancelled { throw CancellationError() }
    }

    /// Consumer: hands a consumed item back, to be freed by the producer at its next `put`.
    func giveBack(_ value: T) {
        condition.lock()
        defer { condition.unlock() }
        spent.append(value)
    }

    /// Producer: no more items; `error` is thrown to the consumer after the last one.
    func finish(_ error: (any Error)?) {
        condition.lock()
        defer { condition.unlock() }
        finished = true
        failure = error
        condition.broadcast()
    }

    /// Consumer: the next item, or nil when the producer finished without error.
    func take() throws -> T? {
        condition.lock()
        defer { condition.unlock() }
        while item == nil && !finished { condition.wait() }
        if let value = item {
            item = nil
            condition.broadcast()
            return value
        }
        if let failure { throw failure }
        return nil
    }

    /// Consumer: stops the producer at its next `put` and waits until it has finished.
    func cancelAndWait() {
        condition.lock()
        defer { condition.unlock() }
        cancelled = true
        item = nil
        condition.broadcast()
        while !finished { condition.wait() }
    }
}
