import Foundation
import Tether
import TetherSQLite
import TetherURLSession

/// `SQLiteCrashHelper outbox <database path> <server URL> <journal path> <seed>`: local-first
/// writes and flushes of an `Item` (title, n) through the outbox, against the test's HTTP server,
/// until killed (OutboxCrashLoopTests kills it at random points). Each local write is
/// journaled as `intent <op> <title> <n>` before it and `done` after it returned (committed),
/// each line written with a flush of the file, so the test knows what must be in the store.
enum OutboxCrashMode {
    static let schema: Schema = {
        do {
            return try Schema {
                Entity("Item") {
                    Attribute("id", .int64)
                    Attribute("title", .string)
                    Attribute("n", .int64)
                }
            }
        } catch {
            fatalError("\(error)")
        }
    }()

    static func run(_ arguments: [String]) async throws -> Never {
        guard arguments.count == 4, let server = URL(string: arguments[1]), let seed = UInt64(arguments[3]) else {
            FileHandle.standardError.write(Data("usage: SQLiteCrashHelper outbox <path> <server URL> <journal> <seed>\n".utf8))
            exit(2)
        }
        let store = try SQLiteStore(path: arguments[0])
        let client = try Client.Builder(schema: schema)
            .store(store)
            .transport(URLSessionTransport(timeout: 5))
            .baseURL(server)
            .resource("/items", for: "Item")
            .retries(.none)
            .writes(.localFirst())
            .build()
        guard let journal = FileHandle(forWritingAtPath: arguments[2]) else {
            FileHandle.standardError.write(Data("cannot open the journal \(arguments[2])\n".utf8))
            exit(2)
        }
        journal.seekToEndOfFile()
        func note(_ line: String) throws {
            try journal.write(contentsOf: Data((line + "\n").utf8))
            try journal.synchronize()
        }
        var random = SplitMix(seed)
        for step in 0..<400 {
            let items = try await client.fetch(Query("Item", sortedBy: [.ascending("title")]))
            let roll = random.next() % 10
            if roll < 4 || items.isEmpty {
                let title = "s\(seed)-\(step)"
                try note("intent create \(title) 0")
                _ = try await client.create("Item", values: ["title": .string(title), "n": .int(0)])
                try note("done")
            } else if roll < 8 {
                let item = items[Int(random.next() % UInt64(items.count))]
                let title = item["title", as: String.self] ?? ""
                try note("intent update \(title) \(step)")
                _ = try await client.updateLocally(item.id, setting: ["n": .int(Int64(step))])
                _ = try await client.save(item.id)
                try note("done")
            } else if roll < 9 {
                let item = items[Int(random.next() % UInt64(items.count))]
                let title = item["title", as: String.self] ?? ""
                do {
                    try note("intent delete \(title) 0")
                    _ = try await client.delete(item.id)
                    try note("done")
                } catch let error as OutboxError where error.kind == .invalidState {
                    try note("refused")  // its create may be on the server: flushed first
                }
            } else {
                _ = try? await client.outbox.flush()
            }
        }
        _ = try await client.outbox.flush()
        store.close()
        exit(0)
    }
}

/// A seeded generator (SplitMix64), so that a failing run can be repeated.
struct SplitMix {
    var state: UInt64
    init(_ seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
