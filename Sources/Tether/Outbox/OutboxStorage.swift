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
    /// One object (key `state`): the number of entries and the next entry's number, so that
    /// recording an entry reads one object by key rather than scanning the outbox.
    static let stateEntityName = "_TetherOutboxState"
    static let stateKey = IdentityKey(.string("state"))

    static let stateEntity = Entity(stateEntityName, identity: ["key"], attributes: [
        Attribute("key", .string), Attribute("count", .int64), Attribute("nextSeq", .int64),
    ])

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
        func count() throws -> Int { try state().count }

        /// The number of entries and the next entry's number (read by key; counted once for an
        /// outbox written before the state was kept).
        func state() throws -> (count: Int, nextSeq: Int64, object: Object?) {
            if let object = try writer.objects(stateEntityName, identities: [stateKey])[stateKey],
                case .int(let count)? = object["count"], case .int(let next)? = object["nextSeq"] {
                return (Int(count), next, object)
            }
            let last = try writer.fetch(Query(entityName, sortedBy: [.descending("seq")], limit: 1)).first
            let next: Int64 = if case .int(let seq)? = last?["seq"] { seq + 1 } else { 1 }
            return (try writer.count(Query(entityName)), next, nil)
        }

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
        func nextSeq() throws -> Int64 { try state().nextSeq }
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
                let state = try access.state()
                _ = try writer.insert(entityName, values: record.stored)
                try setState(state.object, count: state.count + 1, nextSeq: max(state.nextSeq, record.entry.id + 1))
            }
        }

        /// Removes the entry with `key` (nothing when there is none).
        func remove(_ key: String) throws {
            if let existing = try writer.objects(entityName, identities: [IdentityKey(.string(key))]).values.first {
                let state = try access.state()
                try writer.delete(existing.id)
                try setState(state.object, count: max(0, state.count - 1), nextSeq: state.nextSeq)
            }
        }

        private func setState(_ object: Object?, count: Int, nextSeq: Int64) throws {
            let values: [String: Value] = ["key": .string("state"), "count": .int(Int64(count)), "nextSeq": .int(nextSeq)]
            if let object { try writer.update(object.id, setting: values, clearing: []) } else { _ = try writer.insert(stateEntityName, values: values) }
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
/// outbox stores of local changes, and what a transformable column of the SQLite store keeps of an
/// array, a map or a JSON value.
package enum ValueCoding {
    package static func json(_ value: Value) -> JSON {
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
        case .array(let a): .array([.string("a"), .array(a.map(json))])
        case .map(let m): .array([.string("o"), .object(m.mapValues(json))])
        case .json(let j): .array([.string("j"), j])
        }
    }

    package static func value(_ json: JSON) -> Value? {
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
        case "a":
            guard let elements = payload.arrayValue else { return nil }
            let values = elements.compactMap(value)
            return values.count == elements.count ? .array(values) : nil
        case "o":
            guard let members = payload.objectValue else { return nil }
            let values = members.compactMapValues(value)
            return values.count == members.count ? .map(values) : nil
        case "j": return .json(payload)
        default: return nil
        }
    }
}
