import Foundation

/// The outbox's entries, kept in the store itself as objects of Tether's own entity
/// ``entityName`` (added to the schema the builder prepares the store with, as the pending
/// references are), so that an entry is written in the transaction of the local write it
/// records and survives restarts of a persistent store.
///
/// An entry is keyed by what it changes (``key``): one key per object for its create, update or
/// delete, one per relationship link for its add or remove. Recording a change onto the entry
/// of its key is how changes coalesce.
enum OutboxStorage {
    static let entityName = "_TetherOutbox"

    static let entity = Entity(entityName, identity: ["key"], attributes: [
        Attribute("key", .string), Attribute("seq", .int64),
        Attribute("entity", .string), Attribute("row", .int64),
        Attribute("operation", .string), Attribute("relationship", .string),
        Attribute("targetEntity", .string), Attribute("targetRow", .int64),
        Attribute("state", .string), Attribute("error", .string), Attribute("attempts", .int64),
        Attribute("idempotencyKey", .string),
        Attribute("url", .string), Attribute("identity", .string),
        Attribute("local", .string), Attribute("conflict", .string),
    ])

    /// The key of an object's create, update or delete.
    static func key(of object: ObjectID) -> String { "o\u{1F}\(object.entity)\u{1F}\(object.rowID)" }

    /// The key of an add or remove of one link.
    static func key(of object: ObjectID, relationship: String, target: ObjectID) -> String {
        "l\u{1F}\(object.entity)\u{1F}\(object.rowID)\u{1F}\(relationship)\u{1F}\(target.entity)\u{1F}\(target.rowID)"
    }

    /// One stored entry: what the app sees, and what the sender and the import need.
    struct Record: Sendable {
        var entry: OutboxEntry
        /// The entry's key (``key(of:)``).
        var key: String
        /// A delete's item URL, resolved when the object was deleted locally.
        var url: URL?
        /// A delete's identity (``PendingReferences/encode(_:)``): an import does not bring the
        /// object back while the delete is queued.
        var identity: String?
        /// An update's local values of the properties it changes, for the import to keep them
        /// (``LocalChanges``).
        var local: LocalChanges?

        var stored: [String: Value] {
            var values: [String: Value] = [
                "key": .string(key), "seq": .int(entry.id), "entity": .string(entry.object.entity), "row": .int(entry.object.rowID),
                "state": .string(entry.state.rawValue), "attempts": .int(Int64(entry.attempts)),
            ]
            switch entry.operation {
            case .create: values["operation"] = .string("create")
            case .update: values["operation"] = .string("update")
            case .delete: values["operation"] = .string("delete")
            case .add(let relationship, let target), .remove(let relationship, let target):
                if case .add = entry.operation { values["operation"] = .string("add") } else { values["operation"] = .string("remove") }
                values["relationship"] = .string(relationship)
                values["targetEntity"] = .string(target.entity)
                values["targetRow"] = .int(target.rowID)
            }
            if let error = entry.error { values["error"] = .string(error) }
            if let key = entry.idempotencyKey { values["idempotencyKey"] = .string(key) }
            if let url { values["url"] = .string(url.absoluteString) }
            if let identity { values["identity"] = .string(identity) }
            if let local { values["local"] = .string(local.encoded()) }
            if let conflict = entry.conflict { values["conflict"] = .string(Self.encode(conflict)) }
            return values
        }

        init(entry: OutboxEntry, key: String, url: URL? = nil, identity: String? = nil, local: LocalChanges? = nil) {
            self.entry = entry
            self.key = key
            self.url = url
            self.identity = identity
            self.local = local
        }

