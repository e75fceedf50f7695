import Foundation

extension Client {
    // MARK: CRUD

    /// GETs the object from its item URL and merges the answer into it: the server's copy
    /// replaces the local one, local changes included.
    ///
    /// When the server gave the object an `ETag` (or `Last-Modified`) before and the object has
    /// no local change (unsent, or refused by the server), the request carries `If-None-Match`
    /// (`If-Modified-Since`): a `304 Not Modified` imports nothing and returns the stored object.
    /// With local changes it carries neither: a validator says the server's copy is unchanged,
    /// not that the store holds it, and a refresh is the way back from a refused save.
    @discardableResult
    public func refresh(_ id: ObjectID) async throws -> Object {
        let url = try await itemURL(of: id)
        var request = TransportRequest(method: .get, url: url)
        let record = try await store.read { try RemoteRecord.read(id, in: $0) }
        if record?.confirmed.isEmpty == false {
            // Local changes: the store is not the server's copy, so the whole copy is asked for.
        } else if let etag = record?.etag {
            request.headers["If-None-Match"] = etag
        } else if let lastModified = record?.lastModified {
            request.headers["If-Modified-Since"] = lastModified
        }
        let response: TransportResponse
        do {
            response = try await send(request, entity: id.entity)
        } catch let error as HTTPError where error.status == 304 && request.headers["If-None-Match"] ?? request.headers["If-Modified-Since"] != nil {
            guard let object = try await object(id) else {
                throw RequestError(.objectNotFound, entity: id.entity, "\(id) was deleted while it was refreshed")
            }
            return object
        }
        guard let body = try Self.jsonBody(of: response) else {
            throw RequestError(.emptyResponse, entity: id.entity, "GET \(RemoteURL.redacted(url).absoluteString) answered \(response.status) with an empty body")
        }
        let (json, included) = try oneObject(in: body, of: id.entity, .item, what: "GET \(RemoteURL.redacted(url).absoluteString)")
        return try await confirm(id, by: response, json: json, sent: nil, included: included)
    }

    /// POSTs a stored object (typically one created with ``insertLocally(_:values:related:)``,
    /// without identity) to its collection URL, then merges the answer (server-assigned id,
    /// timestamps) into the **same** object: no duplicate is created. Read-only properties
    /// (``Builder/readOnly(_:of:)``) are not sent.
    ///
    /// An answer without a body (`204 No Content`, or a `201`/`202` with none) keeps an object
    /// that has its identity as it is. One without identity is read from the answer's `Location`
    /// (a GET on the same scheme, host and port, merged into it); without a `Location`, or when
    /// it cannot be read, the object is kept marked as not confirmed by the server and the call
    /// throws ``UnconfirmedCreateError``.
    ///
    /// A local-first client (``Builder/writes(_:)``) sends nothing here: it records the create
    /// in its ``outbox`` and returns the stored object.
    @discardableResult
    public func create(_ id: ObjectID, options: ExportOptions = ExportOptions()) async throws -> Object {
        if outboxOptions != nil {
            return try await writeLocalFirst { recorder in
                try recorder.created(id)
                guard let object = try recorder.writer.object(id) else {
                    throw RequestError(.objectNotFound, entity: id.entity, "\(id) is not in the store")
                }
                return object
            }
        }
        return try await sendCreate(id, options: options)
    }

    /// POSTs `id` and merges the answer into it (``create(_:options:)`` of a client that writes
    /// immediately, and the outbox's create). `headers` go with the request (an idempotency
    /// key); `acknowledging` runs in the transaction that merges the answer.
    func sendCreate(
        _ id: ObjectID, options: ExportOptions, headers: HTTPHeaders = [:], acknowledging: OutboxAcknowledgement? = nil
    ) async throws -> Object {
        let (url, body) = try await collectionRequest(for: id, options: options)
        let request = TransportRequest(method: .post, url: url, headers: headers, body: body.serialized())
        let response = try await send(request, entity: id.entity)
        guard let answer = try Self.jsonBody(of: response) else {
            return try await confirmCreated(id, by: response, posted: url, acknowledging: acknowledging)
        }
        let (json, included) = try oneObject(in: answer, of: id.entity, .create, what: "the answer to POST \(RemoteURL.redacted(url).absoluteString)")
        return try await confirm(id, by: response, json: json, sent: nil, included: included, acknowledging: acknowledging)
    }

