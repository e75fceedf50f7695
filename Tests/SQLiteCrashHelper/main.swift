// A child process for the durability tests of TetherSQLiteTests: imports one batch into a
// SQLiteStore; the test kills it with SIGKILL at random points of the transaction.
//
// Usage: SQLiteCrashHelper <database path> <batch number> <object count> <marker path>
// The marker file is created when the import's write transaction has begun.
import Foundation
import Tether
import TetherSQLite

/// Forwards to a SQLiteStore and creates the marker file when a write transaction begins.
struct SignallingStore: Store {
    let base: SQLiteStore
    let marker: String

    func prepare(for schema: Schema) throws { try base.prepare(for: schema) }
    func read<T: Sendable>(_ body: @Sendable (any StoreReader) throws -> T) async throws -> T { try await base.read(body) }
    func write<T: Sendable>(_ body: @Sendable (any StoreWriter) throws -> T) async throws -> T {
        try await base.write { writer in
            _ = FileManager.default.createFile(atPath: marker, contents: Data())
            return try body(writer)
        }
    }
    func changes() -> AsyncStream<ChangeSet> { base.changes() }
}

let schema = try Schema {
    Entity("Item", identity: "id") {
        Attribute("id", .int64)
        Attribute("batch", .int64)
        Attribute("text", .string)
        Relationship.toOne("group", "Group", inverse: "items")
    }
    Entity("Group", identity: "id") {
        Attribute("id", .int64)
        Attribute("batch", .int64)
        Relationship.toMany("items", "Item", inverse: "group")
    }
}

let arguments = CommandLine.arguments
guard arguments.count == 5, let batch = Int(arguments[2]), let count = Int(arguments[3]) else {
    FileHandle.standardError.write(Data("usage: SQLiteCrashHelper <path> <batch> <count> <marker>\n".utf8))
    exit(2)
}
let store = try SQLiteStore(path: arguments[1])
let client = try Client.Builder(schema: schema).store(SignallingStore(base: store, marker: arguments[4])).build()
let items = (0..<count).map { i in
    let id = batch * 1_000_000 + i
    return #"{"id": \#(id), "batch": \#(batch), "text": "item \#(id) \#(String(repeating: "x", count: 200))", "group": {"id": \#(batch * 1_000_000 + i / 10), "batch": \#(batch)}}"#
}
_ = try await client.import(Data(("[" + items.joined(separator: ",") + "]").utf8), as: "Item")
