import Foundation

import Synchronization

/// A complete ``Store`` that keeps everything in memory: the default store and the store for tests.
///
/// Writes are serialised and atomic: a transaction works on a copy-on-write snapshot that
/// replaces the committed state only when the body returns. Reads take the last committed
/// snapshot and never wait for a write to finish.
public final class InMemoryStore: Store {
    private let state = Mutex(State())
    /// Serialises writers; held for the whole transaction, separately from `state`, so that
    /// readers never wait for a writer.
    private let writeLock = Mutex(())
    private let broadcaster = ChangeBroadcaster()

    public init() {}

    public func prepare(for schema: Schema) throws {
        state.withLock { state in state.prepare(schema) }
    }

    public func read<T: Sendable>(_ body: @Sendable (any StoreReader) throws -> T) async throws -> T {
        let snapshot = state.withLock { $0 }
        return try body(Transaction(snapshot))
    }

    public func write<T: Sendable>(_ body: @Sendable (any StoreWriter) throws -> T) async throws -> T {
        let (result, changes) = try writeLock.withLock { _ in
            let transaction = Transaction(state.withLock { $0 })
            let result = try body(transaction)
            state.withLock { $0 = transaction.state }
            return (result, transaction.changes)
        }
        broadcaster.send(changes)
        return result
    }

    public func changes() -> AsyncStream<ChangeSet> { broadcaster.stream() }
}

extension InMemoryStore {
    /// What the store knows of an entity; fixed once prepared.
    struct EntityInfo: Sendable {
        let entity: Entity
        let attributeTypes: [String: AttributeType]
        /// relationship name -> (index in `State.links`, true on the declaring (forward) side, destination)
        let relationships: [String: (index: Int, forward: Bool, destination: String)]

        func identityKey(_ values: [String: Value]) -> IdentityKey? {
            guard !entity.identity.isEmpty else { return nil }
            if entity.identity.count == 1 { return values[entity.identity[0]].map(IdentityKey.init) }
            var key: [Value] = []
            key.reserveCapacity(entity.identity.count)
            for name in entity.identity {
                guard let v = values[name] else { return nil }
                key.append(v)
            }
            return IdentityKey(key)
        }
    }

    /// The links of one relationship and its inverse. `forward` is keyed by objects of the entity
    /// that declares the relationship first.
    struct Links: Sendable {
        var forward: [ObjectID: [ObjectID]] = [:]
        var backward: [ObjectID: [ObjectID]] = [:]
        /// Each source has at most one target.
        let forwardToOne: Bool
        /// Each target has at most one source (the inverse is to-one).
        let backwardToOne: Bool
    }

    /// Everything stored. Mutated in place (never through a local copy, which would copy whole tables).
    struct State: Sendable {
        var prepared = false
        var entities: [String: EntityInfo] = [:]
        var rows: [String: [Int64: [String: Value]]] = [:]
        var identityIndex: [String: [IdentityKey: Int64]] = [:]
        var links: [Links] = []
        var nextRowID: Int64 = 1

        mutating func prepare(_ schema: Schema) {
            var relationshipSlots: [String: [String: (index: Int, forward: Bool, destination: String)]] = [:]
            var links: [Links] = []
            for entity in schema.entities {
                for relationship in entity.relationships where relationshipSlots[entity.name]?[relationship.name] == nil {
                    let inverse = relationship.inverse.flatMap { schema[relationship.destination]?.relationship(named: $0) }
                    links.append(Links(forwardToOne: !relationship.isToMany, backwardToOne: inverse.map { !$0.isToMany } ?? false))
                    relationshipSlots[entity.name, default: [:]][relationship.name] = (links.count - 1, true, relationship.destination)
                    if let inverse {
                        relationshipSlots[relationship.destination, default: [:]][inverse.name] = (links.count - 1, false, entity.name)
                    }
                }
            }
            self.links = links
            for entity in schema.entities {
                entities[entity.name] = EntityInfo(
                    entity: entity,
                    attributeTypes: Dictionary(uniqueKeysWithValues: entity.attributes.map { ($0.name, $0.type) }),
                    relationships: relationshipSlots[entity.name] ?? [:])
                if rows[entity.name] == nil { rows[entity.name] = [:] }
                if identityIndex[entity.name] == nil { identityIndex[entity.name] = [:] }
            }
            prepared = true
        }
    }

    /// A reader or writer over a private copy-on-write copy of the state.
    final class Transaction: StoreWriter {
        var state: State
        var changes = ChangeSet()

