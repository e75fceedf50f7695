import Foundation

/// Pending references: an id (`owner_id: 5`, `label_ids: [1, 2]`) naming an object that is not
/// stored yet is kept, and linked in the transaction of whichever later import inserts it.
///
/// They are kept in the store itself, as objects of Tether's own entities that the builder adds to
/// the schema it prepares the store with (not part of ``Client/schema``), so that they survive
/// closing and reopening a persistent store and work with any ``Store``. Both are keyed, so that
/// every store finds them by identity (an index in SQLite, a hash table in memory) and an import
/// reads only the pending references of what it brings, never all of them:
///
/// - ``targetEntityName``: one object per object named and not stored (key: its entity and
///   identity), listing the references to it in the order they were made;
/// - ``sourceEntityName``: one object per source and relationship with pending references (key:
///   the source's entity, row and relationship), listing the objects it names, so that setting
///   the relationship again drops them.
///
/// Files written before these entities keep their references in ``legacyEntityName``; an import
/// moves them over in its transaction the first time it finds any.
enum PendingReferences {
    static let targetEntityName = "_TetherPendingTarget"
    static let sourceEntityName = "_TetherPendingSource"
    static let legacyEntityName = "_TetherPendingReference"
    static let entityNames = [targetEntityName, sourceEntityName, legacyEntityName]

    static let entities = [
        Entity(targetEntityName, identity: ["key"], attributes: [Attribute("key", .string), Attribute("references", .string)]),
        Entity(sourceEntityName, identity: ["key"], attributes: [Attribute("key", .string), Attribute("targets", .string)]),
        // One object per pending reference, found by scanning (before the keyed entities).
        Entity(legacyEntityName, attributes: [
            Attribute("sourceEntity", .string), Attribute("sourceRow", .int64), Attribute("relationship", .string),
            Attribute("targetEntity", .string), Attribute("target", .string), Attribute("position", .int64),
        ]),
    ]

    /// One pending reference: a source object's relationship names the object `target` (its
    /// entity and ``encode(_:)``d identity, ``targetKey(_:_:)``) at `position` among the ids the
    /// payload listed.
    struct Reference: Hashable {
        let source: ObjectID
        let relationship: String
        let target: String
        let position: Int
    }

    /// The key of a target: its entity and encoded identity.
    static func targetKey(_ entity: String, _ encoded: String) -> String { entity + "\u{1F}" + encoded }

    static func sourceKey(_ source: ObjectID, _ relationship: String) -> String {
        "\(source.entity)\u{1F}\(source.rowID)\u{1F}\(relationship)"
    }

    /// The identity of a target as one string, the same for the key an id reference names and the
    /// key of the object an import later inserts.
    static func encode(_ key: IdentityKey) -> String {
        key.values.map { value -> String in
            switch value {
            case .int(let i): "i\(i)"
            case .string(let s): "s" + s
            case .double(let d): "f\(d.bitPattern)"
            case .bool(let b): b ? "b1" : "b0"
            case .date(let d): "d\(d.timeIntervalSinceReferenceDate.bitPattern)"
            case .uuid(let u): "u" + u.uuidString
            case .url(let u): "l" + u.absoluteString
            case .decimal(let d): "m\(d)"
            case .data(let d): "x" + d.base64EncodedString()
            // An identity is never a collection (the schema refuses one); kept with its kind.
            case .array, .map, .json: "c" + ValueCoding.json(value).description
            }
        }.joined(separator: "\u{1F}")
    }

    /// Reads and writes the pending references of one write transaction, by key only.
    struct Storage {
        let writer: any StoreWriter

        /// Whether any pending reference is stored; moves those of an earlier file format to the
        /// keyed entities first.
        func any() throws -> Bool {
            if try !writer.ids(Query(legacyEntityName, limit: 1)).isEmpty { try migrateLegacy() }
            return try !writer.ids(Query(targetEntityName, limit: 1)).isEmpty
        }

        /// Keeps `references` (of one source and relationship, in the order listed).
        func record(_ references: [Reference]) throws {
            guard let first = references.first else { return }
            let sourceKey = PendingReferences.sourceKey(first.source, first.relationship)
            let targets = Array(Set(references.map(\.target))).sorted()
            let stored = try writer.objects(sourceEntityName, identities: [IdentityKey(.string(sourceKey))]).values.first
            let listed = try stored.map { try Self.decode($0["targets"]).map { $0[0] } } ?? []
            try put(sourceEntityName, sourceKey, "targets", stored, Set(listed).union(targets).sorted().map { [$0] })
            let records = try writer.objects(targetEntityName, identities: targets.map { IdentityKey(.string($0)) })
            for target in targets {
                let record = records[IdentityKey(.string(target))]
                var entries = try record.map { try Self.decode($0["references"]) } ?? []
                for reference in references where reference.target == target {
                    entries.append([reference.source.entity, String(reference.source.rowID), reference.relationship, String(reference.position)])
                }
                try put(targetEntityName, target, "references", record, entries)
            }
        }