        init(_ object: Object) throws {
            func string(_ name: String) -> String? { if case .string(let s)? = object[name] { s } else { nil } }
            func int(_ name: String) -> Int64? { if case .int(let i)? = object[name] { i } else { nil } }
            guard let key = string("key"), let seq = int("seq"), let entity = string("entity"), let row = int("row"),
                let operationName = string("operation"), let stateName = string("state"), let state = OutboxEntry.State(rawValue: stateName)
            else {
                throw StoreError(.storage, entity: OutboxStorage.entityName, "an outbox entry (\(object.id)) is unreadable")
            }
            let subject = ObjectID(entity: entity, rowID: row)
            let operation: OutboxEntry.Operation
            switch operationName {
            case "create": operation = .create
            case "update": operation = .update
            case "delete": operation = .delete
            case "add", "remove":
                guard let relationship = string("relationship"), let targetEntity = string("targetEntity"), let targetRow = int("targetRow") else {
                    throw StoreError(.storage, entity: OutboxStorage.entityName, "the outbox entry \(key) has no relationship target")
                }
                let target = ObjectID(entity: targetEntity, rowID: targetRow)
                operation = operationName == "add" ? .add(relationship: relationship, target: target) : .remove(relationship: relationship, target: target)
            default:
                throw StoreError(.storage, entity: OutboxStorage.entityName, "the outbox entry \(key) has unknown operation '\(operationName)'")
            }
            entry = OutboxEntry(
                id: seq, object: subject, operation: operation, state: state, error: string("error"), attempts: Int(int("attempts") ?? 0),
                idempotencyKey: string("idempotencyKey"), conflict: try string("conflict").map { try Self.decodeConflict($0, of: subject) })
            self.key = key
            url = string("url").flatMap(URL.init(string:))
            identity = string("identity")
            local = try string("local").map { try LocalChanges(decoding: $0, of: subject) }
        }

        static func encode(_ conflict: OutboxConflict) -> String {
            var members: [String: JSON] = ["status": .int(Int64(conflict.status)), "local": conflict.local]
            if let server = conflict.server { members["server"] = server }
            if let etag = conflict.serverETag { members["etag"] = .string(etag) }
            return String(decoding: JSON.object(members).serialized(), as: UTF8.self)
        }

        static func decodeConflict(_ text: String, of id: ObjectID) throws -> OutboxConflict {
            let json = try JSON(parsing: Data(text.utf8))
            return OutboxConflict(id: id, status: Int(json["status"]?.int64Value ?? 409), local: json["local"] ?? .null,
                                  server: json["server"], serverETag: json["etag"]?.stringValue)
        }
    }

    /// Reads and writes the outbox within one transaction.
    struct Access {
        let writer: any StoreReader

        /// Every entry, in the order they are sent.
        func all() throws -> [Record] {
            try writer.fetch(Query(entityName, sortedBy: [.ascending("seq")])).map(Record.init)
        }

        /// How many entries there are.
        func count() throws -> Int { try writer.count(Query(entityName)) }

        /// The entry with this key.
        func record(_ key: String) throws -> Record? {
            try writer.objects(entityName, identities: [IdentityKey(.string(key))]).values.first.map(Record.init)
        }

        /// The entry of an object's create, update or delete.
        func record(of object: ObjectID) throws -> Record? { try record(key(of: object)) }

        /// The entry with this sequence number.
        func record(seq: Int64) throws -> Record? {
            try writer.fetch(Query(entityName, where: .equal("seq", .int(seq)), limit: 1)).first.map(Record.init)
        }

        /// The entries of objects of these entities (with their link entries).
        func records(ofEntities entities: Set<String>) throws -> [Record] {
            try writer.fetch(Query(entityName, where: .in("entity", entities.sorted().map(Value.string)), sortedBy: [.ascending("seq")]))
                .map(Record.init)
        }

        /// Whether the outbox holds any entry.
        func isEmpty() throws -> Bool { try writer.ids(Query(entityName, limit: 1)).isEmpty }

        /// The number the next entry gets.
        func nextSeq() throws -> Int64 {
            let last = try writer.fetch(Query(entityName, sortedBy: [.descending("seq")], limit: 1)).first
            if case .int(let seq)? = last?["seq"] { return seq + 1 }
            return 1
        }
    }

    /// Writes the outbox within one transaction.
    struct Writer {
        let writer: any StoreWriter
        var access: Access { Access(writer: writer) }

        /// Stores `record` (inserted, or replacing the entry of its key).
        func put(_ record: Record) throws {
            if let existing = try writer.objects(entityName, identities: [IdentityKey(.string(record.key))]).values.first {
                let values = record.stored
                let cleared = Set(OutboxStorage.entity.attributes.map(\.name)).subtracting(values.keys)
                try writer.update(existing.id, setting: values, clearing: cleared)
            } else {
                _ = try writer.insert(entityName, values: record.stored)
            }
        }

        /// Removes the entry with `key` (nothing when there is none).
        func remove(_ key: String) throws {
            if let existing = try writer.objects(entityName, identities: [IdentityKey(.string(key))]).values.first {
                try writer.delete(existing.id)
            }
        }
    }
}

