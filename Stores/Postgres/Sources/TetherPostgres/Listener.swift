import Foundation
import Logging
import PostgresNIO
import Synchronization
import Tether

/// Listens on the namespace's channel on one pooled connection and hands the change sets other
/// instances commit to the store's streams. Reconnects after a lost connection (pausing up to
/// five seconds between tries) until stopped.
///
/// **Nothing is missed across a reconnection.** Every write that changed something stores its
/// change set in `_tether_changes` under an id that increases in commit order (the writers of a
/// namespace take the id under one advisory lock held until they commit), and notifies that id.
/// The listener remembers the last id it handled; when it listens again after a lost connection,
/// it first reads the change sets committed meanwhile (`id >` the last one) and hands them on,
/// then skips the notifications of ids it has already handled. When some of those change sets
/// were pruned already (the table keeps the store's `changeRetention` newest), it hands on one
/// change set that marks every stored object of every entity updated (without saying which
/// properties), so that observed queries and objects read everything again.
final class Listener: Sendable {
    let channel: String

    /// What the listener needs of its store.
    struct Context: Sendable {
        let client: PostgresClient
        let namespace: String
        let instance: String
        let logger: Logger
        let broadcaster: ChangeBroadcaster
        let tallies: Tallies
        /// The entities of the store's migrated schema (empty before the migration).
        let entities: @Sendable () -> [String]
    }

    private struct State {
        var task: Task<Void, Never>?
        var listening = false
        var waiters: [CheckedContinuation<Void, any Error>] = []
        var stopped = false
        /// The id of the last change set handled (or found committed when listening began).
        var lastSeen: Int64?
        /// Tests: reconnections wait while held.
        var held = false
        var heldWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    init(channel: String) { self.channel = channel }

