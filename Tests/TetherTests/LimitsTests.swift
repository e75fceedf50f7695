import Foundation
import Synchronization
import Testing
@testable import Tether
import TetherTesting

/// Issue 37, the parts that need no server (the real-server tests are
/// `TetherURLSessionTests/HostileServerTests`): the bounded memory of list validators, and numbers
/// whose whole text would make a message of their size.
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