        /// Drops the pending references of these sources' relationships (the payload sets them
        /// anew), but those a source restates exactly (`restating`, by ``sourceKey(_:_:)``: the
        /// references the batch is about to record for it), which are left as they are; returns
        /// the references dropped and the source keys left.
        func clear(
            _ sources: [(source: ObjectID, relationship: String)], restating: [String: Set<Reference>]
        ) throws -> (dropped: [Reference], kept: Set<String>) {
            let keys = sources.map { IdentityKey(.string(PendingReferences.sourceKey($0.source, $0.relationship))) }
            let records = try writer.objects(sourceEntityName, identities: keys)
            guard !records.isEmpty else { return ([], []) }
            var sourceRecords: [String: Object] = [:]
            var targets = Set<String>()
            for (key, record) in records {
                guard case .string(let sourceKey) = key.single else { continue }
                sourceRecords[sourceKey] = record
                for entry in try Self.decode(record["targets"]) { targets.insert(entry[0]) }
            }
            // What each source has pending now, from the records of its targets.
            var targetRecords: [(key: String, record: Object, entries: [[String]], references: [Reference])] = []
            var stored: [String: Set<Reference>] = [:]
            for (key, record) in try writer.objects(targetEntityName, identities: targets.sorted().map { IdentityKey(.string($0)) }) {
                guard case .string(let target) = key.single else { continue }
                let entries = try Self.decode(record["references"])
                let references = try entries.map { try Self.reference($0, target: target) }
                for reference in references {
                    let sourceKey = PendingReferences.sourceKey(reference.source, reference.relationship)
                    if sourceRecords[sourceKey] != nil { stored[sourceKey, default: []].insert(reference) }
                }
                targetRecords.append((target, record, entries, references))
            }
            let kept = Set(sourceRecords.keys.filter { key in restating[key].map { $0 == stored[key] ?? [] } ?? false })
            var dropped: [Reference] = []
            for (target, record, entries, references) in targetRecords {
                var left: [[String]] = []
                for (entry, reference) in zip(entries, references) {
                    let sourceKey = PendingReferences.sourceKey(reference.source, reference.relationship)
                    if sourceRecords[sourceKey] != nil && !kept.contains(sourceKey) {
                        dropped.append(reference)
                    } else {
                        left.append(entry)
                    }
                }
                if left.count != entries.count { try put(targetEntityName, target, "references", record, left) }
            }
            for (sourceKey, record) in sourceRecords where !kept.contains(sourceKey) { try writer.delete(record.id) }
            return (dropped, kept)
        }

        /// Takes the pending references to these targets out of the store, each target's in the
        /// order they were made.
        func take(_ targets: [String]) throws -> [String: [Reference]] {
            let records = try writer.objects(targetEntityName, identities: targets.map { IdentityKey(.string($0)) })
            guard !records.isEmpty else { return [:] }
            var taken: [String: [Reference]] = [:]
            var bySource: [String: Set<String>] = [:]  // source key -> targets taken
            for (key, record) in records {
                guard case .string(let target) = key.single else { continue }
                let references = try Self.decode(record["references"]).map { try Self.reference($0, target: target) }
                taken[target] = references
                for reference in references { bySource[PendingReferences.sourceKey(reference.source, reference.relationship), default: []].insert(target) }
                try writer.delete(record.id)
            }
            let sources = try writer.objects(sourceEntityName, identities: bySource.keys.sorted().map { IdentityKey(.string($0)) })
            for (key, record) in sources {
                guard case .string(let sourceKey) = key.single, let gone = bySource[sourceKey] else { continue }
                let left = try Self.decode(record["targets"]).filter { !gone.contains($0[0]) }
                try put(sourceEntityName, sourceKey, "targets", record, left)
            }
            return taken
        }

        /// Inserts, updates or (when `entries` is empty) deletes one keyed object.
        private func put(_ entity: String, _ key: String, _ attribute: String, _ stored: Object?, _ entries: [[String]]) throws {
            if entries.isEmpty {
                if let stored { try writer.delete(stored.id) }
                return
            }
            let text = String(decoding: try JSONEncoder().encode(entries), as: UTF8.self)
            if let stored {
                try writer.update(stored.id, setting: [attribute: .string(text)], clearing: [])
            } else {
                _ = try writer.insert(entity, values: ["key": .string(key), attribute: .string(text)])
            }
        }

        private static func decode(_ value: Value?) throws -> [[String]] {
            guard case .string(let text)? = value else { return [] }
            return try JSONDecoder().decode([[String]].self, from: Data(text.utf8))
        }

        private static func reference(_ entry: [String], target: String) throws -> Reference {
            guard entry.count == 4, let row = Int64(entry[1]), let position = Int(entry[3]) else {
                throw StoreError(.storage, entity: targetEntityName, "a pending reference to \(target) cannot be read: \(entry)")
            }
            return Reference(source: ObjectID(entity: entry[0], rowID: row), relationship: entry[2], target: target, position: position)
        }

        /// Moves the references of the earlier format (one object each) to the keyed entities.
        private func migrateLegacy() throws {
            var grouped: [String: [Reference]] = [:]
            for object in try writer.fetch(Query(legacyEntityName)) {
                if case .string(let entity)? = object["sourceEntity"], case .int(let row)? = object["sourceRow"],
                    case .string(let relationship)? = object["relationship"], case .string(let targetEntity)? = object["targetEntity"],
                    case .string(let target)? = object["target"] {
                    let position: Int = if case .int(let p)? = object["position"] { Int(p) } else { 0 }
                    let source = ObjectID(entity: entity, rowID: row)
                    grouped[PendingReferences.sourceKey(source, relationship), default: []].append(
                        Reference(source: source, relationship: relationship, target: targetKey(targetEntity, target), position: position))
                }
                try writer.delete(object.id)
            }
            for key in grouped.keys.sorted() { try record(grouped[key]!) }
        }
    }
}