        init(_ state: State) { self.state = state }

        private func info(_ entity: String) throws -> EntityInfo {
            guard state.prepared else { throw StoreError(.notPrepared, "the store was not prepared with a schema") }
            guard let info = state.entities[entity] else {
                throw StoreError(.unknownEntity, entity: entity, "unknown entity '\(entity)'")
            }
            return info
        }

        private func relationship(_ entity: String, _ name: String) throws -> (index: Int, forward: Bool, destination: String) {
            guard let found = try info(entity).relationships[name] else {
                throw StoreError(.unknownRelationship, entity: entity, member: name, "\(entity) has no relationship '\(name)'")
            }
            return found
        }

        private func exists(_ id: ObjectID) -> Bool { state.rows[id.entity]?[id.rowID] != nil }

        func objects(_ entity: String, identities: [IdentityKey]) throws -> [IdentityKey: Object] {
            _ = try info(entity)
            var found: [IdentityKey: Object] = [:]
            found.reserveCapacity(identities.count)
            let index = state.identityIndex[entity]!
            let rows = state.rows[entity]!
            for key in identities {
                if let row = index[key], let values = rows[row] {
                    found[key] = Object(id: ObjectID(entity: entity, rowID: row), values: values)
                }
            }
            return found
        }

        func find(_ entity: String, identities: [IdentityKey], attributes: [String]) throws -> [StoredRow?] {
            let info = try info(entity)
            for name in attributes where info.attributeTypes[name] == nil {
                throw StoreError(.unknownAttribute, entity: entity, member: name, "\(entity) has no attribute '\(name)'")
            }
            let index = state.identityIndex[entity]!
            let rows = state.rows[entity]!
            return identities.map { key in
                guard let row = index[key], let values = rows[row] else { return nil }
                return StoredRow(id: ObjectID(entity: entity, rowID: row), values: attributes.map { values[$0] })
            }
        }

        func object(_ id: ObjectID) throws -> Object? {
            _ = try info(id.entity)
            return state.rows[id.entity]![id.rowID].map { Object(id: id, values: $0) }
        }

        func fetch(_ query: Query) throws -> [Object] {
            try check(query)
            return query.apply(to: state.rows[query.entity]!.map { Object(id: ObjectID(entity: query.entity, rowID: $0.key), values: $0.value) })
        }

        func count(_ query: Query) throws -> Int {
            try check(query)
            let rows = state.rows[query.entity]!
            guard let condition = query.condition else { return rows.count }
            return rows.values.reduce(0) { $0 + (condition.matches($1) ? 1 : 0) }
        }

        private func check(_ query: Query) throws {
            let info = try info(query.entity)
            for name in (query.condition?.attributes ?? []).union(query.sort.map(\.attribute)) where info.attributeTypes[name] == nil {
                throw StoreError(.unknownAttribute, entity: query.entity, member: name, "\(query.entity) has no attribute '\(name)'")
            }
        }

        func related(_ relationship: String, of ids: [ObjectID]) throws -> [ObjectID: [ObjectID]] {
            var result: [ObjectID: [ObjectID]] = [:]
            var slots: [String: (index: Int, forward: Bool, destination: String)] = [:]
            for id in ids {
                let slot = try slots[id.entity] ?? self.relationship(id.entity, relationship)
                slots[id.entity] = slot
                let targets = slot.forward ? state.links[slot.index].forward[id] : state.links[slot.index].backward[id]
                if let targets, !targets.isEmpty { result[id] = targets }
            }
            return result
        }

        func insert(_ entity: String, values: [String: Value]) throws -> Object {
            let info = try info(entity)
            try checkValues(values, info)
            return Object(id: try insert(entity, checked: values, info), values: values)
        }

        private func insert(_ entity: String, checked values: [String: Value], _ info: EntityInfo) throws -> ObjectID {
            let key = info.identityKey(values)
            if let key, state.identityIndex[entity]![key] != nil {
                throw StoreError(.duplicateIdentity, entity: entity, "an object of \(entity) with identity \(key) exists")
            }
            let row = state.nextRowID
            state.nextRowID += 1
            state.rows[entity]![row] = values
            if let key { state.identityIndex[entity]![key] = row }
            let id = ObjectID(entity: entity, rowID: row)
            changes.inserted.insert(id)
            return id
        }

