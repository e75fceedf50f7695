import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Tether
import TetherTesting
import TetherURLSession

@Suite struct ReplayAndTransportTests {
    @Test func recordThenReplayRoundTrip() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tether-replay-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let live = StubTransport()
        live.on(.get, "/users", json: [["id": 1, "login": "zoë-ünicode", "name": "Zoë Ünicødé 🐙"]])
        live.on(.post, "/users", status: 201, headers: ["Location": "https://api.example.com/users/2"], json: ["id": 2, "login": "new"])
        live.on(.get, "/page", status: 200, headers: ["Content-Type": "text/html"], body: Data("<p>hi</p>".utf8))
        live.on(.delete, "/users/2", status: 204)

        func session(_ transport: some Transport) async throws -> ([JSON?], [Int]) {
            let client = try makeBuilder(transport: transport).requestHook(AuthorizationHook(credential: "top-secret")).build()
            let users = try await client.fetchObjects("User", from: "/users")
            let created = try await client.create("User", values: ["login": .string("new")])
            let page = try await client.send(.get, URL(string: "https://api.example.com/page")!)
            let status = try await client.delete(created.id)
            return ([users.objects.first?["name"].map { JSON.string("\($0)") }, created["id"].map { JSON.string("\($0)") }],
                    [page.body.count, status])
        }
        let recorded = try await session(try RecordingTransport(wrapping: live, folder: folder))
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(files == ["0001-GET-users.json", "0002-POST-users.json", "0003-GET-page.json", "0004-DELETE-users-2.json"])
        for file in files {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            #expect(!text.contains("top-secret"))
        }
        let first = try JSON(parsing: Data(contentsOf: folder.appendingPathComponent(files[0])))
        #expect(first["response"]?["body"]?[0]?["login"] == "zoë-ünicode")
        #expect(first["request"]?["headers"]?.arrayValue?.contains(["Authorization", "<redacted>"]) == true)

        let replay = try ReplayTransport(folder: folder)
        let replayed = try await session(replay)
        #expect(replayed.0 == recorded.0)
        #expect(replayed.1 == recorded.1)
        #expect(replay.unused.isEmpty)
        // every exchange answers once
        await #expect(throws: ReplayError.self) { _ = try await replay.send(TransportRequest(method: .get, url: URL(string: "https://x/users")!)) }
    }

    @Test func connectionRefusedIsATransportError() async throws {
        // Port 9 (discard) is closed on loopback in the build and CI machines.
        let client = try makeClient(URLSessionTransport(timeout: 5), baseURL: URL(string: "http://127.0.0.1:9")!)
        let error = await #expect(throws: TransportError.self) { _ = try await client.fetchObjects("User", from: "/users") }
        #expect(error?.kind == .connectionRefused)
        #expect(try await client.count(Query("User")) == 0)
    }

    @Test func mapsURLErrors() {
        let request = TransportRequest(method: .get, url: URL(string: "https://user:pw@example.com/x")!)
        #expect(URLSessionTransport.map(URLError(.timedOut), request).kind == .timeout)
        #expect(URLSessionTransport.map(URLError(.cancelled), request).kind == .cancelled)
        #expect(URLSessionTransport.map(URLError(.cannotConnectToHost), request).kind == .connectionRefused)
        #expect(URLSessionTransport.map(URLError(.badServerResponse), request).kind == .other)
        #expect(!URLSessionTransport.map(URLError(.timedOut), request).description.contains("pw"))
    }

    @Test func cancellationIsReported() async throws {
        let stub = StubTransport()
        stub.on(.get, "/slow") { _ in
            try await Task.sleep(for: .seconds(30))
            return TransportResponse(status: 200)
        }
        let client = try makeClient(stub)
        let task = Task { try await client.fetchObjects("User", from: "/slow") }
        try await Task.sleep(for: .milliseconds(50))
        task.cancel()
        let error = await #expect(throws: TransportError.self) { _ = try await task.value }
        #expect(error?.kind == .cancelled)
    }
}
