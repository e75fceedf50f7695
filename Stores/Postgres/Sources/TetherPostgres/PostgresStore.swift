import Dispatch
import Foundation
public import Logging
public import PostgresNIO
import Synchronization
public import Tether

/// A `Store` on PostgreSQL, for services that mirror an API into one database from several
/// instances at once.
///
/// ```swift
/// let postgres = PostgresClient(configuration: configuration)   // the app's pool
/// async let _ = postgres.run()                                  // as postgres-nio requires
/// let store = PostgresStore(client: postgres, namespace: "github")
/// let client = try Client.Builder(schema: schema).store(store).build()
/// ```
///
/// Everything lives in the PostgreSQL schema named by `namespace` (created if needed and migrated
/// additively by ``prepare(for:)``): a table per entity with a `rowid` (the `ObjectID.rowID`) and
/// a column per attribute, a unique index on the identity, a foreign-key column per to-one
/// relationship (unless its inverse is ordered: one column for a one-to-one), and a join table per
/// other relationship.
///
/// **Transactions.** Each ``write(_:)`` is one transaction at `REPEATABLE READ` on a connection
/// leased from the pool for that transaction only; the writes of one store instance run one at a
/// time, and wait for their turn without holding a connection. Writes of other instances run
/// beside them: an identity stored at the same moment by another instance, a row or link another
/// transaction changed, or a deadlock makes PostgreSQL refuse to serialise the transaction
/// (SQL state 40001 or 40P01), and the store runs the whole body again, up to
/// `maximumAttempts` times, after a short random pause. Reads run at `REPEATABLE READ READ ONLY`
/// on a connection of their own, beside writes.
///
/// **Threads.** A body runs synchronously, as the `Store` protocol has it; it runs on a thread of
/// the store's own (a `StoreExecutor`), never on one of Swift's cooperative pool, and each
/// statement waits for postgres-nio there. ``prepare(for:)``, which the client's builder calls,
/// does not wait for the server: the namespace is migrated before the first transaction, or by
/// ``migrate()``.
///
/// **Other instances.** A write that changed something stores its ``ChangeSet`` in the
/// `_tether_changes` table, under an id that increases in commit order, and sends it (or, when it
/// is larger than a notification holds, its id) with `NOTIFY`, in the same transaction.
/// ``changes()`` starts listening on one pooled connection: change sets committed by other
/// instances on the same namespace then arrive on every stream too, so that observed queries and
/// remote-backed lists follow them. A listener whose connection was lost reads, when it listens
/// again, the change sets committed meanwhile; the table keeps the newest `changeRetention`, and
/// a listener that missed more hands on one change set that marks everything updated.
/// See Docs/PostgreSQL.md.
public final class PostgresStore: Store {
    /// The PostgreSQL schema that holds the store's tables.
    public let namespace: String
    /// How many times a write transaction is run before a serialization failure or deadlock is
    /// reported.
    public let maximumAttempts: Int
    /// About how many of the newest change sets the change table keeps for listeners that lost
    /// their connection (older ones are pruned as writes commit).
    public let changeRetention: Int
    private let client: PostgresClient
    private let logger: Logger
    private let schemaState = Mutex<SchemaState>(.unprepared)
    private let migrations = AsyncLock()
    private let broadcaster = ChangeBroadcaster()
    private let writeLock = AsyncLock()
    private let writes = StoreExecutor(label: "tether.postgres.write")
    /// Identifies this instance in its notifications, so that it skips its own.
    let instance = UUID().uuidString
    private let listener: Listener
    private let tallies = Tallies()

    /// What the store did, for tests and tuning.
    public struct Counters: Sendable, Hashable {
        /// Write transactions committed.
        public var commits = 0
        /// Write transactions run again after a serialization failure or a deadlock.
        public var retries = 0
        /// Statements run by write transactions.
        public var writeStatements = 0
        /// Change sets received from other instances.
        public var received = 0
        /// Times the listener began listening (more than once after a lost connection).
        public var listens = 0
        /// Change sets of other instances read from the change table after the listener's
        /// connection was lost and listened again (counted in `received` too).
        public var replayed = 0
        /// Times the listener had missed change sets that were pruned already, and announced
        /// every object as updated instead.
        public var reloads = 0
    }

