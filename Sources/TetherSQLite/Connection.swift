#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import Foundation
import Tether

/// A value as SQLite stores it.
enum SQLValue {
    case null
    case int(Int64)
    case double(Double)
    case text(String)
    case blob(Data)
}

/// `SQLITE_TRANSIENT`: SQLite copies bound text and blobs.
private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// Quotes an SQL identifier: double quotes, embedded double quotes doubled.
func quote(_ identifier: String) -> String {
    guard identifier.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + identifier + "\"" }
    return "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}

/// One SQLite connection with a cache of prepared statements. Not thread-safe: the store keeps
/// each connection inside a `Mutex`.
final class Connection {
    let db: OpaquePointer
    let path: String
    private var statements: [String: PreparedStatement] = [:]
    /// The same statements by what they do (``StatementKey``), for the statements a small write
    /// runs many times: found without building and hashing their text.
    private var keyed: [StatementKey: (sql: String, statement: PreparedStatement)] = [:]
    /// Past this many statements the cache starts again from none. A statement a caller still
    /// holds stays prepared until the caller lets it go (``PreparedStatement``).
    static let cacheLimit = 256

    init(path: String, readOnly: Bool, busyTimeout: Duration) throws(StoreError) {
        var handle: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(handle)
            throw StoreError(.storage, "cannot open the SQLite database at \(path): \(message) (code \(rc))")
        }
        db = handle
        self.path = path
        let milliseconds = busyTimeout.components.seconds * 1000 + busyTimeout.components.attoseconds / 1_000_000_000_000_000
        sqlite3_busy_timeout(db, Int32(clamping: milliseconds))
        sqlite3_extended_result_codes(db, 1)
    }

    deinit {
        // No caller holds a statement (a `Statement` keeps its connection), so these are the last
        // references: the statements are finalized here, before the connection closes.
        keyed.removeAll()
        statements.removeAll()
        sqlite3_close_v2(db)
    }

    var isReadOnly: Bool { sqlite3_db_readonly(db, "main") == 1 }
    var inTransaction: Bool { sqlite3_get_autocommit(db) == 0 }
    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(db) }
    var changes: Int { Int(sqlite3_changes(db)) }
    /// The most parameters one statement may have (`SQLITE_LIMIT_VARIABLE_NUMBER`).
    var variableLimit: Int { Int(sqlite3_limit(db, SQLITE_LIMIT_VARIABLE_NUMBER, -1)) }
    /// Whether statements count their runs and virtual-machine steps in ``meter`` (tests measure
    /// how the work of a write grows with it).
    var metering = false
    var meter = (statements: 0, steps: 0)
    /// Starts the meter at zero, with every cached statement's step counter too.
    func startMeter() {
        for statement in statements.values { sqlite3_stmt_status(statement.handle, SQLITE_STMTSTATUS_VM_STEP, 1) }
        meter = (0, 0)
        meterBySQL = [:]
        metering = true
    }

    /// The same, per SQL text.
    var meterBySQL: [String: (statements: Int, steps: Int)] = [:]
    /// Pages in the write-ahead log after the last commit, once ``observeLog()`` was called.
    var logFrames: Int32 = 0
    /// Write transactions (and schema migrations) committed on this connection: with
    /// ``dataVersion()``, the store's ``StoreVersion``.
    var commits: UInt64 = 0

    /// A number that changes whenever another connection (of this process or another) commits to
    /// the file; this connection's own commits leave it as it is (`PRAGMA data_version`). Read in
    /// a transaction, it is that of the transaction's snapshot.
    func dataVersion() throws -> UInt64 {
        UInt64(bitPattern: try query("PRAGMA data_version", [], context: "reading the data version") { $0.int(0) }.first ?? 0)
    }

    /// Reports the size of the log after each commit in ``logFrames``, and turns off SQLite's
    /// automatic checkpoint (a connection has one log hook: the automatic checkpoint is one).
    func observeLog() {
        sqlite3_wal_hook(db, Self.logHook, Unmanaged.passUnretained(self).toOpaque())
    }

    private static let logHook: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafePointer<CChar>?, Int32) -> Int32 = {
        context, _, _, frames in
        if let context { Unmanaged<Connection>.fromOpaque(context).takeUnretainedValue().logFrames = frames }
        return SQLITE_OK
    }

    /// Copies what it can of the write-ahead log into the database file without waiting for
    /// readers or writers (`SQLITE_CHECKPOINT_PASSIVE`). Opportunistic: a checkpoint that cannot
    /// run now is left for the next one.
    func checkpoint() {
        sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
    }

    /// The extended result code of the last failed call.
    var extendedErrorCode: Int32 { sqlite3_extended_errcode(db) }

    /// A clear error for a failed SQLite call.
    func error(_ rc: Int32, _ context: String) -> StoreError {
        let message = String(cString: sqlite3_errmsg(db))
        switch rc & 0xff {
        case SQLITE_FULL:
            return StoreError(.storage, "the database or disk is full while \(context) (\(path)): \(message)")
        case SQLITE_READONLY:
            return StoreError(.storage, "the database \(path) is read-only; cannot write while \(context): \(message)")
        case SQLITE_BUSY, SQLITE_LOCKED:
            return StoreError(.storage, "the database \(path) is locked by another connection (the busy timeout elapsed) while \(context): \(message)")
        case SQLITE_CORRUPT, SQLITE_NOTADB:
            return StoreError(.storage, "the database \(path) is corrupt or not a database while \(context): \(message)")
        case SQLITE_IOERR, SQLITE_CANTOPEN:
            return StoreError(.storage, "I/O error on \(path) while \(context): \(message)")
        default:
            return StoreError(.storage, "SQLite error \(rc) while \(context): \(message)")
        }
    }

    /// Runs SQL text without parameters (DDL, transaction control, pragmas); several statements allowed.
    func exec(_ sql: String, _ context: String) throws(StoreError) {
        let rc = sqlite3_exec(db, sql, nil, nil, nil)
        if rc != SQLITE_OK { throw error(rc, context) }
    }

    private func statement(_ sql: String) throws(StoreError) -> PreparedStatement {
        if let cached = statements[sql] { return cached }
        if statements.count >= Self.cacheLimit {
            // Only the cache lets them go: a statement a caller is binding or stepping (a batch
            // insert whose rows' links prepare statements of their own) is finalized when the
            // caller is done with it, not under its feet.
            statements.removeAll()
            keyed.removeAll()
        }
        var statement: OpaquePointer?
        var rest = ""
        let rc = sql.withCString { text in
            var tail: UnsafePointer<CChar>?
            let rc = sqlite3_prepare_v3(db, text, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, &tail)
            // What follows the first statement: `tail` points into `text`, which exists only here.
            if let tail { rest = String(cString: tail) }
            return rc
        }
        guard rc == SQLITE_OK, let statement else {
            throw error(rc, "preparing \(sql)")
        }
        if !rest.trimmingCharacters(in: .whitespacesAndNewlines.union(CharacterSet(charactersIn: ";"))).isEmpty {
            sqlite3_finalize(statement)
            throw StoreError(.unsupported, "one SQL statement at a time: \(sql)")
        }
        let prepared = PreparedStatement(statement)
        statements[sql] = prepared
        return prepared
    }

    /// Runs one statement with bound arguments, calling `row` for each result row.
    func run(_ sql: String, _ arguments: [SQLValue], context: @autoclosure () -> String = "running a statement",
             row: (Row) throws -> Void = { _ in }) throws {
        let statement = try prepared(sql)
        for (i, argument) in arguments.enumerated() {
            let index = Int32(i + 1)
            let rc = bindArgument(argument, to: statement.handle, at: index)
            if rc != SQLITE_OK {
                sqlite3_clear_bindings(statement.handle)
                throw error(rc, "binding argument \(index) of \(sql)")
            }
        }
        try statement.query(context(), row: row)
    }

    /// A cached prepared statement, for a caller that binds and steps it itself (batch writes).
    func prepared(_ sql: String) throws(StoreError) -> Statement {
        Statement(try statement(sql), connection: self, sql: sql)
    }

    /// The cached prepared statement of `key`, whose text `sql` builds the first time.
    func prepared(_ key: StatementKey, _ sql: () -> String) throws(StoreError) -> Statement {
        if let (text, prepared) = keyed[key] { return Statement(prepared, connection: self, sql: text) }
        let text = sql()
        let prepared = try statement(text)
        keyed[key] = (text, prepared)
        return Statement(prepared, connection: self, sql: text)
    }

    /// The result rows of a query, each decoded by `decode`.
    func query<T>(_ sql: String, _ arguments: [SQLValue], context: @autoclosure () -> String = "reading",
                  _ decode: (Row) throws -> T) throws -> [T] {
        var result: [T] = []
        try run(sql, arguments, context: context()) { result.append(try decode($0)) }
        return result
    }
}

