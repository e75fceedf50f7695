import Foundation

/// How a client's writes reach the server, chosen in the builder with
/// ``Client/Builder/writes(_:)``.
public enum WriteMode: Sendable, Hashable {
    /// `create`, `save`, `delete` and relationship `add`/`remove` send at once and write the
    /// store when the server has answered (the default): a failed request throws and changes
    /// nothing locally.
    case immediate
    /// The same calls write the store at once (observers see the change) and record it in the
    /// client's ``Outbox`` in the same transaction; ``Outbox/flush()`` sends what is recorded,
    /// in order. Nothing is lost while the server cannot be reached, across restarts of a
    /// persistent store.
    case localFirst(OutboxOptions = OutboxOptions())
}

/// The settings of a local-first client's ``Outbox`` (``WriteMode/localFirst(_:)``).
public struct OutboxOptions: Sendable, Hashable {
    /// The most entries the outbox holds; a local-first write beyond it throws
    /// ``OutboxError`` (`.full`) and writes nothing. 10,000 by default.
    public var limit: Int
    /// The header every queued create carries its idempotency key in (the convention of Stripe
    /// and of the IETF draft `Idempotency-Key`); nil sends none.
    public var idempotencyHeader: String?
    /// What a flush does when the server refuses an entry with 409 or 412: by entity name, and
    /// ``defaultConflictPolicy`` for the others.
    public var conflictPolicies: [String: OutboxConflictPolicy]
    /// The policy of entities without one of their own (``OutboxConflictPolicy/keep``: the
    /// conflict stays in the outbox for the app to resolve).
    public var defaultConflictPolicy: OutboxConflictPolicy
    /// Whether each local-first write tries to send the outbox at once (a ``Outbox/flush()``
    /// after the write; a failure to reach the server leaves the entries queued, and is not
    /// thrown). False by default: the app flushes when it judges the network is back.
    public var flushesAfterWrites: Bool

    /// Options with these values; each default is the one described on its property.
    public init(
        limit: Int = 10_000, idempotencyHeader: String? = "Idempotency-Key",
        conflictPolicies: [String: OutboxConflictPolicy] = [:], defaultConflictPolicy: OutboxConflictPolicy = .keep,
        flushesAfterWrites: Bool = false
    ) {
        self.limit = max(1, limit)
        self.idempotencyHeader = idempotencyHeader
        self.conflictPolicies = conflictPolicies
        self.defaultConflictPolicy = defaultConflictPolicy
        self.flushesAfterWrites = flushesAfterWrites
    }

    /// The conflict policy of `entity`.
    public func conflictPolicy(for entity: String) -> OutboxConflictPolicy {
        conflictPolicies[entity] ?? defaultConflictPolicy
    }
}

/// What a flush does with an entry the server refuses with `409 Conflict` or
/// `412 Precondition Failed` (the object changed on the server since it was read).
public enum OutboxConflictPolicy: Sendable, Hashable {
    /// The entry becomes a conflict (``OutboxEntry/State-swift.enum/conflict``) holding the
    /// server's copy; the app resolves it with ``Outbox/resolve(_:keeping:)``. Entries that
    /// depend on it wait.
    case keep
    /// The server's copy replaces the local change (the entry is dropped, the store shows the
    /// server's values).
    case serverWins
    /// The local change is sent again over the server's version (with its new `ETag`).
    case clientWins
    /// The closure decides from the conflict: which of the two wins, or the values to send.
    case merge(OutboxMerge)

    public static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.keep, .keep), (.serverWins, .serverWins), (.clientWins, .clientWins): true
        case (.merge(let a), .merge(let b)): a === b
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .keep: hasher.combine(0)
        case .serverWins: hasher.combine(1)
        case .clientWins: hasher.combine(2)
        case .merge(let merge): hasher.combine(ObjectIdentifier(merge))
        }
    }
}