    /// A store on the app's pool `client` (whose `run()` the app runs), in the PostgreSQL
    /// schema `namespace`.
    ///
    /// - Parameters:
    ///   - client: the app's `PostgresClient`; each transaction leases one connection for its
    ///     duration, and observing changes keeps one more.
    ///   - namespace: the PostgreSQL schema of the store's tables (created if needed); at most 50
    ///     bytes.
    ///   - maximumAttempts: how many times a write is run when PostgreSQL cannot serialise it
    ///     with concurrent writes (1 to 1,000).
    ///   - changeRetention: about how many of the newest change sets the namespace's change
    ///     table keeps, so that an instance whose listening connection was lost reads what it
    ///     missed when it listens again (1 to 10,000,000; the smallest among the instances
    ///     writing a namespace applies). An instance that missed more announces every object as
    ///     updated instead.
    ///   - logger: where postgres-nio logs the store's statements.
    public init(client: PostgresClient, namespace: String = "tether", maximumAttempts: Int = 20,
                changeRetention: Int = 10_000, logger: Logger = Logger(label: "tether.postgres")) {
        precondition((1...1000).contains(maximumAttempts), "maximumAttempts is 1 to 1,000")
        precondition((1...10_000_000).contains(changeRetention), "changeRetention is 1 to 10,000,000")
        precondition(!namespace.isEmpty && namespace.utf8.count <= 50, "a namespace is 1 to 50 bytes")
        self.client = client
        self.namespace = namespace
        self.maximumAttempts = maximumAttempts
        self.changeRetention = changeRetention
        self.logger = logger
        listener = Listener(channel: "tether." + namespace)
    }

    deinit { listener.stop() }

    /// Stops listening for other instances' changes (``changes()`` streams then receive this
    /// instance's only). The pool stays the app's.
    public func close() {
        listener.stop()
    }

    /// What the store has done since it was made.
    public var counters: Counters { tallies.withLock { $0 } }

    private enum SchemaState: Sendable {
        case unprepared
        /// Prepared: the migration runs before the first transaction (or ``migrate()``).
        case pending(Schema)
        case ready(Layout)
    }

    /// The layout of the prepared schema, migrating the namespace first when that has not been
    /// done (once: concurrent callers wait for the one migration).
    private func currentLayout() async throws -> Layout {
        switch schemaState.withLock({ $0 }) {
        case .unprepared: throw StoreError(.notPrepared, "the store was not prepared with a schema")
        case .ready(let layout): return layout
        case .pending: break
        }
        return try await migrations.withLock {
            let state = schemaState.withLock { $0 }
            switch state {
            case .unprepared: throw StoreError(.notPrepared, "the store was not prepared with a schema")
            case .ready(let layout): return layout
            case .pending(let schema):
                let namespace = namespace
                let logger = logger
                let layout = try await leased { postgres in
                    try await StoreExecutor(label: "tether.postgres.migrate").run {
                        try Self.migrate(Connection(postgres, logger: logger), schema, namespace)
                    }
                }
                schemaState.withLock { state in
                    if case .pending(let current) = state, current == schema { state = .ready(layout) }
                }
                return layout
            }
        }
    }

    // MARK: Store

    /// Takes the schema the store's tables follow. The namespace is created or migrated
    /// additively (new entities, attributes and relationships) before the first transaction, or
    /// by ``migrate()``: in one transaction that holds an advisory lock, so that instances
    /// starting together migrate one after another. Names PostgreSQL cannot hold (longer than
    /// 63 bytes, `rowid`, the `_tether_` prefix) are refused here; a schema incompatible with
    /// what the namespace holds is refused by the migration, with nothing changed.
    ///
    /// `prepare(for:)` is synchronous (the client's builder calls it) and PostgreSQL is not: the
    /// store does not wait for the server here, so that building a client never blocks a thread
    /// of Swift's cooperative pool (which, on a machine of few cores, could keep postgres-nio's
    /// pool from running at all). Call ``migrate()`` at startup to migrate, and to see a
    /// migration's error, before serving.
    public func prepare(for schema: Schema) throws {
        var planner = MigrationPlanner(stored: nil, schema: schema, namespace: namespace)
        try planner.plan()
        schemaState.withLock { state in
            if case .pending(let current) = state, current == schema { return }
            state = .pending(schema)
        }
    }

    /// Creates or migrates the namespace's tables for the prepared schema now, if that has not
    /// been done: what the first transaction would do. Throws `StoreError.Kind.notPrepared`
    /// before ``prepare(for:)``, and the migration's errors (`incompatibleSchema`, `storage`).
    public func migrate() async throws {
        _ = try await currentLayout()
    }