/// Binds `value` to parameter `index` of `statement`; returns SQLite's result code.
private func bindArgument(_ value: SQLValue, to statement: OpaquePointer, at index: Int32) -> Int32 {
    switch value {
    case .null: return sqlite3_bind_null(statement, index)
    case .int(let v): return sqlite3_bind_int64(statement, index, v)
    case .double(let v): return sqlite3_bind_double(statement, index, v)
    case .text(let v): return bindText(v, to: statement, at: index)
    case .blob(let v):
        return v.withUnsafeBytes { bytes in
            sqlite3_bind_blob64(statement, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), UInt64(bytes.count), transient)
        }
    }
}

/// Binds a string with a 64-bit length, so that one of 2 GiB or more is SQLite's `SQLITE_TOOBIG`
/// (a clean ``StoreError``), as any string beyond its length limit is, rather than a trap.
private func bindText(_ v: String, to statement: OpaquePointer, at index: Int32) -> Int32 {
    v.utf8.withContiguousStorageIfAvailable { bytes in
        bytes.withMemoryRebound(to: CChar.self) { text in
            guard let base = text.baseAddress else { return sqlite3_bind_text(statement, index, "", 0, transient) }
            return sqlite3_bind_text64(statement, index, base, UInt64(text.count), transient, UInt8(SQLITE_UTF8))
        }
    } ?? {
        var copy = v
        copy.makeContiguousUTF8()
        return bindText(copy, to: statement, at: index)
    }()
}

