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
    private let observers = Mutex(Observers())

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
        if !changes.isEmpty {
            let continuations = observers.withLock { Array($0.continuations.values) }
            for continuation in continuations { continuation.yield(changes) }
        }
        return result
    }

    public func changes() -> AsyncStream<ChangeSet> {
        let (stream, continuation) = AsyncStream<ChangeSet>.makeStream(bufferingPolicy: .unbounded)
        let token = observers.withLock { observers in
            observers.next += 1
            observers.continuations[observers.next] = continuation
            return observers.next
        }
        continuation.onTermination = { [weak self] _ in
            self?.observers.withLock { _ = $0.continuations.removeValue(forKey: token) }
        }
        return stream
    }

    private struct Observers {
        var next = 0
        var continuations: [Int: AsyncStream<ChangeSet>.Continuation] = [:]
    }
}

extension InMemoryStore {
    struct Table: Sendable {
        let entity: Entity
        var rows: [Int64: [String: Value]] = [:]
        var identityIndex: [IdentityKey: Int64] = [:]

        func identityKey(_ values: [String: Value]) -> IdentityKey? {
            guard !entity.identity.isEmpty else { return nil }
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
    /// that declares `forwardName`.
    struct Links: Sendable {
        var forward: [ObjectID: [ObjectID]] = [:]
        var backward: [ObjectID: [ObjectID]] = [:]
        /// Each source has at most one target.
        let forwardToOne: Bool
        /// Each target has at most one source (the inverse is to-one).
        let backwardToOne: Bool
    }

    struct State: Sendable {
        var schema: Schema?
        var tables: [String: Table] = [:]
        var links: [Int: Links] = [:]
        /// (entity, relationship) -> (index in `links`, true when the relationship is the forward side)
        var relationshipIndex: [String: [String: (Int, Bool)]] = [:]
        var nextRowID: Int64 = 1

        mutating func prepare(_ schema: Schema) {
            self.schema = schema
            for entity in schema.entities where tables[entity.name] == nil {
                tables[entity.name] = Table(entity: entity)
            }
            for entity in schema.entities {
                for relationship in entity.relationships where relationshipIndex[entity.name]?[relationship.name] == nil {
                    let index = links.count
                    let inverse = relationship.inverse.flatMap { schema[relationship.destination]?.relationship(named: $0) }
                    links[index] = Links(forwardToOne: !relationship.isToMany, backwardToOne: inverse.map { !$0.isToMany } ?? false)
                    relationshipIndex[entity.name, default: [:]][relationship.name] = (index, true)
                    if let inverse {
                        relationshipIndex[relationship.destination, default: [:]][inverse.name] = (index, false)
                    }
                }
            }
        }
    }

    /// A reader or writer over a private copy of the state.
    final class Transaction: StoreWriter {
        var state: State
        var changes = ChangeSet()

        init(_ state: State) { self.state = state }

        private func table(_ entity: String) throws -> Table {
            guard state.schema != nil else { throw StoreError(.notPrepared, "the store was not prepared with a schema") }
            guard let table = state.tables[entity] else {
                throw StoreError(.unknownEntity, entity: entity, "unknown entity '\(entity)'")
            }
            return table
        }

        private func relationship(_ entity: String, _ name: String) throws -> (Int, Bool) {
            _ = try table(entity)
            guard let found = state.relationshipIndex[entity]?[name] else {
                throw StoreError(.unknownRelationship, entity: entity, member: name, "\(entity) has no relationship '\(name)'")
            }
            return found
        }

        func objects(_ entity: String, identities: [IdentityKey]) throws -> [IdentityKey: Object] {
            let table = try table(entity)
            var found: [IdentityKey: Object] = [:]
            for key in identities {
                if let row = table.identityIndex[key], let values = table.rows[row] {
                    found[key] = Object(id: ObjectID(entity: entity, rowID: row), values: values)
                }
            }
            return found
        }

        func object(_ id: ObjectID) throws -> Object? {
            try table(id.entity).rows[id.rowID].map { Object(id: id, values: $0) }
        }

        func fetch(_ query: Query) throws -> [Object] {
            let table = try table(query.entity)
            try check(query, table.entity)
            var matches = table.rows.filter { query.condition?.matches($0.value) ?? true }
                .map { Object(id: ObjectID(entity: query.entity, rowID: $0.key), values: $0.value) }
            matches.sort { a, b in
                if Sort.areInIncreasingOrder(a.values, b.values, by: query.sort) { return true }
                if Sort.areInIncreasingOrder(b.values, a.values, by: query.sort) { return false }
                return a.id.rowID < b.id.rowID
            }
            let start = min(max(0, query.offset), matches.count)
            let end = query.limit.map { min(matches.count, start + max(0, $0)) } ?? matches.count
            return Array(matches[start..<end])
        }

        func count(_ query: Query) throws -> Int {
            let table = try table(query.entity)
            try check(query, table.entity)
            guard let condition = query.condition else { return table.rows.count }
            return table.rows.values.reduce(0) { $0 + (condition.matches($1) ? 1 : 0) }
        }

        private func check(_ query: Query, _ entity: Entity) throws {
            for name in (query.condition?.attributes ?? []).union(query.sort.map(\.attribute)) where entity.attribute(named: name) == nil {
                throw StoreError(.unknownAttribute, entity: entity.name, member: name, "\(entity.name) has no attribute '\(name)'")
            }
        }

        func related(_ relationship: String, of ids: [ObjectID]) throws -> [ObjectID: [ObjectID]] {
            var result: [ObjectID: [ObjectID]] = [:]
            var cache: [String: (Int, Bool)] = [:]
            for id in ids {
                let (index, forward) = try cache[id.entity] ?? self.relationship(id.entity, relationship)
                cache[id.entity] = (index, forward)
                let links = state.links[index]!
                if let targets = forward ? links.forward[id] : links.backward[id], !targets.isEmpty {
                    result[id] = targets
                }
            }
            return result
        }

        func insert(_ entity: String, values: [String: Value]) throws -> Object {
            let table = try table(entity)
            try checkValues(values, table.entity)
            let key = table.identityKey(values)
            if let key, table.identityIndex[key] != nil {
                throw StoreError(.duplicateIdentity, entity: entity, "an object of \(entity) with identity \(key) exists")
            }
            let row = state.nextRowID
            state.nextRowID += 1
            state.tables[entity]!.rows[row] = values
            if let key { state.tables[entity]!.identityIndex[key] = row }
            let id = ObjectID(entity: entity, rowID: row)
            changes.inserted.insert(id)
            return Object(id: id, values: values)
        }

        func update(_ id: ObjectID, setting values: [String: Value], clearing cleared: Set<String>) throws {
            let table = try table(id.entity)
            guard var row = table.rows[id.rowID] else {
                throw StoreError(.objectNotFound, entity: id.entity, "no object \(id)")
            }
            try checkValues(values, table.entity)
            for name in cleared where table.entity.attribute(named: name) == nil {
                throw StoreError(.unknownAttribute, entity: id.entity, member: name, "\(id.entity) has no attribute '\(name)'")
            }
            let oldKey = table.identityKey(row)
            for name in cleared { row[name] = nil }
            for (name, value) in values { row[name] = value }
            let newKey = table.identityKey(row)
            if newKey != oldKey {
                if let newKey, table.identityIndex[newKey] != nil {
                    throw StoreError(.duplicateIdentity, entity: id.entity, "an object of \(id.entity) with identity \(newKey) exists")
                }
                if let oldKey { state.tables[id.entity]!.identityIndex[oldKey] = nil }
                if let newKey { state.tables[id.entity]!.identityIndex[newKey] = id.rowID }
            }
            state.tables[id.entity]!.rows[id.rowID] = row
            markUpdated(id)
        }

        private func checkValues(_ values: [String: Value], _ entity: Entity) throws {
            for (name, value) in values {
                guard let attribute = entity.attribute(named: name) else {
                    throw StoreError(.unknownAttribute, entity: entity.name, member: name, "\(entity.name) has no attribute '\(name)'")
                }
                guard StoredType.accepts(attribute.type, value) else {
                    throw StoreError(.typeMismatch, entity: entity.name, member: name,
                                     "\(entity.name).\(name) is \(attribute.type); cannot store \(value)")
                }
            }
        }

        private func markUpdated(_ id: ObjectID) {
            if !changes.inserted.contains(id) { changes.updated.insert(id) }
        }

        func delete(_ id: ObjectID) throws {
            let table = try table(id.entity)
            guard let row = table.rows[id.rowID] else {
                throw StoreError(.objectNotFound, entity: id.entity, "no object \(id)")
            }
            for relationship in table.entity.relationships {
                try setRelated(relationship.name, of: id, to: [])
            }
            // Links from relationships without an inverse that point at this object.
            for (index, var links) in state.links where links.backward[id] != nil {
                for source in links.backward[id]! {
                    links.forward[source]?.removeAll { $0 == id }
                    markUpdated(source)
                }
                links.backward[id] = nil
                state.links[index] = links
            }
            if let key = table.identityKey(row) { state.tables[id.entity]!.identityIndex[key] = nil }
            state.tables[id.entity]!.rows[id.rowID] = nil
            changes.updated.remove(id)
            if changes.inserted.remove(id) == nil { changes.deleted.insert(id) }
        }

        func setRelated(_ relationship: String, of id: ObjectID, to targets: [ObjectID]) throws {
            let (index, forward) = try self.relationship(id.entity, relationship)
            guard try table(id.entity).rows[id.rowID] != nil else {
                throw StoreError(.objectNotFound, entity: id.entity, "no object \(id)")
            }
            guard let destination = try table(id.entity).entity.relationship(named: relationship)?.destination else {
                throw StoreError(.unknownRelationship, entity: id.entity, member: relationship, "\(id.entity) has no relationship '\(relationship)'")
            }
            var unique: [ObjectID] = []
            var seen = Set<ObjectID>()
            for target in targets where seen.insert(target).inserted {
                guard target.entity == destination else {
                    throw StoreError(.typeMismatch, entity: id.entity, member: relationship,
                                     "\(id.entity).\(relationship) links to \(destination), not \(target.entity)")
                }
                guard try table(target.entity).rows[target.rowID] != nil else {
                    throw StoreError(.objectNotFound, entity: target.entity, "no object \(target)")
                }
                unique.append(target)
            }
            let sourceToOne = forward ? state.links[index]!.forwardToOne : state.links[index]!.backwardToOne
            let targetToOne = forward ? state.links[index]!.backwardToOne : state.links[index]!.forwardToOne
            if sourceToOne && unique.count > 1 {
                throw StoreError(.typeMismatch, entity: id.entity, member: relationship, "\(id.entity).\(relationship) is to-one")
            }
            if (forward ? state.links[index]!.forward[id] : state.links[index]!.backward[id]) ?? [] == unique { return }
            // Move the link tables out of the state while editing them, so that they are uniquely
            // referenced and edited in place (a copy here made every call O(links) and a large
            // import quadratic).
            var links = state.links.removeValue(forKey: index)!
            defer { state.links[index] = links }
            var out: [ObjectID: [ObjectID]] = [:]
            var back: [ObjectID: [ObjectID]] = [:]
            if forward {
                swap(&out, &links.forward)
                swap(&back, &links.backward)
            } else {
                swap(&out, &links.backward)
                swap(&back, &links.forward)
            }
            defer {
                if forward {
                    swap(&out, &links.forward)
                    swap(&back, &links.backward)
                } else {
                    swap(&out, &links.backward)
                    swap(&back, &links.forward)
                }
            }
            let old = out[id] ?? []
            for target in old where !seen.contains(target) {
                back[target]?.removeAll { $0 == id }
                if back[target]?.isEmpty == true { back[target] = nil }
                markUpdated(target)
            }
            if targetToOne {
                // Each target may have one partner: take it away from its previous one.
                for target in unique {
                    for previous in back[target] ?? [] where previous != id {
                        out[previous]?.removeAll { $0 == target }
                        if out[previous]?.isEmpty == true { out[previous] = nil }
                        markUpdated(previous)
                    }
                    back[target] = nil
                }
            }
            let oldSet = Set(old)
            for target in unique where !oldSet.contains(target) || targetToOne {
                if back[target]?.contains(id) != true { back[target, default: []].append(id) }
                markUpdated(target)
            }
            out[id] = unique.isEmpty ? nil : unique
            markUpdated(id)
        }
    }
}

/// Which stored values an attribute type accepts.
enum StoredType {
    static func accepts(_ type: AttributeType, _ value: Value) -> Bool {
        switch (type, value) {
        case (.string, .string), (.int16, .int), (.int32, .int), (.int64, .int), (.double, .double), (.float, .double),
            (.decimal, .decimal), (.bool, .bool), (.date, .date), (.data, .data), (.uuid, .uuid), (.url, .url):
            return true
        case (.transformable, _):
            return true
        default:
            return false
        }
    }
}
