import Foundation

#if canImport(SQLite3)
import SQLite3
#else
import BenchSQLite3
#endif

/// The few SQLite calls the hand-written baseline needs, as a user would write them.
final class SQLiteDatabase {
    private var handle: OpaquePointer?

    struct Failure: Error, CustomStringConvertible {
        let message: String
        var description: String { "SQLite: \(message)" }
    }

    init(path: String) throws {
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open \(path)"
            sqlite3_close(handle)
            throw Failure(message: message)
        }
    }

    deinit { sqlite3_close(handle) }

    func execute(_ sql: String) throws {
        var error: UnsafeMutablePointer<CChar>?
        if sqlite3_exec(handle, sql, nil, nil, &error) != SQLITE_OK {
            let message = error.map { String(cString: $0) } ?? "error"
            sqlite3_free(error)
            throw Failure(message: message)
        }
    }

    func prepare(_ sql: String) throws -> Statement {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw Failure(message: String(cString: sqlite3_errmsg(handle)))
        }
        return Statement(statement, database: self)
    }

    func scalar(_ sql: String) throws -> Int64 {
        let statement = try prepare(sql)
        guard sqlite3_step(statement.handle) == SQLITE_ROW else { throw Failure(message: lastError) }
        return sqlite3_column_int64(statement.handle, 0)
    }

    var lastError: String { String(cString: sqlite3_errmsg(handle)) }

    final class Statement {
        let handle: OpaquePointer
        private let database: SQLiteDatabase

        init(_ handle: OpaquePointer, database: SQLiteDatabase) {
            self.handle = handle
            self.database = database
        }

        deinit { sqlite3_finalize(handle) }

        func bind(_ index: Int32, _ value: Int64) { sqlite3_bind_int64(handle, index, value) }
        func bind(_ index: Int32, _ value: Double) { sqlite3_bind_double(handle, index, value) }
        func bind(_ index: Int32, _ value: Bool) { sqlite3_bind_int64(handle, index, value ? 1 : 0) }
        func bind(_ index: Int32, _ value: Int64?) {
            if let value { bind(index, value) } else { sqlite3_bind_null(handle, index) }
        }
        func bind(_ index: Int32, _ value: Double?) {
            if let value { bind(index, value) } else { sqlite3_bind_null(handle, index) }
        }
        func bind(_ index: Int32, _ value: String?) {
            guard let value else {
                sqlite3_bind_null(handle, index)
                return
            }
            // SQLITE_TRANSIENT: SQLite copies the text.
            sqlite3_bind_text(handle, index, value, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self))
        }

        func bind(_ index: Int32, _ value: Data) {
            // An empty blob has no base address, and a NULL pointer would bind NULL.
            if value.isEmpty {
                sqlite3_bind_zeroblob(handle, index, 0)
                return
            }
            _ = value.withUnsafeBytes { sqlite3_bind_blob(handle, index, $0.baseAddress, Int32($0.count), unsafeBitCast(-1, to: sqlite3_destructor_type.self)) }
        }
        func bindNull(_ index: Int32) { sqlite3_bind_null(handle, index) }

        func run() throws {
            guard sqlite3_step(handle) == SQLITE_DONE else { throw Failure(message: database.lastError) }
            sqlite3_reset(handle)
        }
    }
}
