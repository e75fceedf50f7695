#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
public import Foundation
public import Tether
import Synchronization

/// A persistent `Store` in one SQLite file: the default store for apps.
///
/// ```swift
/// let store = try SQLiteStore(path: "/path/to/app.sqlite")
/// let client = try Client.Builder(schema: schema).store(store).build()
/// ```
///
/// Each entity is a table with one typed column per attribute and a `rowid` primary key (the
/// `ObjectID.rowID`); the identity has a unique index. A to-one relationship is a foreign-key
/// column; to-many and many-to-many relationships without a to-one side use a join table, which
/// keeps the order of ordered relationships. See Docs/Stores.md for the file format and migrations.
///
/// The file runs in WAL mode with two connections: writes are serialised on one, each
/// ``write(_:)`` being one transaction, and reads run on the other, seeing the last committed
/// state even while a write is in progress. Each connection's transactions run on a thread of the
/// store's own (`StoreExecutor`), never on a thread of Swift's cooperative pool.
public final class SQLiteStore: Store {
    /// The path of the database file.
    public let path: String
    private let busyTimeout: Duration
    private let writer: Mutex<Connection?>
    private let reader: Mutex<Connection?>
    private let layout = Mutex<Layout?>(nil)
    private let broadcaster = ChangeBroadcaster()
    /// Checkpoints the log after large commits, off the writer's path (nil when read-only).
    private let checkpointer: Checkpointer?
    /// Where write and read transactions run, each on a thread of its own: neither a transaction
    /// nor one waiting for the connection holds a thread of the cooperative pool.
    private let writes = StoreExecutor(label: "tether.sqlite.write")
    private let reads = StoreExecutor(label: "tether.sqlite.read")

    /// Opens (creating if needed) the database at `path`.
    ///
    /// - Parameters:
    ///   - path: the database file; its `-wal` and `-shm` files live beside it.
    ///   - busyTimeout: how long to wait for another process's lock before failing with a
    ///     `StoreError.Kind.storage` error.
    ///   - readOnly: open the file for reading only; writes fail with a `StoreError.Kind.storage`
    ///     error. A file the process may not write to is opened read-only too.
    ///   - cacheSize: the most memory, in bytes (not negative), each of the two connections may
    ///     keep in its page cache (SQLite's `cache_size`). Pages are cached as they are read, so a
    ///     small file never uses more than its size. The default, 64 MiB, keeps an import's cost
    ///     per object nearly flat as the file grows to a million rows (Docs/Performance.md);
    ///     SQLite's own default is 2 MiB.
    public init(path: String, busyTimeout: Duration = .seconds(5), readOnly: Bool = false, cacheSize: Int = SQLiteStore.defaultCacheSize) throws {
        precondition(cacheSize >= 0, "cacheSize is a number of bytes")
        self.path = path
        self.busyTimeout = busyTimeout
        // A negative cache_size is a limit in KiB rather than in pages.
        let cachePragma = "PRAGMA cache_size = -\(max(1, cacheSize / 1024))"
        let connection = try Connection(path: path, readOnly: readOnly, busyTimeout: busyTimeout)
        if !connection.isReadOnly {
            try connection.exec("PRAGMA journal_mode = WAL", "switching to WAL")
            connection.observeLog()
            checkpointer = Checkpointer(path: path)
        } else {
            checkpointer = nil
        }
        try connection.exec("PRAGMA synchronous = NORMAL", "configuring the connection")
        try connection.exec(cachePragma, "configuring the connection")
        writer = Mutex(connection)
        let reading = try Connection(path: path, readOnly: true, busyTimeout: busyTimeout)
        try reading.exec(cachePragma, "configuring the connection")
        reader = Mutex(reading)
    }

    deinit { close() }

    /// The page cache size of each connection unless another is given: 64 MiB.
    public static let defaultCacheSize = 64 << 20

