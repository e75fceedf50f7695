import Foundation
import Synchronization

/// Where the objects of an observed query come from on the server, for a remote-backed
/// observation (``Client/observe(_:sectionedBy:reading:from:refresh:)``): the observation
/// answers from the store at once and refreshes from here in the background.
///
/// A refresh deletes, within the observed query's condition, what the server no longer lists
/// (``ImportOptions/deleteMissing`` `.matching(condition)`, or `.all` without a condition), so
/// the list ends equal to the server's; the resource must then list everything the condition
/// selects (all pages are followed). Observations of the same ``key`` share one request.
public struct RemoteSource: Sendable, CustomStringConvertible {
    /// What identifies the resource: observations with the same key share their refreshes and
    /// their ``RemoteState``.
    public let key: String
    let refresh: @Sendable (Client, Query) async throws -> Void

    /// A source of your own (a route of a route table, a custom request): `refresh` fetches and
    /// imports, with the options it is given (the observed query's scope for delete-missing).
    public init(key: String, refresh: @escaping @Sendable (_ client: Client, _ options: ImportOptions) async throws -> Void) {
        self.key = key
        self.refresh = { client, query in try await refresh(client, Self.options(client, query, deletingMissing: true)) }
    }

    init(key: String, byQuery refresh: @escaping @Sendable (Client, Query) async throws -> Void) {
        self.key = key
        self.refresh = refresh
    }

    /// The list at `template` (evaluated against `source` when given), every page of it, imported
    /// as the observed query's entity (``Client/fetchObjects(_:from:for:options:)``). With
    /// `deletingMissing` false, nothing is deleted (for a resource that lists only part of what
    /// the query's condition selects, the first page of a top-10, say).
    public static func objects(at template: URLTemplate, for source: ObjectID? = nil, deletingMissing: Bool = true) -> RemoteSource {
        RemoteSource(key: "GET \(template.template)" + (source.map { " for \($0)" } ?? ""), byQuery: { client, query in
            _ = try await client.fetchObjects(query.entity, from: template, for: source,
                                              options: options(client, query, deletingMissing: deletingMissing))
        })
    }

    /// The objects of `owner`'s relationship (``Client/fetchRelationship(_:of:from:options:)``):
    /// the relationship is set to exactly what the server lists, and objects it no longer lists
    /// are deleted.
    public static func relationship(_ name: String, of owner: ObjectID, from template: URLTemplate? = nil) -> RemoteSource {
        RemoteSource(key: "\(owner).\(name)" + (template.map { " from \($0.template)" } ?? ""), byQuery: { client, _ in
            var options = client.importOptions
            options.deleteMissing = .related(name, of: owner)
            options.progress = nil
            _ = try await client.fetchRelationship(name, of: owner, from: template, options: options)
        })
    }

    static func options(_ client: Client, _ query: Query, deletingMissing: Bool) -> ImportOptions {
        var options = client.importOptions
        options.deleteMissing = deletingMissing ? (query.condition.map(DeleteScope.matching) ?? .all) : nil
        options.progress = nil
        return options
    }

    public var description: String { key }
}

/// When a remote-backed observation refreshes from its ``RemoteSource`` by itself.
public enum RefreshPolicy: Sendable, Hashable {
    /// Each time an observer starts.
    case always
    /// When an observer starts and the last successful refresh of the source (by this client) is
    /// older than this, or there was none.
    case ifOlderThan(Duration)
    /// Only on demand (``QueryObservation/refresh()``).
    case never
}

/// The state of a remote-backed observation's source, delivered with every snapshot.
public struct RemoteState: Sendable, Hashable, CustomStringConvertible {
    /// A refresh is under way.
    public var isLoading = false
    /// When the last successful refresh committed.
    public var lastRefreshed: Date?
    /// Why the last refresh failed; nil once one succeeds. The local results are kept.
    public var lastError: (any Error)?

    /// A state with these values; the client makes them for its observations (build one to test
    /// code that shows them).
    public init(isLoading: Bool = false, lastRefreshed: Date? = nil, lastError: (any Error)? = nil) {
        self.isLoading = isLoading
        self.lastRefreshed = lastRefreshed
        self.lastError = lastError
    }

