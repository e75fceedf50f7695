public import Foundation

/// Protocol 4 of 6: an asynchronous HTTP exchange.
///
/// Tether builds requests from URL templates and the mapping, hands them to a transport, and
/// maps the response. It never depends on one networking library.
///
/// ## Use an existing one
/// - `URLSessionTransport` (module `TetherURLSession`) for real servers.
/// - `StubTransport` and `ReplayTransport` (module `TetherTesting`) in tests.
///
/// ## Write your own
/// ```swift
/// struct LoggingTransport: Transport {
///     let next: any Transport
///     func send(_ request: TransportRequest) async throws -> TransportResponse {
///         print(request.method, request.url)
///         return try await next.send(request)
///     }
/// }
/// ```
/// A transport throws only for failures to exchange (connection refused, timeout). An HTTP
/// error status is a normal response; Tether turns it into an ``HTTPError``.
public protocol Transport: Sendable {
    /// Sends `request` as it is (the client has already added its default headers and run the
    /// request hooks) and returns the server's answer, whatever its status.
    ///
    /// Called concurrently from any task, once per attempt: a retry (``RetryPolicy``) calls it
    /// again with the same request. Throw a ``TransportError`` when there is no answer
    /// (`.connectionRefused`, `.connectionLost`, `.timeout`, `.cancelled`, `.other`), or when the
    /// body passes ``TransportRequest/responseLimit`` (`.responseTooLarge`);
    /// `.connectionLost` is what lets an idempotent request be retried. The client reports a
    /// `CancellationError` as `.cancelled` and any other error as `.other`, its text (and a
    /// `TransportError`'s message) scrubbed of the request's secrets, and refuses a body past the
    /// limit in any case. Stop when the task is cancelled: the client's deadline
    /// (``TransportRequest/deadline``) cancels it. Never throw for a 4xx or 5xx status: return the
    /// response.
    func send(_ request: TransportRequest) async throws -> TransportResponse
}

/// An HTTP method.
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue.uppercased() }
    public init(stringLiteral value: String) { self.init(rawValue: value) }

    /// `GET`: reads a resource (fetches, refreshes, relationship lists); idempotent, retried by the
    /// default ``RetryPolicy``.
    public static let get = HTTPMethod(rawValue: "GET")
    /// `POST`: creates an object in a collection, or adds one to a relationship; not idempotent, so
    /// not retried by default.
    public static let post = HTTPMethod(rawValue: "POST")
    /// `PUT`: replaces an object (a save, when the builder's save method says so); idempotent.
    public static let put = HTTPMethod(rawValue: "PUT")
    /// `PATCH`: changes some of an object's values (the default save method); not retried by default.
    public static let patch = HTTPMethod(rawValue: "PATCH")
    /// `DELETE`: deletes an object, or removes it from a relationship; idempotent.
    public static let delete = HTTPMethod(rawValue: "DELETE")
    /// `HEAD`: a `GET` without a body; idempotent.
    public static let head = HTTPMethod(rawValue: "HEAD")
    /// `OPTIONS`: asks what a resource allows; idempotent.
    public static let options = HTTPMethod(rawValue: "OPTIONS")

    public var description: String { rawValue }
}

/// HTTP header fields: ordered, names compared case-insensitively.
///
/// Its description hides credentials (``Redaction/isSecretHeader(_:)``): `Authorization: <redacted>`.
public struct HTTPHeaders: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible,
    CustomDebugStringConvertible, CustomReflectable
{
    /// Every field in the order it was added, names as they were given (a name may repeat).
    public private(set) var fields: [(name: String, value: String)] = []

    /// No fields.
    public init() {}
    /// The fields in order, repeated names kept (`[("Accept", "application/json")]`).
    public init(_ fields: [(String, String)]) { for (n, v) in fields { add(name: n, value: v) } }
    public init(dictionaryLiteral elements: (String, String)...) { self.init(elements) }

    /// The first value of `name`, or nil. Setting replaces every field of that name.
    public subscript(name: String) -> String? {
        get { fields.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value }
        set {
            fields.removeAll { $0.name.caseInsensitiveCompare(name) == .orderedSame }
            if let newValue { fields.append((name, newValue)) }
        }
    }

    /// Every value of `name`, in order.
    public func values(for name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveCompare(name) == .orderedSame }.map(\.value)
    }

    /// Appends a field, keeping the fields of that name already there (a second `Set-Cookie`);
    /// use the subscript to replace them instead.
    public mutating func add(name: String, value: String) { fields.append((name, value)) }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.count == rhs.fields.count
            && zip(lhs.fields, rhs.fields).allSatisfy { $0.name.lowercased() == $1.name.lowercased() && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        for f in fields {
            hasher.combine(f.name.lowercased())
            hasher.combine(f.value)
        }
    }

    /// One `Name: value` line per field, secrets shown as `<redacted>`.
    public var description: String {
        Redaction.headers(self).fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(self, children: ["fields": Redaction.headers(self).fields.map { "\($0.name): \($0.value)" }], displayStyle: .struct)
    }
}