    /// Whether the server accepted a create of `id` without saying what it made (no body, no
    /// readable `Location`: ``UnconfirmedCreateError``): the object has no server identity and
    /// is not the server's. Kept in the store beside the object, across restarts.
    public func isUnconfirmed(_ id: ObjectID) async throws -> Bool {
        try await store.read { try RemoteRecord.read(id, in: $0)?.unconfirmed ?? false }
    }

    /// A create of `id` answered without a body: an object with its identity is the server's as
    /// it was sent; one without is read from the answer's `Location`, or else kept marked as
    /// not confirmed (``UnconfirmedCreateError``), never as an ordinary object.
    private func confirmCreated(
        _ id: ObjectID, by response: TransportResponse, posted url: URL, acknowledging: OutboxAcknowledgement? = nil
    ) async throws -> Object {
        let identity = mapping[id.entity]?.identity.map(\.name) ?? []
        let hasIdentity = try await store.read { reader in
            guard let object = try reader.object(id) else {
                throw RequestError(.objectNotFound, entity: id.entity, "\(id) was deleted while the request was out")
            }
            return identity.allSatisfy { object.values[$0] != nil }
        }
        if hasIdentity { return try await confirm(id, by: response, json: nil, sent: nil, acknowledging: acknowledging) }
        var reason = "answered with neither the object nor a Location header"
        if let location = response.headers["Location"] {
            if let target = URL(string: location, relativeTo: url)?.absoluteURL, isTrustedLink(target, from: url) {
                let what = "GET \(RemoteURL.redacted(target).absoluteString) (the Location of the created \(id.entity))"
                do {
                    let answer = try await send(.get, target, entity: id.entity)
                    if let body = try Self.jsonBody(of: answer) {
                        let (json, included) = try oneObject(in: body, of: id.entity, .item, what: what)
                        return try await confirm(id, by: answer, json: json, sent: nil, included: included, acknowledging: acknowledging)
                    }
                    reason = "\(what) answered \(answer.status) without a body"
                } catch {
                    reason = "\(what) failed: \(error)"
                }
            } else {
                reason = "its Location '\(RemoteURL.redacted(URL(string: location, relativeTo: url)?.absoluteURL ?? url).absoluteString)' "
                    + "is not on the scheme, host and port of the request (not read with the client's credentials)"
            }
        }
        let marked = try await store.write { writer -> Bool in
            guard let old = try RemoteRecord.read(id, in: writer) else { return false }
            var record = old
            record.unconfirmed = true
            try RemoteRecord.write(record, replacing: old, of: id, in: writer)
            return true
        }
        if !marked { reason += " (this store keeps no remote records, so the mark is not kept)" }
        throw UnconfirmedCreateError(id: id, url: url, status: response.status, reason: reason)
    }