    /// Opens the database at a file URL.
    public convenience init(url: URL, busyTimeout: Duration = .seconds(5), readOnly: Bool = false, cacheSize: Int = SQLiteStore.defaultCacheSize) throws {
        try self.init(path: url.path, busyTimeout: busyTimeout, readOnly: readOnly, cacheSize: cacheSize)
    }

    /// Checkpoints the write-ahead log into the database file and closes both connections, so that
    /// the `.sqlite` file alone holds everything committed (its `-wal` and `-shm` files are
    /// removed). Later calls throw a `StoreError.Kind.storage` error. Closing is also done when
    /// the store is deinitialised.
    public func close() {
        checkpointer?.close()
        // The read-only reader cannot checkpoint: it closes first, and the writer, the last
        // connection, checkpoints the whole log and removes it as it closes.
        reader.withLock { $0 = nil }
        writer.withLock { connection in
            if let connection, !connection.isReadOnly {
                try? connection.exec("PRAGMA wal_checkpoint(TRUNCATE)", "checkpointing before closing")
            }
            connection = nil
        }
    }

    /// The `cache_size` pragma of the write and the read connection (negative: KiB), for tests.
    func cacheSizePragmas() throws -> (writer: Int64, reader: Int64) {
        func pragma(_ connection: Connection?) throws -> Int64 {
            guard let connection else { throw closedError() }
            return try connection.query("PRAGMA cache_size", []) { $0.int(0) }.first ?? 0
        }
        return (try writer.withLock { try pragma($0) }, try reader.withLock { try pragma($0) })
    }

    /// Turns the writing connection's statement meter on (and zeroes it) or off: the statements
    /// it ran and their virtual-machine steps since (tests).
    func meterWrites(_ on: Bool) {
        writer.withLock { connection in
            if on { connection?.startMeter() } else { connection?.metering = false }
        }
    }

    var writeMeter: (statements: Int, steps: Int) { writer.withLock { $0?.meter ?? (0, 0) } }

    /// The metered statements that write (INSERT, UPDATE, DELETE).
    var writingStatements: Int {
        writer.withLock { connection in
            (connection?.meterBySQL ?? [:]).filter { ["INSERT", "UPDATE", "DELETE"].contains($0.key.prefix(6).uppercased()) }
                .reduce(0) { $0 + $1.value.statements }
        }
    }

    /// The metered statements whose SQL text `matches` (tests).
    func meteredStatements(_ matches: (String) -> Bool) -> Int {
        writer.withLock { connection in
            (connection?.meterBySQL ?? [:]).filter { matches($0.key) }.reduce(0) { $0 + $1.value.statements }
        }
    }

    /// The meter per SQL text, the costliest first (a failing test prints it).
    var writeMeterBySQL: String {
        writer.withLock { connection in
            (connection?.meterBySQL ?? [:]).sorted { $0.value.steps > $1.value.steps }.prefix(12)
                .map { "\($0.value.statements)× \($0.value.steps) steps: \($0.key.prefix(160))" }.joined(separator: "\n")
        }
    }

    private func closedError() -> StoreError { StoreError(.storage, "the SQLite store at \(path) is closed") }

    private func currentLayout() throws -> Layout {
        guard let layout = layout.withLock({ $0 }) else {
            throw StoreError(.notPrepared, "the store was not prepared with a schema")
        }
        return layout
    }

    // MARK: Store

    /// Creates the tables of `schema`, or migrates the file's tables to it additively (see
    /// ``prepare(for:migrations:)``).
    public func prepare(for schema: Schema) throws {
        try prepare(for: schema, migrations: [])
    }