/// A request handed to a ``Transport``.
///
/// Its description, debug description and mirror hide credentials (see ``Redaction``), so that
/// printing a request, or an error of your own that holds one, never shows a token.
public struct TransportRequest: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The HTTP method (`GET`, `POST`, …).
    public var method: HTTPMethod
    /// The absolute URL, query included.
    public var url: URL
    /// The header fields to send: the client adds `Accept` and, with a body, `Content-Type`
    /// (JSON) unless they are set, then the request hooks add theirs (`Authorization`).
    public var headers: HTTPHeaders
    /// The body bytes (JSON for Tether's own requests), or nil for none.
    public var body: Data?
    /// The most bytes the answer's body may have, counted after decompression; a larger answer
    /// is a ``TransportError`` (`.responseTooLarge`) and is never parsed. Nil: the client's
    /// (``Client/Builder/responseLimit(_:)``, 64 MiB by default), or ``defaultResponseLimit`` for a
    /// transport used on its own. A request hook may set it for one request.
    public var responseLimit: Int?
    /// The most time the whole exchange may take, from handing the request to the transport to
    /// the last byte of the answer, redirects included (unlike a transport's idle timeout, which
    /// a server sending a byte now and then resets). When it passes, the exchange is cancelled
    /// and fails with a ``TransportError`` (`.deadlineExceeded`); nothing is imported. Nil: the
    /// client's (``Client/Builder/deadline(_:)``, 5 minutes by default). Enforced by
    /// ``Transport/send(withinDeadline:)``, which the client uses for every exchange.
    public var deadline: Duration?

    /// The response limit of a request that sets none and is sent without a client: 64 MiB.
    public static let defaultResponseLimit = 64 << 20

    /// A request; `headers` and `body` default to none.
    public init(method: HTTPMethod, url: URL, headers: HTTPHeaders = [:], body: Data? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    /// `GET https://…` with secrets hidden, then the headers and the body's size.
    public var description: String {
        var text = "\(method) \(Redaction.url(url).absoluteString)"
        let headers = Redaction.headers(headers)
        if !headers.fields.isEmpty { text += " [" + headers.fields.map { "\($0.name): \($0.value)" }.joined(separator: ", ") + "]" }
        if let body { text += " (\(body.count) bytes)" }
        return text
    }
    public var debugDescription: String { "TransportRequest(\(description))" }
    public var customMirror: Mirror {
        Mirror(self, children: ["method": method, "url": Redaction.url(url), "headers": Redaction.headers(headers), "body": body as Any],
               displayStyle: .struct)
    }
}

/// What a ``Transport`` got back.
public struct TransportResponse: Sendable, Hashable {
    /// The HTTP status of the answer (100–599); any status is a response, not an error.
    public var status: Int
    /// The response's header fields (`Content-Type`, `ETag`, `Link`, …).
    public var headers: HTTPHeaders
    /// The response body bytes, empty when there is none.
    public var body: Data

    /// A response; `headers` and `body` default to empty (a stub's `TransportResponse(status: 204)`).
    public init(status: Int, headers: HTTPHeaders = [:], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// True for 2xx statuses.
    public var isSuccess: Bool { (200..<300).contains(status) }
}