    /// POSTs a new object built from values (and relationship targets, which URL templates can
    /// follow) and imports the answer. Nothing is stored unless the server accepts it; an answer
    /// without a body (`204 No Content`) stores the object as sent, and, when the values hold no
    /// identity, reads it from the answer's `Location` or else keeps it marked as not confirmed
    /// (see ``create(_:options:)``: ``UnconfirmedCreateError``).
    ///
    /// A local-first client (``Builder/writes(_:)``) stores the object at once and records its
    /// create in the ``outbox``; nothing is sent here.
    @discardableResult
    public func create(
        _ entity: String, values: [String: Value], related: [String: [ObjectID]] = [:], options: ExportOptions = ExportOptions()
    ) async throws -> Object {
        try checkEntity(entity)
        if outboxOptions != nil {
            return try await writeLocalFirst { recorder in
                let object = try recorder.writer.insert(entity, values: values)
                for (name, targets) in related.sorted(by: { $0.key < $1.key }) { try recorder.writer.setRelated(name, of: object.id, to: targets) }
                try recorder.created(object.id)
                return try recorder.writer.object(object.id) ?? object
            }
        }
        let template = try resource(for: entity).collection
        let evaluator = TemplateEvaluator(client: self)
        let baseURL = self.baseURL
        let omitted = remote.readOnly[entity] ?? []
        let (url, body) = try await store.read { [self] reader in
            let subject = TemplateSubject(entity: entity, values: values, related: related)
            let url = writeURL(try evaluator.url(template, for: subject, baseURL: baseURL, reader: reader), entity: entity)
            let body = try exportJSON(entity: entity, values: values, id: nil, related: related, options: options, reader: reader, omitting: omitted)
            return (url, body)
        }
        let response = try await send(.post, url, body: body, entity: entity)
        guard let answer = try Self.jsonBody(of: response) else {
            // Accepted without an answer to import: the object is stored as it was sent.
            let object = try await insertLocally(entity, values: values, related: related)
            return try await confirmCreated(object.id, by: response, posted: url)
        }
        let (json, included) = try oneObject(in: answer, of: entity, .create, what: "the answer to POST \(RemoteURL.redacted(url).absoluteString)")
        let importer = try Importer(client: self, options: importOptions.single)
        return try await store.write { writer in
            _ = try Self.importIncluded(included, importer: importer, in: writer)
            let result = try importer.run([(entity, json)], in: writer)
            guard let id = result.objects.first else {
                throw ImportError(path: .root, entity: entity, message: "the answer to POST \(url.absoluteString) holds no importable \(entity)")
            }
            for (name, targets) in related.sorted(by: { $0.key < $1.key }) {
                let existing = try writer.objects(targets).map(\.id)
                try writer.setRelated(name, of: id, to: existing)
            }
            try Self.confirm(id, by: response, in: writer)
            guard let object = try writer.object(id) else {
                throw RequestError(.objectNotFound, entity: entity, "\(id) vanished after the import")
            }
            return object
        }
    }

    /// Sends the object to its item URL with the entity's save method (`PATCH` unless the builder
    /// says `PUT`: ``Builder/saveMethod(_:for:)-(_,String?)``) and merges the answer; an answer without a
    /// body keeps the local object.
    ///
    /// A `PATCH` sends only what changed since the server last confirmed the object: each
    /// attribute or relationship changed with ``updateLocally(_:setting:clearing:relating:)``
    /// whose value differs from the confirmed one, `null` for a cleared one, nothing read-only
    /// (``Builder/readOnly(_:of:)``), and the identity only when it changed. So another client's
    /// change to another field survives. With no change, nothing is sent and the stored object is
    /// returned. A `PUT` sends the whole object (`ExportOptions(content:)` chooses otherwise).
    /// Changes written directly through a ``StoreWriter`` are not tracked: send them with
    /// `ExportOptions(content: .everything)`.
    ///
    /// When the server gave the object an `ETag`, the request carries `If-Match`; a `412` is a
    /// ``ConflictError`` holding the server's copy and the local changes, and writes nothing.
    ///
    /// A local-first client (``Builder/writes(_:)``) sends nothing here: it records the save in
    /// its ``outbox`` (where it coalesces with the object's queued create or update) and returns
    /// the stored object.
    @discardableResult
    public func save(_ id: ObjectID, options: ExportOptions = ExportOptions()) async throws -> Object {
        if outboxOptions != nil {
            return try await writeLocalFirst { recorder in
                try recorder.updated(id)
                guard let object = try recorder.writer.object(id) else {
                    throw RequestError(.objectNotFound, entity: id.entity, "\(id) is not in the store")
                }
                return object
            }
        }
        return try await save(id, condition: nil, options: options)
    }