    private static func migrate(_ connection: Connection, _ schema: Schema, _ namespace: String) throws -> Layout {
        try connection.execute("BEGIN", "starting the schema migration")
        do {
            var lock = SQL("")
            lock.text = "SELECT pg_advisory_xact_lock(hashtext(\(lock.bind(.text("tether:" + namespace)))))"
            try connection.query(lock, "waiting for other instances' migrations")
            try connection.execute("CREATE SCHEMA IF NOT EXISTS \(quote(namespace))", "creating the schema \(namespace)")
            for statement in SystemTables.create(namespace) { try connection.execute(statement, "creating Tether's tables") }
            let metadata = quote(namespace) + "." + quote(StoredLayout.metadataTable)
            let json = try connection.query(SQL("SELECT \"value\" FROM \(metadata) WHERE \"key\" = 'layout'"), "reading the schema record")
                .first.flatMap { Cells($0).text(0) }
            let stored: StoredLayout?
            do {
                stored = try json.map { try JSONDecoder().decode(StoredLayout.self, from: Data($0.utf8)) }
            } catch {
                throw StoreError(.incompatibleSchema, "the schema record of the namespace '\(namespace)' is unreadable: \(error)")
            }
            var planner = MigrationPlanner(stored: stored, schema: schema, namespace: namespace)
            try planner.plan()
            if planner.layout != stored {
                for check in planner.checks {
                    if !(try connection.query(SQL(check.sql), "checking the namespace before its migration")).isEmpty {
                        throw StoreError(.incompatibleSchema, entity: check.entity, member: check.member, check.message)
                    }
                }
                for statement in planner.ddl { try connection.execute(statement, "migrating the schema (\(statement))") }
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                var save = SQL("")
                save.text = "INSERT INTO \(metadata) (\"key\", \"value\") VALUES ('layout', \(save.bind(.text(String(decoding: try encoder.encode(planner.layout), as: UTF8.self))))) "
                    + "ON CONFLICT (\"key\") DO UPDATE SET \"value\" = EXCLUDED.\"value\""
                try connection.query(save, "saving the schema record")
            }
            try connection.execute("COMMIT", "committing the schema migration")
            return Layout(planner.layout, schema: schema, namespace: namespace)
        } catch {
            connection.reset()
            try? connection.execute("ROLLBACK", "rolling back the schema migration")
            throw error
        }
    }

    public func read<T: Sendable>(_ body: @Sendable (any StoreReader) throws -> T) async throws -> T {
        try await readSQL { try body($0) }
    }

    public func write<T: Sendable>(_ body: @Sendable (any StoreWriter) throws -> T) async throws -> T {
        try await writeSQL { try body($0) }
    }

    /// Runs `body` in a read transaction (`REPEATABLE READ READ ONLY`) with access to SQL
    /// (``PostgresTransaction/rows(_:_:)``).
    public func readSQL<T: Sendable>(_ body: (PostgresTransaction) throws -> T) async throws -> T {
        let layout = try await currentLayout()
        let logger = logger
        return try await leased { postgres in
            try await StoreExecutor(label: "tether.postgres.read").run {
                let connection = Connection(postgres, logger: logger)
                try connection.begin("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", "starting a read")
                let transaction = PostgresTransaction(connection, layout, writable: false)
                defer {
                    transaction.finish()
                    connection.reset()
                    try? connection.execute("COMMIT", "ending a read")
                }
                do {
                    return try body(transaction)
                } catch {
                    // A read has no effect: one whose connection ended midway is read again on another.
                    if connection.isLost { throw StaleConnection(error: Connection.storeError(error, "reading", entity: nil).error) }
                    throw error
                }
            }
        }
    }

    /// Runs `body` in one write transaction with access to SQL
    /// (``PostgresTransaction/execute(_:_:)`` as well as the `StoreWriter` methods); runs it
    /// again when PostgreSQL cannot serialise it with other instances' writes. Changes made with
    /// raw SQL are not announced on ``changes()``.
    public func writeSQL<T: Sendable>(_ body: (PostgresTransaction) throws -> T) async throws -> T {
        let layout = try await currentLayout()
        let logger = logger
        let channel = listener.channel
        let instance = instance
        let retention = changeRetention
        return try await writeLock.withLock {
            var attempt = 0
            while true {
                attempt += 1
                let outcome: Attempt<T> = try await leased { postgres in
                    try await writes.run {
                        try Self.transaction(Connection(postgres, logger: logger), layout, channel: channel, instance: instance,
                                             retention: retention, body)
                    }
                }
                switch outcome {
                case .committed(let result, let changes, let statements):
                    tallies.withLock {
                        $0.commits += 1
                        $0.writeStatements += statements
                    }
                    broadcaster.send(changes)
                    return result
                case .retry(let error), .lost(let error):
                    guard attempt < maximumAttempts else {
                        let why = if case .lost = outcome { "each time its connection to PostgreSQL was lost before COMMIT" }
                            else { "each refused by PostgreSQL for concurrent writes" }
                        throw StoreError(error.kind, entity: error.entity, member: error.member,
                                         "\(error.message); the write was run \(attempt) times, \(why)")
                    }
                    tallies.withLock { $0.retries += 1 }
                    // A random pause, growing with the attempts (at most 0.2 s), so that the
                    // writers that collided do not collide again.
                    let ceiling = min(200, 2 << min(attempt, 7))
                    try await Task.sleep(for: .milliseconds(Int.random(in: 1...ceiling)))
                }
            }
        }
    }

