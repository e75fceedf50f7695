import Foundation

import Synchronization

/// A complete ``Store`` that keeps everything in memory: the default store and the store for tests.
///
/// Writes are serialised and atomic: a transaction works on a copy-on-write snapshot that
/// replaces the committed state only when the body returns. Reads take the last committed
/// snapshot and never wait for a write to finish. Transactions run on a thread of the store's own
/// (``StoreExecutor``), so that a write, or a write waiting for another, never holds a thread of
/// Swift's cooperative pool.
///
/// Layout: each entity is a table of rows by position (attribute values in schema order), kept in
/// chunks of 64 rows (in groups of 64 chunks), with row ids counted per entity from 1; each
/// relationship keeps its links by row id in chunks of 64 objects too. A transaction's first
/// change to a chunk copies that chunk and its group only, so changing one object of a large
/// table, or one object's links, costs a chunk, not the table, and an import appends rows
/// without building a dictionary per object.
public final class InMemoryStore: Store {
    private let state = Mutex(State())
    /// Serialises writers; held for the whole transaction, separately from `state`, so that
    /// readers never wait for a writer.
    private let writeLock = Mutex(())
    /// Where transactions run: a writer, or one waiting for another, never holds a thread of the
    /// cooperative pool.
    private let writes = StoreExecutor(label: "tether.memory.write")
    private let broadcaster = ChangeBroadcaster()

    /// An empty store; the client's `build()` prepares it for the schema. Nothing outlives the
    /// store: for objects that survive the process, use the SQLite store.
    public init() {}

    /// Prepares the store for `schema`. Preparing it again (another client over the same store, or
    /// a changed schema) keeps the objects, their values matched by attribute name, and the links of
    /// each relationship that still joins the same entities with the same kind of sides (to-one or
    /// to-many); a relationship whose kind changed starts without links.
    public func prepare(for schema: Schema) throws {
        state.withLock { state in
            state.prepare(schema)
            state.commits &+= 1
        }
    }

    /// Prepares the store for `schema`, applying no migration step: an in-memory store holds
    /// nothing from an earlier launch, so it starts in the schema's shape (the steps are only
    /// checked for repeated identifiers).
    public func prepare(for schema: Schema, migrations: [SchemaMigration]) throws {
        try SchemaMigration.validate(migrations)
        try prepare(for: schema)
    }

    public func read<T: Sendable>(_ body: @Sendable (any StoreReader) throws -> T) async throws -> T {
        let snapshot = state.withLock { $0 }
        return try body(Transaction(snapshot))
    }

