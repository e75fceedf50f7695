import Foundation

/// Records local-first writes in the outbox, inside the transaction that makes them, coalescing
/// each onto the entry of what it changes (``OutboxStorage``): the write and its entry are
/// committed together or not at all.
struct OutboxRecorder {
    let client: Client
    let options: OutboxOptions
    let writer: any StoreWriter

    /// The recorder of a local-first client; nil for a client that writes immediately.
    init?(client: Client, writer: any StoreWriter) {
        guard let options = client.outboxOptions else { return nil }
        self.client = client
        self.options = options
        self.writer = writer
    }

    private var storage: OutboxStorage.Writer { OutboxStorage.Writer(writer: writer) }

    /// A new entry (checked against the limit).
    private func newRecord(
        _ object: ObjectID, _ operation: OutboxEntry.Operation, key: String, idempotent: Bool, url: URL? = nil, identity: String? = nil,
        local: LocalChanges? = nil
    ) throws -> OutboxStorage.Record {
        let state = try storage.access.state()
        guard state.count < options.limit else {
            throw OutboxError(.full, object: object, "the outbox holds \(state.count) entries, its limit (OutboxOptions.limit); nothing was written")
        }
        let entry = OutboxEntry(id: state.nextSeq, object: object, operation: operation,
                                idempotencyKey: idempotent ? UUID().uuidString : nil)
        return OutboxStorage.Record(entry: entry, key: key, url: url, identity: identity, local: local)
    }

    /// `id` (stored, typically without identity) is to be created on the server.
    func created(_ id: ObjectID) throws {
        guard try writer.object(id) != nil else {
            throw RequestError(.objectNotFound, entity: id.entity, "\(id) is not in the store")
        }
        if let existing = try storage.access.record(of: id) {
            guard case .delete = existing.entry.operation else { return }  // queued already: its create or update sends it
            throw OutboxError(.invalidState, object: id, "\(id) is deleted")
        }
        try storage.put(newRecord(id, .create, key: OutboxStorage.key(of: id), idempotent: true))
    }

    /// The local changes of `id` (those ``Client/updateLocally(_:setting:clearing:relating:)``
    /// made since the server confirmed it) are to be saved.
    func updated(_ id: ObjectID) throws {
        guard let object = try writer.object(id) else {
            throw RequestError(.objectNotFound, entity: id.entity, "\(id) is not in the store")
        }
        let existing = try storage.access.record(of: id)
        if let existing, existing.entry.operation == .create { return }  // the create sends the final values
        guard let record = try RemoteRecord.read(id, in: writer) else {
            throw RequestError(.unsupported, entity: id.entity,
                "the store keeps no remote records, so the changes of \(id) since the server confirmed it are unknown; nothing was recorded")
        }
        let local = try LocalChanges(of: object, properties: Set(record.confirmed.keys), schema: client.schema, reader: writer)
        if var existing {
            existing.local = local
            if existing.entry.state == .failed { existing.entry.state = .pending }  // edited after a failure: tried again
            try storage.put(existing)
        } else if !record.confirmed.isEmpty {
            try storage.put(newRecord(id, .update, key: OutboxStorage.key(of: id), idempotent: false, local: local))
        }
    }

    /// Keeps the local values an update entry protects current after another local change of
    /// `properties`; for a create being sent, remembers what changed since (sent as an update
    /// once the create is acknowledged).
    func changedLocally(_ id: ObjectID, properties: Set<String>) throws {
        guard var existing = try storage.access.record(of: id), let object = try writer.object(id) else { return }
        switch existing.entry.operation {
        case .update:
            guard let record = try RemoteRecord.read(id, in: writer) else { return }
            existing.local = try LocalChanges(of: object, properties: Set(record.confirmed.keys), schema: client.schema, reader: writer)
        case .create where existing.entry.state == .sending:
            let changed = (existing.local?.properties ?? []).union(properties)
            existing.local = try LocalChanges(of: object, properties: changed, schema: client.schema, reader: writer)
        default:
            return
        }
        try storage.put(existing)
    }

