import Foundation
import Synchronization
import Testing
import Tether
import TetherTesting

/// The observability hook: requests, retries, imports and failures reach `onEvent` handlers as
/// structured events, and no secret the requests carry appears in any of them.
@Suite struct ClientEventTests {
    private struct Repository: EntityModel {
        var id: Int64
        var name: String
    }

    /// Collects events from any task.
    private final class Recorder: Sendable {
        let events = Mutex<[ClientEvent]>([])
        func record(_ event: ClientEvent) { events.withLock { $0.append(event) } }
        var all: [ClientEvent] { events.withLock { $0 } }
        var requests: [RequestEvent] { all.compactMap { if case .request(let e) = $0 { e } else { nil } } }
        var retries: [RetryEvent] { all.compactMap { if case .retry(let e) = $0 { e } else { nil } } }
        var imports: [ImportEvent] { all.compactMap { if case .imported(let e) = $0 { e } else { nil } } }
        var failures: [FailureEvent] { all.compactMap { if case .failure(let e) = $0 { e } else { nil } } }
    }

    static let token = "ev-S3cret-T0ken-91d7"

    private func makeClient(_ stub: StubTransport, _ recorder: Recorder) throws -> Client {
        try Client.Builder(models: [Repository.self])
            .transport(stub)
            .baseURL(URL(string: "https://api.example.com")!)
            .resource("/repos", item: "/repos/:id", for: "Repository")
            .requestHook(AuthorizationHook(credential: Self.token))
            .retries(RetryPolicy(maxRetries: 1, baseDelay: .milliseconds(1)))
            .onEvent { recorder.record($0) }
            .build()
    }

    @Test func requestsRetriesAndImportsAreReported() async throws {
        let stub = StubTransport()
        let recorder = Recorder()
        let client = try makeClient(stub, recorder)
        stub.on(.get, "/repos", once: true, status: 503, body: Data())
        stub.on(.get, "/repos", json: [["id": 1, "name": "hello"], ["id": 2, "name": "spoon"]])
        let fetched = try await client.fetchObjects("Repository", from: "/repos")
        #expect(fetched.objects.count == 2)

        let requests = recorder.requests
        #expect(requests.map(\.status) == [503, 200])
        #expect(requests.map(\.attempt) == [1, 2])
        #expect(requests.allSatisfy { $0.method == .get && $0.url.absoluteString == "https://api.example.com/repos" && $0.entity == "Repository" })
        #expect(requests[1].responseBytes > 0 && requests[1].requestBytes == 0)
        #expect(requests.allSatisfy { $0.duration >= .zero })

        let retry = try #require(recorder.retries.first)
        #expect(retry.status == 503 && retry.attempt == 2 && retry.reason == "status 503")

        let imported = try #require(recorder.imports.first)
        #expect(imported.entity == "Repository")
        #expect(imported.objects == 2 && imported.inserted == 2 && imported.updated == 0 && imported.diagnostics == 0)
        #expect(recorder.failures.isEmpty)

        // a second import of changed bytes: counted as updates, with its size
        let data = Data(#"[{"id": 1, "name": "hello!"}, {"id": 2, "name": "spoon"}, {"id": 3}]"#.utf8)
        try await client.import(data, as: "Repository")
        let second = try #require(recorder.imports.last)
        #expect(second.updated == 1 && second.unchanged == 1 && second.inserted == 1 && second.bytes == data.count)
        #expect(second.description.hasPrefix("import Repository: 3 objects, 1 inserted, 1 updated, 1 unchanged"))
    }

    @Test func failuresAreReportedWithTheirStatusOrError() async throws {
        let stub = StubTransport()
        let recorder = Recorder()
        let client = try makeClient(stub, recorder)
        // the server echoes the credential in its error body
        stub.on(.get, "/repos/7", status: 404, headers: ["Content-Type": "application/json"],
                body: Data(#"{"detail": "no repository 7 for Bearer \#(Self.token)"}"#.utf8))
        await #expect(throws: HTTPError.self) { try await client.fetchObject("Repository", at: "/repos/:id", values: ["id": .int(7)]) }
        let failure = try #require(recorder.failures.first)
        #expect(failure.operation == .request && failure.status == 404 && failure.method == .get)
        #expect(failure.url?.path == "/repos/7")
        #expect(failure.error is HTTPError)

        // an import that cannot be done writes nothing and is reported as a failure
        await #expect(throws: (any Error).self) { try await client.import(Data("[{\"id\": 1,".utf8), as: "Repository") }
        let importFailure = try #require(recorder.failures.last)
        #expect(importFailure.operation == .import && importFailure.entity == "Repository")

        // no answer at all
        stub.on(.get, "/repos/8") { _ in throw URLError(.cannotConnectToHost) }
        await #expect(throws: TransportError.self) { try await client.fetchObject("Repository", at: "/repos/:id", values: ["id": .int(8)]) }
        let noAnswer = try #require(recorder.requests.last)
        #expect(noAnswer.status == nil && noAnswer.error != nil)
        #expect(recorder.failures.last?.status == nil)
    }

    @Test func noEventCarriesASecret() async throws {
        let stub = StubTransport()
        let recorder = Recorder()
        let client = try makeClient(stub, recorder)
        let secretURL = "https://user:\(Self.token)@api.example.com/repos?access_token=\(Self.token)&page=1"
        stub.on(.get, "/repos", once: true, status: 503, body: Data(Self.token.utf8))
        stub.on(.get, "/repos", status: 401, headers: ["WWW-Authenticate": "Bearer \(Self.token)"],
                body: Data(#"{"message": "bad credentials \#(Self.token)"}"#.utf8))
        await #expect(throws: HTTPError.self) { try await client.send(.get, URL(string: secretURL)!) }
        stub.on(.post, "/repos") { _ in throw NSError(domain: "custom", code: 1, userInfo: [NSLocalizedDescriptionKey: "failed with \(Self.token)"]) }
        await #expect(throws: TransportError.self) { try await client.send(.post, URL(string: secretURL)!, body: ["token": .string(Self.token)]) }

        let events = recorder.all
        #expect(events.count >= 5)
        for event in events {
            let texts = ["\(event)", String(reflecting: event)]
            for text in texts {
                #expect(!text.contains(Self.token), "\(text)")
            }
        }
        #expect(recorder.requests.allSatisfy { $0.url.absoluteString.contains("access_token=%3Credacted%3E") && $0.url.user == nil })
    }
}