        /// Checks the batch's names once, then inserts and links each row; a new object has no
        /// links to replace, so a one-to-many link is two appends.
        func insert(_ batch: InsertBatch) throws -> [ObjectID] {
            let entity = batch.entity
            let info = try info(entity)
            let types = try AttributeType.types(of: batch.attributes, in: info.attributeTypes, entity: entity)
            let relationships = try batch.relationships.map { try relationship(entity, $0) }
            // Whether each relationship's target has one partner (flags only: a copy of the links
            // would make the next write copy them whole).
            let targetToOne = relationships.map { slot in
                slot.forward ? state.links[slot.index].backwardToOne : state.links[slot.index].forwardToOne
            }
            var ids: [ObjectID] = []
            ids.reserveCapacity(batch.count)
            for row in 0..<batch.count {
                var values = [String: Value](minimumCapacity: types.count)
                for (a, type) in types.enumerated() {
                    guard let value = batch.value(row: row, attribute: a) else { continue }
                    try type.check(value, entity: entity, attribute: batch.attributes[a])
                    values[batch.attributes[a]] = value
                }
                let id = try insert(entity, checked: values, info)
                ids.append(id)
                for (r, slot) in relationships.enumerated() {
                    guard let target = batch.target(row: row, relationship: r) else { continue }
                    guard target.entity == slot.destination, exists(target), !targetToOne[r] else {
                        try setRelated(batch.relationships[r], of: id, to: [target])  // its checks and errors
                        continue
                    }
                    if slot.forward {
                        state.links[slot.index].forward[id] = [target]
                        state.links[slot.index].backward[target, default: []].append(id)
                    } else {
                        state.links[slot.index].backward[id] = [target]
                        state.links[slot.index].forward[target, default: []].append(id)
                    }
                    markUpdated(target)
                }
            }
            return ids
        }

        /// Checks the batch's names once and changes each row in place; the identity index is
        /// only touched when the batch changes an identity attribute.
        func update(_ batch: UpdateBatch) throws {
            let entity = batch.entity
            let info = try info(entity)
            let types = try AttributeType.types(of: batch.attributes, in: info.attributeTypes, entity: entity)
            let identityChanges = !Set(info.entity.identity).isDisjoint(with: batch.attributes)
            for (row, id) in batch.ids.enumerated() {
                guard id.entity == entity, state.rows[entity]![id.rowID] != nil else {
                    throw StoreError(.objectNotFound, entity: id.entity, "no object \(id)")
                }
                for (a, type) in types.enumerated() {
                    if let value = batch.value(row: row, attribute: a) { try type.check(value, entity: entity, attribute: batch.attributes[a]) }
                }
                if identityChanges {
                    var setting: [String: Value] = [:]
                    var clearing = Set<String>()
                    for (a, name) in batch.attributes.enumerated() {
                        if let value = batch.value(row: row, attribute: a) { setting[name] = value } else { clearing.insert(name) }
                    }
                    try update(id, setting: setting, clearing: clearing)
                    continue
                }
                for (a, name) in batch.attributes.enumerated() {
                    state.rows[entity]![id.rowID]![name] = batch.value(row: row, attribute: a)
                }
                markUpdated(id)
            }
        }

        func update(_ id: ObjectID, setting values: [String: Value], clearing cleared: Set<String>) throws {
            let info = try info(id.entity)
            guard let old = state.rows[id.entity]![id.rowID] else {
                throw StoreError(.objectNotFound, entity: id.entity, "no object \(id)")
            }
            try checkValues(values, info)
            for name in cleared where info.attributeTypes[name] == nil {
                throw StoreError(.unknownAttribute, entity: id.entity, member: name, "\(id.entity) has no attribute '\(name)'")
            }
            var row = old
            for name in cleared { row[name] = nil }
            for (name, value) in values { row[name] = value }
            let oldKey = info.identityKey(old)
            let newKey = info.identityKey(row)
            if newKey != oldKey {
                if let newKey, state.identityIndex[id.entity]![newKey] != nil {
                    throw StoreError(.duplicateIdentity, entity: id.entity, "an object of \(id.entity) with identity \(newKey) exists")
                }
                if let oldKey { state.identityIndex[id.entity]![oldKey] = nil }
                if let newKey { state.identityIndex[id.entity]![newKey] = id.rowID }
            }
            state.rows[id.entity]![id.rowID] = row
            markUpdated(id)
        }

