import Foundation
import Tether
import TetherSQLite

#if canImport(SQLite3)
import SQLite3
#else
import BenchSQLite3
#endif

/// The floor of a page refresh into SQLite (issue 38): the row changes a page must make, written
/// by prepared statements with the same durability, page cache and indexes as Tether's store, and
/// no JSON. What the floor writes is what Tether's own import of the page wrote (which the
/// workload's graph check holds to be right), recorded by triggers on a copy of the store:
/// every inserted row, every deleted one, and of every updated row the columns whose values
/// changed (so the same index entries are rewritten). Tether's time over the floor's is what its
/// JSON reading, mapping, identity lookups and bookkeeping cost above the writes themselves.
enum PageFloor {
    /// One row change, in the order the page made it.
    struct Write {
        enum Operation: Int64 {
            case insert = 0
            case update = 1
            case delete = 2
        }

        let table: Int
        let operation: Operation
        /// The row's rowid (nil in a table without rowid).
        let rowid: Int64?
        /// Insert: every column; update: the new values (nil where unchanged); delete: the
        /// primary key's columns of a table without rowid.
        let values: [Value?]
    }

    /// A column value as SQLite holds it.
    enum Value: Equatable {
        case null
        case int(Int64)
        case double(Double)
        case text(String)
        case blob(Data)
    }

    /// A table of the file: its columns, and the primary key of a table without rowid.
    struct Table {
        let name: String
        let columns: [String]
        let withoutRowid: Bool
        let primaryKey: [Int]
    }

    /// The writes of each page, and the tables they name.
    struct Recording {
        var tables: [Table]
        var pages: [[Write]]

        var rowsWritten: Int { pages.reduce(0) { $0 + $1.count } }
    }

    // MARK: Recording

    /// Installs the triggers that log every row change of the file's tables (not SQLite's own)
    /// into log tables of the same file, and returns the tables.
    static func installTriggers(in database: SQLiteDatabase) throws -> [Table] {
        var tables: [Table] = []
        let list = try database.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        var found: [(String, String)] = []
        while sqlite3_step(list.handle) == SQLITE_ROW {
            found.append((String(cString: sqlite3_column_text(list.handle, 0)), String(cString: sqlite3_column_text(list.handle, 1))))
        }
        try database.execute("CREATE TABLE \"_floor_seq\" (\"n\" INTEGER NOT NULL); INSERT INTO \"_floor_seq\" VALUES (0)")
        for (name, sql) in found {
            let info = try database.prepare("PRAGMA table_info(\(quote(name)))")
            var columns: [String] = []
            var key: [(Int, Int)] = []  // (position in the key, column)
            while sqlite3_step(info.handle) == SQLITE_ROW {
                let column = String(cString: sqlite3_column_text(info.handle, 1))
                let pk = Int(sqlite3_column_int64(info.handle, 5))
                if pk > 0 { key.append((pk, columns.count)) }
                columns.append(column)
            }
            let withoutRowid = sql.uppercased().contains("WITHOUT ROWID")
            let table = Table(name: name, columns: columns, withoutRowid: withoutRowid, primaryKey: key.sorted { $0.0 < $1.0 }.map(\.1))
            tables.append(table)
            let log = quote("_floor_" + name)
            let newColumns = columns.indices.map { "\"n\($0)\"" }
            let oldColumns = columns.indices.map { "\"o\($0)\"" }
            try database.execute("CREATE TABLE \(log) (\"seq\" INTEGER NOT NULL, \"op\" INTEGER NOT NULL, \"r\", "
                + (newColumns + oldColumns).joined(separator: ", ") + ")")
            let rowid = withoutRowid ? "NULL" : "%.rowid"
            func values(_ row: String) -> String { columns.map { "\(row).\(quote($0))" }.joined(separator: ", ") }
            let nulls = columns.map { _ in "NULL" }.joined(separator: ", ")
            let bump = "UPDATE \"_floor_seq\" SET \"n\" = \"n\" + 1;"
            let sequence = "(SELECT \"n\" FROM \"_floor_seq\")"
            let into = "INSERT INTO \(log) (\"seq\", \"op\", \"r\", \((newColumns + oldColumns).joined(separator: ", ")))"
            try database.execute("""
                CREATE TRIGGER \(quote("_floor_i_" + name)) AFTER INSERT ON \(quote(name)) BEGIN \(bump)
                \(into) VALUES (\(sequence), 0, \(rowid.replacingOccurrences(of: "%", with: "NEW")), \(values("NEW")), \(nulls)); END;
                CREATE TRIGGER \(quote("_floor_u_" + name)) AFTER UPDATE ON \(quote(name)) BEGIN \(bump)
                \(into) VALUES (\(sequence), 1, \(rowid.replacingOccurrences(of: "%", with: "OLD")), \(values("NEW")), \(values("OLD"))); END;
                CREATE TRIGGER \(quote("_floor_d_" + name)) AFTER DELETE ON \(quote(name)) BEGIN \(bump)
                \(into) VALUES (\(sequence), 2, \(rowid.replacingOccurrences(of: "%", with: "OLD")), \(nulls), \(values("OLD"))); END;
                """)
        }
        return tables
    }

