import Foundation

/// Sends a client's outbox (``Outbox/flush()``): each entry through the same create, save,
/// delete and relationship code a client that writes immediately uses, the entry removed in the
/// transaction that records the server's answer.
struct OutboxSender {
    let client: Client
    var options: OutboxOptions { client.outboxOptions ?? OutboxOptions() }

    /// What sending one entry came to.
    private enum Outcome {
        case sent
        /// The server could not be reached (or asked to come back later): stop the flush.
        case stop(String)
        case failed(OutboxEntry)
        case conflict(OutboxEntry)
    }

    func flush() async throws -> FlushReport {
        var report = FlushReport()
        let records = try await client.store.read { try OutboxStorage.Access(writer: $0).all() }
        /// Objects with an entry that did not go through: what depends on them waits.
        var blocked = Set<ObjectID>()
        for snapshot in records {
            try Task.checkCancellation()
            // A local write during the flush may have changed or replaced the entry: a replaced
            // one (a new place in the order) waits for the next flush.
            guard let record = try await read(snapshot.key), record.entry.id == snapshot.entry.id else { continue }
            let entry = record.entry
            if entry.state == .failed || entry.state == .conflict {
                blocked.insert(entry.object)
                continue
            }
            if let waited = try await dependency(of: record, blocked: blocked) {
                var held = entry
                held.error = "waits for \(waited), whose change has not been acknowledged"
                report.held.append(held)
                blocked.insert(entry.object)
                continue
            }
            switch try await send(record) {
            case .sent: report.sent.append(entry)
            case .stop(let reason):
                report.stoppedBy = reason
                return report
            case .failed(let failed):
                report.failed.append(failed)
                blocked.insert(entry.object)
            case .conflict(let conflict):
                blocked.insert(entry.object)
                if try await applyPolicy(to: conflict) {
                    report.sent.append(entry)
                    blocked.remove(entry.object)
                } else {
                    report.conflicts.append(try await read(record.key)?.entry ?? conflict)
                }
            }
        }
        return report
    }

    private func read(_ key: String) async throws -> OutboxStorage.Record? {
        try await client.store.read { try OutboxStorage.Access(writer: $0).record(key) }
    }

    /// The object an entry waits for: one it links to (a to-one target, a link's target) whose
    /// own change did not go through in this flush, or whose create is still queued.
    private func dependency(of record: OutboxStorage.Record, blocked: Set<ObjectID>) async throws -> ObjectID? {
        let (client, entry) = (client, record.entry)
        return try await client.store.read { reader in
            var needed: [ObjectID] = []
            switch entry.operation {
            case .create, .update:
                for relationship in client.schema[entry.object.entity]?.relationships ?? [] where !relationship.isToMany {
                    needed += try reader.related(relationship.name, of: entry.object)
                }
            case .add(_, let target), .remove(_, let target):
                needed = [entry.object, target]
            case .delete:
                return nil
            }
            let access = OutboxStorage.Access(writer: reader)
            for id in needed where id != entry.object || entry.operation != .create {
                if blocked.contains(id) { return id }
                if let other = try access.record(of: id), other.entry.operation == .create, other.key != record.key { return id }
            }
            return nil
        }
    }

    /// Sends one entry.
    private func send(_ record: OutboxStorage.Record) async throws -> Outcome {
        let sending = try await markSending(record)
        let entry = sending.entry
        let id = entry.object
        var headers: HTTPHeaders = [:]
        if let header = options.idempotencyHeader, let key = entry.idempotencyKey { headers[header] = key }
        do {
            switch entry.operation {
            case .create:
                _ = try await client.sendCreate(id, options: ExportOptions(), headers: headers, acknowledging: acknowledgement(of: sending))
            case .update:
                _ = try await client.save(id, condition: nil, options: ExportOptions(), acknowledging: acknowledgement(of: sending))
            case .delete:
                _ = try await client.sendDelete(try await deleteURL(of: record), entity: id.entity)
                try await remove(sending)
            case .add(let relationship, let target):
                _ = try await RelationshipResource(client: client, relationship: relationship, source: id)
                    .sendAdd(target, options: ExportOptions(), headers: headers)
                try await remove(sending)
            case .remove(let relationship, let target):
                _ = try await RelationshipResource(client: client, relationship: relationship, source: id).sendRemove(target)
                try await remove(sending)
            }
            client.events.emit(.outbox(OutboxEvent(.acknowledged, entry)))
            return .sent
        } catch {
            return try await failed(sending, error)
        }
    }

    /// Where a queued delete goes: the item URL of the values the object had, resolved now
    /// (against the client's base URL), else the URL resolved when it was deleted.
    private func deleteURL(of record: OutboxStorage.Record) async throws -> URL {
        let (client, id) = (client, record.entry.object)
        if let kept = record.local {
            let subject = TemplateSubject(entity: id.entity, values: kept.values, related: kept.related)
            if let url = try? await client.store.read({ try client.itemURL(of: subject, reader: $0) }) { return url }
        }
        guard let url = record.url else {
            throw RequestError(.noRoute, entity: id.entity, "the queued delete of \(id) has no URL")
        }
        return url
    }