/// The local values of the properties an update entry changes: what an import keeps over the
/// server's while the update is queued (a refresh never brings back what the user changed).
/// Attributes are kept as values, relationships as the linked objects, in order.
struct LocalChanges: Sendable, Hashable {
    var values: [String: Value] = [:]
    var cleared: Set<String> = []
    var related: [String: [ObjectID]] = [:]

    var properties: Set<String> { Set(values.keys).union(cleared).union(related.keys) }

    /// The current local values of `properties` of `object` (as `reader` holds them).
    init(of object: Object, properties: Set<String>, schema: Schema, reader: any StoreReader) throws {
        guard let entity = schema[object.id.entity] else { return }
        for property in properties.sorted() {
            if entity.attribute(named: property) != nil {
                if let value = object.values[property] { values[property] = value } else { cleared.insert(property) }
            } else if entity.relationship(named: property) != nil {
                related[property] = try reader.related(property, of: object.id)
            }
        }
    }

    init() {}

    func encoded() -> String {
        var members: [String: JSON] = [:]
        if !values.isEmpty { members["values"] = .object(values.mapValues(ValueCoding.json)) }
        if !cleared.isEmpty { members["cleared"] = .array(cleared.sorted().map(JSON.string)) }
        if !related.isEmpty {
            members["related"] = .object(related.mapValues { ids in .array(ids.map { .array([.string($0.entity), .int($0.rowID)]) }) })
        }
        return String(decoding: JSON.object(members).serialized(), as: UTF8.self)
    }

    init(decoding text: String, of id: ObjectID) throws {
        let json = try JSON(parsing: Data(text.utf8))
        for (name, value) in json["values"]?.objectValue ?? [:] {
            guard let decoded = ValueCoding.value(value) else {
                throw StoreError(.storage, entity: OutboxStorage.entityName, "the queued change of \(id).\(name) is unreadable")
            }
            values[name] = decoded
        }
        cleared = Set((json["cleared"]?.arrayValue ?? []).compactMap(\.stringValue))
        for (name, list) in json["related"]?.objectValue ?? [:] {
            related[name] = (list.arrayValue ?? []).compactMap { pair in
                guard let entity = pair[0]?.stringValue, let row = pair[1]?.int64Value else { return nil }
                return ObjectID(entity: entity, rowID: row)
            }
        }
    }
}

/// Values as JSON that keeps their type (`["i", 5]`, `["d", 1.5]`, `["t", <seconds>]`): what the
/// outbox stores of local changes.
enum ValueCoding {
    static func json(_ value: Value) -> JSON {
        switch value {
        case .string(let s): .array([.string("s"), .string(s)])
        case .int(let i): .array([.string("i"), .int(i)])
        case .double(let d): .array([.string("f"), .string(String(d.bitPattern))])
        case .decimal(let d): .array([.string("m"), .string("\(d)")])
        case .bool(let b): .array([.string("b"), .bool(b)])
        case .date(let d): .array([.string("t"), .string(String(d.timeIntervalSinceReferenceDate.bitPattern))])
        case .data(let d): .array([.string("x"), .string(d.base64EncodedString())])
        case .uuid(let u): .array([.string("u"), .string(u.uuidString)])
        case .url(let u): .array([.string("l"), .string(u.absoluteString)])
        }
    }

    static func value(_ json: JSON) -> Value? {
        guard let tag = json[0]?.stringValue, let payload = json[1] else { return nil }
        switch tag {
        case "s": return payload.stringValue.map(Value.string)
        case "i": return payload.int64Value.map(Value.int)
        case "f": return payload.stringValue.flatMap(UInt64.init).map { .double(Double(bitPattern: $0)) }
        case "m": return payload.stringValue.flatMap { Decimal(string: $0, locale: Locale(identifier: "en_US_POSIX")) }.map(Value.decimal)
        case "b": if case .bool(let b) = payload { return .bool(b) } else { return nil }
        case "t": return payload.stringValue.flatMap(UInt64.init).map { .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: $0))) }
        case "x": return payload.stringValue.flatMap { Data(base64Encoded: $0) }.map(Value.data)
        case "u": return payload.stringValue.flatMap(UUID.init(uuidString:)).map(Value.uuid)
        case "l": return payload.stringValue.flatMap(URL.init(string:)).map(Value.url)
        default: return nil
        }
    }
}
