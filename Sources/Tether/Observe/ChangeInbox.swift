import Synchronization

/// What an observer has not looked at yet: the committed changes since it last did, merged into
/// one ``ChangeSet``, and whether its request changed. One per iterator of an observation.
///
/// A consumer slower than the store's commits so never sees a queue of stale states: it takes
/// everything that happened since its last look at once.
final class ChangeInbox: Sendable {
    struct Pending: Sendable {
        var changes: ChangeSet?
        var requestChanged = false
        var isEmpty: Bool { changes == nil && !requestChanged }
    }

    private struct State {
        var pending = Pending()
        var finished = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    /// Adds a committed change.
    func post(_ changes: ChangeSet) {
        update { state in
            if state.pending.changes == nil { state.pending.changes = changes } else { state.pending.changes!.formUnion(changes) }
        }
    }

    /// Notes that what is observed changed (a new condition, sort, or a remote state).
    func postRequestChange() {
        update { $0.pending.requestChanged = true }
    }

    /// Ends the inbox: a waiting and every later ``take()`` returns nil.
    func finish() {
        update { $0.finished = true }
    }

    /// Changes the state, then wakes the waiting ``take()``, if any (outside the lock).
    private func update(_ body: (inout State) -> Void) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            body(&state)
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Everything pending, waiting until there is something; nil when finished or when the
    /// calling task is cancelled.
    func take() async -> Pending? {
        while true {
            if let result = takeNow() { return result.isEmpty ? nil : result }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let ready = state.withLock { state -> Bool in
                        if state.finished || !state.pending.isEmpty { return true }
                        state.waiter = continuation
                        return false
                    }
                    if ready { continuation.resume() }
                }
            } onCancel: {
                finish()
            }
        }
    }

    /// The pending changes if there are any (emptying the inbox), an empty `Pending` when
    /// finished, nil when there is nothing yet.
    private func takeNow() -> Pending? {
        state.withLock { state in
            if state.finished { return Pending() }
            guard !state.pending.isEmpty else { return nil }
            defer { state.pending = Pending() }
            return state.pending
        }
    }
}

/// Keeps an inbox fed from a store's change stream, for as long as the owner of the feed lives:
/// the owner (an observation's iterator) drops it, and the stream ends with it.
final class ChangeFeed: Sendable {
    let inbox = ChangeInbox()
    private let pump: Task<Void, Never>
    private let onDrop: (@Sendable (ChangeInbox) -> Void)?

    /// Subscribes at once: every change committed after this call reaches the inbox. `onDrop`
    /// runs when the feed goes away.
    init(_ store: any Store, onDrop: (@Sendable (ChangeInbox) -> Void)? = nil) {
        self.onDrop = onDrop
        let stream = store.changes()
        let inbox = self.inbox
        pump = Task.detached { [weak inbox] in
            for await changes in stream {
                guard let inbox else { return }
                inbox.post(changes)
            }
        }
    }

    deinit {
        pump.cancel()
        inbox.finish()
        onDrop?(inbox)
    }
}