/// A merge of a conflict (``OutboxConflictPolicy/merge(_:)``): given the conflict, the
/// resolution.
public final class OutboxMerge: Sendable {
    let body: @Sendable (OutboxConflict) throws -> OutboxResolution

    /// A merge that calls `body` for each conflict of its entities.
    public init(_ body: @escaping @Sendable (OutboxConflict) throws -> OutboxResolution) { self.body = body }
}

/// How a conflict is resolved (``Outbox/resolve(_:keeping:)``, ``OutboxMerge``).
public enum OutboxResolution: Sendable, Hashable {
    /// The server's copy is kept: the local change is dropped.
    case server
    /// The local change is sent again over the server's version.
    case local
    /// These attribute values are written locally and sent over the server's version (with the
    /// other local changes).
    case merged([String: Value])
}

/// A change the server refused because its copy changed meanwhile (409 or 412).
public struct OutboxConflict: Sendable, Hashable {
    /// The object whose change was refused; the store still holds the local change.
    public var id: ObjectID
    /// The server's status: 409 or 412.
    public var status: Int
    /// The body that was refused: the local change.
    public var local: JSON
    /// The server's current copy, when it could be read.
    public var server: JSON?
    /// The server's current `ETag`, when it gave one.
    public var serverETag: String?

    /// A conflict with these values (for tests of a merge).
    public init(id: ObjectID, status: Int, local: JSON, server: JSON?, serverETag: String?) {
        self.id = id
        self.status = status
        self.local = local
        self.server = server
        self.serverETag = serverETag
    }
}

/// One change recorded in a local-first client's ``Outbox``, not yet acknowledged by the server.
///
/// Entries are coalesced as they are recorded, so the outbox holds at most one entry per object
/// (its create, its update, or its delete) and one per relationship link: a create followed by
/// updates is one create sent with the final values; updates are one update (a `PATCH` of every
/// property changed since the server confirmed the object); a delete after updates is the delete
/// alone; a create followed by a delete, or an add followed by a remove of the same link, is
/// nothing.
public struct OutboxEntry: Sendable, Hashable, Identifiable, CustomStringConvertible {
    /// What the entry sends.
    public enum Operation: Sendable, Hashable, CustomStringConvertible {
        /// A `POST` of the object to its collection URL.
        case create
        /// The entity's save method (a `PATCH` of what changed, by default).
        case update
        /// A `DELETE` of the object's item URL (kept in the entry: the object is gone locally).
        case delete
        /// An add of `target` to the relationship (``RelationshipResource/add(_:options:)``).
        case add(relationship: String, target: ObjectID)
        /// A remove of `target` from the relationship (``RelationshipResource/remove(_:)``).
        case remove(relationship: String, target: ObjectID)

        public var description: String {
            switch self {
            case .create: "create"
            case .update: "update"
            case .delete: "delete"
            case .add(let relationship, let target): "add \(target) to \(relationship)"
            case .remove(let relationship, let target): "remove \(target) from \(relationship)"
            }
        }
    }

    /// Where the entry stands.
    public enum State: String, Sendable, Hashable {
        /// Waiting to be sent.
        case pending
        /// Handed to the transport; after a crash, sent again (a create with the same
        /// idempotency key).
        case sending
        /// The server refused it (a 4xx other than 408, 409, 412 and 429), or it could not be
        /// made into a request; kept with its ``OutboxEntry/error``, never sent again until the
        /// app retries (``Outbox/retry(_:)``) or discards it (``Outbox/discard(_:)``).
        case failed
        /// The server refused it with 409 or 412; ``OutboxEntry/conflict`` holds the server's
        /// copy. Resolve it with ``Outbox/resolve(_:keeping:)``.
        case conflict
    }

