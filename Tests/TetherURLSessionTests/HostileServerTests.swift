import Foundation
import Synchronization
import Testing
@testable import Tether
import TetherURLSession

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Issue 37, "unbounded or leaking under a hostile server": a real HTTP server on 127.0.0.1
/// (``HostileServer``) sends gzip bombs, endless and trickled bodies, redirects to another origin
/// and lists with ETags. Through a `Client` on `URLSessionTransport`, each must end in a typed
/// error naming the URL and the limit, hold no more than the limit, write nothing, send no header
/// of the app's to another origin, and remember no more lists than the limit.
@Suite struct HostileServerTests {
    static let token = "hs-S3cret-T0ken-7d41a9"
    static let key = "hs-subscription-key-5be2"

    /// A client of `server` whose requests go to `/<mode>/…` with a bearer token, over a store
    /// that already holds one user; one request per fault (no retries).
    static func client(
        _ server: HostileServer, _ mode: String, transport: URLSessionTransport = URLSessionTransport(timeout: 30),
        _ configure: (Client.Builder) -> Client.Builder = { $0 }
    ) async throws -> Client {
        let builder = try makeBuilder(transport: transport, baseURL: server.base(mode))
            .requestHook(AuthorizationHook(credential: token))
            .retries(.none)
        let client = try configure(builder).build()
        _ = try await client.import(Data(#"[{"id": 9, "login": "seeded"}]"#.utf8), as: "User")
        return client
    }

    static func expectNothingWritten(_ client: Client, _ label: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let users = try await client.fetch(Query("User"))
        #expect(users.map { $0["login"] } == [.string("seeded")], "\(label): \(users.count) users stored", sourceLocation: sourceLocation)
    }

    /// The peak resident size of this process so far, in bytes.
    static func peakResidentBytes() -> Int {
        var usage = rusage()
        #if canImport(Glibc)
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        #else
        getrusage(RUSAGE_SELF, &usage)
        #endif
        #if canImport(Darwin)
        return Int(usage.ru_maxrss)
        #else
        return Int(usage.ru_maxrss) * 1024
        #endif
    }

    // MARK: 14. A hook's error

    struct Refusal: Error, CustomStringConvertible {
        let text: String
        var description: String { text }
    }

    /// A hook that throws with the `Authorization` value in its message: the caller's error and
    /// `ClientEvent.failure` are scrubbed, the hook's error stays reachable, and nothing is sent.
    /// A transport's `TransportError` with the credential in its message is scrubbed too.
    @Test func aHooksErrorIsScrubbedOnEveryPath() async throws {
        let server = try await HostileServer()
        let failures = Mutex<[String]>([])
        let client = try await Self.client(server, "ok") { builder in
            builder
                .requestHook(RequestHookClosure { request in
                    throw Refusal(text: "refused with \(request.headers["Authorization"] ?? "")")
                })
                .onEvent { event in
                    if case .failure = event { failures.withLock { $0.append("\(event)") } }
                }
        }
        let error = await #expect(throws: RequestHookError.self) { _ = try await client.fetchObjects("User", from: "/users") }
        #expect(error?.underlying is Refusal)
        #expect(error?.hook == "RequestHookClosure")
        #expect(error?.url.path == "/ok/users")
        var dumped = ""
        dump(error, to: &dumped)
        for text in [error.map { "\($0)" } ?? "", error.map { String(reflecting: $0) } ?? "", dumped] + failures.withLock({ $0 }) {
            #expect(!text.contains(Self.token), "the token is printed: \(text)")
        }
        #expect(failures.withLock { $0 }.count == 1)
        #expect(failures.withLock { $0 }.first?.contains("refused with <redacted>") == true, "\(failures.withLock { $0 })")
        #expect(try server.requests().isEmpty, "nothing was sent")

        // A transport's own error quoting the credential (the URLSession transport underneath).
        struct Quoting: Transport {
            let next: URLSessionTransport
            func send(_ request: TransportRequest) async throws -> TransportResponse {
                _ = try await next.send(request)
                throw TransportError(.other, method: request.method, url: request.url, "gave up on \(request.headers["Authorization"] ?? "")")
            }
        }
        let events = Mutex<[String]>([])
        let quoting = try makeBuilder(transport: Quoting(next: URLSessionTransport(timeout: 30)), baseURL: server.base("ok"))
            .requestHook(AuthorizationHook(credential: Self.token)).retries(.none)
            .onEvent { event in events.withLock { $0.append("\(event)") } }
            .build()
        let transportError = await #expect(throws: TransportError.self) { _ = try await quoting.fetchObjects("User", from: "/users") }
        #expect(transportError?.message == "gave up on Bearer <redacted>" || transportError?.message == "gave up on <redacted>",
                "\(String(describing: transportError))")
        for text in events.withLock({ $0 }) { #expect(!text.contains(Self.token), "\(text)") }
        #expect(try server.requests().count == 1)
    }

    // MARK: 15. Remembered ETags

    /// Many distinct lists with ETags: the client remembers the validators of the most recently
    /// fetched ones only, and the least recently used is the first forgotten.
    @Test func rememberedListValidatorsAreBounded() async throws {
        let server = try await HostileServer()
        let client = try await Self.client(server, "etag") { $0.listValidatorLimit(20) }
        func fetch(_ n: Int) async throws -> FetchResult {
            try await client.fetchObjects("User", from: URLTemplate("/users?n=\(n)"))
        }
        func lastIfNoneMatch(_ n: Int) throws -> String? {
            try server.requests().last { $0.path == "/etag/users?n=\(n)" }?.headers["if-none-match"]
        }
        for n in 0..<60 { _ = try await fetch(n) }
        #expect(client.listValidators.count == 20)
        // The first lists are forgotten: fetched whole again, without If-None-Match.
        let first = try await fetch(0)
        #expect(!first.notModified)
        #expect(try lastIfNoneMatch(0) == nil)
        // 0 is remembered again (and 40 forgotten); 59 still is: a 304.
        let recent = try await fetch(59)
        #expect(recent.notModified)
        #expect(try lastIfNoneMatch(59) == "\"v-59\"")
        // Using 41 keeps it while 19 new lists come in; 42, used less recently, goes.
        #expect(try await fetch(41).notModified)
        for n in 100..<119 { _ = try await fetch(n) }
        #expect(client.listValidators.count == 20)
        #expect(try await fetch(41).notModified, "the most recently used stays")
        #expect(try await !fetch(42).notModified, "the least recently used went")
    }
}