    /// Applies the `migrations` the file has not applied yet, in order, then creates what
    /// `schema` adds, in one transaction; records the applied migrations' identifiers in the
    /// file. A file created now is in the schema's shape: every migration is recorded as
    /// applied without running. Any failure (a value that does not convert, a duplicate
    /// identity, a name that is taken) rolls everything back: the file is left as it was.
    public func prepare(for schema: Schema, migrations: [SchemaMigration]) throws {
        try SchemaMigration.validate(migrations)
        let resolved = try writer.withLock { connection throws -> Layout in
            guard let connection else { throw closedError() }
            // A migration changes what the file holds: versions taken before it are not current.
            defer { connection.commits &+= 1 }
            let readOnly = connection.isReadOnly
            try connection.exec(readOnly ? "BEGIN" : "BEGIN IMMEDIATE", "starting the schema migration")
            do {
                let stored = try Self.readLayout(connection)
                let applied = stored == nil ? [] : stored?.appliedMigrations ?? []
                let pending = stored == nil ? [] : migrations.filter { !applied.contains($0.id) }
                if readOnly, let first = pending.first {
                    throw StoreError(.storage, "the database \(connection.path) is read-only; cannot apply the schema migration '\(first.id)'")
                }
                var runner = stored.map { MigrationRunner(connection: connection, layout: $0, schema: schema) }
                for migration in pending { try runner?.apply(migration) }
                var planner = MigrationPlanner(stored: runner?.layout ?? stored, schema: schema)
                try planner.plan()
                let recorded = applied + (stored == nil ? migrations : pending).map(\.id)
                if !recorded.isEmpty { planner.layout.appliedMigrations = recorded }
                if planner.layout != stored && !(readOnly && planner.onlyUpgradesFormat(of: stored)) {
                    if readOnly {
                        throw StoreError(.storage, "the database \(connection.path) is read-only; cannot create or migrate its tables for this schema")
                    }
                    if stored == nil {
                        try connection.exec("CREATE TABLE \(quote(StoredLayout.metadataTable)) (\"key\" TEXT PRIMARY KEY, \"value\" TEXT NOT NULL)", "creating the metadata table")
                    }
                    for statement in planner.ddl { try connection.exec(statement, "migrating the schema (\(statement))") }
                    try runner?.finish(planner.layout)
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.sortedKeys]
                    let json = String(decoding: try encoder.encode(planner.layout), as: UTF8.self)
                    try connection.run("INSERT OR REPLACE INTO \(quote(StoredLayout.metadataTable)) (\"key\", \"value\") VALUES ('layout', ?)",
                                       [.text(json)], context: "saving the schema")
                }
                var layout = Layout(planner.layout, schema: schema)
                if readOnly {
                    layout.hasRemoteRecords = try !connection.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                                                                    [.text(Layout.remoteRecordsTable)]) { _ in true }.isEmpty
                } else {
                    try connection.exec(Layout.createRemoteRecords, "creating the table of remote records")
                }
                try connection.exec("COMMIT", "committing the schema migration")
                return layout
            } catch {
                if connection.inTransaction { try? connection.exec("ROLLBACK", "rolling back") }
                throw error
            }
        }
        layout.withLock { $0 = resolved }
    }

    private static func readLayout(_ connection: Connection) throws -> StoredLayout? {
        let exists = try connection.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                                          [.text(StoredLayout.metadataTable)]) { _ in true }
        guard !exists.isEmpty else { return nil }
        let json = try connection.query("SELECT \"value\" FROM \(quote(StoredLayout.metadataTable)) WHERE \"key\" = 'layout'", []) { $0.text(0) }
        guard let text = json.first else { return nil }
        do {
            return try JSONDecoder().decode(StoredLayout.self, from: Data(text.utf8))
        } catch {
            throw StoreError(.incompatibleSchema, "the schema record of \(connection.path) is unreadable: \(error)")
        }
    }

    public func read<T: Sendable>(_ body: @Sendable (any StoreReader) throws -> T) async throws -> T {
        try await readSQL { try body($0) }
    }

    public func write<T: Sendable>(_ body: @Sendable (any StoreWriter) throws -> T) async throws -> T {
        try await writeSQL { try body($0) }
    }

    /// Runs `body` in a read transaction with access to SQL (``SQLiteTransaction/rows(_:_:)``,
    /// ``SQLiteTransaction/fetch(_:sql:arguments:)``).
    public func readSQL<T: Sendable>(_ body: (SQLiteTransaction) throws -> T) async throws -> T {
        let layout = try currentLayout()
        return try await reads.run { try reader.withLock { connection throws -> T in
            guard let connection else { throw closedError() }
            try connection.exec("BEGIN", "starting a read")
            let transaction = SQLiteTransaction(connection, layout, writable: false)
            defer {
                transaction.finish()
                if connection.inTransaction { try? connection.exec("COMMIT", "ending a read") }
            }
            return try body(transaction)
        } }
    }

    /// Runs `body` in one write transaction with access to SQL (``SQLiteTransaction/execute(_:_:)``
    /// as well as the `StoreWriter` methods). Changes made with raw SQL are not announced on
    /// ``changes()``.
    public func writeSQL<T: Sendable>(_ body: (SQLiteTransaction) throws -> T) async throws -> T {
        let layout = try currentLayout()
        let (result, changes, logFrames) = try await writes.run { try writer.withLock { connection throws -> (T, ChangeSet, Int32) in
            guard let connection else { throw closedError() }
            // After a large commit, a write waits for its checkpoint (the log stays bounded); a
            // small write runs beside one, so that the page an app imports every few seconds does
            // not pay for the checkpoint its predecessors asked for.
            if connection.logFrames >= Checkpointer.waitThreshold { checkpointer?.wait() }
            try connection.exec("BEGIN IMMEDIATE", "starting a write")
            let transaction: SQLiteTransaction
            do {
                let version = StoreVersion(commits: connection.commits, external: try connection.dataVersion())
                transaction = SQLiteTransaction(connection, layout, writable: true, version: version)
            } catch {
                try? connection.exec("ROLLBACK", "rolling back")
                throw error
            }
            do {
                let result = try body(transaction)
                transaction.finish()
                connection.logFrames = 0
                try connection.exec("COMMIT", "committing")
                connection.commits &+= 1
                return (result, transaction.changes, connection.logFrames)
            } catch {
                transaction.finish()
                if connection.inTransaction { try? connection.exec("ROLLBACK", "rolling back") }
                throw error
            }
        } }
        checkpointer?.committed(frames: logFrames)
        broadcaster.send(changes)
        return result
    }

    /// Waits for the checkpoint that runs after a large commit, if any (for tests).
    func waitForCheckpoint() {
        checkpointer?.wait()
    }

    /// Copies the write-ahead log into the database file now, after the checkpoint that may be
    /// running in the background. A large write returns before its log is checkpointed (see
    /// Docs/Stores.md); call this before copying the file elsewhere, or to finish that work before
    /// something else needs the machine. Without waiting for (or blocking) readers and writers: a
    /// reader still using an old snapshot keeps its part of the log.
    public func checkpoint() async {
        guard let checkpointer else { return }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            checkpointer.checkpointNow { done.resume() }
        }
    }

    /// Objects of `entity` selected by an SQL query with bound arguments. The result must have a
    /// `rowid` column; columns named like attributes are read as those attributes.
    ///
    /// ```swift
    /// let popular = try await store.fetch("Repository", sql: #"SELECT * FROM "Repository" WHERE "stars" > ?"#, arguments: [.int(100)])
    /// ```
    public func fetch(_ entity: String, sql: String, arguments: [Value] = []) async throws -> [Object] {
        try await readSQL { try $0.fetch(entity, sql: sql, arguments: arguments) }
    }

    public func changes() -> AsyncStream<ChangeSet> { broadcaster.stream() }
}

extension Client.Builder {
    /// Stores objects in the SQLite file at `path` (created if needed, migrated additively and by
    /// the builder's declared migrations).
    ///
    /// ```swift
    /// let client = try Client.Builder(schema: schema).sqlite(path: "github.sqlite").build()
    /// ```
    public func sqlite(path: String, busyTimeout: Duration = .seconds(5), cacheSize: Int = SQLiteStore.defaultCacheSize) throws -> Self {
        store(try SQLiteStore(path: path, busyTimeout: busyTimeout, cacheSize: cacheSize))
    }
}
