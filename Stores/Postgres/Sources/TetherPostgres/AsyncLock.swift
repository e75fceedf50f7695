import Synchronization

/// A lock that tasks wait for without holding a thread, first come, first served: the store's
/// writes take it, so that one instance runs one write transaction at a time (as every Tether
/// store does) and waiting writers hold no pooled connection either.
final class AsyncLock: Sendable {
    private struct State {
        var locked = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    func lock() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let acquired = state.withLock { state -> Bool in
                if !state.locked {
                    state.locked = true
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if acquired { continuation.resume() }
        }
    }

    func unlock() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiters.isEmpty {
                state.locked = false
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }

    func withLock<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        await lock()
        defer { unlock() }
        return try await body()
    }
}
