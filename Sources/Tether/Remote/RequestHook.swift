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
/// A hook that throws stops the request; nothing is sent and nothing is written.
public protocol RequestHook: Sendable {
    func prepare(_ request: inout TransportRequest) async throws
}

/// Sets headers that the request does not already carry.
public struct DefaultHeaders: RequestHook {
    public var headers: HTTPHeaders

    public init(_ headers: HTTPHeaders) { self.headers = headers }

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
    public let scheme: String
    private let credential: @Sendable () async throws -> String

    public init(scheme: String = "Bearer", credential: @escaping @Sendable () async throws -> String) {
        self.scheme = scheme
        self.credential = credential
    }

    public init(scheme: String = "Bearer", credential: String) {
        self.init(scheme: scheme) { credential }
    }

    /// HTTP basic authentication.
    public static func basic(user: String, password: String) -> AuthorizationHook {
        AuthorizationHook(scheme: "Basic", credential: Data("\(user):\(password)".utf8).base64EncodedString())
    }

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

    public init(_ body: @escaping @Sendable (inout TransportRequest) async throws -> Void) { self.body = body }

    public func prepare(_ request: inout TransportRequest) async throws { try await body(&request) }
}