    /// The changes logged since the last call, in the order they were made, then the log emptied.
    static func takeWrites(from database: SQLiteDatabase, tables: [Table]) throws -> [Write] {
        var logged: [(seq: Int64, write: Write)] = []
        for (index, table) in tables.enumerated() {
            let n = table.columns.count
            let read = try database.prepare("SELECT * FROM \(quote("_floor_" + table.name))")
            while sqlite3_step(read.handle) == SQLITE_ROW {
                let seq = sqlite3_column_int64(read.handle, 0)
                guard let operation = Write.Operation(rawValue: sqlite3_column_int64(read.handle, 1)) else { continue }
                let rowid = sqlite3_column_type(read.handle, 2) == SQLITE_NULL ? nil : sqlite3_column_int64(read.handle, 2)
                let new = (0..<n).map { value(read.handle, Int32(3 + $0)) }
                let old = (0..<n).map { value(read.handle, Int32(3 + n + $0)) }
                switch operation {
                case .insert:
                    logged.append((seq, Write(table: index, operation: .insert, rowid: rowid, values: new)))
                case .update where table.withoutRowid:
                    // Rewritten as a delete and an insert: a key is rarely updated in place there.
                    logged.append((seq, Write(table: index, operation: .delete, rowid: nil, values: table.primaryKey.map { old[$0] })))
                    logged.append((seq, Write(table: index, operation: .insert, rowid: nil, values: new)))
                case .update:
                    let changed = (0..<n).map { new[$0] == old[$0] ? nil : new[$0] }
                    if changed.contains(where: { $0 != nil }) {
                        logged.append((seq, Write(table: index, operation: .update, rowid: rowid, values: changed)))
                    }
                case .delete:
                    logged.append((seq, Write(table: index, operation: .delete, rowid: rowid,
                                              values: table.withoutRowid ? table.primaryKey.map { old[$0] } : [])))
                }
            }
        }
        for table in tables { try database.execute("DELETE FROM \(quote("_floor_" + table.name))") }
        // A stable sort keeps a without-rowid update's delete before its insert.
        return logged.enumerated().sorted { ($0.element.seq, $0.offset) < ($1.element.seq, $1.offset) }.map(\.element.write)
    }

    private static func value(_ statement: OpaquePointer, _ column: Int32) -> Value {
        switch sqlite3_column_type(statement, column) {
        case SQLITE_INTEGER: return .int(sqlite3_column_int64(statement, column))
        case SQLITE_FLOAT: return .double(sqlite3_column_double(statement, column))
        case SQLITE_TEXT: return .text(String(cString: sqlite3_column_text(statement, column)))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(statement, column))
            guard count > 0, let bytes = sqlite3_column_blob(statement, column) else { return .blob(Data()) }
            return .blob(Data(bytes: bytes, count: count))
        default: return .null
        }
    }

    // MARK: Replaying

    /// A connection configured as Tether's store configures its writer (WAL, `synchronous =
    /// NORMAL`, a 64 MiB page cache), with no automatic checkpoint: Tether checkpoints on a
    /// connection of its own, off the write, and so does ``replay(_:into:)`` (between pages,
    /// not timed).
    static func open(_ path: String) throws -> SQLiteDatabase {
        let database = try SQLiteDatabase(path: path)
        try database.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -65536; PRAGMA wal_autocheckpoint = 0")
        return database
    }

    /// Prepared statements of the replay, one per table and operation (and set of changed
    /// columns), made on first use.
    final class Statements {
        private let database: SQLiteDatabase
        private let tables: [Table]
        private var cache: [String: SQLiteDatabase.Statement] = [:]

        init(_ database: SQLiteDatabase, tables: [Table]) {
            self.database = database
            self.tables = tables
        }

        func statement(for write: Write) throws -> SQLiteDatabase.Statement {
            let table = tables[write.table]
            let changed = write.operation == .update ? write.values.indices.filter { write.values[$0] != nil } : []
            let key = "\(write.table) \(write.operation.rawValue) \(changed)"
            if let known = cache[key] { return known }
            let name = quote(table.name)
            let hasRowidColumn = table.columns.contains("rowid")
            let sql: String
            switch write.operation {
            case .insert:
                let columns = (table.withoutRowid || hasRowidColumn ? [] : ["\"rowid\""]) + table.columns.map(quote)
                sql = "INSERT INTO \(name) (\(columns.joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))"
            case .update:
                sql = "UPDATE \(name) SET \(changed.map { "\(quote(table.columns[$0])) = ?" }.joined(separator: ", ")) WHERE \"rowid\" = ?"
            case .delete:
                sql = table.withoutRowid
                    ? "DELETE FROM \(name) WHERE \(table.primaryKey.map { "\(quote(table.columns[$0])) = ?" }.joined(separator: " AND "))"
                    : "DELETE FROM \(name) WHERE \"rowid\" = ?"
            }
            let statement = try database.prepare(sql)
            cache[key] = statement
            return statement
        }
    }

    /// Writes one page's changes in one transaction.
    static func replay(_ writes: [Write], into database: SQLiteDatabase, statements: Statements, tables: [Table]) throws {
        try database.execute("BEGIN IMMEDIATE")
        for write in writes {
            let statement = try statements.statement(for: write)
            var index: Int32 = 1
            func bind(_ value: Value?) {
                switch value ?? .null {
                case .null: statement.bindNull(index)
                case .int(let v): statement.bind(index, v)
                case .double(let v): statement.bind(index, v)
                case .text(let v): statement.bind(index, v)
                case .blob(let v): statement.bind(index, v)
                }
                index += 1
            }
            let table = tables[write.table]
            switch write.operation {
            case .insert:
                if !table.withoutRowid && !table.columns.contains("rowid") { bind(write.rowid.map(Value.int)) }
                write.values.forEach(bind)
            case .update:
                write.values.compactMap { $0 }.forEach(bind)
                bind(write.rowid.map(Value.int))
            case .delete:
                if table.withoutRowid { write.values.forEach(bind) } else { bind(write.rowid.map(Value.int)) }
            }
            try statement.run()
        }
        try database.execute("COMMIT")
    }

    private static func quote(_ name: String) -> String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
}

