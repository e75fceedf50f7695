import Synchronization

/// Hands each committed ``ChangeSet`` to every open ``Store/changes()`` stream.
///
/// Stores own one and call ``send(_:)`` after each commit that changed something; a custom store
/// can use it the same way.
public final class ChangeBroadcaster: Sendable {
    private struct Observers {
        var next = 0
        var continuations: [Int: AsyncStream<ChangeSet>.Continuation] = [:]
    }

    private let observers = Mutex(Observers())

    /// A broadcaster with no streams yet.
    public init() {}

    /// A new stream of every change sent after this call. Ends when the stream is dropped.
    public func stream() -> AsyncStream<ChangeSet> {
        let (stream, continuation) = AsyncStream<ChangeSet>.makeStream(bufferingPolicy: .unbounded)
        let token = observers.withLock { observers in
            observers.next += 1
            observers.continuations[observers.next] = continuation
            return observers.next
        }
        continuation.onTermination = { [weak self] _ in
            self?.observers.withLock { _ = $0.continuations.removeValue(forKey: token) }
        }
        return stream
    }

    /// Announces a committed change to every stream; an empty change set is not announced.
    public func send(_ changes: ChangeSet) {
        guard !changes.isEmpty else { return }
        let continuations = observers.withLock { Array($0.continuations.values) }
        for continuation in continuations { continuation.yield(changes) }
    }
}