    /// Saves the object over the server's version named by `conflict` (a ``ConflictError`` of an
    /// earlier save): the local changes win. The request carries `If-Match` with the server's
    /// `ETag` from the conflict (none when the server gave none).
    @discardableResult
    public func save(_ id: ObjectID, overriding conflict: ConflictError, options: ExportOptions = ExportOptions()) async throws -> Object {
        try await save(id, condition: .some(conflict.serverETag), options: options)
    }

    /// `condition`: nil for the record's ETag; otherwise the `If-Match` to send (nil: none).
    /// `acknowledging` runs in the transaction that records the answer (or, when there is
    /// nothing to send, in one of its own).
    func save(_ id: ObjectID, condition: String??, options: ExportOptions, acknowledging: OutboxAcknowledgement? = nil) async throws -> Object {
        let url = try await itemURL(of: id)
        let method = remote.saveMethods[id.entity] ?? remote.saveMethod
        let content: ExportOptions.Content = options.content == .automatic ? (method == .patch ? .changes : .everything) : options.content
        let omitted = remote.readOnly[id.entity] ?? []
        let (body, sent, record, object) = try await store.read { [self] reader in
            guard let object = try reader.object(id) else {
                throw RequestError(.objectNotFound, entity: id.entity, "\(id) is not in the store")
            }
            let record = try RemoteRecord.read(id, in: reader)
            let members = try bodyMembers(entity: id.entity, values: object.values, id: id, related: [:], options: options, reader: reader)
            var written: [DocumentMember] = []
            switch content {
            case .changes, .automatic:
                guard let record else {
                    throw RequestError(.unsupported, entity: id.entity,
                        "the store keeps no remote records, so the changes of \(id) since the server confirmed it are unknown; "
                            + "save it whole with ExportOptions(content: .everything); nothing was sent")
                }
                for (property, confirmed) in record.confirmed.sorted(by: { $0.key < $1.key }) where !omitted.contains(property) {
                    guard let member = members[property] else { continue }
                    let now = member.json ?? .null
                    guard now != confirmed else { continue }
                    written.append(member.document(property, now))
                }
            case .everything:
                for (property, member) in members.sorted(by: { $0.key < $1.key }) where !omitted.contains(property) {
                    if let json = member.json {
                        written.append(member.document(property, json))
                    } else if options.includeNulls && !member.isIdentity {
                        written.append(member.document(property, .null))
                    }
                }
            }
            let sent = Dictionary(uniqueKeysWithValues: written.map { ($0.name, $0.value) })
            let body = try writeBody(.save, entity: id.entity, identity: identityJSON(of: id.entity, values: object.values),
                                     members: written, onlyChanges: content != .everything)
            return (body, sent, record, object)
        }
        if content != .everything && sent.isEmpty {
            guard let acknowledging else { return object }
            return try await store.write { writer in
                try acknowledging(writer)
                return try writer.object(id) ?? object
            }
        }

        var request = TransportRequest(method: method, url: url, body: body.serialized())
        switch condition {
        case .none:
            if let etag = record?.etag {
                request.headers["If-Match"] = etag
            } else if let lastModified = record?.lastModified {
                request.headers["If-Unmodified-Since"] = lastModified
            }
        case .some(let etag?): request.headers["If-Match"] = etag
        case .some(.none): break
        }
        let response: TransportResponse
        do {
            response = try await send(request, entity: id.entity)
        } catch let error as HTTPError where error.status == 412 {
            throw await conflict(id, request: request, refused: body)
        }
        let answer = try Self.jsonBody(of: response)
            .map { try oneObject(in: $0, of: id.entity, .save, what: "the answer to \(method) \(RemoteURL.redacted(url).absoluteString)") }
        return try await confirm(id, by: response, json: answer?.0, sent: sent, included: answer?.1 ?? [], acknowledging: acknowledging)
    }