    /// Deletes `id` locally (with its delete rules) and records the delete: nothing is sent for
    /// an object whose create was never sent; a queued update gives way to the delete.
    func delete(_ id: ObjectID) throws {
        guard let object = try writer.object(id) else {
            throw RequestError(.objectNotFound, entity: id.entity, "\(id) is not in the store")
        }
        let existing = try storage.access.record(of: id)
        let links = try storage.access.records(ofEntities: [id.entity]).filter {
            $0.entry.object == id && $0.key != OutboxStorage.key(of: id)
        }
        if let existing, existing.entry.operation == .create {
            guard existing.entry.attempts == 0 else {
                throw OutboxError(.invalidState, object: id,
                    "the create of \(id) was sent and not acknowledged (it may be on the server); flush the outbox before deleting it")
            }
            // Never sent: nothing of it reaches the server.
            try storage.remove(existing.key)
            for link in links { try storage.remove(link.key) }
            try DeleteRules.delete(id, schema: client.schema, in: writer)
            return
        }
        let url = try client.itemURL(of: object, reader: writer)
        let identity = client.mapping[id.entity]?.identity.compactMap { object.values[$0.name] } ?? []
        let all = Set(client.schema[id.entity]?.attributes.map(\.name) ?? [])
            .union(client.schema[id.entity]?.relationships.filter { !$0.isToMany }.map(\.name) ?? [])
        let kept = try LocalChanges(of: object, properties: all, schema: client.schema, reader: writer)
        if let existing { try storage.remove(existing.key) }
        for link in links { try storage.remove(link.key) }
        try storage.put(newRecord(id, .delete, key: OutboxStorage.key(of: id), idempotent: false, url: url,
                                  identity: identity.isEmpty ? nil : String(decoding: JSON.array(identity.map(ValueCoding.json)).serialized(), as: UTF8.self),
                                  local: kept))
        try DeleteRules.delete(id, schema: client.schema, in: writer)
    }

    /// Links (`add`) or unlinks `target` in `relationship` of `source` locally and records it; an
    /// add and a remove of the same link, neither sent, cancel out.
    func link(_ source: ObjectID, _ relationship: String, _ target: ObjectID, add: Bool) throws {
        guard let declared = client.schema[source.entity]?.relationship(named: relationship) else {
            throw RequestError(.unknownRelationship, entity: source.entity, member: relationship, "\(source.entity) has no relationship '\(relationship)'")
        }
        for id in [source, target] where try writer.object(id) == nil {
            throw RequestError(.objectNotFound, entity: id.entity, "\(id) is not in the store")
        }
        var linked = try writer.related(relationship, of: source)
        if add {
            if declared.isToMany { if !linked.contains(target) { linked.append(target) } } else { linked = [target] }
        } else {
            linked.removeAll { $0 == target }
        }
        try writer.setRelated(relationship, of: source, to: linked)
        let key = OutboxStorage.key(of: source, relationship: relationship, target: target)
        if let existing = try storage.access.record(key) {
            let sameDirection: Bool = if case .add = existing.entry.operation { add } else { !add }
            if sameDirection { return }
            if existing.entry.attempts == 0 {
                try storage.remove(key)  // an add and a remove never sent: nothing to send
                return
            }
            try storage.remove(key)
        }
        let operation: OutboxEntry.Operation = add ? .add(relationship: relationship, target: target) : .remove(relationship: relationship, target: target)
        try storage.put(newRecord(source, operation, key: key, idempotent: add))
    }
}

extension Client {
    /// The outbox settings of a local-first client; nil when it writes immediately.
    var outboxOptions: OutboxOptions? {
        if case .localFirst(let options) = writeMode { return options }
        return nil
    }

    /// The item URL of a stored object, read within a transaction.
    func itemURL(of object: Object, reader: any StoreReader) throws -> URL {
        try itemURL(of: TemplateSubject(object), reader: reader)
    }

    /// The item URL of an object of `subject.entity` with these values (and relationship
    /// targets), read within a transaction: where a queued delete is sent, resolved when it is
    /// sent (against the client's base URL then).
    func itemURL(of subject: TemplateSubject, reader: any StoreReader) throws -> URL {
        let template = try itemTemplate(for: subject.entity)
        return writeURL(try TemplateEvaluator(client: self).url(template, for: subject, baseURL: baseURL, reader: reader), entity: subject.entity)
    }

    /// Runs a local-first write and its outbox entry in one transaction, then flushes when the
    /// options say so.
    func writeLocalFirst<T: Sendable>(_ body: @escaping @Sendable (OutboxRecorder) throws -> T) async throws -> T {
        let value = try await store.write { [self] writer in
            guard let recorder = OutboxRecorder(client: self, writer: writer) else {
                throw OutboxError(.notLocalFirst, "the client writes immediately (Builder.writes(.immediate))")
            }
            return try body(recorder)
        }
        if outboxOptions?.flushesAfterWrites == true {
            do {
                _ = try await outbox.flush()
            } catch {
                events.emit(.failure(FailureEvent(operation: .request, error: error)))
            }
        }
        return value
    }
}

extension Client.Builder {
    /// Whether `create`, `save`, `delete` and relationship `add`/`remove` send at once
    /// (``WriteMode/immediate``, the default) or write the store first and queue the change in
    /// the client's ``Client/outbox`` (``WriteMode/localFirst(_:)``):
    ///
    /// ```swift
    /// let client = try Client.Builder(models: [Issue.self])
    ///     .store(try SQLiteStore(path: path))
    ///     .writes(.localFirst())
    ///     .build()
    /// try await client.create(Issue(title: "Written offline"))   // stored and queued
    /// try await client.outbox.flush()                             // sent, in order
    /// ```
    public func writes(_ mode: WriteMode) -> Self {
        var copy = self
        copy.writeMode = mode
        return copy
    }
}
