import Foundation
import Synchronization
import Testing
@testable import Tether
import TetherTesting

/// Issue 37, the parts that need no server (the real-server tests are
/// `TetherURLSessionTests/HostileServerTests`): the client's own check of the response limit and
/// its deadline around any transport, the bounded memory of list validators, and numbers whose
/// whole text would make a message of their size.
@Suite struct LimitsTests {
    static let schema = try! Schema {
        Entity("User") {
            Attribute("id", .int64)
            Attribute("login", .string)
        }
    }

    static func client(_ transport: some Transport, _ configure: (Client.Builder) -> Client.Builder = { $0 }) throws -> Client {
        try configure(Client.Builder(schema: schema).transport(transport).baseURL(URL(string: "https://api.example.com")!).retries(.none)).build()
    }

    @Test func theDefaultsAreBounded() {
        let remote = RemoteConfiguration()
        #expect(remote.responseLimit == 64 << 20)
        #expect(remote.deadline == .seconds(300))
        #expect(remote.listValidatorLimit == 1000)
        #expect(TransportLimit.responseBytes(64 << 20).description == "64 MiB (67108864 bytes)")
        #expect(TransportLimit.deadline(.milliseconds(1500)).description == "1.5 s")
    }

    /// A transport that does not stop at the limit itself (a stub): its answer is refused by the
    /// client, before anything is parsed; each request carries the client's limit and deadline.
    @Test func theClientRefusesAnAnswerPastTheLimitOfAnyTransport() async throws {
        let stub = StubTransport()
        let body = "[" + String(repeating: " ", count: 2000) + #"{"id": 1, "login": "a"}]"#
        stub.on(.get, "/users") { _ in TransportResponse(status: 200, headers: ["Content-Type": "application/json"], body: Data(body.utf8)) }
        let client = try Self.client(stub) { $0.responseLimit(1000).deadline(.seconds(7)) }
        let error = await #expect(throws: TransportError.self) { _ = try await client.fetchObjects("User", from: "/users") }
        #expect(error?.kind == .responseTooLarge)
        #expect(error?.limit == .responseBytes(1000))
        #expect(error?.status == 200)
        #expect(error?.url.absoluteString == "https://api.example.com/users")
        #expect(try await client.count(Query("User")) == 0)
        #expect(stub.requests.first?.responseLimit == 1000)
        #expect(stub.requests.first?.deadline == .seconds(7))
        let roomy = try Self.client(stub) { $0.responseLimit(1 << 20) }
        #expect(try await roomy.fetchObjects("User", from: "/users").objects.count == 1)
    }

    /// A transport that never answers and ignores cancellation: the deadline still ends the call
    /// (well before the hour the transport would take), and nothing is imported.
    @Test func theDeadlineEndsATransportThatIgnoresCancellation() async throws {
        struct Stubborn: Transport {
            func send(_ request: TransportRequest) async throws -> TransportResponse {
                let end = ContinuousClock.now + .seconds(3600)
                while ContinuousClock.now < end {
                    try? await Task.sleep(for: .milliseconds(50))  // cancellation ignored
                }
                return TransportResponse(status: 200, body: Data("[]".utf8))
            }
        }
        let client = try Self.client(Stubborn()) { $0.deadline(.milliseconds(300)) }
        let started = ContinuousClock.now
        let error = await #expect(throws: TransportError.self) { _ = try await client.fetchObjects("User", from: "/users") }
        #expect(error?.kind == .deadlineExceeded)
        #expect(error?.limit == .deadline(.milliseconds(300)))
        #expect(error?.description.contains("0.3 s") == true, "\(String(describing: error))")
        #expect(ContinuousClock.now - started < .seconds(600))
        #expect(try await client.count(Query("User")) == 0)
    }

    /// Cancelling the caller ends the exchange at once, deadline or not.
    @Test func cancellingTheCallerCancelsTheExchange() async throws {
        let stub = StubTransport()
        stub.on(.get, "/users") { _ in
            try await Task.sleep(for: .seconds(3600))
            return TransportResponse(status: 200)
        }
        let client = try Self.client(stub) { $0.deadline(.seconds(3600)) }
        let task = Task { try await client.fetchObjects("User", from: "/users") }
        try await Task.sleep(for: .milliseconds(100))
        task.cancel()
        let error = await #expect(throws: TransportError.self) { _ = try await task.value }
        #expect(error?.kind == .cancelled)
    }

    /// 30,000 distinct keys in a cache of 1,000: 1,000 are kept, the most recently used.
    @Test func anLRUCacheKeepsTheMostRecentlyUsed() {
        var cache = LRUCache<String, Int>(capacity: 1000)
        for n in 0..<30_000 {
            cache.set(n, for: "https://api.example.com/users?page=\(n)")
            if n % 7 == 0 { _ = cache.value(for: "https://api.example.com/users?page=0") }
        }
        #expect(cache.count == 1000)
        #expect(cache.value(for: "https://api.example.com/users?page=0") == 0, "used all along, so kept")
        #expect(cache.value(for: "https://api.example.com/users?page=1") == nil)
        #expect(cache.value(for: "https://api.example.com/users?page=29999") == 29_999)
        let keys = cache.keysByRecency
        #expect(keys.count == 1000 && Set(keys).count == 1000)
        #expect(keys.prefix(2) == ["https://api.example.com/users?page=29999", "https://api.example.com/users?page=0"])
        #expect(keys.last == "https://api.example.com/users?page=29001")
        // Forgetting frees a slot; a capacity of 0 keeps nothing.
        cache.set(nil, for: "https://api.example.com/users?page=0")
        #expect(cache.count == 999)
        cache.set(1, for: "again")
        #expect(cache.count == 1000 && cache.keysByRecency.first == "again")
        var none = LRUCache<String, Int>(capacity: 0)
        none.set(1, for: "a")
        #expect(none.count == 0 && none.value(for: "a") == nil)
    }

    /// The list validators of a client are bounded by the builder's limit.
    @Test func aClientRemembersAtMostItsLimitOfLists() async throws {
        let stub = StubTransport()
        stub.on(.get, "/users") { request in
            TransportResponse(status: 200, headers: ["Content-Type": "application/json", "ETag": "\"\(request.url.query ?? "")\""],
                              body: Data("[]".utf8))
        }
        let client = try Self.client(stub) { $0.listValidatorLimit(50) }
        for n in 0..<500 { _ = try await client.fetchObjects("User", from: URLTemplate("/users?page=\(n)")) }
        #expect(client.listValidators.count == 50)
    }

    /// A 10,000-digit number out of range: its message shows the first 40 characters and the count.
    @Test func anOutOfRangeNumberIsCutInItsMessage() throws {
        let digits = "9" + String(repeating: "0", count: 9_999)
        for text in [digits, "[\(digits)]", #"{"n": -\#(digits).5}"#] {
            let error = #expect(throws: JSONParseError.self) { _ = try JSONParser.parse(Data(text.utf8)) }
            let message = error?.message ?? ""
            #expect(message.count < 120, "\(message.count) characters")
            #expect(message.contains("…(10000 digits)") || message.contains("…(10001 digits)"), "\(message)")
            #expect(message.contains("is out of range"))
            #expect("\(error.map { "\($0)" } ?? "")".count < 160)
        }
        let short = #expect(throws: JSONParseError.self) { _ = try JSONParser.parse(Data("1e400".utf8)) }
        #expect(short?.message == "number 1e400 is out of range")
    }
}