/// What a statement the store builds from its layout does, as the key of the connection's cache.
enum StatementKey: Hashable {
    /// The identity lookup of `table` reading `columns`, for `size` keys.
    case lookUp(table: String, columns: [String], size: Int)
    /// Inserting `size` links into a join table, from side a (or b).
    case insertLinks(table: String, sideA: Bool, size: Int)
    /// Deleting `size` links of a join table of `shape` (its pairs' columns in the order of the
    /// key or index that holds them).
    case deleteLinks(table: String, shape: JoinShape, size: Int)
    /// Deleting `size` links of a join table keyed by side a's (or b's) row and position.
    case deleteKeyedLinks(table: String, sideA: Bool, size: Int)
    /// Deleting every link of `size` rows of side a (or b) of a join table.
    case deleteRowLinks(table: String, sideA: Bool, size: Int)
    /// The last position among their links of `size` rows of a join table's other side.
    case lastPositions(table: String, sideA: Bool, size: Int)
    /// Setting a foreign-key column of `size` rows, each to its own value.
    case setColumn(table: String, column: String, size: Int)
}

/// A prepared statement of a connection's cache, finalized when neither the cache nor a caller
/// holds it any longer.
final class PreparedStatement {
    let handle: OpaquePointer

    init(_ handle: OpaquePointer) { self.handle = handle }

    deinit { sqlite3_finalize(handle) }
}

/// A prepared statement bound and run directly, without argument arrays: the batch write path.
/// It keeps its statement prepared (and its connection open) while it exists.
struct Statement {
    let handle: OpaquePointer
    let connection: Connection
    let sql: String
    private let prepared: PreparedStatement

    init(_ prepared: PreparedStatement, connection: Connection, sql: String) {
        self.prepared = prepared
        handle = prepared.handle
        self.connection = connection
        self.sql = sql
    }

    @inline(__always)
    private func check(_ rc: Int32, _ index: Int32) throws(StoreError) {
        if rc != SQLITE_OK { throw connection.error(rc, "binding argument \(index) of \(sql)") }
    }

    func bindNull(_ index: Int32) throws(StoreError) { try check(sqlite3_bind_null(handle, index), index) }
    func bind(_ index: Int32, _ value: Int64) throws(StoreError) { try check(sqlite3_bind_int64(handle, index, value), index) }