    func start(_ context: Context) {
        let channel = channel
        state.withLock { state in
            guard state.task == nil, !state.stopped else { return }
            state.task = Task { [weak self] in
                var pause = 0.05
                while !Task.isCancelled {
                    await self?.waitWhileHeld()
                    if Task.isCancelled { break }
                    do {
                        try await context.client.withConnection { connection in
                            try await connection.listen(on: channel) { notifications in
                                guard let self else { return }
                                // LISTEN is in effect: what commits from now on is notified. What
                                // committed while the listener was away is read first.
                                try await self.catchUp(connection, context)
                                context.tallies.withLock { $0.listens += 1 }
                                self.becameReady()
                                pause = 0.05
                                for try await notification in notifications {
                                    try await self.handle(notification.payload, connection, context)
                                }
                            }
                        }
                    } catch {
                        if Task.isCancelled { break }
                        context.logger.warning("tether.postgres: listening on \(channel) failed, listening again: \(error)")
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

    /// Whether the listening connection is ready now.
    var isListening: Bool { state.withLock { $0.listening } }

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
        let (task, waiters, held) = state.withLock { state in
            state.stopped = true
            state.held = false
            defer {
                state.task = nil
                state.waiters = []
                state.heldWaiters = []
            }
            return (state.task, state.waiters, state.heldWaiters)
        }
        task?.cancel()
        for waiter in waiters { waiter.resume(throwing: CancellationError()) }
        for waiter in held { waiter.resume() }
    }

    // MARK: Holding reconnections (tests)

    /// Makes the listener wait, after its connection is lost, until ``release()``.
    func hold() { state.withLock { $0.held = true } }

    func release() {
        let waiters = state.withLock { state in
            state.held = false
            defer { state.heldWaiters = [] }
            return state.heldWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    private func waitWhileHeld() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resume = state.withLock { state -> Bool in
                guard state.held, !state.stopped else { return true }
                state.heldWaiters.append(continuation)
                return false
            }
            if resume { continuation.resume() }
        }
    }

    // MARK: Change sets

    private var lastSeen: Int64? { state.withLock { $0.lastSeen } }

    private func setLastSeen(_ id: Int64) {
        state.withLock { state in state.lastSeen = max(state.lastSeen ?? id, id) }
    }

    /// Reads what was committed since the last change set handled (nothing the first time: the
    /// listener starts from the last committed id).
    private func catchUp(_ connection: PostgresConnection, _ context: Context) async throws {
        let table = quote(context.namespace) + "." + quote(SystemTables.changes)
        var bounds = SQL("")
        bounds.text = "SELECT min(\"id\"), max(\"id\") FROM \(table)"
        let row: (min: Int64?, max: Int64?)
        do {
            let rows = try await connection.query(bounds.query, logger: context.logger).get().rows
            let cells = rows.first.map(Cells.init)
            row = (cells?.int(0), cells?.int(1))
        } catch let error as PSQLError where ["42P01", "3F000"].contains(error.serverInfo?[.sqlState] ?? "") {
            // The namespace is not migrated yet: nothing was committed.
            row = (nil, nil)
        }
        guard let last = lastSeen else {
            setLastSeen(row.max ?? 0)
            return
        }
        guard let newest = row.max, newest > last else { return }
        if let oldest = row.min, oldest > last + 1 {
            // Change sets committed meanwhile were pruned (or an id was never committed): every
            // object may have changed.
            context.logger.warning("tether.postgres: change sets \(last + 1)..<\(oldest) of \(context.namespace) were pruned before this instance read them; its observers read everything again")
            try await reloadEverything(connection, context)
            setLastSeen(newest)
            return
        }
        // Page by page, in commit order.
        var after = last
        while after < newest {
            var page = SQL("")
            page.text = "SELECT \"id\", \"payload\" FROM \(table) WHERE \"id\" > \(page.bind(.int(after))) AND \"id\" <= \(page.bind(.int(newest))) ORDER BY \"id\" LIMIT 200"
            let rows = try await connection.query(page.query, logger: context.logger).get().rows
            guard !rows.isEmpty else { break }
            for row in rows {
                let cells = Cells(row)
                guard let id = cells.int(0) else { continue }
                if deliver(cells.text(1) ?? "", context) { context.tallies.withLock { $0.replayed += 1 } }
                after = id
                setLastSeen(id)
            }
        }
        setLastSeen(newest)
    }

    /// Handles one notification: `ID JSON` (the change set in the notification) or `ID` (too
    /// large: read from the change table).
    private func handle(_ payload: String, _ connection: PostgresConnection, _ context: Context) async throws {
        let head = payload.prefix { $0 != " " }
        guard let id = Int64(head) else {
            context.logger.warning("tether.postgres: an unreadable notification on \(context.namespace) was ignored")
            return
        }
        if let last = lastSeen, id <= last { return }   // read already, while catching up
        var json = String(payload.dropFirst(head.count + 1))
        if head.count == payload.count {
            var sql = SQL("")
            sql.text = "SELECT \"payload\" FROM \(quote(context.namespace)).\(quote(SystemTables.changes)) WHERE \"id\" = \(sql.bind(.int(id)))"
            let rows = try await connection.query(sql.query, logger: context.logger).get().rows
            guard let text = rows.first.flatMap({ Cells($0).text(0) }) else {
                context.logger.warning("tether.postgres: the change set \(id) announced on \(context.namespace) was pruned before it was read; observers read everything again")
                try await reloadEverything(connection, context)
                setLastSeen(id)
                return
            }
            json = text
        }
        _ = deliver(json, context)
        setLastSeen(id)
    }

    /// Hands another instance's change set on; false for this instance's own (or an unreadable one).
    private func deliver(_ json: String, _ context: Context) -> Bool {
        guard let message = try? JSONDecoder().decode(ChangeMessage.self, from: Data(json.utf8)) else {
            context.logger.warning("tether.postgres: an unreadable change set on \(context.namespace) was ignored")
            return false
        }
        guard message.origin != context.instance, let changes = message.changeSet() else { return false }
        context.tallies.withLock { $0.received += 1 }
        context.broadcaster.send(changes)
        return true
    }

    /// Sends a change set that marks every stored object updated, without saying which
    /// properties: observed queries and objects read again whatever they show.
    private func reloadEverything(_ connection: PostgresConnection, _ context: Context) async throws {
        let entities = context.entities()
        context.tallies.withLock { $0.reloads += 1 }
        guard !entities.isEmpty else { return }
        var sql = SQL("")
        let parts = entities.map { entity in
            "SELECT \(sql.bind(.text(entity)))::text, max(\"rowid\") FROM \(quote(context.namespace)).\(quote(entity))"
        }
        sql.text = parts.joined(separator: " UNION ALL ")
        // Row ids 1 up to the largest of each table: one run per entity.
        var ids = ObjectIDSet()
        for row in try await connection.query(sql.query, logger: context.logger).get().rows {
            let cells = Cells(row)
            guard let entity = cells.text(0), let newest = cells.int(1), newest >= 1 else { continue }
            for rowID in 1...newest { ids.insert(ObjectID(entity: entity, rowID: rowID)) }
        }
        context.broadcaster.send(ChangeSet(updated: ids))
    }
}