    /// The conflict of a save refused with 412 (or 409), with the server's current copy.
    func conflict(_ id: ObjectID, request: TransportRequest, refused body: JSON, status: Int = 412) async -> ConflictError {
        var server: JSON?
        var etag: String?
        var failure: String?
        do {
            let response = try await send(.get, request.url, entity: id.entity)
            etag = response.headers["ETag"]
            if let body = try Self.jsonBody(of: response) {
                server = try oneObject(in: body, of: id.entity, what: "GET \(RemoteURL.redacted(request.url).absoluteString)")
            }
        } catch {
            failure = "\(error)"
        }
        return ConflictError(id: id, method: request.method, url: request.url, status: status, local: body, server: server,
                             serverETag: etag, serverError: failure)
    }

    /// DELETEs the object at its item URL. A 200, 202, 204, 404 or 410 answer deletes the local
    /// object too (and its remote record), applying the schema's delete rules; any other error
    /// leaves it. Returns the HTTP status.
    ///
    /// A local-first client (``Builder/writes(_:)``) deletes the object locally at once and
    /// records the delete in its ``outbox`` (nothing at all is sent for an object whose create
    /// was never sent); it returns 0: no request was made.
    @discardableResult
    public func delete(_ id: ObjectID) async throws -> Int {
        if outboxOptions != nil {
            try await writeLocalFirst { recorder in try recorder.delete(id) }
            return 0
        }
        let status = try await sendDelete(try await itemURL(of: id), entity: id.entity)
        let schema = self.schema
        try await store.write { writer in
            if try writer.object(id) != nil { try DeleteRules.delete(id, schema: schema, in: writer) }
        }
        return status
    }

    /// The remote operations of one relationship of one object, from the URL registered with
    /// ``Builder/relationshipResource(_:for:of:)``:
    /// ```swift
    /// let repos = client.relationship("repositories", of: user.id)
    /// try await repos.list()
    /// try await repos.add(repo.id)
    /// try await repos.remove(repo.id)
    /// ```
    public func relationship(_ name: String, of id: ObjectID) -> RelationshipResource {
        RelationshipResource(client: self, relationship: name, source: id)
    }

    /// DELETEs `url`; a 404 or 410 answer counts as done. Returns the status.
    func sendDelete(_ url: URL, entity: String) async throws -> Int {
        do {
            return try await send(.delete, url, entity: entity).status
        } catch let error as HTTPError where error.isNotFound {
            return error.status
        }
    }

    // MARK: Local changes

    /// Inserts an object locally (with or without identity) and links it; nothing is sent.
    @discardableResult
    public func insertLocally(_ entity: String, values: [String: Value], related: [String: [ObjectID]] = [:]) async throws -> Object {
        try checkEntity(entity)
        return try await store.write { writer in
            let object = try writer.insert(entity, values: values)
            for (name, targets) in related.sorted(by: { $0.key < $1.key }) { try writer.setRelated(name, of: object.id, to: targets) }
            return object
        }
    }

    /// Sets and clears attributes, and replaces relationships, locally; nothing is sent (call
    /// ``save(_:options:)`` for that; a local-first client queues the change in its ``outbox``
    /// in the same transaction, so its save is the same). What the server last confirmed for each changed property
    /// is kept beside the object (in the store, across restarts), so that a save sends only what
    /// changed.
    @discardableResult
    public func updateLocally(
        _ id: ObjectID, setting values: [String: Value], clearing cleared: Set<String> = [], relating related: [String: [ObjectID]] = [:]
    ) async throws -> Object {
        try checkEntity(id.entity)
        return try await store.write { [self] writer in
            try updateLocally(id, setting: values, clearing: cleared, relating: related, in: writer)
        }
    }