    private enum Attempt<T: Sendable>: Sendable {
        case committed(T, ChangeSet, Int)
        /// A serialization failure or a deadlock: run it again.
        case retry(StoreError)
        /// The connection ended before `COMMIT` was sent (PostgreSQL rolled the transaction
        /// back): run it again on another connection.
        case lost(StoreError)
    }

    /// One attempt at a write transaction, on a thread of the store's own.
    private static func transaction<T: Sendable>(_ connection: Connection, _ layout: Layout, channel: String, instance: String,
                                                 retention: Int, _ body: (PostgresTransaction) throws -> T) throws -> Attempt<T> {
        try connection.begin("BEGIN ISOLATION LEVEL REPEATABLE READ", "starting a write")
        let transaction = PostgresTransaction(connection, layout, writable: true)
        func rollBack() {
            transaction.finish()
            let failure = connection.failure
            connection.reset()
            try? connection.execute("ROLLBACK", "rolling back")
            _ = failure
        }
        let result: T
        do {
            result = try body(transaction)
        } catch {
            let retry = connection.mustRetry ? connection.failure : nil
            let lost = connection.isLost
            rollBack()
            if let retry { return .retry(retry) }
            // The connection ended before COMMIT was sent: PostgreSQL rolled the transaction
            // back, and it is run again on another connection.
            if lost { return .lost(Connection.storeError(error, "writing", entity: nil).error) }
            throw error
        }
        if let failure = connection.failure {
            // The body caught a failure of the server and went on: the transaction is aborted.
            let retry = connection.mustRetry
            let lost = connection.isLost
            rollBack()
            if retry { return .retry(failure) }
            if lost { return .lost(failure) }
            throw failure
        }
        transaction.finish()
        let changes = transaction.changes
        var changeID: Int64?
        do {
            if !changes.isEmpty {
                changeID = try notify(connection, layout, channel: channel, ChangeMessage(origin: instance, changes))
            }
            try connection.execute("COMMIT", "committing")
        } catch {
            let retry = connection.mustRetry ? connection.failure : nil
            rollBack()
            if let retry { return .retry(retry) }
            throw error
        }
        if let changeID { prune(connection, layout, after: changeID, retention: retention) }
        return .committed(result, changes, connection.statements)
    }

    /// Notifications hold less than 8,000 bytes: a larger change set is sent by its id alone.
    static let notificationLimit = 7_900

    /// Stores the change set in the change table and notifies it, as the transaction's last
    /// statement: `ID JSON`, or `ID` alone when the JSON is too large for a notification. The id
    /// is taken under an advisory lock of the namespace held until the transaction ends, so that
    /// ids increase in commit order (what a listener that lost its connection relies on to read
    /// what it missed). Returns the id.
    private static func notify(_ connection: Connection, _ layout: Layout, channel: String, _ message: ChangeMessage) throws -> Int64 {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = String(decoding: try encoder.encode(message), as: UTF8.self)
        let table = layout.table(SystemTables.changes)
        var sql = SQL("")
        let payload = sql.bind(.text(json))
        // A function in FROM runs before the row it yields is inserted (and its id drawn).
        let lock = "pg_advisory_xact_lock(hashtext(\(sql.bind(.text(layout.namespace)))), \(changeLockKey))"
        let notification = json.utf8.count <= notificationLimit ? "\"id\"::text || ' ' || \(payload)" : "\"id\"::text"
        sql.text = "WITH stored AS (INSERT INTO \(table) (\"payload\") SELECT \(payload) FROM \(lock) AS l RETURNING \"id\") "
            + "SELECT \"id\", pg_notify(\(sql.bind(.text(channel))), \(notification)) FROM stored"
        let rows = try connection.query(sql, "announcing the changes to other instances")
        guard let id = rows.first.flatMap({ Cells($0).int(0) }) else {
            throw StoreError(.storage, "announcing the changes to other instances: PostgreSQL returned no change id")
        }
        return id
    }