    /// Binds an attribute value (already checked to fit `type`) as its column stores it.
    func bind(_ index: Int32, _ value: borrowing Value, as type: AttributeType) throws(StoreError) {
        // Exactly what `Codec.encode` gives, without the intermediate `SQLValue` (or a copy of
        // the value).
        if case .transformable = type {
            try check(bindArgument(Codec.encode(copy value, as: type), to: handle, at: index), index)
            return
        }
        let rc: Int32
        switch value {
        case .string(let v):
            rc = bindText(v, to: handle, at: index)
        case .int(let v): rc = sqlite3_bind_int64(handle, index, v)
        case .bool(let v): rc = sqlite3_bind_int64(handle, index, v ? 1 : 0)
        case .double(let v): rc = sqlite3_bind_double(handle, index, v)
        case .date(let v): rc = sqlite3_bind_double(handle, index, v.timeIntervalSinceReferenceDate)
        default:
            rc = bindArgument(Codec.encode(copy value, as: type), to: handle, at: index)
        }
        try check(rc, index)
    }

    private func record() {
        let steps = Int(sqlite3_stmt_status(handle, SQLITE_STMTSTATUS_VM_STEP, 1))
        connection.meter.statements += 1
        connection.meter.steps += steps
        connection.meterBySQL[sql, default: (0, 0)].statements += 1
        connection.meterBySQL[sql, default: (0, 0)].steps += steps
    }

    /// Runs the statement once (no result rows expected). On failure the error is built before
    /// the statement is reset, so that `extendedErrorCode` still tells what failed.
    func execute(_ context: @autoclosure () -> String, onError: (StoreError) throws -> Void = { throw $0 }) throws {
        defer {
            if connection.metering { record() }
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
        }
        var rc = sqlite3_step(handle)
        while rc == SQLITE_ROW { rc = sqlite3_step(handle) }
        if rc != SQLITE_DONE { try onError(connection.error(rc, context())) }
    }

    /// Runs the statement once, calling `row` for each result row.
    func query(_ context: @autoclosure () -> String, row: (Row) throws -> Void) throws {
        defer {
            if connection.metering { record() }
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
        }
        while true {
            let rc = sqlite3_step(handle)
            if rc == SQLITE_DONE { return }
            guard rc == SQLITE_ROW else { throw connection.error(rc, context()) }
            try row(Row(statement: handle))
        }
    }
}

/// The current row of a statement.
struct Row {
    let statement: OpaquePointer

    var count: Int { Int(sqlite3_column_count(statement)) }
    func name(_ i: Int) -> String { String(cString: sqlite3_column_name(statement, Int32(i))) }
    /// The column's storage class: `SQLITE_INTEGER`, `SQLITE_FLOAT`, `SQLITE_TEXT`, `SQLITE_BLOB` or `SQLITE_NULL`.
    func type(_ i: Int) -> Int32 { sqlite3_column_type(statement, Int32(i)) }
    func isNull(_ i: Int) -> Bool { type(i) == SQLITE_NULL }
    /// The column's text as UTF-8 bytes, valid until the row changes.
    func textBytes(_ i: Int) -> UnsafeBufferPointer<UInt8> {
        guard let bytes = sqlite3_column_text(statement, Int32(i)) else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(statement, Int32(i))))
    }
    func int(_ i: Int) -> Int64 { sqlite3_column_int64(statement, Int32(i)) }
    func double(_ i: Int) -> Double { sqlite3_column_double(statement, Int32(i)) }
    func text(_ i: Int) -> String {
        guard let bytes = sqlite3_column_text(statement, Int32(i)) else { return "" }
        let count = Int(sqlite3_column_bytes(statement, Int32(i)))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }
    func blob(_ i: Int) -> Data {
        guard let bytes = sqlite3_column_blob(statement, Int32(i)) else { return Data() }
        return Data(bytes: bytes, count: Int(sqlite3_column_bytes(statement, Int32(i))))
    }

    /// The column as SQLite stores it.
    func value(_ i: Int) -> SQLValue {
        switch sqlite3_column_type(statement, Int32(i)) {
        case SQLITE_INTEGER: .int(int(i))
        case SQLITE_FLOAT: .double(double(i))
        case SQLITE_TEXT: .text(text(i))
        case SQLITE_BLOB: .blob(blob(i))
        default: .null
        }
    }
}