    private var errorText: String? { lastError.map { String(describing: $0) } }

    public static func == (lhs: RemoteState, rhs: RemoteState) -> Bool {
        lhs.isLoading == rhs.isLoading && lhs.lastRefreshed == rhs.lastRefreshed && lhs.errorText == rhs.errorText
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(isLoading)
        hasher.combine(lastRefreshed)
        hasher.combine(errorText)
    }

    public var description: String {
        var parts: [String] = [isLoading ? "loading" : "idle"]
        if let lastRefreshed { parts.append("refreshed \(lastRefreshed.formatted(.iso8601))") }
        if let errorText { parts.append("failed: \(errorText)") }
        return parts.joined(separator: ", ")
    }
}

/// The refreshes of a client's remote sources, by key: their state, the one request under way
/// (shared by every observer of the key), and who to tell when the state changes.
final class RemoteRefreshes: Sendable {
    private struct Entry {
        var state = RemoteState()
        var task: Task<Void, any Error>?
        /// Started by an observer's policy (cancelled when no observer is left), not on demand.
        var background = false
        var observers = 0
        var listeners: [ObjectIdentifier: QueryObservation.WeakInbox] = [:]
    }

    private let entries = Mutex<[String: Entry]>([:])

    func state(_ key: String) -> RemoteState { entries.withLock { $0[key]?.state ?? RemoteState() } }

    /// Registers an observer: it is told of every change of the key's state.
    func attach(_ key: String, _ inbox: ChangeInbox) {
        entries.withLock { entries in
            entries[key, default: Entry()].observers += 1
            entries[key]!.listeners[ObjectIdentifier(inbox)] = QueryObservation.WeakInbox(inbox: inbox)
        }
    }

    /// An observer is gone; the last one takes a refresh its policy started with it.
    func detach(_ key: String, _ inbox: ObjectIdentifier) {
        let cancelled = entries.withLock { entries -> Task<Void, any Error>? in
            guard var entry = entries[key] else { return nil }
            entry.observers -= 1
            entry.listeners[inbox] = nil
            entries[key] = entry
            return entry.observers <= 0 && entry.background ? entry.task : nil
        }
        cancelled?.cancel()
    }

    /// Whether an observer starting now should refresh, by `policy`.
    func isDue(_ key: String, _ policy: RefreshPolicy, now: Date = Date()) -> Bool {
        switch policy {
        case .always: return true
        case .never: return false
        case .ifOlderThan(let age):
            guard let last = state(key).lastRefreshed else { return true }
            let seconds = Double(age.components.seconds) + Double(age.components.attoseconds) / 1e18
            return now.timeIntervalSince(last) > seconds
        }
    }

    /// The refresh of `key` under way, or a new one running `operation`.
    @discardableResult
    func refresh(_ key: String, background: Bool, _ operation: @escaping @Sendable () async throws -> Void) -> Task<Void, any Error> {
        let (task, started) = entries.withLock { entries -> (Task<Void, any Error>, Bool) in
            if let running = entries[key]?.task {
                if !background { entries[key]!.background = false }  // someone waits for it now
                return (running, false)
            }
            let task = Task<Void, any Error> { [self] in
                do {
                    try await operation()
                    finish(key, error: nil)
                } catch {
                    finish(key, error: error)
                    throw error
                }
            }
            entries[key, default: Entry()].task = task
            entries[key]!.background = background
            entries[key]!.state.isLoading = true
            return (task, true)
        }
        if started { notify(key) }
        return task
    }

    private func finish(_ key: String, error: (any Error)?) {
        entries.withLock { entries in
            entries[key]?.task = nil
            entries[key]?.state.isLoading = false
            if error is CancellationError {
                // Cancelled because no observer was left: not a failure of the source.
            } else if let error {
                entries[key]?.state.lastError = error
            } else {
                entries[key]?.state.lastRefreshed = Date()
                entries[key]?.state.lastError = nil
            }
        }
        notify(key)
    }

    private func notify(_ key: String) {
        let inboxes = entries.withLock { $0[key]?.listeners.values.compactMap(\.inbox) ?? [] }
        for inbox in inboxes { inbox.postRequestChange() }
    }
}