extension RowWorker {
    /// The floor of a page refresh (``PageFloor``): Tether's SQLite store holds the first payload,
    /// a byte copy of its file is taken, Tether imports the pages into the original with triggers
    /// logging every row change (not timed), and the logged changes of each page are written into
    /// the copy by prepared statements, one transaction a page, one duration a page. Ends with
    /// every table of the copy holding the rows of Tether's.
    func runPageFloor(_ row: inout Measurement, first: Data, pages: [Data], client: (any Store) throws -> Client,
                      importPage: (Data, Client) async throws -> Void) async throws {
        let directory = try TemporaryDirectory()
        let recorded = directory.file("recorded.sqlite"), floor = directory.file("floor.sqlite")
        do {
            let store = try SQLiteStore(path: recorded)
            try await importPage(first, try client(store))
            store.close()  // checkpoints the WAL into the file
        }
        try FileManager.default.copyItem(atPath: recorded, toPath: floor)
        let log = try SQLiteDatabase(path: recorded)
        let tables = try PageFloor.installTriggers(in: log)
        var recording = PageFloor.Recording(tables: tables, pages: [])
        do {
            let store = try SQLiteStore(path: recorded)
            let tether = try client(store)
            for page in pages {
                try await importPage(page, tether)
                recording.pages.append(try PageFloor.takeWrites(from: log, tables: tables))
            }
            store.close()
        }
        let database = try PageFloor.open(floor)
        let statements = PageFloor.Statements(database, tables: tables)
        let clock = ContinuousClock()
        for writes in recording.pages {
            let start = clock.now
            try PageFloor.replay(writes, into: database, statements: statements, tables: tables)
            row.durations.append(clock.now - start)
            try database.execute("PRAGMA wal_checkpoint(PASSIVE)")
        }
        for table in tables {
            let a = try log.scalar("SELECT count(*) FROM \"\(table.name)\""), b = try database.scalar("SELECT count(*) FROM \"\(table.name)\"")
            if a != b { throw BenchmarkError("the floor holds \(b) rows of \(table.name), Tether's store \(a)") }
        }
        if recording.rowsWritten < pages.count { throw BenchmarkError("the pages wrote \(recording.rowsWritten) rows") }
        var byTable: [String: Int] = [:]
        for page in recording.pages { for write in page { byTable[tables[write.table].name, default: 0] += 1 } }
        let perPage = byTable.sorted { $0.value > $1.value }.prefix(6).map { "\($0.key) \(String(format: "%.1f", Double($0.value) / Double(pages.count)))" }
        FileHandle.standardError.write(Data(("note: the floor writes \(String(format: "%.1f", Double(recording.rowsWritten) / Double(pages.count))) "
            + "row changes a page (most: \(perPage.joined(separator: ", ")))\n").utf8))
    }
}
