import Foundation

/// Middleware run on every request before it reaches the transport: authentication, default
/// headers, request ids. Hooks run in the order they were added to the builder.
///
/// ```swift
/// let client = try Client.Builder(schema: schema)
///     .transport(URLSessionTransport())
///     .requestHook(AuthorizationHook(scheme: "token", credential: token))
///     .requestHook(DefaultHeaders(["User-Agent": "MyApp/1.0"]))
///     .build()
/// ```
///
/// Tether itself sets `Accept: application/json` (and `Content-Type: application/json` on
/// bodies) before the hooks run; a hook may replace them.
///
/// ## Write your own
/// ```swift
/// struct RequestID: RequestHook {
///     func prepare(_ request: inout TransportRequest) async throws {
///         request.headers["X-Request-ID"] = UUID().uuidString
///     }
/// }
/// ```
/// A hook that throws stops the request; nothing is sent and nothing is written. The caller gets
/// a ``RequestHookError`` whose text has the request's secrets removed, holding the hook's own
/// error as ``RequestHookError/underlying``.
public protocol RequestHook: Sendable {
    /// Changes `request` before it is sent: add or replace headers, sign it, rewrite its URL, or
    /// set its ``TransportRequest/responseLimit`` or ``TransportRequest/deadline``.
    ///
    /// Runs on every attempt, retries included (a token refreshed meanwhile is picked up), after
    /// Tether's `Accept` and `Content-Type` and the hooks added before this one. Throw to stop the
    /// request: nothing is sent and nothing is written, and the caller (and
    /// ``ClientEvent/failure(_:)``) gets a ``RequestHookError`` wrapping the error, its text
    /// scrubbed of the request's secrets (a `CancellationError` is thrown as it is).
    func prepare(_ request: inout TransportRequest) async throws
}

/// A request hook threw: the request was not sent and nothing was written.
///
/// Its text (``message``, `description`, `dump`) is the hook's error's with every secret of the
/// request removed (``Redaction/scrub(_:of:)``): a hook's message may quote the `Authorization`
/// value it was given. The hook's own error is ``underlying``, as thrown (catch it by type there),
/// and is never printed by this error.
///
/// ```swift
/// do {
///     _ = try await client.fetchObjects("User", from: "/users")
/// } catch let error as RequestHookError where error.underlying is TokenExpired {
///     // sign in again
/// }
/// ```
public struct RequestHookError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The hook's type name (`AuthorizationHook`, `RequestHookClosure`).
    public let hook: String
    /// The request's HTTP method.
    public let method: HTTPMethod
    /// The URL of the request, without user, password and secret query values (``Redaction/url(_:)``).
    public let url: URL
    /// The hook's error's text, without the request's secrets.
    public let message: String
    /// The error the hook threw, as it was thrown; its own text may hold secrets.
    public let underlying: any Error

    /// The error of `hook` (its type name is kept), thrown while preparing `request`: its text is
    /// scrubbed of the request's secrets.
    public init(hook: any RequestHook, request: TransportRequest, underlying: any Error) {
        self.hook = String(describing: type(of: hook))
        self.method = request.method
        self.url = Redaction.url(request.url)
        self.message = Redaction.scrub("\(underlying)", of: request)
        self.underlying = underlying
    }

    public var description: String {
        "request hook \(hook) failed for \(method) \(url.absoluteString), nothing was sent: \(message)"
    }
    public var debugDescription: String { "RequestHookError(\(description))" }
    public var customMirror: Mirror {
        Mirror(self, children: ["hook": hook, "method": method, "url": url, "message": message], displayStyle: .struct)
    }
}

/// Sets headers that the request does not already carry.
public struct DefaultHeaders: RequestHook {
    /// The headers to add; a field the request already has (by name, case-insensitively) is
    /// left as the request has it.
    public var headers: HTTPHeaders

    /// A hook adding `headers`: `DefaultHeaders(["User-Agent": "MyApp/1.0"])`.
    public init(_ headers: HTTPHeaders) { self.headers = headers }

    /// Adds each of ``headers`` that the request does not carry yet.
    public func prepare(_ request: inout TransportRequest) async throws {
        for field in headers where request.headers[field.name] == nil {
            request.headers.add(name: field.name, value: field.value)
        }
    }
}

/// Sets the `Authorization` header: `Bearer <token>`, `token <token>` (GitHub), `Basic …`.
///
/// The credential comes from a closure, so a refreshed token is picked up on the next request:
/// ```swift
/// AuthorizationHook(scheme: "Bearer") { try await tokens.current() }
/// ```
/// Its description never shows the credential.
public struct AuthorizationHook: RequestHook, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The word before the credential (`Bearer`, `token`, `Basic`); empty to send the
    /// credential alone.
    public let scheme: String
    private let credential: @Sendable () async throws -> String

    /// A hook asking `credential` for the current credential on every request (and retry); an
    /// error it throws stops the request.
    public init(scheme: String = "Bearer", credential: @escaping @Sendable () async throws -> String) {
        self.scheme = scheme
        self.credential = credential
    }

    /// A hook sending a fixed credential: `AuthorizationHook(scheme: "token", credential: token)`.
    public init(scheme: String = "Bearer", credential: String) {
        self.init(scheme: scheme) { credential }
    }

    /// HTTP basic authentication.
    public static func basic(user: String, password: String) -> AuthorizationHook {
        AuthorizationHook(scheme: "Basic", credential: Data("\(user):\(password)".utf8).base64EncodedString())
    }

    /// Sets `Authorization: <scheme> <credential>`, replacing any `Authorization` already set.
    public func prepare(_ request: inout TransportRequest) async throws {
        let value = try await credential()
        request.headers["Authorization"] = scheme.isEmpty ? value : "\(scheme) \(value)"
    }

    public var description: String { "AuthorizationHook(\(scheme) <redacted>)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["scheme": scheme], displayStyle: .struct) }
}

/// A hook from a closure.
public struct RequestHookClosure: RequestHook {
    private let body: @Sendable (inout TransportRequest) async throws -> Void

    /// A hook running `body` on each request:
    /// `RequestHookClosure { $0.headers["X-Request-ID"] = UUID().uuidString }`.
    public init(_ body: @escaping @Sendable (inout TransportRequest) async throws -> Void) { self.body = body }

    /// Runs the closure on `request`.
    public func prepare(_ request: inout TransportRequest) async throws { try await body(&request) }
}
