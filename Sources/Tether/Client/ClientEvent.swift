public import Foundation

/// What a client did, as a structured event for your logger or metrics: each exchange with the
/// server, each retry, each import, and each failure. Register a handler with
/// ``Client/Builder/onEvent(_:)``:
///
/// ```swift
/// let client = try Client.Builder(models: [User.self])
///     .onEvent { event in print(event) }   // "GET https://api.github.com/users/octocat → 200, 1843 bytes in 84 ms"
///     .build()
/// ```
///
/// **No secrets.** URLs are passed through ``Redaction/url(_:)`` (no user or password, secret
/// query values replaced) and error messages are Tether's own redacted descriptions; headers and
/// bodies are never part of an event.
///
/// **Cost.** A handler runs synchronously on the task that did the work, after the work is done:
/// keep it short (hand the event to a logger or a metrics counter). With no handler, nothing is
/// measured or built.
public enum ClientEvent: Sendable, CustomStringConvertible {
    /// One exchange with the server: sent, and answered or not (each attempt of a retried request
    /// is one event).
    case request(RequestEvent)
    /// A request is about to be sent again after an answer or a failure its ``RetryPolicy`` retries.
    case retry(RetryEvent)
    /// An import committed: what it changed, and how long it took.
    case imported(ImportEvent)
    /// A request ended without a usable answer (no answer, or a status of 400 or more, after its
    /// retries), or an import failed and wrote nothing.
    case failure(FailureEvent)
    /// A local-first client's outbox acknowledged, deferred, failed or held an entry as a
    /// conflict (``Outbox/flush()``).
    case outbox(OutboxEvent)

    public var description: String {
        switch self {
        case .outbox(let event): event.description
        case .request(let event): event.description
        case .retry(let event): event.description
        case .imported(let event): event.description
        case .failure(let event): event.description
        }
    }
}

/// One exchange with the server (see ``ClientEvent/request(_:)``).
public struct RequestEvent: Sendable, CustomStringConvertible {
    /// The request's HTTP method.
    public var method: HTTPMethod
    /// The URL, redacted (``Redaction/url(_:)``).
    public var url: URL
    /// The entity whose transport sent it, when the request was for one entity.
    public var entity: String?
    /// The HTTP status, or nil when no answer came (see ``error``).
    public var status: Int?
    /// From handing the request to the transport to its answer or failure.
    public var duration: Duration
    /// The size of the request body.
    public var requestBytes: Int
    /// The size of the response body (0 when no answer came).
    public var responseBytes: Int
    /// 1 for the first attempt, 2 for the first retry, and so on.
    public var attempt: Int
    /// Why no answer came (a redacted ``TransportError`` description), or nil.
    public var error: String?

    /// An event with these values, as the client reports them (for tests of your handlers); pass
    /// a redacted URL.
    public init(method: HTTPMethod, url: URL, entity: String? = nil, status: Int?, duration: Duration,
                requestBytes: Int, responseBytes: Int, attempt: Int = 1, error: String? = nil) {
        self.method = method
        self.url = url
        self.entity = entity
        self.status = status
        self.duration = duration
        self.requestBytes = requestBytes
        self.responseBytes = responseBytes
        self.attempt = attempt
        self.error = error
    }

    public var description: String {
        let outcome = status.map { "\($0), \(responseBytes) bytes" } ?? "no answer (\(error ?? "failed"))"
        let retry = attempt > 1 ? " (attempt \(attempt))" : ""
        return "\(method.rawValue) \(url.absoluteString) → \(outcome) in \(ClientEvent.milliseconds(duration))\(retry)"
    }
}

/// A request about to be sent again (see ``ClientEvent/retry(_:)``).
public struct RetryEvent: Sendable, CustomStringConvertible {
    /// The request's HTTP method (one the ``RetryPolicy`` retries).
    public var method: HTTPMethod
    /// The URL, redacted (``Redaction/url(_:)``).
    public var url: URL
    /// The entity whose transport sends it, when the request is for one entity.
    public var entity: String?
    /// The attempt about to be made: 2 for the first retry.
    public var attempt: Int
    /// How long the client waits before it.
    public var delay: Duration
    /// The status that is retried, or nil when no answer came.
    public var status: Int?
    /// What is retried, in words: `"status 503"`, or the transport error.
    public var reason: String

    /// An event with these values, as the client reports them (for tests of your handlers); pass
    /// a redacted URL.
    public init(method: HTTPMethod, url: URL, entity: String? = nil, attempt: Int, delay: Duration, status: Int?, reason: String) {
        self.method = method
        self.url = url
        self.entity = entity
        self.attempt = attempt
        self.delay = delay
        self.status = status
        self.reason = reason
    }

    public var description: String {
        "retry \(method.rawValue) \(url.absoluteString) (attempt \(attempt)) in \(ClientEvent.milliseconds(delay)) after \(reason)"
    }
}