    /// The entry's place in the outbox: entries are sent in increasing order.
    public let id: Int64
    /// The object the entry changes (for a delete, the object as it was stored).
    public let object: ObjectID
    /// What it sends.
    public let operation: Operation
    /// Where it stands.
    public var state: State
    /// Why it failed, or why the last attempt to send it did not complete (the server could
    /// not be reached); nil when nothing went wrong.
    public var error: String?
    /// How many times it was handed to the transport.
    public var attempts: Int
    /// The idempotency key of a create, sent with every attempt (``OutboxOptions/idempotencyHeader``).
    public let idempotencyKey: String?
    /// The server's side of a conflict (``State-swift.enum/conflict``).
    public var conflict: OutboxConflict?

    /// An entry with these values, as the outbox lists it (for tests of code that shows it).
    public init(
        id: Int64, object: ObjectID, operation: Operation, state: State = .pending, error: String? = nil, attempts: Int = 0,
        idempotencyKey: String? = nil, conflict: OutboxConflict? = nil
    ) {
        self.id = id
        self.object = object
        self.operation = operation
        self.state = state
        self.error = error
        self.attempts = attempts
        self.idempotencyKey = idempotencyKey
        self.conflict = conflict
    }

    public var description: String {
        "#\(id) \(operation) \(object) [\(state.rawValue)\(attempts > 0 ? ", \(attempts) attempt\(attempts == 1 ? "" : "s")" : "")]"
            + (error.map { ": \($0)" } ?? "")
    }
}

/// What one ``Outbox/flush()`` did.
public struct FlushReport: Sendable, Hashable, CustomStringConvertible {
    /// The entries the server acknowledged (in the order sent); they are no longer in the outbox.
    public var sent: [OutboxEntry] = []
    /// Entries that failed in this flush (kept, ``OutboxEntry/State-swift.enum/failed``).
    public var failed: [OutboxEntry] = []
    /// Entries refused with 409/412 and kept as conflicts.
    public var conflicts: [OutboxEntry] = []
    /// Entries not sent because they wait for another (an object whose create failed, an
    /// earlier entry of the same object that failed or is in conflict).
    public var held: [OutboxEntry] = []
    /// Why the flush stopped before the end of the outbox: the server could not be reached, or
    /// answered 408, 429 or 5xx (the entry and those after it stay queued); nil when it got to
    /// the end.
    public var stoppedBy: String?

    /// An empty report.
    public init() {}

    /// Whether the flush got to the end of the outbox with nothing failed, in conflict or held.
    public var isComplete: Bool { stoppedBy == nil && failed.isEmpty && conflicts.isEmpty && held.isEmpty }

    public var description: String {
        var parts = ["\(sent.count) sent"]
        if !failed.isEmpty { parts.append("\(failed.count) failed") }
        if !conflicts.isEmpty { parts.append("\(conflicts.count) in conflict") }
        if !held.isEmpty { parts.append("\(held.count) held") }
        if let stoppedBy { parts.append("stopped: \(stoppedBy)") }
        return parts.joined(separator: ", ")
    }
}

/// A local-first write the outbox cannot take.
public struct OutboxError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Why.
    public enum Kind: String, Sendable, Hashable {
        /// The outbox holds ``OutboxOptions/limit`` entries; nothing was written.
        case full
        /// The client writes immediately (``WriteMode/immediate``): it has no outbox.
        case notLocalFirst
        /// The entry is not in the outbox (sent, or discarded).
        case noSuchEntry
        /// The operation cannot be done on the entry in its state (resolving an entry that is not
        /// a conflict, deleting an object whose create may have reached the server).
        case invalidState
    }

    /// Why.
    public let kind: Kind
    /// The object concerned, when there is one.
    public let object: ObjectID?
    /// What happened, in words.
    public let message: String

    /// An error of `kind`.
    public init(_ kind: Kind, object: ObjectID? = nil, _ message: String) {
        self.kind = kind
        self.object = object
        self.message = message
    }

    public var description: String { "outbox (\(kind.rawValue))\(object.map { " \($0)" } ?? ""): \(message)" }
}