    /// ``updateLocally(_:setting:clearing:relating:)`` within a transaction.
    @discardableResult
    func updateLocally(
        _ id: ObjectID, setting values: [String: Value], clearing cleared: Set<String>, relating related: [String: [ObjectID]],
        in writer: any StoreWriter
    ) throws -> Object {
        let changed = Set(values.keys).union(cleared).union(related.keys)
        guard let before = try writer.object(id) else {
            throw RequestError(.objectNotFound, entity: id.entity, "\(id) is not in the store")
        }
        let old = try RemoteRecord.read(id, in: writer)
        var record = old
        if record != nil {
            let members = try bodyMembers(entity: id.entity, values: before.values, id: id, related: [:],
                                          options: ExportOptions(relationships: .all), reader: writer, only: changed)
            for property in changed where record!.confirmed[property] == nil {
                record!.confirmed[property] = members[property]?.json ?? .null
            }
        }
        try writer.update(id, setting: values, clearing: cleared)
        for (name, targets) in related.sorted(by: { $0.key < $1.key }) { try writer.setRelated(name, of: id, to: targets) }
        if let record { try RemoteRecord.write(record, replacing: old, of: id, in: writer) }
        if let recorder = OutboxRecorder(client: self, writer: writer) {
            // Local-first: the change is queued in this transaction (a crash between this call
            // and a save must not leave a change that is never sent).
            try recorder.changedLocally(id, properties: changed)
            try recorder.updated(id)
        }
        guard let object = try writer.object(id) else {
            throw RequestError(.objectNotFound, entity: id.entity, "\(id) is not in the store")
        }
        return object
    }

    // MARK: Confirmed by the server

    /// Merges the server's answer (`json`, nil when it had no body) into `id` and records what
    /// the server now has: the answer's validators, and, for each property `sent` (nil: the
    /// server's copy replaced the local one), no pending change unless it changed again locally
    /// while the request was out. What the answer includes beside it is imported first, in the
    /// same transaction.
    ///
    /// `acknowledging` (the outbox's) runs in the same transaction, after the record is updated
    /// and before the answer is merged.
    func confirm(
        _ id: ObjectID, by response: TransportResponse, json: JSON?, sent: [String: JSON]?, included: [IncludedObjects] = [],
        acknowledging: OutboxAcknowledgement? = nil
    ) async throws -> Object {
        let importer = try Importer(client: self, options: importOptions.single)
        let (mapping, identity) = (mapping, identityStrategy)
        return try await store.write { [self] writer in
            guard let object = try writer.object(id) else {
                throw RequestError(.objectNotFound, entity: id.entity, "\(id) was deleted while the request was out")
            }
            if let old = try RemoteRecord.read(id, in: writer) {
                var record = old
                record.takeValidators(of: response)
                if let sent {
                    let members = try bodyMembers(entity: id.entity, values: object.values, id: id, related: [:],
                                                  options: ExportOptions(relationships: .all), reader: writer, only: Set(sent.keys))
                    for (property, value) in sent where record.confirmed[property] != nil {
                        // Changed again while the request was out: still pending, over what the server has now.
                        let now = members[property]?.json ?? .null
                        if now == value { record.confirmed.removeValue(forKey: property) } else { record.confirmed[property] = value }
                    }
                } else {
                    record.confirmed = [:]
                }
                try RemoteRecord.write(record, replacing: old, of: id, in: writer)
            }
            try acknowledging?(writer)
            guard let json else { return try writer.object(id) ?? object }
            _ = try Self.importIncluded(included, importer: importer, in: writer)
            return try Self.merge(json, into: id, mapping: mapping, identity: identity, importer: importer, writer: writer)
        }
    }

    /// Records that the server's copy of `id` (just imported from `response`) replaced the
    /// local one: its validators, and no pending change.
    static func confirm(_ id: ObjectID, by response: TransportResponse, in writer: any StoreWriter) throws {
        guard let old = try RemoteRecord.read(id, in: writer) else { return }
        var record = old
        record.takeValidators(of: response)
        record.confirmed = [:]
        try RemoteRecord.write(record, replacing: old, of: id, in: writer)
    }
}

extension Client.Builder {
    /// Declares attributes (or relationships) of `entity` that the server sets and refuses in
    /// request bodies (`created_at`, a server-assigned `id`): create and save never send them.
    /// Checked against the schema by `build()`.
    public func readOnly(_ properties: Set<String>, of entity: String) -> Self {
        var copy = self
        copy.remote.readOnly[entity, default: []].formUnion(properties)
        return copy
    }
}
