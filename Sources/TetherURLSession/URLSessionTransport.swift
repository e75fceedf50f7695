public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif
public import Tether

/// A ``Transport`` over `URLSession` (FoundationNetworking on Linux).
///
/// Redirects, gzip/deflate decoding and connection reuse are `URLSession`'s; a redirect to another
/// scheme, host or port drops the request's credentials (`Authorization`, cookies, API-key
/// headers: ``Redaction/isSecretHeader(_:)``) on the way, so that they go only to the server that
/// was asked (for a session of your own, give it a ``RedirectGuard`` as its delegate). Failures to
/// exchange become a ``TransportError``: `.connectionRefused`, `.timeout`, `.cancelled` or
/// `.other`; an HTTP error status is returned as a normal response (the client turns it into an
/// ``HTTPError``).
///
/// ```swift
/// let client = try Client.Builder(schema: schema)
///     .transport(URLSessionTransport(timeout: 15))
///     .baseURL(URL(string: "https://api.github.com")!)
///     .build()
/// ```
public final class URLSessionTransport: Transport {
    public let session: URLSession
    /// The per-request timeout (seconds), or nil for the session configuration's.
    public let timeout: TimeInterval?

    /// A transport with its own session.
    /// - Parameters:
    ///   - configuration: the session configuration (default `.ephemeral`: no cookies or cache on disk).
    ///   - timeout: seconds without data before a request fails with `.timeout` (default 60).
    public init(configuration: URLSessionConfiguration = .ephemeral, timeout: TimeInterval? = 60) {
        if let timeout { configuration.timeoutIntervalForRequest = timeout }
        self.session = URLSession(configuration: configuration, delegate: RedirectGuard(), delegateQueue: nil)
        self.timeout = timeout
    }

    /// A transport over an existing session (its delegate, if any, sees every task; make it a
    /// ``RedirectGuard``, or do what it does, to keep credentials from other origins).
    public init(session: URLSession, timeout: TimeInterval? = nil) {
        self.session = session
        self.timeout = timeout
    }

    deinit { session.finishTasksAndInvalidate() }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method.rawValue
        for field in request.headers { urlRequest.addValue(field.value, forHTTPHeaderField: field.name) }
        urlRequest.httpBody = request.body
        if let timeout { urlRequest.timeoutInterval = timeout }
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: urlRequest)
        } catch let error as URLError {
            throw Self.map(error, request)
        } catch is CancellationError {
            throw TransportError(.cancelled, method: request.method, url: request.url, "the request was cancelled")
        } catch {
            throw TransportError(.other, method: request.method, url: request.url, "\(error)")
        }
        guard let http = response as? HTTPURLResponse else {
            throw TransportError(.other, method: request.method, url: request.url, "the response is not HTTP")
        }
        var headers = HTTPHeaders()
        for (name, value) in http.allHeaderFields {
            headers.add(name: "\(name)", value: "\(value)")
        }
        return TransportResponse(status: http.statusCode, headers: headers, body: data)
    }

    /// A session delegate that lets `URLSession` follow redirects, without the request's
    /// credentials when the redirect leads to another scheme, host or port than the request's.
    public final class RedirectGuard: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
        public override init() {}

        public func urlSession(
            _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
            newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
        ) {
            completionHandler(Self.guarded(request, from: task.originalRequest?.url ?? response.url))
        }

        /// `request` without its secret headers when it leaves the origin of `original`.
        public static func guarded(_ request: URLRequest, from original: URL?) -> URLRequest {
            guard let original, let target = request.url, !Redaction.sameOrigin(original, target) else { return request }
            var request = request
            for name in (request.allHTTPHeaderFields ?? [:]).keys where Redaction.isSecretHeader(name) {
                request.setValue(nil, forHTTPHeaderField: name)
            }
            return request
        }
    }

    /// Maps a `URLError` to a ``TransportError``.
    public static func map(_ error: URLError, _ request: TransportRequest) -> TransportError {
        let kind: TransportError.Kind
        switch error.code {
        case .cannotConnectToHost: kind = .connectionRefused
        case .networkConnectionLost: kind = .connectionLost
        case .timedOut: kind = .timeout
        case .cancelled: kind = .cancelled
        default: kind = .other
        }
        return TransportError(kind, method: request.method, url: request.url, "URLError \(error.code.rawValue): \(error.localizedDescription)")
    }
}
