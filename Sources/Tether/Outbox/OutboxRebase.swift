import Foundation

/// What an import does while a local-first client's outbox holds changes (the per-field rebase):
/// it never overwrites an attribute or link with an unsent local change, and applies the
/// server's other fields.
///
/// Run at the end of every import, in its transaction:
/// - an object created offline is not deleted by `deleteMissing` or as an orphan (``spared``);
/// - an object with a queued update gets back the local values of the properties it changes
///   where the import wrote the server's, and the server's values become what the object's
///   remote record says the server has (so the update sends the local value over them, and
///   discarding it rolls back to them);
/// - an object with a queued delete that the import brought back is deleted again.
struct OutboxRebase {
    let client: Client
    let records: [OutboxStorage.Record]
    /// The objects created offline, not yet acknowledged.
    let spared: Set<ObjectID>

    /// The rebase of an import by `client` (nil when the client writes immediately, or its
    /// outbox is empty: one keyed read).
    init?(client: Client?, reader: any StoreReader) throws {
        guard let client, client.outboxOptions != nil else { return nil }
        let access = OutboxStorage.Access(writer: reader)
        guard try !access.isEmpty() else { return nil }
        self.client = client
        records = try access.all()
        spared = Set(records.filter { $0.entry.operation == .create }.map(\.entry.object))
    }

    /// Puts back what the import overwrote: whether it wrote anything, and the objects of queued
    /// deletes it deleted again.
    func apply(in writer: any StoreWriter) throws -> (changed: Bool, deleted: Set<ObjectID>) {
        var changed = false
        var deleted = Set<ObjectID>()
        for record in records {
            let id = record.entry.object
            switch record.entry.operation {
            case .delete:
                guard let text = record.identity, let values = try? JSON(parsing: Data(text.utf8)).arrayValue?.compactMap(ValueCoding.value),
                    !values.isEmpty
                else { continue }
                let key = IdentityKey(values)
                if let back = try writer.objects(id.entity, identities: [key])[key] {
                    deleted.formUnion(try DeleteRules.delete([back.id], schema: client.schema, in: writer))
                    changed = true
                }
            case .update:
                guard let local = record.local, let object = try writer.object(id) else { continue }
                var setting: [String: Value] = [:]
                var clearing = Set<String>()
                var relinking: [String: [ObjectID]] = [:]
                for (property, value) in local.values where object.values[property] != value { setting[property] = value }
                for property in local.cleared where object.values[property] != nil { clearing.insert(property) }
                for (property, targets) in local.related where try writer.related(property, of: id) != targets { relinking[property] = targets }
                let overwritten = Set(setting.keys).union(clearing).union(relinking.keys)
                guard !overwritten.isEmpty else { continue }
                // What the server has now: the update sends the local values over it.
                if let old = try RemoteRecord.read(id, in: writer) {
                    let members = try client.bodyMembers(entity: id.entity, values: object.values, id: id, related: [:],
                                                         options: ExportOptions(relationships: .all), reader: writer, only: overwritten)
                    var remote = old
                    for property in overwritten { remote.confirmed[property] = members[property]?.json ?? .null }
                    try RemoteRecord.write(remote, replacing: old, of: id, in: writer)
                }
                if !setting.isEmpty || !clearing.isEmpty { try writer.update(id, setting: setting, clearing: clearing) }
                for (property, targets) in relinking.sorted(by: { $0.key < $1.key }) {
                    try writer.setRelated(property, of: id, to: try writer.objects(targets).map(\.id))
                }
                changed = true
            case .create, .add, .remove:
                continue
            }
        }
        return (changed, deleted)
    }
}

/// What discarding an outbox entry does to its object (``Outbox/discard(_:)``): rolls it back
/// to the server's last values.
struct OutboxRollback {
    let client: Client
    let importer: Importer
    let writer: any StoreWriter

    func roll(back record: OutboxStorage.Record) throws {
        let id = record.entry.object
        let storage = OutboxStorage.Writer(writer: writer)
        switch record.entry.operation {
        case .create:
            guard try writer.object(id) != nil else { return }
            for other in try storage.access.records(ofEntities: [id.entity]) where other.entry.object == id { try storage.remove(other.key) }
            try DeleteRules.delete(id, schema: client.schema, in: writer)
        case .update:
            guard let object = try writer.object(id), let old = try RemoteRecord.read(id, in: writer), !old.confirmed.isEmpty else { return }
            let identity = Set(client.mapping[id.entity]?.identity.map(\.name) ?? [])
            let members = try client.bodyMembers(entity: id.entity, values: object.values, id: id, related: [:],
                                                 options: ExportOptions(relationships: .all), reader: writer,
                                                 only: Set(old.confirmed.keys).union(identity))
            var body: [String: JSON] = [:]
            for (property, member) in members {
                guard let json = identity.contains(property) ? member.json : old.confirmed[property] else { continue }
                JSONExport.set(json, at: member.path, in: &body)
            }
            var remote = old
            remote.confirmed = [:]
            try RemoteRecord.write(remote, replacing: old, of: id, in: writer)
            _ = try Client.merge(.object(body), into: id, mapping: client.mapping, identity: client.identityStrategy, importer: importer, writer: writer)
        case .delete:
            guard let kept = record.local else { return }
            let object = try writer.insert(id.entity, values: kept.values)
            for (relationship, targets) in kept.related.sorted(by: { $0.key < $1.key }) {
                try writer.setRelated(relationship, of: object.id, to: try writer.objects(targets).map(\.id))
            }
        case .add(let relationship, let target):
            guard try writer.object(id) != nil else { return }
            let linked = try writer.related(relationship, of: id)
            if linked.contains(target) { try writer.setRelated(relationship, of: id, to: linked.filter { $0 != target }) }
        case .remove(let relationship, let target):
            guard try writer.object(id) != nil, try writer.object(target) != nil,
                let declared = client.schema[id.entity]?.relationship(named: relationship)
            else { return }
            var linked = try writer.related(relationship, of: id)
            if declared.isToMany { if !linked.contains(target) { linked.append(target) } } else { linked = [target] }
            try writer.setRelated(relationship, of: id, to: linked)
        }
    }
}