    /// Stores `record` as being sent (one attempt more, no error): what a restart after a crash
    /// finds and sends again.
    private func markSending(_ record: OutboxStorage.Record) async throws -> OutboxStorage.Record {
        var sending = record
        sending.entry.state = .sending
        sending.entry.attempts += 1
        sending.entry.error = nil
        let marked = sending
        try await client.store.write { try OutboxStorage.Writer(writer: $0).put(marked) }
        return marked
    }

    /// Removes an entry the server acknowledged (unless it was replaced meanwhile).
    private func remove(_ record: OutboxStorage.Record) async throws {
        try await client.store.write { writer in
            let storage = OutboxStorage.Writer(writer: writer)
            if let now = try storage.access.record(record.key), now.entry.id == record.entry.id { try storage.remove(record.key) }
        }
    }

    /// Runs in the transaction that records the answer to `record`: the entry goes, unless the
    /// object changed again while the request was out (then it stays, as the update of what
    /// changed since).
    private func acknowledgement(of record: OutboxStorage.Record) -> OutboxAcknowledgement {
        let client = self.client
        return { writer in
            let storage = OutboxStorage.Writer(writer: writer)
            guard var now = try storage.access.record(record.key), now.entry.id == record.entry.id else { return }
            let id = record.entry.object
            guard let object = try writer.object(id), let old = try RemoteRecord.read(id, in: writer) else {
                try storage.remove(record.key)
                return
            }
            var remote = old
            if record.entry.operation == .create {
                // Changed while the create was out: what changed is an update now.
                guard let local = now.local, !local.properties.isEmpty else {
                    try storage.remove(record.key)
                    return
                }
                now = OutboxStorage.Record(entry: OutboxEntry(id: now.entry.id, object: id, operation: .update), key: now.key, local: local)
                try storage.put(now)
                return
            }
            // Pending properties whose value is the confirmed one again are no change.
            let members = try client.bodyMembers(entity: id.entity, values: object.values, id: id, related: [:],
                                                 options: ExportOptions(relationships: .all), reader: writer, only: Set(remote.confirmed.keys))
            for (property, confirmed) in remote.confirmed where (members[property]?.json ?? .null) == confirmed {
                remote.confirmed.removeValue(forKey: property)
            }
            try RemoteRecord.write(remote, replacing: old, of: id, in: writer)
            if remote.confirmed.isEmpty {
                try storage.remove(record.key)
            } else {
                now.entry.state = .pending
                now.local = try LocalChanges(of: object, properties: Set(remote.confirmed.keys), schema: client.schema, reader: writer)
                try storage.put(now)
            }
        }
    }

    /// Classifies a failure to send `record`: the server unreachable stops the flush; 409/412 is
    /// a conflict; anything else fails the entry.
    private func failed(_ record: OutboxStorage.Record, _ error: any Error) async throws -> Outcome {
        var entry = record.entry
        let stop: Bool
        var conflict: OutboxConflict?
        switch error {
        case is CancellationError:
            try await restore(record) { $0.state = .pending }
            throw error
        case let error as TransportError:
            if error.kind == .cancelled, Task.isCancelled {
                try await restore(record) { $0.state = .pending }
                throw CancellationError()
            }
            stop = ![TransportError.Kind.responseTooLarge, .badRedirect].contains(error.kind)
        case let error as HTTPError:
            if error.status == 409 || error.status == 412 {
                conflict = await serverSide(of: record, status: error.status)
                stop = false
            } else {
                stop = error.status == 408 || error.status == 429 || error.status >= 500
            }
        case let error as ConflictError:
            conflict = OutboxConflict(id: error.id, status: error.status, local: error.local, server: error.server, serverETag: error.serverETag)
            stop = false
        default:
            stop = false
        }
        entry.error = "\(error)"
        if stop {
            entry.state = .pending
            let deferred = entry
            try await restore(record) { $0 = deferred }
            client.events.emit(.outbox(OutboxEvent(.deferred, entry)))
            return .stop("\(entry.operation) \(entry.object): \(error)")
        }
        if let conflict, entry.operation == .update || entry.operation == .delete {
            entry.state = .conflict
            entry.conflict = conflict
            let refused = entry
            try await restore(record) { $0 = refused }
            client.events.emit(.outbox(OutboxEvent(.conflict, entry)))
            return .conflict(entry)
        }
        entry.state = .failed
        let failed = entry
        try await restore(record) { $0 = failed }
        client.events.emit(.outbox(OutboxEvent(.failed, entry)))
        return .failed(entry)
    }

