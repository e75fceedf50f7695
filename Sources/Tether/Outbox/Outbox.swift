import Foundation

/// Runs in the transaction that records the server's answer to an outbox entry: removes the
/// entry (or keeps it, when the object changed again while the request was out).
typealias OutboxAcknowledgement = @Sendable (any StoreWriter) throws -> Void

/// The changes a local-first client (``Client/Builder/writes(_:)``) made and has not yet sent:
/// list them, observe them, send them (``flush()``), retry, resolve or discard them.
///
/// ```swift
/// let report = try await client.outbox.flush()          // "3 sent", or "stopped: …" while offline
/// for try await entries in client.outbox.changes() {   // for a badge or a list of unsent rows
///     badge = entries.count
/// }
/// ```
///
/// Entries live in the client's store, written in the transaction of the change they record,
/// so a persistent store keeps them across restarts, and a crash leaves the change and its entry
/// both or neither.
public struct Outbox: Sendable {
    /// The client whose changes these are.
    public let client: Client

    /// Every entry, in the order they are sent.
    public func entries() async throws -> [OutboxEntry] {
        try await client.store.read { try OutboxStorage.Access(writer: $0).all().map(\.entry) }
    }

    /// Whether `id` has a change not yet acknowledged by the server (its create, update or
    /// delete, or a link of one of its relationships): for a mark beside a row.
    public func hasUnsentChanges(_ id: ObjectID) async throws -> Bool {
        try await client.store.read { reader in
            try !reader.ids(Query(OutboxStorage.entityName, where: .equal("entity", .string(id.entity)) && .equal("row", .int(id.rowID)),
                                  limit: 1)).isEmpty
        }
    }

    /// The objects of `entity` with changes not yet acknowledged by the server (one read, for
    /// the marks of a whole list).
    public func objectsWithUnsentChanges(of entity: String) async throws -> Set<ObjectID> {
        try await client.store.read { reader in
            Set(try OutboxStorage.Access(writer: reader).records(ofEntities: [entity]).map(\.entry.object))
        }
    }

    /// The entries now, then again after every transaction that changes them (a local write,
    /// each step of a flush), as an `AsyncSequence`; a reader that falls behind gets the latest
    /// list (one is kept). Ends when the task iterating it is cancelled; a store error ends it
    /// with that error.
    public func changes() -> AsyncThrowingStream<[OutboxEntry], any Error> {
        let changes = client.store.changes()
        let outbox = self
        // Only the latest list matters to a reader that fell behind: one is kept, not a queue.
        return AsyncThrowingStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let task = Task {
                do {
                    continuation.yield(try await outbox.entries())
                    for await change in changes where change.entities.contains(OutboxStorage.entityName) {
                        continuation.yield(try await outbox.entries())
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Sends the queued changes in order, each through the client's usual path (its transport,
    /// hooks, save method, minimal `PATCH`, `If-Match`), and removes each entry in the
    /// transaction that records the server's answer. See ``FlushReport`` for what a flush leaves.
    ///
    /// - An object created offline gets its server identity from the answer, so the entries
    ///   after it that name it (a child's foreign key, a URL template through it) are sent with
    ///   that identity.
    /// - A create carries its idempotency key (``OutboxOptions/idempotencyHeader``) on every
    ///   attempt.
    /// - No answer, 408, 429 or 5xx: the flush stops there, the entry and those after it stay
    ///   queued (``FlushReport/stoppedBy``); call `flush()` again later.
    /// - 409 or 412: the entry's conflict policy decides (``OutboxConflictPolicy``).
    /// - Any other refusal: the entry is kept as ``OutboxEntry/State-swift.enum/failed``
    ///   with its error, and the entries that depend on it wait.
    ///
    /// One flush runs at a time; a second call waits for the first, then sends what is left.
    @discardableResult
    public func flush() async throws -> FlushReport {
        try await client.flushGate.run { try await OutboxSender(client: client).flush() }
    }

    /// Makes a failed entry pending again (after the app fixed what the server refused); the next
    /// flush sends it.
    public func retry(_ entry: OutboxEntry) async throws {
        try await client.store.write { writer in
            let storage = OutboxStorage.Writer(writer: writer)
            guard var record = try storage.access.record(seq: entry.id) else {
                throw OutboxError(.noSuchEntry, object: entry.object, "entry #\(entry.id) is not in the outbox")
            }
            guard record.entry.state == .failed else {
                throw OutboxError(.invalidState, object: entry.object, "entry #\(entry.id) is \(record.entry.state.rawValue), not failed")
            }
            record.entry.state = .pending
            record.entry.error = nil
            try storage.put(record)
        }
    }

    /// Drops an entry and rolls its object back to the server's last values: an object created
    /// offline is deleted; an update's properties take the values the server last confirmed; an
    /// object deleted offline is stored again with the values it had; an add or remove of a link
    /// is undone. Not for an entry being sent.
    public func discard(_ entry: OutboxEntry) async throws {
        let client = self.client
        let importer = try Importer(client: client, options: client.importOptions.single)
        try await client.store.write { writer in
            let storage = OutboxStorage.Writer(writer: writer)
            guard let record = try storage.access.record(seq: entry.id) else {
                throw OutboxError(.noSuchEntry, object: entry.object, "entry #\(entry.id) is not in the outbox")
            }
            guard record.entry.state != .sending else {
                throw OutboxError(.invalidState, object: entry.object, "entry #\(entry.id) is being sent")
            }
            try storage.remove(record.key)
            try OutboxRollback(client: client, importer: importer, writer: writer).roll(back: record)
        }
    }

    /// Resolves a conflict (``OutboxEntry/State-swift.enum/conflict``): `.server` drops the
    /// local change and keeps the server's copy; `.local` sends the local change again over the
    /// server's version; `.merged(values)` writes the values locally and sends them so. Sends at
    /// once (a failure to reach the server leaves the entry pending, and is thrown).
    public func resolve(_ entry: OutboxEntry, keeping resolution: OutboxResolution) async throws {
        _ = try await client.flushGate.run {
            let record = try await client.store.read { try OutboxStorage.Access(writer: $0).record(seq: entry.id) }
            guard let record else { throw OutboxError(.noSuchEntry, object: entry.object, "entry #\(entry.id) is not in the outbox") }
            guard record.entry.state == .conflict, let conflict = record.entry.conflict else {
                throw OutboxError(.invalidState, object: entry.object, "entry #\(entry.id) is \(record.entry.state.rawValue), not a conflict")
            }
            try await OutboxSender(client: client).resolve(record, conflict, resolution)
            return FlushReport()
        }
    }
}

extension Client {
    /// The changes this client made locally first and has not yet sent (``Builder/writes(_:)``).
    /// A client that writes immediately has an empty outbox.
    public var outbox: Outbox { Outbox(client: self) }
}

/// One flush of a client's outbox at a time.
actor FlushGate {
    private var running: Task<FlushReport, any Error>?

    func run(_ body: @escaping @Sendable () async throws -> FlushReport) async throws -> FlushReport {
        while let running { _ = try? await running.value }
        let task = Task { try await body() }
        running = task
        defer { running = nil }
        return try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
    }
}
