// A child process for the durability and load tests of TetherSQLiteTests.
//
// Usage:
//   SQLiteCrashHelper <database path> <batch number> <object count> <marker path>
//     Imports one batch of new objects; the marker file is created when the import's write
//     transaction has begun. DurabilityTests kills it with SIGKILL at random points of the
//     transaction.
//   SQLiteCrashHelper checkpoint|close <database path> <batch number> <object count> <marker path>
//     Imports one batch of new objects (2 KB each) and creates the marker once the import has
//     committed. `checkpoint` then waits for the checkpoint of the log that a large commit starts
//     in the background (`await store.checkpoint()` runs after it) and creates
//     `<marker>.checkpointed`; both then close the store (checkpointing the rest of the log into
//     the file) and create `<marker>.closed`. DurabilityKillPointTests kills it at random points
//     after the commit: during the background checkpoint and during close().
//   SQLiteCrashHelper import <database path> <batch number> <object count> <go path>
//     Waits for the go file, then imports the objects 0..<count stamped with the batch number
//     (every batch names the same identities). LoadTests runs eight at once.
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

/// The payload of one load-test import: items 0..<count, each in one of count / 10 groups that
/// depends on the batch (so that every import moves the links), every value stamped with the
/// batch. LoadTests builds the same payload to check the final state.
func loadPayload(batch: Int, count: Int) -> Data {
    let groups = max(1, count / 10)
    // Each batch lists the items in another order.
    let order = (0..<count).map { (($0 * 7919) + batch * 131) % count }
    let items = order.map { i in
        #"{"id": \#(i), "batch": \#(batch), "text": "item \#(i) of batch \#(batch)", "group": {"id": \#((i / 10 + batch) % groups), "batch": \#(batch)}}"#
    }
    return Data(("[" + items.joined(separator: ",") + "]").utf8)
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
if arguments.count > 1, arguments[1] == "outbox" { try await OutboxCrashMode.run(Array(arguments.dropFirst(2))) }
let modes: Set<String> = ["checkpoint", "close", "import"]
let mode = arguments.count == 6 && modes.contains(arguments[1]) ? arguments[1] : "transaction"
let rest = Array(arguments.dropFirst(mode == "transaction" ? 1 : 2))
guard rest.count == 4, let batch = Int(rest[1]), let count = Int(rest[2]) else {
    FileHandle.standardError.write(Data("usage: SQLiteCrashHelper [checkpoint|close|import] <path> <batch> <count> <marker>\n".utf8))
    exit(2)
}
let (path, marker) = (rest[0], rest[3])

/// The objects of one durability batch: new identities, each item in a group of ten.
func durabilityPayload(textLength: Int) -> Data {
    let items = (0..<count).map { i in
        let id = batch * 1_000_000 + i
        return #"{"id": \#(id), "batch": \#(batch), "text": "item \#(id) \#(String(repeating: "x", count: textLength))", "group": {"id": \#(batch * 1_000_000 + i / 10), "batch": \#(batch)}}"#
    }
    return Data(("[" + items.joined(separator: ",") + "]").utf8)
}

switch mode {
case "checkpoint", "close":
    let store = try SQLiteStore(path: path)
    let client = try Client.Builder(schema: schema).store(store).build()
    _ = try await client.import(durabilityPayload(textLength: 2_000), as: "Item")
    _ = FileManager.default.createFile(atPath: marker, contents: Data())
    // `<marker>.pause`: the test kills the helper here, after the commit and before anything
    // else, by construction rather than by timing (it removes the file after the kill).
    while FileManager.default.fileExists(atPath: marker + ".pause") { usleep(1_000) }
    if mode == "checkpoint" {
        await store.checkpoint()
        _ = FileManager.default.createFile(atPath: marker + ".checkpointed", contents: Data())
    }
    store.close()
    _ = FileManager.default.createFile(atPath: marker + ".closed", contents: Data())
    exit(0)
case "import":
    // In a scope of its own, so that nothing is left allocated at exit (LeakSanitizer, under
    // `--sanitize=address`, reports what is and makes the exit status 1).
    do {
        let payload = loadPayload(batch: batch, count: count)
        let store = try SQLiteStore(path: path, busyTimeout: .seconds(300))
        let client = try Client.Builder(schema: schema).store(store).build()
        // Waits for the go file, but not for ever: not once the test that started it is gone.
        let parent = getppid()
        let deadline = ContinuousClock.now + .seconds(300)
        while !FileManager.default.fileExists(atPath: marker) {
            guard getppid() == parent, ContinuousClock.now < deadline else { exit(3) }
            usleep(1_000)
        }
        _ = try await client.import(payload, as: "Item")
        store.close()
    }
    exit(0)
default:
    let store = try SQLiteStore(path: path)
    let client = try Client.Builder(schema: schema).store(SignallingStore(base: store, marker: marker)).build()
    _ = try await client.import(durabilityPayload(textLength: 200), as: "Item")
}
