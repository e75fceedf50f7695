import Foundation
import Synchronization
import Testing
import Tether
import TetherTesting
import TetherURLSession

/// The outbox of a local-first client against the real servers (issue 40): edits made while the
/// server cannot be reached (a port nothing listens on: real refused connections), then one
/// flush by a new client on the same store (as after a restart) sends one request per coalesced
/// entry, in order, and the server ends with exactly the local state.
@Suite(.serialized, .enabled(if: Server.runs(.drf) || Server.runs(.rails), "no DRF or Rails server: outbox server tests skipped (run `bash .ci/servers.sh start`)"))
struct OutboxServerTests {
    @Test(arguments: [Server.drf, Server.rails])
    func aThousandOfflineEditsAreFlushedAsTheirCoalescedEntries(_ server: Server) async throws {
        guard Server.runs(server) else { return }
        guard let baseURL = server.baseURL else {
            Issue.record("\(server.variable) is not set but TETHER_REQUIRE_SERVERS=1")
            return
        }
        let store = InMemoryStore()
        final class RequestLog: Sendable { let lines = Mutex<[String]>([]) }
        func client(_ base: URL, _ requests: RequestLog? = nil) throws -> Client {
            var builder = try makeBuilder(transport: URLSessionTransport(timeout: 20), baseURL: base)
                .store(store)
                .dateDecoding(DateDecoding([.iso8601WithFractionalSeconds]))
                .retries(.none)
                .writes(.localFirst())
            if let requests {
                builder = builder.onEvent { event in
                    if case .request(let request) = event { requests.lines.withLock { $0.append("\(request.method.rawValue) \(request.url.path)") } }
                }
            }
            return try builder.build()
        }
        let prefix = uniqueLogin("outbox")
        var random = SystemRandomNumberGenerator()
        var users: [ObjectID] = []
        var deleted = Set<ObjectID>()
        // 100 users the server has (sent by a flush while online)...
        let seeding = try client(baseURL)
        for index in 0..<100 {
            let values: [String: Value] = ["login": .string("\(prefix)-\(index)"), "name": .string("n\(index)")]
            users.append(try await seeding.create("User", values: values).id)
        }
        #expect(try await seeding.outbox.flush().sent.count == 100)
        var serverIDs: [ObjectID: Int64] = [:]
        for id in users { serverIDs[id] = try #require(try await seeding.object(id)?["id", as: Int64.self]) }
        // ...then, offline (nothing listens on port 9 here), 200 new ones and 800 more edits.
        let offline = try client(URL(string: "http://127.0.0.1:9/api")!)
        var edits = 0
        for index in 100..<300 {
            let values: [String: Value] = ["login": .string("\(prefix)-\(index)"), "name": .string("n\(index)")]
            users.append(try await offline.create("User", values: values).id)
            edits += 1
        }
        while edits < 1_000 {
            let id = users[Int.random(in: 0..<users.count, using: &random)]
            if deleted.contains(id) { continue }
            if Int.random(in: 0..<20, using: &random) == 0 {
                _ = try await offline.delete(id)
                deleted.insert(id)
            } else {
                let values: [String: Value] = ["name": .string("edit \(edits)"), "email": .string("e\(edits)@example.com")]
                _ = try await offline.updateLocally(id, setting: values)
                _ = try await offline.save(id)
            }
            edits += 1
        }
        let stopped = try await offline.outbox.flush()
        #expect(stopped.sent.isEmpty && stopped.stoppedBy != nil)

        // Restarted, online: one flush.
        let requests = RequestLog()
        let online = try client(baseURL, requests)
        let queued = try await online.outbox.entries()
        // One entry per object changed: the seeded ones' update or delete, the new ones' create
        // (those deleted offline: nothing).
        let newDeleted = users[100...].filter { deleted.contains($0) }.count
        #expect(queued.count <= 300 - newDeleted && queued.count >= 200 - newDeleted)
        let report = try await online.outbox.flush()
        #expect(report.isComplete, "\(report)")
        #expect(report.sent.count == queued.count)
        #expect(requests.lines.withLock { $0.count } == queued.count)
        let methods = Set(requests.lines.withLock { $0.map { $0.split(separator: " ")[0] } })
        #expect(methods == ["POST", "PATCH", "DELETE"])
        #expect(try await online.outbox.entries().isEmpty)

        // The server holds exactly the local state.
        let check = try client(baseURL)
        for id in users[100...] where deleted.contains(id) { #expect(try await online.object(id) == nil) }
        for id in users[..<100] where deleted.contains(id) {
            let path = URLTemplate("/users/\(serverIDs[id]!)")
            let error = await #expect(throws: HTTPError.self) { _ = try await check.fetchObject("User", from: path) }
            #expect(error?.status == 404)
        }
        for id in users where !deleted.contains(id) {
            let local = try #require(try await online.object(id))
            let serverID = try #require(local["id", as: Int64.self])
            let remote = try await check.fetchObject("User", from: URLTemplate("/users/\(serverID)"))
            #expect(remote["login"] == local["login"] && remote["name"] == local["name"] && remote["email"] == local["email"])
        }
    }
}