    /// Writes the entry of `record` back, changed, unless it was replaced or removed meanwhile.
    private func restore(_ record: OutboxStorage.Record, _ change: @escaping @Sendable (inout OutboxEntry) -> Void) async throws {
        try await client.store.write { writer in
            let storage = OutboxStorage.Writer(writer: writer)
            guard var now = try storage.access.record(record.key), now.entry.id == record.entry.id else { return }
            change(&now.entry)
            try storage.put(now)
        }
    }

    /// The server's copy of a refused entry's object (a GET of its URL) and the local change.
    private func serverSide(of record: OutboxStorage.Record, status: Int) async -> OutboxConflict {
        let id = record.entry.object
        var local = JSON.null
        var url = record.url
        if url == nil || record.entry.operation == .update {
            let client = self.client
            let read = try? await client.store.read { reader -> (URL, JSON)? in
                guard let object = try reader.object(id), let remote = try RemoteRecord.read(id, in: reader) else { return nil }
                let members = try client.bodyMembers(entity: id.entity, values: object.values, id: id, related: [:],
                                                     options: ExportOptions(relationships: .all), reader: reader, only: Set(remote.confirmed.keys))
                var body: [String: JSON] = [:]
                for (_, member) in members { JSONExport.set(member.json ?? .null, at: member.path, in: &body) }
                return (try client.itemURL(of: object, reader: reader), .object(body))
            }
            if let read { (url, local) = (read.0, read.1) }
        }
        guard let url else { return OutboxConflict(id: id, status: status, local: local, server: nil, serverETag: nil) }
        let error = await client.conflict(id, request: TransportRequest(method: .get, url: url), refused: local, status: status)
        return OutboxConflict(id: id, status: status, local: local, server: error.server, serverETag: error.serverETag)
    }

    /// Applies the entity's conflict policy; true when the conflict was resolved.
    private func applyPolicy(to entry: OutboxEntry) async throws -> Bool {
        guard let conflict = entry.conflict, let record = try await read(OutboxStorage.key(of: entry.object)) else { return false }
        let resolution: OutboxResolution
        switch options.conflictPolicy(for: entry.object.entity) {
        case .keep: return false
        case .serverWins: resolution = .server
        case .clientWins: resolution = .local
        case .merge(let merge): resolution = try merge.body(conflict)
        }
        do {
            try await resolve(record, conflict, resolution)
            return true
        } catch let error where !(error is CancellationError) {
            // Left as it stands (a conflict, or pending again): the report says so.
            return false
        }
    }

    /// Resolves a conflict as `resolution` says.
    func resolve(_ record: OutboxStorage.Record, _ conflict: OutboxConflict, _ resolution: OutboxResolution) async throws {
        let id = record.entry.object
        switch resolution {
        case .server:
            let (client, key, seq) = (client, record.key, record.entry.id)
            let importer = try Importer(client: client, options: client.importOptions.single)
            try await client.store.write { writer in
                let storage = OutboxStorage.Writer(writer: writer)
                if let now = try storage.access.record(key), now.entry.id == seq { try storage.remove(key) }
                if let old = try RemoteRecord.read(id, in: writer) {
                    var remote = old
                    remote.confirmed = [:]
                    remote.etag = conflict.serverETag
                    remote.lastModified = nil
                    try RemoteRecord.write(remote, replacing: old, of: id, in: writer)
                }
                guard let server = conflict.server else { return }
                if try writer.object(id) != nil {
                    _ = try Client.merge(server, into: id, mapping: client.mapping, identity: client.identityStrategy, importer: importer, writer: writer)
                } else {
                    _ = try importer.run([(id.entity, server)], in: writer)  // a refused delete: the server's object is back
                }
            }
            if conflict.server == nil, record.entry.operation == .update { _ = try await client.refresh(id) }
            client.events.emit(.outbox(OutboxEvent(.acknowledged, record.entry)))
        case .local, .merged:
            if case .merged(let values) = resolution { _ = try await client.updateLocallyKeepingEntry(id, values) }
            let sending = try await markSending(record)
            do {
                if record.entry.operation == .delete {
                    _ = try await client.sendDelete(try await deleteURL(of: record), entity: id.entity)
                    try await remove(sending)
                } else {
                    _ = try await client.save(id, condition: .some(conflict.serverETag), options: ExportOptions(),
                                              acknowledging: acknowledgement(of: sending))
                }
                client.events.emit(.outbox(OutboxEvent(.acknowledged, record.entry)))
            } catch {
                if case .stop = try await failed(sending, error) { throw error }
                throw error
            }
        }
    }
}

extension Client {
    /// Writes merged values of a conflict locally (recorded as local changes of the queued update).
    func updateLocallyKeepingEntry(_ id: ObjectID, _ values: [String: Value]) async throws -> Object {
        try await store.write { [self] writer in
            try updateLocally(id, setting: values, clearing: [], relating: [:], in: writer)
        }
    }
}