    public func write<T: Sendable>(_ body: @Sendable (any StoreWriter) throws -> T) async throws -> T {
        let (result, changes) = try await writes.run {
            try writeLock.withLock { _ in
                let transaction = Transaction(state.withLock { $0 })
                let result = try body(transaction)
                transaction.state.commits &+= 1
                state.withLock { $0 = transaction.state }
                return (result, transaction.changes)
            }
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
        /// The entity's position in ``State/tables``.
        let table: Int
        let attributeTypes: [String: AttributeType]
        /// relationship name -> (index in `State.links`, true on the declaring (forward) side, destination)
        let relationships: [String: (index: Int, forward: Bool, destination: String)]
    }

    /// The objects of one entity. Row id `r` is row `r - 1`; rows are kept by position, `width`
    /// values each (nil: unset), in chunks of ``chunkRows`` rows. A deleted row stays as a
    /// hole, so row ids are never reused.
    struct Table: Sendable {
        static let chunkRows = 64

        struct Chunk: Sendable {
            var values: [Value?] = []
            var alive: [Bool] = []
        }

        var attributes: [String] = []
        var positions: [String: Int] = [:]
        /// The positions of the identity attributes.
        var identity: [Int] = []
        var chunks = ChunkList<Chunk>()
        /// Rows ever inserted: the row ids in use are within 1...rowCount.
        var rowCount = 0
        var liveCount = 0
        /// Row ids by identity (sharded: a transaction's first change copies a shard, not the index).
        var identityIndex = InMemoryIdentityIndex()
        /// The remote records of rows that have one (``StoreWriter/setRemoteRecord(_:of:)``), in
        /// chunks by row id: a save's record copies a chunk, not every record of the table.
        var remoteRecords = ChunkedColumn<Data?>(empty: nil)

        init() {}

        init(_ entity: Entity) {
            attributes = entity.attributes.map(\.name)
            for (position, name) in attributes.enumerated() { positions[name] = position }
            identity = entity.identity.compactMap { positions[$0] }
        }

        var width: Int { attributes.count }

        /// The positions of the attributes `names` (of `entity`), or an `unknownAttribute` error.
        func positions(of names: [String], entity: String) throws -> [Int] {
            try names.map { name in
                guard let position = positions[name] else {
                    throw StoreError(.unknownAttribute, entity: entity, member: name, "\(entity) has no attribute '\(name)'")
                }
                return position
            }
        }

        func contains(_ rowID: Int64) -> Bool {
            guard rowID >= 1, rowID <= Int64(rowCount) else { return false }
            let r = Int(rowID - 1)
            return chunks[r / Self.chunkRows].alive[r % Self.chunkRows]
        }

        /// The value at `position` of a row that exists.
        @inline(__always)
        func value(_ rowID: Int64, _ position: Int) -> Value? {
            let r = Int(rowID - 1)
            return chunks[r / Self.chunkRows].values[(r % Self.chunkRows) * width + position]
        }

        @inline(__always)
        mutating func set(_ rowID: Int64, _ position: Int, _ value: Value?) {
            let r = Int(rowID - 1)
            let index = (r % Self.chunkRows) * width + position
            chunks.update(r / Self.chunkRows) { $0.values[index] = value }
        }

        /// The set values of a row that exists, by name.
        func values(_ rowID: Int64) -> [String: Value] {
            let r = Int(rowID - 1)
            let start = (r % Self.chunkRows) * width
            return chunks[r / Self.chunkRows].values.withUnsafeBufferPointer { row in
                var values = [String: Value](minimumCapacity: width)
                for (position, name) in attributes.enumerated() {
                    if let value = row[start + position] { values[name] = value }
                }
                return values
            }
        }

        func identityKey(_ rowID: Int64) -> IdentityKey? {
            identityKey { value(rowID, $0) }
        }

        /// The identity of a row whose value at each position is `value(position)`.
        func identityKey(_ value: (Int) -> Value?) -> IdentityKey? {
            guard !identity.isEmpty else { return nil }
            if identity.count == 1 { return value(identity[0]).map(IdentityKey.init) }
            var key: [Value] = []
            key.reserveCapacity(identity.count)
            for position in identity {
                guard let v = value(position) else { return nil }
                key.append(v)
            }
            return IdentityKey(key)
        }

        /// Appends a row of `width` values in position order; returns its row id.
        mutating func append(_ row: some Collection<Value?>) -> Int64 {
            if rowCount % Self.chunkRows == 0 {
                var chunk = Chunk()
                chunk.values.reserveCapacity(Self.chunkRows * width)
                chunk.alive.reserveCapacity(Self.chunkRows)
                chunks.append(chunk)
            }
            chunks.update(chunks.count - 1) { chunk in
                chunk.values.append(contentsOf: row)
                chunk.alive.append(true)
            }
            rowCount += 1
            liveCount += 1
            return Int64(rowCount)
        }

        /// Clears a row that exists and leaves its row id unused.
        mutating func remove(_ rowID: Int64) {
            for position in 0..<width { set(rowID, position, nil) }
            if remoteRecords[rowID] != nil { remoteRecords.update(rowID) { $0 = nil } }
            let r = Int(rowID - 1)
            chunks.update(r / Self.chunkRows) { $0.alive[r % Self.chunkRows] = false }
            liveCount -= 1
        }

        /// Calls `body` with the row id of every row, in row id order.
        func forEachRow(_ body: (Int64) throws -> Void) rethrows {
            for c in 0..<chunks.count {
                for (i, alive) in chunks[c].alive.enumerated() where alive { try body(Int64(c * Self.chunkRows + i + 1)) }
            }
        }

        /// The live rows in row-id order, until `body` returns false.
        func scanRows(while body: (Int64) throws -> Bool) rethrows {
            for c in 0..<chunks.count {
                for (i, alive) in chunks[c].alive.enumerated() where alive {
                    guard try body(Int64(c * Self.chunkRows + i + 1)) else { return }
                }
            }
        }

        /// This table's rows (row ids kept) for the attributes and identity of `entity`, matched by name.
        func migrated(to entity: Entity) -> Table {
            var table = Table(entity)
            guard table.attributes != attributes || table.identity.map({ table.attributes[$0] }) != identity.map({ attributes[$0] }) else {
                return self
            }
            for rowID in Int64(1)..<Int64(rowCount + 1) {
                let old = contains(rowID) ? values(rowID) : [:]
                let new = table.append(table.attributes.map { old[$0] })
                if !contains(rowID) {
                    table.remove(new)
                } else if let key = table.identityKey(new) {
                    table.identityIndex[key] = new
                }
            }
            table.remoteRecords = remoteRecords
            return table
        }
    }

    /// Chunks in groups of ``groupSize``, so that a transaction's first change to a chunk copies
    /// the chunk, its group and the list of groups (one entry per 4,096 rows of 64-row chunks),
    /// not a list of every chunk: what a write copies hardly grows with the table.
    struct ChunkList<Chunk: Sendable>: Sendable {
        static var groupSize: Int { 64 }
        private var groups: [[Chunk]] = []
        private(set) var count = 0

        init() {}

        subscript(index: Int) -> Chunk {
            // Yielded in place, as an array's element is: reading a value copies no chunk.
            _read { yield groups[index / Self.groupSize][index % Self.groupSize] }
        }

        /// Changes chunk `index` in place.
        mutating func update<R>(_ index: Int, _ body: (inout Chunk) throws -> R) rethrows -> R {
            try body(&groups[index / Self.groupSize][index % Self.groupSize])
        }

        mutating func append(_ chunk: Chunk) {
            if count % Self.groupSize == 0 {
                var group: [Chunk] = []
                group.reserveCapacity(Self.groupSize)
                groups.append(group)
            }
            groups[groups.count - 1].append(chunk)
            count += 1
        }
    }

    /// One side of a relationship's links, by the row ids of that side's entity.
    /// Values by row id (row `r` at index `r - 1`), in chunks of ``chunkRows`` rows, `empty` past
    /// the last chunk. A transaction's first change to a chunk copies that chunk only (and its
    /// group, ``ChunkList``), not every row's value: a write costs what it changes, not what the
    /// store holds.
    struct ChunkedColumn<Element: Sendable>: Sendable {
        static var chunkRows: Int { 64 }
        private var chunks = ChunkList<[Element]>()
        let empty: Element

        init(empty: Element) { self.empty = empty }

        /// Whether `row` is within the chunks (its value may still be `empty`).
        func holds(_ row: Int64) -> Bool { Int(row - 1) / Self.chunkRows < chunks.count }

        subscript(row: Int64) -> Element {
            let i = Int(row - 1)
            return i / Self.chunkRows < chunks.count ? chunks[i / Self.chunkRows][i % Self.chunkRows] : empty
        }

        /// Changes the value of `row` in place, adding chunks to hold it.
        mutating func update(_ row: Int64, _ body: (inout Element) -> Void) {
            let i = Int(row - 1)
            while chunks.count <= i / Self.chunkRows { chunks.append(Array(repeating: empty, count: Self.chunkRows)) }
            chunks.update(i / Self.chunkRows) { body(&$0[i % Self.chunkRows]) }
        }
    }

    struct LinkSide: Sendable {
        /// Each object has at most one partner: kept by row id (0: none).
        let toOne: Bool
        private var one = ChunkedColumn<Int64>(empty: 0)
        /// A to-many side: each object's partners in order (empty: none), by row id.
        private var many = ChunkedColumn<PartnerList>(empty: PartnerList())

        init(toOne: Bool) { self.toOne = toOne }

        func targets(_ row: Int64) -> [Int64] {
            guard toOne else { return many[row].rows }
            let partner = one[row]
            return partner != 0 ? [partner] : []
        }

        /// The partner of `row` on a to-one side (nil: none).
        func target(_ row: Int64) -> Int64? {
            let partner = one[row]
            return partner != 0 ? partner : nil
        }

        func isLinked(_ row: Int64) -> Bool {
            toOne ? one[row] != 0 : !many[row].isEmpty
        }

        /// Replaces the partners of `row` (at most one on a to-one side).
        mutating func set(_ row: Int64, _ targets: [Int64]) {
            if targets.isEmpty && !(toOne ? one.holds(row) : many.holds(row)) { return }
            if toOne {
                one.update(row) { $0 = targets.first ?? 0 }
            } else {
                many.update(row) { $0 = PartnerList(targets) }
            }
        }

        /// Adds `target` to the partners of `row` (replaces it on a to-one side).
        mutating func add(_ row: Int64, _ target: Int64) {
            if toOne {
                set(row, [target])
            } else {
                many.update(row) { $0.append(target) }
            }
        }

        mutating func remove(_ row: Int64, _ target: Int64) {
            if toOne {
                if target != 0 && one[row] == target { one.update(row) { $0 = 0 } }
            } else if many.holds(row) {
                many.update(row) { $0.remove([target]) }
            }
        }

        /// Removes every one of `targets` from the partners of `row` (a to-many side), in one pass
        /// over the partners that may hold them (``PartnerList/remove(_:)``).
        mutating func remove(_ row: Int64, all targets: [Int64]) {
            guard many.holds(row) else { return }
            many.update(row) { $0.remove(targets) }
        }
    }

    /// The partners of one object on a to-many side, in order. Up to ``segmentSize`` they are one
    /// array; past it, segments of at most ``segmentSize``, each knowing the smallest and the
    /// largest row id it holds. So a label shared by a hundred thousand issues is neither copied
    /// nor read whole when a transaction adds or removes a few of them: appending copies the last
    /// segment (and the list of segments), and removing a partner reads and copies only the
    /// segments whose range holds it (partners are mostly added in row order, so ranges rarely
    /// overlap; when they do, more segments are read, never a wrong one skipped).
    struct PartnerList: Sendable {
        static let segmentSize = 128

        struct Segment: Sendable {
            var rows: [Int64]
            var low: Int64
            var high: Int64

            init(_ rows: [Int64]) {
                self.rows = rows
                low = rows.min() ?? .max
                high = rows.max() ?? .min
            }

            func mayHold(_ row: Int64) -> Bool { low <= row && row <= high }
        }

        /// The partners while they fit one segment (`segments` is then empty).
        private var flat: [Int64] = []
        /// The partners past one segment's worth (`flat` is then empty).
        private var segments: [Segment] = []

        init() {}

        init(_ rows: [Int64]) {
            if rows.count <= Self.segmentSize {
                flat = rows
            } else {
                segments = stride(from: 0, to: rows.count, by: Self.segmentSize).map {
                    Segment(Array(rows[$0..<min(rows.count, $0 + Self.segmentSize)]))
                }
            }
        }

        var isEmpty: Bool { flat.isEmpty && segments.isEmpty }

        /// Every partner, in order.
        var rows: [Int64] {
            if segments.isEmpty { return flat }
            var rows: [Int64] = []
            rows.reserveCapacity(segments.count * Self.segmentSize)
            for segment in segments { rows.append(contentsOf: segment.rows) }
            return rows
        }

        mutating func append(_ row: Int64) {
            if segments.isEmpty {
                if flat.count < Self.segmentSize {
                    flat.append(row)
                    return
                }
                segments = [Segment(flat)]
                flat = []
            }
            let last = segments.count - 1
            if segments[last].rows.count < Self.segmentSize {
                segments[last].rows.append(row)
                segments[last].low = min(segments[last].low, row)
                segments[last].high = max(segments[last].high, row)
            } else {
                segments.append(Segment([row]))
            }
        }

        /// Removes every one of `targets`: comparing each partner with a few of them, or looking
        /// it up among many; of a segmented list, only the segments whose range may hold one.
        mutating func remove(_ targets: [Int64]) {
            guard !targets.isEmpty else { return }
            let set: Set<Int64>? = targets.count > 8 ? Set(targets) : nil
            func gone(_ row: Int64) -> Bool { set?.contains(row) ?? targets.contains(row) }
            if segments.isEmpty {
                if flat.contains(where: gone) { flat.removeAll(where: gone) }
                return
            }
            let low = targets.min()!, high = targets.max()!
            var emptied = false
            for i in segments.indices where segments[i].low <= high && low <= segments[i].high {
                // A few targets are each checked against the range; many only as a whole (above).
                if set == nil && !targets.contains(where: segments[i].mayHold) { continue }
                guard segments[i].rows.contains(where: gone) else { continue }
                segments[i].rows.removeAll(where: gone)
                emptied = emptied || segments[i].rows.isEmpty
            }
            if emptied { segments.removeAll { $0.rows.isEmpty } }
            // Segments left mostly empty by removals are packed again (into one array when few
            // partners are left), so that what a list costs follows what it holds.
            let count = segments.reduce(0) { $0 + $1.rows.count }
            if count * 4 < segments.count * Self.segmentSize { self = PartnerList(rows) }
        }
    }

    /// The links of one relationship and its inverse. `forward` is keyed by objects of the entity
    /// that declares the relationship first, `backward` by objects of its destination.
    struct Links: Sendable {
        let source: String
        let destination: String
        /// Each source has at most one target; `backward.toOne`: each target has at most one source.
        var forward: LinkSide
        var backward: LinkSide
    }

    /// Everything stored. Mutated in place (never through a local copy, which would copy whole tables).
    struct State: Sendable {
        var prepared = false
        /// Write transactions committed and preparations (``StoreWriter/version``).
        var commits: UInt64 = 0
        var entities: [String: EntityInfo] = [:]
        var tables: [Table] = []
        var links: [Links] = []

        /// The links the state holds for `entity`'s relationship `name` before it is prepared
        /// again, oriented as `new`, when they connect the same entities with the same kind of
        /// sides (to-one or not); nil otherwise (the relationship starts without links).
        private func keptLinks(_ entity: String, _ name: String, like new: Links) -> Links? {
            guard let slot = entities[entity]?.relationships[name], slot.destination == new.destination else { return nil }
            let old = links[slot.index]
            let kept = slot.forward ? old : Links(source: old.destination, destination: old.source, forward: old.backward, backward: old.forward)
            guard kept.forward.toOne == new.forward.toOne, kept.backward.toOne == new.backward.toOne else { return nil }
            return kept
        }

        mutating func prepare(_ schema: Schema) {
            var relationshipSlots: [String: [String: (index: Int, forward: Bool, destination: String)]] = [:]
            var links: [Links] = []
            for entity in schema.entities {
                for relationship in entity.relationships where relationshipSlots[entity.name]?[relationship.name] == nil {
                    let inverse = relationship.inverse.flatMap { schema[relationship.destination]?.relationship(named: $0) }
                    links.append(Links(source: entity.name, destination: relationship.destination,
                                       forward: LinkSide(toOne: !relationship.isToMany),
                                       backward: LinkSide(toOne: inverse.map { !$0.isToMany } ?? false)))
                    relationshipSlots[entity.name, default: [:]][relationship.name] = (links.count - 1, true, relationship.destination)
                    if let inverse {
                        relationshipSlots[relationship.destination, default: [:]][inverse.name] = (links.count - 1, false, entity.name)
                    }
                    if let kept = keptLinks(entity.name, relationship.name, like: links[links.count - 1]) { links[links.count - 1] = kept }
                }
            }
            self.links = links
            var tables: [Table] = []
            var entities: [String: EntityInfo] = [:]
            for entity in schema.entities {
                let old = self.entities[entity.name].map { self.tables[$0.table] }
                tables.append(old?.migrated(to: entity) ?? Table(entity))
                entities[entity.name] = EntityInfo(
                    entity: entity, table: tables.count - 1,
                    attributeTypes: Dictionary(uniqueKeysWithValues: entity.attributes.map { ($0.name, $0.type) }),
                    relationships: relationshipSlots[entity.name] ?? [:])
            }
            self.tables = tables
            self.entities = entities
            prepared = true
        }
    }

    /// A reader or writer over a private copy-on-write copy of the state.
    final class Transaction: StoreWriter {
        var state: State
        var changes = ChangeSet()
        let version: StoreVersion?

        init(_ state: State) {
            self.state = state
            version = StoreVersion(commits: state.commits)
        }

        func info(_ entity: String) throws -> EntityInfo {
            guard state.prepared else { throw StoreError(.notPrepared, "the store was not prepared with a schema") }
            guard let info = state.entities[entity] else {
                throw StoreError(.unknownEntity, entity: entity, "unknown entity '\(entity)'")
            }
            return info
        }

        func relationship(_ entity: String, _ name: String) throws -> (index: Int, forward: Bool, destination: String) {
            guard let found = try info(entity).relationships[name] else {
                throw StoreError(.unknownRelationship, entity: entity, member: name, "\(entity) has no relationship '\(name)'")
            }
            return found
        }

        private func exists(_ id: ObjectID) -> Bool {
            guard let info = state.entities[id.entity] else { return false }
            return state.tables[info.table].contains(id.rowID)
        }

        func objects(_ entity: String, identities: [IdentityKey]) throws -> [IdentityKey: Object] {
            let table = state.tables[try info(entity).table]
            var found: [IdentityKey: Object] = [:]
            found.reserveCapacity(identities.count)
            for key in identities {
                if let row = table.identityIndex[key] {
                    found[key] = Object(id: ObjectID(entity: entity, rowID: row), values: table.values(row))
                }
            }
            return found
        }

        func find(_ entity: String, identities: [IdentityKey], attributes: [String]) throws -> [StoredRow?] {
            let info = try info(entity)
            let table = state.tables[info.table]
            let positions = try table.positions(of: attributes, entity: entity)
            return identities.map { key in
                guard let row = table.identityIndex[key] else { return nil }
                return StoredRow(id: ObjectID(entity: entity, rowID: row), values: positions.map { table.value(row, $0) })
            }
        }

        func compare(_ batch: LookupBatch) throws -> [StoredDifference?] {
            let entity = batch.entity
            let table = state.tables[try info(entity).table]
            let positions = try table.positions(of: batch.attributes, entity: entity)
            let links = try batch.relationships.map { name in
                let slot = try relationship(entity, name)
                let side = slot.forward ? state.links[slot.index].forward : state.links[slot.index].backward
                guard side.toOne else {
                    throw StoreError(.unsupported, entity: entity, member: name, "a lookup reads to-one relationships only; \(entity).\(name) is to-many")
                }
                return (side: side, destination: slot.destination)
            }
            return batch.identities.indices.map { i in
                guard let row = table.identityIndex[batch.identities[i]] else { return nil }
                var changed: [Int] = []
                for (a, position) in positions.enumerated()
                where batch.isGiven(row: i, attribute: a) && batch.storage[batch.starts[i] + a] != table.value(row, position) {
                    changed.append(a)
                }
                let targets = links.map { link in link.side.target(row).map { ObjectID(entity: link.destination, rowID: $0) } }
                return StoredDifference(id: ObjectID(entity: entity, rowID: row), changed: changed, targets: targets)
            }
        }

        func object(_ id: ObjectID) throws -> Object? {
            let table = state.tables[try info(id.entity).table]
            return table.contains(id.rowID) ? Object(id: id, values: table.values(id.rowID)) : nil
        }

        func remoteRecord(of id: ObjectID) throws -> Data? {
            let info = try info(id.entity)
            guard state.tables[info.table].contains(id.rowID) else { throw StoreError(.objectNotFound, entity: id.entity, "no object \(id)") }
            return state.tables[info.table].remoteRecords[id.rowID]
        }

        func setRemoteRecord(_ record: Data?, of id: ObjectID) throws {
            let info = try info(id.entity)
            guard state.tables[info.table].contains(id.rowID) else { throw StoreError(.objectNotFound, entity: id.entity, "no object \(id)") }
            guard record != nil || state.tables[info.table].remoteRecords[id.rowID] != nil else { return }
            state.tables[info.table].remoteRecords.update(id.rowID) { $0 = record }
        }

        /// The condition is evaluated on the rows' positional values (a path's by following the
        /// links: ``PathReader``); only the objects that match are built, then sorted and paged.
        func fetch(_ query: Query) throws -> [Object] {
            let (tableIndex, reader) = try check(query)
            let table = state.tables[tableIndex]
            var objects: [Object] = []
            // Unsorted, the page is the first `offset + limit` matches in row order: the scan
            // stops there (a `limit: 1` question costs one match, not the table).
            let enough = query.sort.isEmpty
                ? query.limit.map { limit in
                    let (sum, overflow) = max(0, query.offset).addingReportingOverflow(max(0, limit))
                    return overflow ? Int.max : sum
                }
                : nil
            table.scanRows(while: { row in
                if let enough, objects.count >= enough { return false }
                guard query.condition.map({ reader.matches($0, row) }) ?? true else { return true }
                objects.append(Object(id: ObjectID(entity: query.entity, rowID: row), values: table.values(row)))
                return true
            })
            var rest = query
            rest.condition = nil
            guard reader.sortsByPath(query) else { return rest.apply(to: objects) }
            return rest.apply(to: objects) { reader.values(of: $0.rowID, query.sort.map(\.attribute)) }
        }

        func ids(_ query: Query) throws -> [ObjectID] {
            guard query.sort.isEmpty, query.limit == nil, query.offset == 0 else { return try fetch(query).map(\.id) }
            let (tableIndex, reader) = try check(query)
            let table = state.tables[tableIndex]
            var ids: [ObjectID] = []
            table.forEachRow { row in
                if query.condition.map({ reader.matches($0, row) }) ?? true { ids.append(ObjectID(entity: query.entity, rowID: row)) }
            }
            return ids
        }

        func count(_ query: Query) throws -> Int {
            let (tableIndex, reader) = try check(query)
            let table = state.tables[tableIndex]
            guard let condition = query.condition else { return table.liveCount }
            var count = 0
            table.forEachRow { row in if reader.matches(condition, row) { count += 1 } }
            return count
        }

        /// Checks the query's names; returns its entity's table and how to read its names' values.
        private func check(_ query: Query) throws -> (Int, PathReader) {
            let info = try info(query.entity)
            let paths = try QueryCheck.check(query) { state.entities[$0]?.entity }
            return (info.table, try PathReader(paths, condition: query.condition, of: info, in: self))
        }

        func related(_ relationship: String, of ids: [ObjectID]) throws -> [ObjectID: [ObjectID]] {
            var result: [ObjectID: [ObjectID]] = [:]
            var slots: [String: (index: Int, forward: Bool, destination: String)] = [:]
            for id in ids {
                let slot = try slots[id.entity] ?? self.relationship(id.entity, relationship)
                slots[id.entity] = slot
                let links = state.links[slot.index]
                let targets = slot.forward ? links.forward.targets(id.rowID) : links.backward.targets(id.rowID)
                if !targets.isEmpty { result[id] = targets.map { ObjectID(entity: slot.destination, rowID: $0) } }
            }
            return result
        }

        func links(_ relationship: String, of sources: [ObjectID]) throws -> LinkBatch {
            let entity = try LinkBatch.entity(of: sources, relationship)
            var batch = LinkBatch(entity: entity, relationship: relationship)
            guard !sources.isEmpty else { return batch }
            let slot = try self.relationship(entity, relationship)
            let links = state.links[slot.index]
            let side = slot.forward ? links.forward : links.backward
            batch.reserveCapacity(rows: sources.count, targets: sources.count)
            for source in sources {
                if side.toOne {
                    if let partner = side.target(source.rowID) {
                        batch.append(source, to: CollectionOfOne(ObjectID(entity: slot.destination, rowID: partner)))
                    } else {
                        batch.append(source, to: EmptyCollection())
                    }
                } else {
                    batch.append(source, to: side.targets(source.rowID).lazy.map { ObjectID(entity: slot.destination, rowID: $0) })
                }
            }
            return batch
        }

        func insert(_ entity: String, values: [String: Value]) throws -> Object {
            let info = try info(entity)
            try checkValues(values, info)
            let row = try insertRows(info, count: 1) { _, table in table.attributes.map { values[$0] } }
            return Object(id: ObjectID(entity: entity, rowID: row.lowerBound), values: values)
        }

        /// Appends `count` rows to the entity's table, `row(i, table)` giving row `i`'s values by
        /// position (checked already); returns their row ids.
        private func insertRows<Row: RandomAccessCollection<Value?>>(
            _ info: EntityInfo, count: Int, requireIdentity: Bool = false, _ row: (Int, Table) throws -> Row
        ) throws -> Range<Int64> where Row.Index == Int {
            let entity = info.entity.name
            // The table is moved out while rows are appended, so that it is changed in place.
            var table = Table()
            swap(&table, &state.tables[info.table])
            defer { swap(&table, &state.tables[info.table]) }
            let first = Int64(table.rowCount + 1)
            for i in 0..<count {
                let values = try row(i, table)
                let key = table.identityKey { values[values.startIndex + $0] }
                if requireIdentity, key == nil, !table.identity.isEmpty {
                    let name = table.identity.first { values[values.startIndex + $0] == nil }.map { table.attributes[$0] } ?? ""
                    throw StoreError(.missingIdentity, entity: entity, member: name,
                                     "row \(i) of an insert batch of \(entity) leaves its identity attribute '\(name)' unset; "
                                         + "an import never stores an object without its identity")
                }
                if let key, table.identityIndex[key] != nil {
                    throw StoreError(.duplicateIdentity, entity: entity, "an object of \(entity) with identity \(key) exists")
                }
                let rowID = table.append(values)
                if let key { table.identityIndex[key] = rowID }
            }
            let rows = first..<Int64(table.rowCount + 1)
            for rowID in rows { changes.inserted.insert(ObjectID(entity: entity, rowID: rowID)) }
            return rows
        }

        /// Checks the batch's names once, then appends its rows and links them; a new object has no
        /// links to replace, so a one-to-many link is two appends.
        func insert(_ batch: InsertBatch) throws -> [ObjectID] {
            let entity = batch.entity
            let info = try info(entity)
            guard batch.count > 0 else { return [] }
            let types = try AttributeType.types(of: batch.attributes, in: info.attributeTypes, entity: entity)
            let relationships = try batch.relationships.map { try relationship(entity, $0) }
            let positions = state.tables[info.table].positions
            let columns = batch.attributes.map { positions[$0]! }
            guard Set(columns).count == columns.count else {
                throw StoreError(.unsupported, entity: entity, "an insert batch of \(entity) names an attribute twice")
            }
            let inOrder = columns == Array(0..<state.tables[info.table].width)
            let rows = try insertRows(info, count: batch.count, requireIdentity: true) { i, table in
                let row = batch.positionalValues(row: i)
                for (a, type) in types.enumerated() {
                    if let value = row[row.startIndex + a] { try type.check(value, entity: entity, attribute: batch.attributes[a]) }
                }
                if inOrder { return row }  // a slice of the batch's values, not a copy
                var ordered = [Value?](repeating: nil, count: table.width)
                for (a, position) in columns.enumerated() { ordered[position] = row[row.startIndex + a] }
                return ordered[...]
            }
            let ids = rows.map { ObjectID(entity: entity, rowID: $0) }
            for (r, slot) in relationships.enumerated() {
                let targetTable = state.tables[state.entities[slot.destination]!.table]
                // Moved out so that they are changed in place.
                var links = Links(source: "", destination: "", forward: LinkSide(toOne: false), backward: LinkSide(toOne: false))
                swap(&links, &state.links[slot.index])
                var fallback: [(ObjectID, ObjectID)] = []
                var touched: [Int64] = []
                for (row, id) in ids.enumerated() {
                    guard let target = batch.target(row: row, relationship: r) else { continue }
                    // A target with one partner on this side, or a wrong one: the general path.
                    let targetToOne = slot.forward ? links.backward.toOne : links.forward.toOne
                    guard target.entity == slot.destination, targetTable.contains(target.rowID), !targetToOne else {
                        fallback.append((id, target))
                        continue
                    }
                    if slot.forward {
                        links.forward.set(id.rowID, [target.rowID])
                        links.backward.add(target.rowID, id.rowID)
                    } else {
                        links.backward.set(id.rowID, [target.rowID])
                        links.forward.add(target.rowID, id.rowID)
                    }
                    touched.append(target.rowID)
                }
                swap(&links, &state.links[slot.index])
                changes.recordUpdate(of: touched.lazy.map { ObjectID(entity: slot.destination, rowID: $0) },
                                     properties: [otherSide(of: entity, batch.relationships[r])])
                for (id, target) in fallback { try setRelated(batch.relationships[r], of: id, to: [target]) }  // its checks and errors
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
            let positions = batch.attributes.map { state.tables[info.table].positions[$0]! }
            var changed: [ObjectID] = []
            changed.reserveCapacity(batch.count)
            defer { changes.recordUpdate(of: changed, properties: Set(batch.attributes)) }
            for (row, id) in batch.ids.enumerated() {
                guard id.entity == entity, state.tables[info.table].contains(id.rowID) else {
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
                for (a, position) in positions.enumerated() {
                    state.tables[info.table].set(id.rowID, position, batch.value(row: row, attribute: a))
                }
                changed.append(id)
            }
        }

        func update(_ id: ObjectID, setting values: [String: Value], clearing cleared: Set<String>) throws {
            let info = try info(id.entity)
            guard state.tables[info.table].contains(id.rowID) else {
                throw StoreError(.objectNotFound, entity: id.entity, "no object \(id)")
            }
            try checkValues(values, info)
            for name in cleared where info.attributeTypes[name] == nil {
                throw StoreError(.unknownAttribute, entity: id.entity, member: name, "\(id.entity) has no attribute '\(name)'")
            }
            // Read without keeping a copy of the table (which would make the writes below copy it).
            var row = (0..<state.tables[info.table].width).map { state.tables[info.table].value(id.rowID, $0) }
            for name in cleared { row[state.tables[info.table].positions[name]!] = nil }
            for (name, value) in values { row[state.tables[info.table].positions[name]!] = value }
            let oldKey = state.tables[info.table].identityKey(id.rowID)
            let newKey = state.tables[info.table].identityKey { row[$0] }
            if newKey != oldKey {
                if let newKey, state.tables[info.table].identityIndex[newKey] != nil {
                    throw StoreError(.duplicateIdentity, entity: id.entity, "an object of \(id.entity) with identity \(newKey) exists")
                }
                if let oldKey { state.tables[info.table].identityIndex[oldKey] = nil }
                if let newKey { state.tables[info.table].identityIndex[newKey] = id.rowID }
            }
            for (position, value) in row.enumerated() { state.tables[info.table].set(id.rowID, position, value) }
            changes.recordUpdate(of: id, properties: Set(values.keys).union(cleared))
        }

        private func checkValues(_ values: [String: Value], _ info: EntityInfo) throws {
            for (name, value) in values {
                guard let type = info.attributeTypes[name] else {
                    throw StoreError(.unknownAttribute, entity: info.entity.name, member: name, "\(info.entity.name) has no attribute '\(name)'")
                }
                try type.check(value, entity: info.entity.name, attribute: name)
            }
        }

        /// The name an object on the far side of `entity.relationship` knows the link by: the
        /// inverse's, or `Entity.relationship` for a relationship without one.
        private func otherSide(of entity: String, _ relationship: String) -> String {
            state.entities[entity]?.entity.relationship(named: relationship)?.inverse ?? "\(entity).\(relationship)"
        }

        func delete(_ id: ObjectID) throws {
            let info = try info(id.entity)
            guard state.tables[info.table].contains(id.rowID) else {
                throw StoreError(.objectNotFound, entity: id.entity, "no object \(id)")
            }
            for name in info.relationships.keys {
                try setRelated(name, of: id, to: [])
            }
            // Links from relationships without an inverse that point at this object.
            for index in state.links.indices where state.links[index].destination == id.entity && state.links[index].backward.isLinked(id.rowID) {
                let source = state.links[index].source
                let name = state.entities[source]?.relationships.first { $0.value.index == index && $0.value.forward }?.key ?? ""
                for row in state.links[index].backward.targets(id.rowID) {
                    state.links[index].forward.remove(row, id.rowID)
                    changes.recordUpdate(of: ObjectID(entity: source, rowID: row), property: name)
                }
                state.links[index].backward.set(id.rowID, [])
            }
            if let key = state.tables[info.table].identityKey(id.rowID) { state.tables[info.table].identityIndex[key] = nil }
            state.tables[info.table].remove(id.rowID)
            changes.recordDeletion(of: id)
        }

        /// A batch of one row.
        func setRelated(_ relationship: String, of id: ObjectID, to targets: [ObjectID]) throws {
            var batch = LinkBatch(entity: id.entity, relationship: relationship)
            batch.append(id, to: targets)
            try setRelated(batch)
        }

        /// Sets one relationship of many objects, with the effect of ``setRelated(_:of:to:)`` row by
        /// row, but removing the links that go from a to-many target's partners once per batch: one
        /// pass over each target's partners, however many of them the batch removes, so that the
        /// cost of a link does not grow with the links its target has (a label shared by a hundred
        /// thousand issues). A batch naming a source twice is written row by row.
        func setRelated(_ batch: LinkBatch) throws {
            guard !batch.isEmpty else { return }
            let slot = try self.relationship(batch.entity, batch.relationship)
            if let other = batch.sources.first(where: { $0.entity != batch.entity }) {
                throw StoreError(.typeMismatch, entity: batch.entity, member: batch.relationship,
                                 "a link batch of \(batch.entity).\(batch.relationship) names \(other), an object of another entity")
            }
            var distinct = Set<Int64>(minimumCapacity: batch.count)
            guard batch.sources.allSatisfy({ distinct.insert($0.rowID).inserted }) else {
                for (row, source) in batch.sources.enumerated() {
                    try setRelated(batch.relationship, of: source, to: Array(batch.targets(row: row)))
                }
                return
            }
            let sourceToOne = slot.forward ? state.links[slot.index].forward.toOne : state.links[slot.index].backward.toOne
            var sources: [Int64] = []
            var destinations: [Int64] = []
            var removals: [Int64: [Int64]] = [:]
            // Move the links out so they are uniquely referenced and mutate in place, then move back
            // (also when a row fails: the transaction is then discarded).
            var links = Links(source: "", destination: "", forward: LinkSide(toOne: false), backward: LinkSide(toOne: false))
            swap(&links, &state.links[slot.index])
            defer { swap(&links, &state.links[slot.index]) }
            for (row, id) in batch.sources.enumerated() {
                let unique = try checkedTargets(batch.targets(row: row), of: id, batch.relationship, slot, sourceToOne: sourceToOne)
                Self.relink(id.rowID, unique, slot.forward, &links, &sources, &destinations, &removals)
            }
            Self.remove(removals, slot.forward, &links)
            changes.recordUpdate(of: sources.lazy.map { ObjectID(entity: batch.entity, rowID: $0) }, properties: [batch.relationship])
            changes.recordUpdate(of: destinations.lazy.map { ObjectID(entity: slot.destination, rowID: $0) },
                                 properties: [otherSide(of: batch.entity, batch.relationship)])
        }

        /// The row ids of `targets` (each once, in order), checked: `id` is stored, and each
        /// target is a stored object of the relationship's destination, one at most for a to-one
        /// relationship (`sourceToOne`).
        private func checkedTargets(_ targets: some Collection<ObjectID>, of id: ObjectID, _ relationship: String,
                                    _ slot: (index: Int, forward: Bool, destination: String), sourceToOne: Bool) throws -> [Int64] {
            guard exists(id) else { throw StoreError(.objectNotFound, entity: id.entity, "no object \(id)") }
            var unique: [Int64] = []
            var seen = Set<ObjectID>()
            for target in targets where seen.insert(target).inserted {
                guard target.entity == slot.destination else {
                    throw StoreError(.typeMismatch, entity: id.entity, member: relationship,
                                     "\(id.entity).\(relationship) links to \(slot.destination), not \(target.entity)")
                }
                guard exists(target) else { throw StoreError(.objectNotFound, entity: target.entity, "no object \(target)") }
                unique.append(target.rowID)
            }
            if sourceToOne && unique.count > 1 {
                throw StoreError(.typeMismatch, entity: id.entity, member: relationship, "\(id.entity).\(relationship) is to-one")
            }
            return unique
        }

        /// ``relink(_:_:_:_:_:_:_:)`` from the side `forward` names.
        private static func relink(_ id: Int64, _ targets: [Int64], _ forward: Bool, _ links: inout Links,
                                   _ sources: inout [Int64], _ destinations: inout [Int64], _ removals: inout [Int64: [Int64]]) {
            if forward {
                relink(id, targets, &links.forward, &links.backward, &sources, &destinations, &removals)
            } else {
                relink(id, targets, &links.backward, &links.forward, &sources, &destinations, &removals)
            }
        }

        /// Removes the links `relink` collected from each target's partners on the far side of
        /// the side `forward` names: one pass over each target's partners.
        private static func remove(_ removals: [Int64: [Int64]], _ forward: Bool, _ links: inout Links) {
            for (target, gone) in removals {
                if forward { links.backward.remove(target, all: gone) } else { links.forward.remove(target, all: gone) }
            }
        }

        /// Replaces the links of `id` in `out` (and the mirror entries in `back`), in place;
        /// collects the objects whose links changed on each side. The links leaving a to-many
        /// `back` side are collected in `removals` by target, for the caller to remove with
        /// ``remove(_:_:_:)`` once all the rows of a batch are relinked.
        private static func relink(
            _ id: Int64, _ targets: [Int64], _ out: inout LinkSide, _ back: inout LinkSide,
            _ sources: inout [Int64], _ destinations: inout [Int64], _ removals: inout [Int64: [Int64]]
        ) {
            let old = out.targets(id)
            if old == targets { return }
            let keep = Set(targets)
            for target in old where !keep.contains(target) {
                if back.toOne {
                    back.remove(target, id)
                } else {
                    removals[target, default: []].append(id)
                }
                destinations.append(target)
            }
            let oldSet = Set(old)
            for target in targets {
                if back.toOne {
                    // A target has one partner on this side: take it from its previous one.
                    for previous in back.targets(target) where previous != id {
                        out.remove(previous, target)
                        sources.append(previous)
                    }
                    if back.targets(target) != [id] { back.set(target, [id]) }
                } else if !oldSet.contains(target) {
                    back.add(target, id)
                }
                if !oldSet.contains(target) { destinations.append(target) }
            }
            out.set(id, targets)
            sources.append(id)
        }
    }
}
