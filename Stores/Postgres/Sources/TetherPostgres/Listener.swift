import Foundation
import Logging
import PostgresNIO
import Synchronization
import Tether

/// Listens on the namespace's channel on one pooled connection and hands the change sets other
/// instances commit to the store's streams. Reconnects after a lost connection (pausing up to
/// five seconds between tries) until stopped.
final class Listener: Sendable {
    let channel: String

    private struct State {
        var task: Task<Void, Never>?
        var listening = false
        var waiters: [CheckedContinuation<Void, any Error>] = []
        var stopped = false
    }

    private let state = Mutex(State())

    init(channel: String) { self.channel = channel }

    func start(client: PostgresClient, namespace: String, instance: String, logger: Logger, broadcaster: ChangeBroadcaster,
               received: @escaping @Sendable () -> Void) {
        let channel = channel
        state.withLock { state in
            guard state.task == nil, !state.stopped else { return }
            state.task = Task { [weak self] in
                var pause = 0.05
                while !Task.isCancelled {
                    do {
                        try await client.withConnection { connection in
                            try await connection.listen(on: channel) { notifications in
                                self?.becameReady()
                                pause = 0.05
                                for try await notification in notifications {
                                    await Self.handle(notification.payload, client: client, namespace: namespace, instance: instance,
                                                      logger: logger, broadcaster: broadcaster, received: received)
                                }
                            }
                        }
                    } catch {
                        if Task.isCancelled { break }
                        logger.warning("tether.postgres: listening on \(channel) failed, listening again: \(error)")
                    }
                    self?.lost()
                    try? await Task.sleep(for: .seconds(pause))
                    pause = min(5, pause * 2)
                }
            }
        }
    }

    private func becameReady() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.listening = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    private func lost() { state.withLock { $0.listening = false } }

    /// Waits until the listening connection is ready.
    func ready() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let resume = state.withLock { state -> Bool in
                if state.stopped || state.listening { return true }
                state.waiters.append(continuation)
                return false
            }
            if resume { continuation.resume() }
        }
    }

    func stop() {
        let (task, waiters) = state.withLock { state in
            state.stopped = true
            defer {
                state.task = nil
                state.waiters = []
            }
            return (state.task, state.waiters)
        }
        task?.cancel()
        for waiter in waiters { waiter.resume(throwing: CancellationError()) }
    }

    private static func handle(_ payload: String, client: PostgresClient, namespace: String, instance: String, logger: Logger,
                               broadcaster: ChangeBroadcaster, received: @Sendable () -> Void) async {
        var json = payload
        if payload.hasPrefix("#"), let id = Int64(payload.dropFirst()) {
            // A change set too large for a notification, stored in the change table.
            do {
                var sql = SQL("")
                sql.text = "SELECT \"payload\" FROM \(quote(namespace)).\(quote(SystemTables.changes)) WHERE \"id\" = \(sql.bind(.int(id)))"
                let query = sql.query
                let rows = try await client.withConnection { try await $0.query(query, logger: logger).get() }
                guard let text = rows.rows.first.flatMap({ Cells($0).text(0) }) else {
                    logger.warning("tether.postgres: the change set \(id) announced on \(namespace) is gone (older than ten minutes)")
                    return
                }
                json = text
            } catch {
                logger.warning("tether.postgres: reading the change set \(id) of \(namespace) failed: \(error)")
                return
            }
        }
        guard let message = try? JSONDecoder().decode(ChangeMessage.self, from: Data(json.utf8)) else {
            logger.warning("tether.postgres: an unreadable notification on \(namespace) was ignored")
            return
        }
        guard message.origin != instance, let changes = message.changeSet() else { return }
        received()
        broadcaster.send(changes)
    }
}
