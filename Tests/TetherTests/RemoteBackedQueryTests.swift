import Foundation
import Synchronization
import Testing
import Tether
import TetherTesting

/// Refresh policies and shared requests of remote-backed observations (the server side is
/// covered against DRF and Rails in TetherURLSessionTests).
@Suite struct RemoteBackedQueryTests {
    static let schema = usersAndRepositories

    /// A stub whose list answers after a pause, counting the requests.
    static func stub() -> (StubTransport, @Sendable () -> Int) {
        let stub = StubTransport()
        let count = Counter()
        stub.on(.get, "/repositories") { _ in
            count.add()
            try await Task.sleep(for: .milliseconds(100))
            return TransportResponse(status: 200, headers: ["Content-Type": "application/json"],
                                     body: Data(#"[{"id": 1, "name": "one"}, {"id": 2, "name": "two"}]"#.utf8))
        }
        stub.on(.get, "/users/1/repositories", json: [["id": 3, "name": "three"]])
        return (stub, { count.value })
    }

    final class Counter: Sendable {
        private let count = Mutex(0)
        func add() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }

    static func client(_ transport: StubTransport) throws -> Client {
        try Client.Builder(schema: schema).transport(transport).baseURL(URL(string: "https://api.example")!).build()
    }

    /// Waits for a snapshot whose source is no longer loading.
    static func settled(_ iterator: inout QueryObservation.Iterator) async throws -> ResultsSnapshot {
        while true {
            let snapshot = try #require(try await iterator.next())
            if snapshot.remote?.isLoading == false, snapshot.remote?.lastRefreshed != nil || snapshot.remote?.lastError != nil { return snapshot }
        }
    }

    @Test func observersOfOneSourceShareOneRequest() async throws {
        let (stub, requests) = Self.stub()
        let client = try Self.client(stub)
        let query = Query("Repository", sortedBy: [.ascending("id")])
        var a = client.observe(query, from: .objects(at: "/repositories")).makeAsyncIterator()
        var b = client.observe(query, reading: ["name"], from: .objects(at: "/repositories")).makeAsyncIterator()
        #expect(try await a.next()?.remote?.isLoading == true)
        #expect(try await b.next()?.remote?.isLoading == true)
        let settledA = try await Self.settled(&a)
        let settledB = try await Self.settled(&b)
        #expect(settledA.objects.map { $0["name"] } == ["one", "two"].map(Value.string))
        #expect(settledB.objects.map(\.id) == settledA.objects.map(\.id))
        #expect(requests() == 1, "one request for both observers")
    }

    @Test func policies() async throws {
        let (stub, requests) = Self.stub()
        let client = try Self.client(stub)
        let query = Query("Repository", sortedBy: [.ascending("id")])
        var first = client.observe(query, from: .objects(at: "/repositories"), refresh: .ifOlderThan(.seconds(3600))).makeAsyncIterator()
        _ = try await first.next()
        _ = try await Self.settled(&first)
        #expect(requests() == 1)

        // Fresh enough: no request.
        var second = client.observe(query, from: .objects(at: "/repositories"), refresh: .ifOlderThan(.seconds(3600))).makeAsyncIterator()
        let local = try #require(try await second.next())
        #expect(local.remote?.isLoading == false)
        #expect(local.objects.count == 2)

        // Never by itself; on demand.
        let manual = client.observe(query, from: .objects(at: "/repositories"), refresh: .never)
        var third = manual.makeAsyncIterator()
        #expect(try await third.next()?.remote?.isLoading == false)
        #expect(requests() == 1)
        try await manual.refresh()
        #expect(requests() == 2)
        #expect(manual.remoteState?.lastError == nil)
    }

    @Test func relationshipSource() async throws {
        let (stub, _) = Self.stub()
        let client = try Self.client(stub)
        try await client.import(Data(#"[{"id": 1, "login": "ada", "repositories": [{"id": 9, "name": "gone"}]}]"#.utf8), as: "User")
        let ada = try #require(try await client.object("User", identity: .int(1)))
        let observation = client.observe(Query("Repository", sortedBy: [.ascending("id")]),
                                         from: .relationship("repositories", of: ada.id, from: "/users/:id/repositories"))
        var results = observation.makeAsyncIterator()
        #expect(try await results.next()?.objects.map { $0["name"] } == [.string("gone")])
        let settled = try await Self.settled(&results)
        #expect(settled.objects.map { $0["name"] } == [.string("three")], "9 no longer listed: deleted")
        #expect(try await client.related("repositories", of: ada.id).map { $0["name"] } == [.string("three")])
    }
}
