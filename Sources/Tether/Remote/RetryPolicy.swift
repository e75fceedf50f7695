import Foundation

/// When the client sends a request again by itself: idempotent requests answered 429, 502, 503 or
/// 504, or whose connection was lost, a few times, waiting as the server's `Retry-After` says
/// (or backing off), never longer than ``maxDelay``. Set with ``Client/Builder/retries(_:)``.
///
/// ```swift
/// builder.retries(RetryPolicy(maxRetries: 4, maxDelay: .seconds(10)))
/// builder.retries(.none)
/// builder.retries(RetryPolicy(methods: RetryPolicy.idempotent.union([.post])))   // POST too: only if your server makes it safe
/// ```
///
/// A `Retry-After` longer than ``maxDelay`` is not waited for: the answer is the error. Waiting
/// ends with the task's cancellation. Every attempt runs the request hooks again.
public struct RetryPolicy: Sendable, Hashable {
    /// Retries after the first attempt (0: none).
    public var maxRetries: Int
    /// The statuses that are retried.
    public var statuses: Set<Int>
    /// The methods that are retried.
    public var methods: Set<HTTPMethod>
    /// The first wait without a `Retry-After`; each next one is twice as long.
    public var baseDelay: Duration
    /// The longest wait, whatever `Retry-After` says.
    public var maxDelay: Duration
    /// Whether a lost connection (``TransportError/Kind/connectionLost``) is retried.
    public var retriesLostConnections: Bool

    /// GET, HEAD, OPTIONS, PUT and DELETE.
    public static let idempotent: Set<HTTPMethod> = [.get, .head, .options, .put, .delete]

    /// A policy with these limits; each default is the ``default`` policy's. A negative
    /// `maxRetries` counts as 0.
    public init(
        maxRetries: Int = 2, statuses: Set<Int> = [429, 502, 503, 504], methods: Set<HTTPMethod> = RetryPolicy.idempotent,
        baseDelay: Duration = .milliseconds(250), maxDelay: Duration = .seconds(30), retriesLostConnections: Bool = true
    ) {
        self.maxRetries = max(0, maxRetries)
        self.statuses = statuses
        self.methods = methods
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.retriesLostConnections = retriesLostConnections
    }

    /// Two retries of idempotent requests (the default).
    public static let `default` = RetryPolicy()
    /// No retry.
    public static let none = RetryPolicy(maxRetries: 0)

    /// How long to wait before retry number `retry` (1-based) of a request of `method` (as the
    /// caller sent it, before the hooks) the server answered with `error`; nil when it is not
    /// retried.
    func delay(before retry: Int, method: HTTPMethod, after error: HTTPError, now: Date = Date()) -> Duration? {
        guard retry <= maxRetries, methods.contains(method), statuses.contains(error.status) else { return nil }
        if let header = error.headers["Retry-After"] {
            guard let wait = Self.retryAfter(header, now: now) else { return nil }
            return wait <= maxDelay ? wait : nil
        }
        return backoff(before: retry)
    }

    /// How long to wait before retry number `retry` (1-based) of a request of `method` that got
    /// no answer (`error`); nil when it is not retried.
    func delay(before retry: Int, method: HTTPMethod, after error: TransportError) -> Duration? {
        guard retry <= maxRetries, methods.contains(method), retriesLostConnections, error.kind == .connectionLost else { return nil }
        return backoff(before: retry)
    }

    /// The wait without a `Retry-After`: ``baseDelay``, twice as long for each next retry, at
    /// most ``maxDelay``.
    private func backoff(before retry: Int) -> Duration {
        min(baseDelay * (1 << min(retry - 1, 20)), maxDelay)
    }

    /// The wait a `Retry-After` value asks for (seconds, or an HTTP date, from `now`); nil when it
    /// cannot be read.
    public static func retryAfter(_ value: String, now: Date) -> Duration? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(text) { return .seconds(max(0, seconds)) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: text) else { return nil }
        return .milliseconds(max(0, Int((date.timeIntervalSince(now) * 1000).rounded(.up))))
    }
}
