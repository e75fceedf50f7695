public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif
public import Tether
import Dispatch
import Synchronization

/// A `Transport` over `URLSession` (FoundationNetworking on Linux).
///
/// Gzip/deflate decoding and connection reuse are `URLSession`'s. Redirects are followed by the
/// transport itself, the same on Linux as on Apple platforms
/// (``redirect(_:_:original:crossOriginHeaders:)``): 307 and 308 repeat the method and the body,
/// and a redirect to another scheme, host or port carries only `Accept`, `Content-Type` and the
/// headers the app allows (``crossOriginHeaders``), never credentials, so that what the app and
/// its hooks add goes only to the server that was asked (for a session of your own, give it a
/// ``RedirectGuard`` as its delegate). A redirect that cannot be followed is a `TransportError`
/// (`.badRedirect`).
///
/// The answer's body is read as it arrives and stopped at the request's response limit
/// (`TransportRequest.responseLimit`, 64 MiB when none is set), counted after decompression: a
/// gzip body inflating to gigabytes, or an endless one, fails with `.responseTooLarge` without
/// being held in memory. The overall deadline (`TransportRequest.deadline`) is enforced around
/// the transport by `send(withinDeadline:)`, which the client uses; this transport cancels its
/// `URLSession` task when its calling task is cancelled.
///
/// Failures to exchange become a `TransportError`: `.connectionRefused`, `.timeout`,
/// `.cancelled`, `.responseTooLarge`, `.badRedirect` or `.other`; an HTTP error status is
/// returned as a normal response (the client turns it into an `HTTPError`).
///
/// ```swift
/// let client = try Client.Builder(schema: schema)
///     .transport(URLSessionTransport(timeout: 15))
///     .baseURL(URL(string: "https://api.github.com")!)
///     .build()
/// ```
public final class URLSessionTransport: Transport {
    /// The session every exchange runs on: the transport's own
    /// (``init(configuration:timeout:crossOriginHeaders:)``), whose delegate is a
    /// ``RedirectGuard``, or the one given to ``init(session:timeout:crossOriginHeaders:)``.
    public let session: URLSession
    /// The per-request timeout (seconds without data), or nil for the session configuration's.
    public let timeout: TimeInterval?
    /// The headers, besides `Accept` and `Content-Type`, that a redirect to another scheme, host
    /// or port may carry (lower-cased); credentials (`Redaction.isSecretHeader(_:)`) never do.
    public let crossOriginHeaders: Set<String>

    /// A transport with its own session.
    /// - Parameters:
    ///   - configuration: the session configuration (default `.ephemeral`: no cookies or cache on disk).
    ///   - timeout: seconds without data before a request fails with `.timeout` (default 60); the
    ///     whole exchange is bounded by the request's deadline instead.
    ///   - crossOriginHeaders: headers the app or its hooks add that may follow a redirect to
    ///     another origin (`["X-Request-ID"]`); by default none do.
    public init(configuration: URLSessionConfiguration = .ephemeral, timeout: TimeInterval? = 60, crossOriginHeaders: Set<String> = []) {
        if let timeout { configuration.timeoutIntervalForRequest = timeout }
        self.session = URLSession(configuration: configuration, delegate: RedirectGuard(), delegateQueue: Self.delegateQueue())
        self.timeout = timeout
        self.crossOriginHeaders = Set(crossOriginHeaders.map { $0.lowercased() })
    }

    /// A transport over an existing session. Make its delegate a ``RedirectGuard`` (or do what it
    /// does) to keep credentials from other origins and to stop a body at the response limit as
    /// it arrives; with another delegate, an answer is checked against the limit once
    /// `URLSession` has read it (on Apple platforms) or as it arrives (on Linux).
    public init(session: URLSession, timeout: TimeInterval? = nil, crossOriginHeaders: Set<String> = []) {
        self.session = session
        self.timeout = timeout
        self.crossOriginHeaders = Set(crossOriginHeaders.map { $0.lowercased() })
    }

    deinit { session.finishTasksAndInvalidate() }

    /// The most redirects one request follows.
    public static let maxRedirects = 10