    /// The second key of the advisory lock under which writes take their change id (the first is
    /// the namespace's hash; the migration's lock is a one-key lock, of another key space).
    static let changeLockKey = 0x7465_7468

    /// After a commit, now and then (every `retention / 2` ids, at most every 64): removes the
    /// change sets older than the newest `retention`, outside the write's transaction, so that
    /// two instances pruning at once never make a write fail to serialise. A failure is logged
    /// and left for the next prune.
    private static func prune(_ connection: Connection, _ layout: Layout, after id: Int64, retention: Int) {
        let every = Int64(max(1, min(64, retention / 2)))
        guard id % every == 0, id > Int64(retention) else { return }
        var sql = SQL("")
        sql.text = "DELETE FROM \(layout.table(SystemTables.changes)) WHERE \"id\" <= \(sql.bind(.int(id - Int64(retention))))"
        do {
            try connection.query(sql, "pruning the change table")
        } catch {
            connection.logger.warning("tether.postgres: \(error)")
        }
        connection.reset()
    }

    /// Runs `body` on a connection leased from the pool, mapping a failure to lease or of the
    /// connection to a `StoreError`.
    /// A connection of the pool may have died since it was last used (the server restarted, or
    /// terminated it), or die during a read: a transaction that finds its connection closed
    /// before it began, or a read that loses it, is run again on another one, up to this many
    /// times (after 40, 80, 160, then every 320 ms: about 3 s in all; enough for a pool whose
    /// every idle connection the server ended). A write that loses its connection before
    /// `COMMIT` is run again as after a serialization failure, up to `maximumAttempts` times.
    static let staleConnectionAttempts = 12

    private func leased<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await client.withConnection { connection in
                    do { return try await body(connection) } catch { throw BodyError(error: error) }
                }
            } catch let inner as BodyError {
                if inner.error is StaleConnection, attempt < Self.staleConnectionAttempts {
                    // The pool notices a closed connection on its own task: give it a moment.
                    try await Task.sleep(for: .milliseconds(min(320, 20 << attempt)))
                    continue
                }
                if let stale = inner.error as? StaleConnection { throw stale.error }
                throw inner.error
            } catch {
                throw Connection.storeError(error, "leasing a connection from the pool", entity: nil).error
            }
        }
    }

    /// A stream of the changes of every transaction committed after the call, by this instance
    /// or, once the store listens (which this call starts; ``listen()`` waits for it), by other
    /// instances on the same namespace.
    public func changes() -> AsyncStream<ChangeSet> {
        let stream = broadcaster.stream()
        listener.start(listenerContext)
        return stream
    }

    private var listenerContext: Listener.Context {
        Listener.Context(client: client, namespace: namespace, instance: instance, logger: logger, broadcaster: broadcaster,
                         tallies: tallies, entities: { [weak self] in self?.migratedEntities ?? [] })
    }

    /// The entities of the migrated schema (none before the migration).
    private var migratedEntities: [String] {
        schemaState.withLock { state in
            if case .ready(let layout) = state { return layout.entities.keys.sorted() }
            return []
        }
    }

    /// Starts listening for other instances' commits, if not already, and waits until the
    /// listening connection is ready: a commit of another instance after this returns reaches
    /// ``changes()``.
    public func listen() async throws {
        listener.start(listenerContext)
        try await listener.ready()
    }

    // MARK: Tests

    /// Whether the listener's connection is ready now.
    package var isListening: Bool { listener.isListening }

    /// Makes the listener wait, once its connection is lost, until ``releaseListener()``: what
    /// other instances commit meanwhile is read when it listens again.
    package func holdListener() { listener.hold() }

    /// Lets a held listener listen again.
    package func releaseListener() { listener.release() }
}

/// A transaction could not begin: its connection was closed (`error` says how).
struct StaleConnection: Error {
    let error: StoreError
}

/// An error of a transaction's body, passed through the pool's lease as it is.
struct BodyError: Error {
    let error: any Error
}

/// The store's counters, shared with its listener.
final class Tallies: Sendable {
    private let counters = Mutex(PostgresStore.Counters())
    func withLock<T>(_ body: (inout PostgresStore.Counters) -> T) -> T { counters.withLock { body(&$0) } }
}
