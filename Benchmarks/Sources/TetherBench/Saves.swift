import Foundation
import Tether
import TetherSQLite

/// The cost of a save on the device (issue 40): N stored repositories each changed
/// (`updateLocally`) and saved, by a client that sends at once (through a transport that answers
/// at once with the object: what is timed is the local part of an online save, the request body,
/// the answer merged and the remote record kept) and by a local-first client (the change queued in
/// the outbox, in the same transaction). One process, one SQLite file, the passes alternating
/// round by round; between rounds the queued saves are flushed, untimed.
enum Saves {
    static let passes = ["online save", "local-first save"]

    /// Answers a `PATCH` at once with the repository, the body merged (as a server would).
    struct InstantServer: Transport {
        func send(_ request: TransportRequest) async throws -> TransportResponse {
            var object = (try? JSON(parsing: request.body ?? Data()))?.objectValue ?? [:]
            if let id = Int64(request.url.lastPathComponent) { object["id"] = .int(id) }
            return TransportResponse(status: 200, headers: ["Content-Type": "application/json"], body: JSON.object(object).serialized())
        }
    }

    struct Clients {
        let online: Client
        let localFirst: Client
        let ids: [ObjectID]
        let directory: TemporaryDirectory
    }

    static func prepare(payload: Data, count: Int) async throws -> Clients {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.file("saves.sqlite"))
        func builder() throws -> Client.Builder {
            Client.Builder(schema: TetherImport.schema)
                .keyMapping(TetherImport.keys)
                .store(store)
                .transport(InstantServer())
                .baseURL(URL(string: "https://api.example.com")!)
                .resource("/repositories", for: "Repository")
        }
        let online = try builder().build()
        let localFirst = try builder().writes(.localFirst()).build()
        _ = try await TetherImport.importRepositories(payload, into: online)
        let ids = try await online.store.read { try $0.ids(Query("Repository")) }
        guard ids.count == count else { throw BenchmarkError("stored \(ids.count) repositories, expected \(count)") }
        return Clients(online: online, localFirst: localFirst, ids: ids, directory: directory)
    }

    static func run(_ pass: String, round: Int, _ clients: Clients, into row: inout Measurement) async throws {
        let client = pass == "online save" ? clients.online : clients.localFirst
        let ids = clients.ids
        try await row.time {
            for (index, id) in ids.enumerated() {
                _ = try await client.updateLocally(id, setting: ["name": .string("\(pass) \(round) \(index)")])
                _ = try await client.save(id)
            }
        }
        if pass == "local-first save" {
            let queued = try await client.outbox.entries().count
            guard queued == ids.count else { throw BenchmarkError("\(queued) saves queued, expected \(ids.count)") }
            let report = try await client.outbox.flush()
            guard report.isComplete, report.sent.count == ids.count else { throw BenchmarkError("the flush sent \(report)") }
        }
        let sample = try await client.object(ids[ids.count / 2])
        guard sample?["name"] == .string("\(pass) \(round) \(ids.count / 2)") else { throw BenchmarkError("\(pass) did not keep its change") }
    }
}