        private func checkValues(_ values: [String: Value], _ info: EntityInfo) throws {
            for (name, value) in values {
                guard let type = info.attributeTypes[name] else {
                    throw StoreError(.unknownAttribute, entity: info.entity.name, member: name, "\(info.entity.name) has no attribute '\(name)'")
                }
                try type.check(value, entity: info.entity.name, attribute: name)
            }
        }

        private func markUpdated(_ id: ObjectID) {
            if !changes.inserted.contains(id) { changes.updated.insert(id) }
        }

        func delete(_ id: ObjectID) throws {
            let info = try info(id.entity)
            guard let row = state.rows[id.entity]![id.rowID] else {
                throw StoreError(.objectNotFound, entity: id.entity, "no object \(id)")
            }
            for name in info.relationships.keys {
                try setRelated(name, of: id, to: [])
            }
            // Links from relationships without an inverse that point at this object.
            for index in state.links.indices where state.links[index].backward[id] != nil {
                for source in state.links[index].backward.removeValue(forKey: id) ?? [] {
                    state.links[index].forward[source]?.removeAll { $0 == id }
                    if state.links[index].forward[source]?.isEmpty == true { state.links[index].forward[source] = nil }
                    markUpdated(source)
                }
            }
            if let key = info.identityKey(row) { state.identityIndex[id.entity]![key] = nil }
            state.rows[id.entity]![id.rowID] = nil
            changes.updated.remove(id)
            if changes.inserted.remove(id) == nil { changes.deleted.insert(id) }
        }

        func setRelated(_ relationship: String, of id: ObjectID, to targets: [ObjectID]) throws {
            let slot = try self.relationship(id.entity, relationship)
            guard exists(id) else { throw StoreError(.objectNotFound, entity: id.entity, "no object \(id)") }
            var unique: [ObjectID] = []
            var seen = Set<ObjectID>()
            for target in targets where seen.insert(target).inserted {
                guard target.entity == slot.destination else {
                    throw StoreError(.typeMismatch, entity: id.entity, member: relationship,
                                     "\(id.entity).\(relationship) links to \(slot.destination), not \(target.entity)")
                }
                guard exists(target) else { throw StoreError(.objectNotFound, entity: target.entity, "no object \(target)") }
                unique.append(target)
            }
            let sourceToOne = slot.forward ? state.links[slot.index].forwardToOne : state.links[slot.index].backwardToOne
            let targetToOne = slot.forward ? state.links[slot.index].backwardToOne : state.links[slot.index].forwardToOne
            if sourceToOne && unique.count > 1 {
                throw StoreError(.typeMismatch, entity: id.entity, member: relationship, "\(id.entity).\(relationship) is to-one")
            }
            var touched: [ObjectID] = []
            // Move the links out so they are uniquely referenced and mutate in place, then move back.
            var links = Links(forwardToOne: false, backwardToOne: false)
            swap(&links, &state.links[slot.index])
            defer { swap(&links, &state.links[slot.index]) }
            if slot.forward {
                Self.relink(id, unique, targetToOne, &links.forward, &links.backward, &touched)
            } else {
                Self.relink(id, unique, targetToOne, &links.backward, &links.forward, &touched)
            }
            for object in touched { markUpdated(object) }
        }

        /// Replaces the links of `id` in `out` (and the mirror entries in `back`), in place.
        private static func relink(
            _ id: ObjectID, _ targets: [ObjectID], _ targetToOne: Bool,
            _ out: inout [ObjectID: [ObjectID]], _ back: inout [ObjectID: [ObjectID]], _ touched: inout [ObjectID]
        ) {
            let old = out[id] ?? []
            if old == targets { return }
            let keep = Set(targets)
            for target in old where !keep.contains(target) {
                back[target]?.removeAll { $0 == id }
                if back[target]?.isEmpty == true { back[target] = nil }
                touched.append(target)
            }
            let oldSet = Set(old)
            for target in targets {
                if targetToOne {
                    // A target has one partner on this side: take it from its previous one.
                    for previous in back[target] ?? [] where previous != id {
                        out[previous]?.removeAll { $0 == target }
                        if out[previous]?.isEmpty == true { out[previous] = nil }
                        touched.append(previous)
                    }
                    if back[target] != [id] { back[target] = [id] }
                } else if !oldSet.contains(target) {
                    back[target, default: []].append(id)
                }
                if !oldSet.contains(target) { touched.append(target) }
            }
            out[id] = targets.isEmpty ? nil : targets
            touched.append(id)
        }
    }
}
