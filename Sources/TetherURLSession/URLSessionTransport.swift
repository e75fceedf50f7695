public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif
public import Tether

/// A `Transport` over `URLSession` (FoundationNetworking on Linux).
///
/// Gzip/deflate decoding and connection reuse are `URLSession`'s. Redirects are followed by the
/// transport itself, the same on Linux as on Apple platforms (``redirect(_:_:original:)``): 307
/// and 308 repeat the method and the body, and a redirect to another scheme, host or port drops
/// the request's credentials (`Authorization`, cookies, API-key headers:
/// `Redaction.isSecretHeader(_:)`), so that they go only to the server that was asked (for a
/// session of your own, give it a ``RedirectGuard`` as its delegate). Failures to
/// exchange become a `TransportError`: `.connectionRefused`, `.timeout`, `.cancelled` or
/// `.other`; an HTTP error status is returned as a normal response (the client turns it into an
/// `HTTPError`).
///
/// ```swift
/// let client = try Client.Builder(schema: schema)
///     .transport(URLSessionTransport(timeout: 15))
///     .baseURL(URL(string: "https://api.github.com")!)
///     .build()
/// ```
public final class URLSessionTransport: Transport {
    /// The session every exchange runs on: the transport's own (``init(configuration:timeout:)``),
    /// whose delegate is a ``RedirectGuard``, or the one given to ``init(session:timeout:)``.
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

    /// The most redirects one request follows.
    public static let maxRedirects = 10

    /// Sends `request` and returns the answer, following up to ``maxRedirects`` redirects as
    /// ``redirect(_:_:original:)`` says. An HTTP error status is a normal response; a failed
    /// exchange throws a `TransportError` (``map(_:_:)``), and so do too many redirects (`.other`).
    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        var current = request
        var hops = 0
        while true {
            let response = try await exchange(current, original: request)
            guard let next = Self.redirect(current, response, original: request) else { return response }
            hops += 1
            guard hops <= Self.maxRedirects else {
                throw TransportError(.other, method: request.method, url: request.url,
                                     "more than \(Self.maxRedirects) redirects (the last to \(Redaction.url(next.url).absoluteString))")
            }
            current = next
        }
    }

    /// The request a redirect answer asks for, or nil when `response` is not one to follow.
    ///
    /// 307 and 308 repeat the method and the body (as RFC 9110 says; FoundationNetworking on Linux
    /// would send the body-less request it builds itself); 303 becomes a GET without body; 301 and
    /// 302 turn a POST into a GET, as browsers and URLSession do, and repeat other methods. The
    /// credentials (`Redaction.isSecretHeader(_:)`) are dropped when the target is another scheme,
    /// host or port than the original request's.
    public static func redirect(_ request: TransportRequest, _ response: TransportResponse, original: TransportRequest) -> TransportRequest? {
        guard [301, 302, 303, 307, 308].contains(response.status), let location = response.headers["Location"],
              let target = URL(string: location, relativeTo: request.url)?.absoluteURL,
              target.scheme == "http" || target.scheme == "https"
        else { return nil }
        var next = request
        next.url = target
        let keepsBody = response.status == 307 || response.status == 308
            || ((response.status == 301 || response.status == 302) && request.method != .post)
        if !keepsBody {
            if request.method != .head { next.method = .get }
            next.body = nil
            next.headers["Content-Type"] = nil
        }
        if !Redaction.sameOrigin(original.url, target) {
            for field in next.headers where Redaction.isSecretHeader(field.name) { next.headers[field.name] = nil }
        }
        return next
    }

    /// One exchange, redirects not followed (the session's delegate is a ``RedirectGuard``).
    private func exchange(_ request: TransportRequest, original: TransportRequest) async throws -> TransportResponse {
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
            throw Self.map(error, original)
        } catch is CancellationError {
            throw TransportError(.cancelled, method: original.method, url: original.url, "the request was cancelled")
        } catch {
            throw TransportError(.other, method: original.method, url: original.url, "\(error)")
        }
        guard let http = response as? HTTPURLResponse else {
            throw TransportError(.other, method: original.method, url: original.url, "the response is not HTTP")
        }
        var headers = HTTPHeaders()
        for (name, value) in http.allHeaderFields {
            headers.add(name: "\(name)", value: "\(value)")
        }
        return TransportResponse(status: http.statusCode, headers: headers, body: data)
    }

    /// A session delegate that stops `URLSession` from following redirects by itself, so that
    /// ``URLSessionTransport`` follows them the same way on every platform: the method and body
    /// kept across 307 and 308, and no credentials to another scheme, host or port. Give it to a
    /// session of your own (``init(session:timeout:)``).
    public final class RedirectGuard: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
        public override init() {}

        public func urlSession(
            _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
            newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
        ) {
            completionHandler(nil)
        }
    }

    /// Maps a `URLError` to a `TransportError`.
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