/// A committed import (see ``ClientEvent/imported(_:)``): of bytes, a parsed value, a file, or
/// the pages of a fetch. The answers to create and save are merged as part of their requests and
/// reported by their ``RequestEvent``s.
public struct ImportEvent: Sendable, CustomStringConvertible {
    /// The top-level entity (the first one of a multi-entity import).
    public var entity: String
    /// Top-level objects in the payload.
    public var objects: Int
    /// Objects inserted, nested ones included (``ImportResult/inserted``).
    public var inserted: Int
    /// Stored objects whose attributes or relationships changed (``ImportResult/updated``).
    public var updated: Int
    /// Stored objects the payload named that did not change (``ImportResult/unchanged``).
    public var unchanged: Int
    /// Objects deleted: tombstones, objects missing within ``ImportOptions/deleteMissing``'s
    /// scope, and what delete rules took with them (``ImportResult/deleted``).
    public var deleted: Int
    /// How many ``ImportDiagnostic``s the import reported.
    public var diagnostics: Int
    /// From the start of the write transaction to its commit.
    public var duration: Duration
    /// The size of the payload when it was bytes, else nil.
    public var bytes: Int?

    /// The event of an import of `entity` that committed `result` (its lists are counted).
    public init(entity: String, result: ImportResult, duration: Duration, bytes: Int? = nil) {
        self.entity = entity
        self.objects = result.objects.count
        self.inserted = result.inserted.count
        self.updated = result.updated.count
        self.unchanged = result.unchanged.count
        self.deleted = result.deleted.count
        self.diagnostics = result.diagnostics.count
        self.duration = duration
        self.bytes = bytes
    }

    public var description: String {
        let size = bytes.map { ", \($0) bytes" } ?? ""
        return "import \(entity): \(objects) objects, \(inserted) inserted, \(updated) updated, \(unchanged) unchanged, "
            + "\(deleted) deleted, \(diagnostics) diagnostics in \(ClientEvent.milliseconds(duration))\(size)"
    }
}

/// A request or an import that failed (see ``ClientEvent/failure(_:)``).
public struct FailureEvent: Sendable, CustomStringConvertible {
    /// What failed.
    public enum Operation: String, Sendable, Hashable {
        /// An exchange with the server: no answer, or a status of 400 or more, after its retries.
        case request
        /// An import's write transaction, rolled back: nothing was written.
        case `import`
    }
    /// What failed: a request or an import.
    public var operation: Operation
    /// The entity of the request's transport, or the imported entity, when there is one.
    public var entity: String?
    /// The request's HTTP method; nil for an import.
    public var method: HTTPMethod?
    /// The request's URL, redacted (``Redaction/url(_:)``); nil for an import.
    public var url: URL?
    /// The HTTP status, when the server answered.
    public var status: Int?
    /// The error that was thrown to the caller (Tether's errors describe themselves without secrets).
    public var error: any Error

    /// An event with these values, as the client reports them (for tests of your handlers); pass
    /// a redacted URL.
    public init(operation: Operation, entity: String? = nil, method: HTTPMethod? = nil, url: URL? = nil, status: Int? = nil, error: any Error) {
        self.operation = operation
        self.entity = entity
        self.method = method
        self.url = url
        self.status = status
        self.error = error
    }

    public var description: String {
        var what = "\(operation.rawValue) failed"
        if let method, let url { what += ": \(method.rawValue) \(url.absoluteString)" }
        if let status { what += " → \(status)" }
        if let entity { what += " (\(entity))" }
        return what + ": \(error)"
    }
}

extension ClientEvent {
    static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let ms = Double(seconds) * 1000 + Double(attoseconds) / 1e15
        return ms < 10 ? "\((ms * 10).rounded() / 10) ms" : "\(Int(ms.rounded())) ms"
    }
}

/// The handlers of a client's events (``Client/Builder/onEvent(_:)``).
struct EventHandlers: Sendable {
    var handlers: [@Sendable (ClientEvent) -> Void] = []

    /// Whether anyone listens: nothing is measured otherwise.
    var isActive: Bool { !handlers.isEmpty }

    func emit(_ event: @autoclosure () -> ClientEvent) {
        guard isActive else { return }
        let event = event()
        for handler in handlers { handler(event) }
    }
}

/// What a flush did with one outbox entry (see ``ClientEvent/outbox(_:)``).
public struct OutboxEvent: Sendable, CustomStringConvertible {
    /// What happened to the entry.
    public enum Kind: String, Sendable, Hashable {
        /// The server acknowledged it; it left the outbox.
        case acknowledged
        /// The server could not be reached (or answered 408, 429 or 5xx): it stays queued.
        case deferred
        /// The server refused it: it is kept as failed, with its error.
        case failed
        /// The server answered 409 or 412: it is kept as a conflict.
        case conflict
    }

    /// What happened.
    public var kind: Kind
    /// The entry, as it stands after the event (its error is Tether's redacted description).
    public var entry: OutboxEntry

    /// An event of `kind` for `entry`.
    public init(_ kind: Kind, _ entry: OutboxEntry) {
        self.kind = kind
        self.entry = entry
    }

    public var description: String { "outbox \(kind.rawValue): \(entry)" }
}
