public import Foundation
public import Tether
import Synchronization

/// A `Transport` answering canned responses by method and path (or from a closure), recording
/// every request so a test can assert on them.
///
/// ```swift
/// let stub = StubTransport()
/// stub.on(.get, "/users/octocat", json: ["id": 1, "login": "octocat"])
/// stub.on(.post, "/users", status: 422, json: ["login": ["has already been taken"]])
/// stub.on(.delete, "/users/1") { _ in TransportResponse(status: 204) }
///
/// let client = try Client.Builder(schema: schema).transport(stub).baseURL(base).build()
/// …
/// #expect(stub.requests.map(\.method) == [.get, .post])
/// ```
///
/// A path matches the request URL's percent-escaped path, without a trailing slash difference;
/// a stub path with a `?` also matches the query exactly, and wins over a stub without query
/// (which matches any query). Otherwise stubs are tried in the order they were added; a `once` stub answers one request and is then removed. A request no stub matches
/// throws ``StubTransport/NoStub`` (the client reports it as a `TransportError` `.other`).
public final class StubTransport: Transport {
    /// A closure that answers one request: return a response (any status), or throw to fail the
    /// exchange as a transport would.
    public typealias Handler = @Sendable (TransportRequest) async throws -> TransportResponse

    /// The error thrown for a request that no stub matches.
    public struct NoStub: Error, CustomStringConvertible {
        /// The method of the request no stub matched.
        public let method: HTTPMethod
        /// The percent-escaped path of the request no stub matched, with its query (`/users?page=2`).
        public let path: String
        public var description: String { "no stub for \(method) \(path)" }
    }

    private struct Stub {
        let method: HTTPMethod?
        let path: String?
        let once: Bool
        let handler: Handler
    }

    private struct State {
        var stubs: [(id: Int, stub: Stub)] = []
        var next = 0
        var requests: [TransportRequest] = []
    }

    private let state = Mutex(State())
    private let fallback: Handler?

    /// A transport with no stubs yet; the `on` methods add them.
    ///
    /// - Parameter fallback: answers requests no stub matches (instead of throwing ``NoStub``).
    public init(fallback: Handler? = nil) { self.fallback = fallback }

    /// Answers `method path` with `handler`.
    public func on(_ method: HTTPMethod?, _ path: String?, once: Bool = false, _ handler: @escaping Handler) {
        state.withLock { state in
            state.next += 1
            state.stubs.append((state.next, Stub(method: method, path: path, once: once, handler: handler)))
        }
    }

    /// Answers `method path` with a fixed response.
    public func on(_ method: HTTPMethod?, _ path: String?, once: Bool = false, response: TransportResponse) {
        on(method, path, once: once) { _ in response }
    }

    /// Answers `method path` with a JSON body (`Content-Type: application/json`).
    public func on(_ method: HTTPMethod?, _ path: String?, once: Bool = false, status: Int = 200, headers: HTTPHeaders = [:], json: JSON) {
        var headers = headers
        if headers["Content-Type"] == nil { headers["Content-Type"] = "application/json; charset=utf-8" }
        on(method, path, once: once, response: TransportResponse(status: status, headers: headers, body: json.serialized()))
    }

    /// Answers `method path` with raw bytes.
    public func on(_ method: HTTPMethod?, _ path: String?, once: Bool = false, status: Int, headers: HTTPHeaders = [:], body: Data = Data()) {
        on(method, path, once: once, response: TransportResponse(status: status, headers: headers, body: body))
    }

    /// Every request sent so far, in order.
    public var requests: [TransportRequest] { state.withLock { $0.requests } }

    /// The requests sent with `method` to `path` (matched as stubs are).
    public func requests(_ method: HTTPMethod? = nil, _ path: String? = nil) -> [TransportRequest] {
        requests.filter { Self.matches(method, path, $0) }
    }

    /// Forgets the recorded requests (the stubs stay).
    public func clearRequests() { state.withLock { $0.requests = [] } }

    /// Records `request`, then answers it with the first matching stub (one naming the request's
    /// query wins), else with the fallback; throws ``NoStub`` when neither answers.
    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        let handler: Handler? = state.withLock { state in
            state.requests.append(request)
            // A stub naming a query wins over one naming only the path.
            let exact = state.stubs.firstIndex { $0.stub.path?.contains("?") == true && Self.matches($0.stub.method, $0.stub.path, request) }
            guard let index = exact ?? state.stubs.firstIndex(where: { Self.matches($0.stub.method, $0.stub.path, request) }) else { return nil }
            let stub = state.stubs[index].stub
            if stub.once { state.stubs.remove(at: index) }
            return stub.handler
        }
        if let handler { return try await handler(request) }
        if let fallback { return try await fallback(request) }
        throw NoStub(method: request.method, path: Self.pathAndQuery(request.url))
    }

    static func matches(_ method: HTTPMethod?, _ path: String?, _ request: TransportRequest) -> Bool {
        if let method, method != request.method { return false }
        guard let path else { return true }
        let components = URLComponents(url: request.url, resolvingAgainstBaseURL: true)
        func trim(_ p: String) -> String { p.count > 1 && p.hasSuffix("/") ? String(p.dropLast()) : p }
        let requestPath = trim(components?.percentEncodedPath ?? "")
        if let q = path.firstIndex(of: "?") {
            return trim(String(path[..<q])) == requestPath && String(path[path.index(after: q)...]) == (components?.percentEncodedQuery ?? "")
        }
        return trim(path) == requestPath
    }

    static func pathAndQuery(_ url: URL) -> String {
        let components = URLComponents(url: url, resolvingAgainstBaseURL: true)
        let path = components?.percentEncodedPath ?? ""
        return components?.percentEncodedQuery.map { path + "?" + $0 } ?? path
    }
}
