import Foundation

/// Runs the two halves of an import on two cores: `produce` (reading and mapping batches) on a
/// thread of its own, one item ahead of `consume` (writing them into the store) on the calling
/// thread.
///
/// `produce` hands each item to `emit`, which waits until the consumer takes it: the producer
/// makes item k + 1 while the consumer works on item k, and no further ahead. Items are consumed
/// in order; then the producer's error, if any, is thrown. When `consume` throws, the producer is
/// stopped at its next `emit`, and this function returns only after the producer's thread has
/// finished: `produce` may use memory that lives only as long as this call (the bytes of the
/// payload, a tape).
///
/// Each item, once consumed, goes back to the producer's thread to be freed there: freeing a
/// written batch (its values and strings) is a good part of a batch's cost, and the producer is
/// usually the one with time to spare.
///
/// The calling thread only ever waits for the thread this function started, never for async
/// work or a thread of a shared pool, so it cannot deadlock, however busy the pools are (a thread
/// blocked on work queued to a pool can wait forever on Linux).
func readAhead<T: Sendable>(produce: @escaping (_ emit: (T) throws -> Void) throws -> Void, consume: (inout T) throws -> Void) throws {
    let handoff = Handoff<T>()
    let job = ProducerJob(run: produce)
    let thread = Thread {
        do {
            try job.run { item in try handoff.put(item) }
            handoff.finish(nil)
        } catch {
            handoff.finish(error)
        }
    }
    // Nested payloads recurse in the parser and the mapper (up to JSONParser.maximumDepth):
    // give the thread the stack of a main thread, not the 512 KiB of a secondary one.
    thread.stackSize = 8 << 20
    thread.start()
    defer { handoff.cancelAndWait() }
    while var item = try handoff.take() {
        try consume(&item)
        handoff.giveBack(item)
    }
}

/// The producer's closure, handed to its thread. It is not `Sendable` (it captures the reader, the
/// tape and the mapper of one import): it is called on that thread only, and the caller of
/// ``readAhead(produce:consume:)`` leaves what it captures alone until the thread has finished.
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