    /// Sends `request` and returns the answer, following up to ``maxRedirects`` redirects as
    /// ``redirect(_:_:original:crossOriginHeaders:)`` says. An HTTP error status is a normal
    /// response; a failed exchange throws a `TransportError` (``map(_:_:)``), and so do an answer
    /// past the response limit (`.responseTooLarge`), a redirect that cannot be followed and too
    /// many redirects (`.badRedirect`).
    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        var current = request
        var hops = 0
        while true {
            let response = try await exchange(current, original: request)
            guard let next = try Self.redirect(current, response, original: request, crossOriginHeaders: crossOriginHeaders) else {
                return response
            }
            hops += 1
            guard hops <= Self.maxRedirects else {
                throw TransportError(.badRedirect, method: request.method, url: request.url, status: response.status,
                                     "more than \(Self.maxRedirects) redirects (the last to \(Redaction.url(next.url).absoluteString))")
            }
            current = next
        }
    }

    /// The request a redirect answer asks for, or nil when `response` is not a redirect (301,
    /// 302, 303, 307, 308). Throws a `TransportError` (`.badRedirect`) for a redirect that
    /// cannot be followed: no `Location`, or one that is not an `http` or `https` URL (schemes
    /// compared case-insensitively: `HTTP://…` is followed).
    ///
    /// 307 and 308 repeat the method and the body (as RFC 9110 says; FoundationNetworking on Linux
    /// would send the body-less request it builds itself); 303 becomes a GET without body; 301 and
    /// 302 turn a POST into a GET, as browsers and URLSession do, and repeat other methods. When
    /// the target is another scheme, host or port than the original request's, only `Accept`,
    /// `Content-Type` and the `crossOriginHeaders` (lower-cased names) go along, and never a
    /// credential (`Redaction.isSecretHeader(_:)`).
    public static func redirect(
        _ request: TransportRequest, _ response: TransportResponse, original: TransportRequest, crossOriginHeaders: Set<String> = []
    ) throws(TransportError) -> TransportRequest? {
        guard [301, 302, 303, 307, 308].contains(response.status) else { return nil }
        func refuse(_ why: String) -> TransportError {
            TransportError(.badRedirect, method: original.method, url: original.url, status: response.status,
                           "HTTP \(response.status) redirect from \(Redaction.url(request.url).absoluteString) cannot be followed: \(why)")
        }
        guard let location = response.headers["Location"]?.trimmingCharacters(in: .whitespaces), !location.isEmpty else {
            throw refuse("it has no Location header")
        }
        guard let resolved = URL(string: location, relativeTo: request.url)?.absoluteURL,
              var components = URLComponents(url: resolved, resolvingAgainstBaseURL: false)
        else {
            throw refuse("its Location is not a URL (\(location.count) characters)")
        }
        let scheme = components.scheme?.lowercased() ?? ""
        guard scheme == "http" || scheme == "https", components.host?.isEmpty == false else {
            throw refuse("its Location is not an http or https URL (scheme '\(scheme.prefix(20))')")
        }
        components.scheme = scheme
        guard let target = components.url else { throw refuse("its Location is not a URL (\(location.count) characters)") }
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
            let allowed = Set(crossOriginHeaders.map { $0.lowercased() }).union(["accept", "content-type"])
            for field in next.headers where Redaction.isSecretHeader(field.name) || !allowed.contains(field.name.lowercased()) {
                next.headers[field.name] = nil
            }
        }
        return next
    }

    /// One exchange, redirects not followed, its body read as it arrives and stopped at the
    /// response limit.
    private func exchange(_ request: TransportRequest, original: TransportRequest) async throws -> TransportResponse {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method.rawValue
        for field in request.headers { urlRequest.addValue(field.value, forHTTPHeaderField: field.name) }
        urlRequest.httpBody = request.body
        if let timeout { urlRequest.timeoutInterval = timeout }
        let receiver = Receiver(original, limit: original.responseLimit ?? TransportRequest.defaultResponseLimit)
        let (response, data): (HTTPURLResponse, Data)
        if let guardian = session.delegate as? RedirectGuard {
            // The session's delegate hands this task's events to the receiver. The task is made
            // only if the call is not cancelled first (a task never resumed would stay in the
            // session).
            let session = self.session
            defer { if let task = receiver.task { guardian.unregister(task) } }
            (response, data) = try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    receiver.start(continuation) {
                        let task = session.dataTask(with: urlRequest)
                        guardian.register(receiver, for: task)
                        return task
                    }
                }
            } onCancel: {
                receiver.cancel()
            }
        } else {
            // Another delegate: the receiver sees the task's data where URLSession gives a task's
            // own delegate the data (Linux); the limit is checked again below in any case.
            let (bytes, answer): (Data, URLResponse)
            do {
                (bytes, answer) = try await session.data(for: urlRequest, delegate: receiver)
            } catch {
                throw receiver.failure ?? receiver.error(error)
            }
            if let failure = receiver.failure { throw failure }
            guard let http = answer as? HTTPURLResponse else {
                throw TransportError(.other, method: original.method, url: original.url, "the response is not HTTP")
            }
            if bytes.count > receiver.limit { throw receiver.tooLarge(http, received: bytes.count) }
            (response, data) = (http, bytes)
        }
        var headers = HTTPHeaders()
        for (name, value) in response.allHeaderFields {
            headers.add(name: "\(name)", value: "\(value)")
        }
        return TransportResponse(status: response.statusCode, headers: headers, body: data)
    }

    /// A session delegate that stops `URLSession` from following redirects by itself, so that
    /// ``URLSessionTransport`` follows them the same way on every platform: the method and body
    /// kept across 307 and 308, and only the allowed headers to another scheme, host or port. It
    /// also hands each of the transport's tasks its data as it arrives, so that a body is stopped
    /// at the response limit. Give it to a session of your own
    /// (``init(session:timeout:crossOriginHeaders:)``); tasks of your own on that session get
    /// their redirects refused and their responses allowed.
    public final class RedirectGuard: NSObject, URLSessionDataDelegate, Sendable {
        private let receivers = Mutex<[Int: Receiver]>([:])

        public override init() {}

        func register(_ receiver: Receiver, for task: URLSessionTask) {
            receivers.withLock { $0[task.taskIdentifier] = receiver }
        }

        func unregister(_ task: URLSessionTask) {
            _ = receivers.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        }

        private func receiver(of task: URLSessionTask) -> Receiver? {
            receivers.withLock { $0[task.taskIdentifier] }
        }

        public func urlSession(
            _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
            newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
        ) {
            completionHandler(nil)
        }

        public func urlSession(
            _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
            completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
        ) {
            guard let receiver = receiver(of: dataTask) else { return completionHandler(.allow) }
            receiver.urlSession(session, dataTask: dataTask, didReceive: response, completionHandler: completionHandler)
        }

        public func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            receiver(of: dataTask)?.urlSession(session, dataTask: dataTask, didReceive: data)
        }

        public func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            receiver(of: task)?.urlSession(session, task: task, didCompleteWithError: error)
        }
    }

    /// One exchange's answer as it arrives: the response, then the body, counted against the
    /// limit; the task is cancelled as soon as the body passes it.
    final class Receiver: NSObject, URLSessionDataDelegate, Sendable {
        typealias Answer = (HTTPURLResponse, Data)

        private struct State {
            var continuation: CheckedContinuation<Answer, any Error>?
            /// The outcome, once there is one (it may come before the continuation).
            var outcome: Result<Answer, any Error>?
            var response: HTTPURLResponse?
            var data = Data()
            /// Why the exchange was stopped early (the limit), if it was.
            var failure: TransportError?
            /// The task, once made.
            var task: URLSessionTask?
        }

        private let request: TransportRequest
        let limit: Int
        private let state = Mutex(State())

        init(_ request: TransportRequest, limit: Int) {
            self.request = request
            self.limit = max(0, limit)
        }

        /// Why the exchange was stopped early, if it was.
        var failure: TransportError? { state.withLock { $0.failure } }

        /// The task of the exchange, once made.
        var task: URLSessionTask? { state.withLock { $0.task } }

        /// Waits for the answer with `continuation`, making the task with `makeTask` and resuming
        /// it, unless the exchange has already ended (cancelled before it began).
        func start(_ continuation: CheckedContinuation<Answer, any Error>, makeTask: () -> URLSessionTask) {
            let outcome: Result<Answer, any Error>? = state.withLock { state in
                if state.outcome == nil { state.continuation = continuation }
                return state.outcome
            }
            if let outcome { return continuation.resume(with: outcome) }
            let task = makeTask()
            let ended = state.withLock { state in
                state.task = task
                return state.outcome != nil
            }
            // Cancelled meanwhile: the task is cancelled before it starts (and ends at once).
            if ended { URLSessionTransport.cancel(task) }
            task.resume()
        }

        /// The calling task was cancelled: the caller gets `.cancelled` at once, and the task is
        /// cancelled.
        func cancel() {
            finish(.failure(TransportError(.cancelled, method: request.method, url: request.url, "the request was cancelled")))
            if let task { URLSessionTransport.cancel(task) }
        }

        private func finish(_ outcome: Result<Answer, any Error>) {
            let continuation: CheckedContinuation<Answer, any Error>? = state.withLock { state in
                guard state.outcome == nil else { return nil }
                state.outcome = outcome
                state.data = Data()
                let continuation = state.continuation
                state.continuation = nil
                return continuation
            }
            continuation?.resume(with: outcome)
        }

        /// Stops the exchange with `error`.
        private func stop(_ error: TransportError, _ task: URLSessionTask) {
            state.withLock { if $0.failure == nil && $0.outcome == nil { $0.failure = error } }
            finish(.failure(error))
            URLSessionTransport.cancel(task)
        }

        func tooLarge(_ response: HTTPURLResponse, received: Int? = nil, declared: Int64? = nil) -> TransportError {
            let size = declared.map { "its Content-Length says \($0) bytes" } ?? "more than \(received ?? limit) bytes arrived (after decompression)"
            return TransportError(
                .responseTooLarge, method: request.method, url: request.url, status: response.statusCode, limit: .responseBytes(limit),
                "the answer (HTTP \(response.statusCode)) is larger than the response limit of \(TransportLimit.responseBytes(limit)): \(size); "
                    + "the exchange was stopped and nothing was parsed")
        }

        /// The error a failed task ends with.
        func error(_ error: any Error) -> TransportError {
            if let error = error as? URLError { return URLSessionTransport.map(error, request) }
            if error is CancellationError {
                return TransportError(.cancelled, method: request.method, url: request.url, "the request was cancelled")
            }
            return TransportError(.other, method: request.method, url: request.url, "\(error)")
        }

        func urlSession(
            _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
            newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
        ) {
            completionHandler(nil)
        }

        func urlSession(
            _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
            completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
        ) {
            guard let http = response as? HTTPURLResponse else { return completionHandler(.allow) }
            state.withLock { $0.response = http }
            // A Content-Length past the limit (of a body not compressed, whose length is the
            // decompressed one) ends the exchange before any of the body is read.
            let encoding = (http.value(forHTTPHeaderField: "Content-Encoding") ?? "identity").lowercased()
            if request.method != .head, http.expectedContentLength > Int64(limit), encoding == "identity" || encoding.isEmpty {
                stop(tooLarge(http, declared: http.expectedContentLength), dataTask)
                return completionHandler(.cancel)
            }
            completionHandler(.allow)
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            let over: (HTTPURLResponse?, Int)? = state.withLock { state in
                guard state.outcome == nil else { return nil }
                if state.data.count + data.count > limit { return (state.response, state.data.count + data.count) }
                state.data.append(data)
                return nil
            }
            guard let (response, count) = over else { return }
            let http = response ?? HTTPURLResponse(url: request.url, statusCode: 200, httpVersion: nil, headerFields: nil)!
            stop(tooLarge(http, received: count), dataTask)
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            if let error {
                finish(.failure(self.error(error)))
                return
            }
            // FoundationNetworking hands a redirect it did not follow (a 3xx without Location) to
            // the task, not always to the delegate.
            let fallback = task.response as? HTTPURLResponse
            let answer: Answer? = state.withLock { state in (state.response ?? fallback).map { ($0, state.data) } }
            guard let answer else {
                finish(.failure(TransportError(.other, method: request.method, url: request.url, "the response is not HTTP")))
                return
            }
            finish(.success(answer))
        }
    }

    /// The queue of the transport's own session's delegate. On Linux, FoundationNetworking hands
    /// each piece of a body to the delegate queue as fast as libcurl reads and inflates it, with
    /// no flow control: a delegate queue short of CPU falls behind a gzip bomb, and the pieces
    /// wait in memory. There, the delegate runs at once on the session's own queue (an
    /// ``InlineQueue``), so that a body is counted, and dropped past the limit, as it is made.
    static func delegateQueue() -> OperationQueue? {
        #if canImport(FoundationNetworking)
        InlineQueue()
        #else
        nil
        #endif
    }

    #if canImport(FoundationNetworking)
    /// An operation queue running each block at once, on the calling thread (FoundationNetworking's
    /// queue of the session): the delegate of a session of the transport's runs there. Its
    /// blocks never wait for that queue (a task is cancelled from another thread).
    final class InlineQueue: OperationQueue, @unchecked Sendable {
        override func addOperation(_ block: @escaping @Sendable () -> Void) { block() }
    }
    #endif

    /// Cancels `task` from another thread: FoundationNetworking's `cancel()` waits for the
    /// session's work queue, which may be busy inflating a large gzip body for a while; waiting
    /// on the delegate queue would stop it from dropping what keeps arriving (and memory would
    /// grow with it), and waiting in a task would hold a thread of the cooperative pool.
    static func cancel(_ task: URLSessionTask) {
        DispatchQueue.global().async { task.cancel() }
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
