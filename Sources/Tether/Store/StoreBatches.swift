/// New objects of one entity, inserted together by ``StoreWriter/insert(_:)``: the
/// import's write path.
///
/// Values are given by position, in the order of ``attributes``: a row is a run of values (the
/// import's batches share the one array that holds all of a mapped batch's values, rather than
/// copying them). Each row may also name the target of each of ``relationships`` (to-one
/// relationships of the entity), so that a store that keeps a to-one link as a column writes it
/// with the row.
///
/// ```swift
/// var batch = InsertBatch(entity: "Repository", attributes: ["id", "name"], relationships: ["owner"])
/// batch.append([.int(1), .string("tether")], targets: [owner])
/// let ids = try writer.insert(batch)   // one id per row, in order
/// ```
public struct InsertBatch: Sendable {
    /// The entity of the new objects.
    public let entity: String
    /// The attributes each row gives values for, in order.
    public let attributes: [String]
    /// To-one relationships of ``entity`` that each row links on insert (a nil target: no link).
    public let relationships: [String]
    /// The entity's identity attributes, each of which every row must set: a store refuses a row
    /// that leaves one unset with ``StoreError/Kind/missingIdentity``, so that no import ever
    /// stores an object it could not find again. The import fills it in; the built-in stores
    /// check their schema's identity whatever it says. (A local insert,
    /// ``StoreWriter/insert(_:values:)``, may leave the identity unset, for the server to assign.)
    public var identity: [String] = []
    /// The number of rows.
    public var count: Int { starts.count }
    /// The rows' values, each row's in a run of `attributes.count`; an import shares its own
    /// batch's storage, whose runs are in some other order and may hold other entities' values.
    @usableFromInline var storage: [Value?] = []
    /// Row -> the index of its first value in `storage`.
    @usableFromInline var starts: [Int] = []
    @usableFromInline var targets: [ObjectID?] = []

    /// An empty batch of new `entity` objects whose rows give values of `attributes` and link
    /// `relationships` (to-one relationships of the entity), in order.
    public init(entity: String, attributes: [String], relationships: [String] = []) {
        self.entity = entity
        self.attributes = attributes
        self.relationships = relationships
    }

    /// A batch whose rows are runs of `storage`, appended with ``append(rowAt:targets:)``.
    init(entity: String, attributes: [String], relationships: [String], sharing storage: [Value?]) {
        self.init(entity: entity, attributes: attributes, relationships: relationships)
        self.storage = storage
    }

    /// Reserves room for `rows` rows.
    public mutating func reserveCapacity(_ rows: Int) {
        starts.reserveCapacity(rows)
        targets.reserveCapacity(rows * relationships.count)
    }

    /// Appends a row: one value (nil: unset) per attribute and one target per relationship, in order.
    public mutating func append(_ values: some Collection<Value?>, targets: some Collection<ObjectID?> = [ObjectID?]()) {
        precondition(values.count == attributes.count, "a row of \(entity) needs \(attributes.count) values, got \(values.count)")
        precondition(targets.count == relationships.count, "a row of \(entity) needs \(relationships.count) targets, got \(targets.count)")
        starts.append(storage.count)
        storage.append(contentsOf: values)
        self.targets.append(contentsOf: targets)
    }

    /// Appends a row like ``append(_:targets:)`` whose values are the run of the shared storage
    /// that begins at `start`, without copying them.
    mutating func append(rowAt start: Int, targets: [ObjectID?]) {
        precondition(start >= 0 && start + attributes.count <= storage.count, "a row of \(entity) needs \(attributes.count) values")
        precondition(targets.count == relationships.count, "a row of \(entity) needs \(relationships.count) targets, got \(targets.count)")
        starts.append(start)
        self.targets.append(contentsOf: targets)
    }

    /// The values of row `row` by position, in the order of ``attributes`` (a slice: its indices
    /// begin at its `startIndex`, not at 0).
    func positionalValues(row: Int) -> ArraySlice<Value?> { storage[starts[row]..<starts[row] + attributes.count] }

    /// The value of attribute number `attribute` in row `row`.
    @inlinable
    public func value(row: Int, attribute: Int) -> Value? { storage[starts[row] + attribute] }

    /// Throws ``StoreError/Kind/missingIdentity`` when row `row` leaves an attribute at one of
    /// `positions` (the identity's, among ``attributes``) unset.
    public func checkIdentity(row: Int, positions: [Int]) throws(StoreError) {
        for position in positions where value(row: row, attribute: position) == nil {
            throw StoreError(.missingIdentity, entity: entity, member: attributes[position],
                             "row \(row) of an insert batch of \(entity) leaves its identity attribute '\(attributes[position])' unset; "
                                 + "an import never stores an object without its identity")
        }
    }

    /// The target of relationship number `relationship` in row `row`.
    @inlinable
    public func target(row: Int, relationship: Int) -> ObjectID? { targets[row * relationships.count + relationship] }

    /// Row `row`'s set values by attribute name, as ``StoreWriter/insert(_:values:)`` takes them.
    public func values(row: Int) -> [String: Value] {
        var result = [String: Value](minimumCapacity: attributes.count)
        for (i, name) in attributes.enumerated() {
            if let value = value(row: row, attribute: i) { result[name] = value }
        }
        return result
    }
}

/// Changes to stored objects of one entity, made together by ``StoreWriter/update(_:)``: every
/// row sets (or, with nil, clears) the same ``attributes``, so a store runs one prepared statement
/// for the whole batch. The import groups the objects it changes by the attributes that changed.
public struct UpdateBatch: Sendable {
    /// The entity of the changed objects.
    public let entity: String
    /// The attributes each row sets (a value) or clears (nil), in order.
    public let attributes: [String]
    /// The object each row changes, in order.
    public private(set) var ids: [ObjectID] = []
    /// The values, a row after another; or the import's values of a whole batch, shared (each row
    /// found at its start, each attribute at its offset from there).
    @usableFromInline var storage: [Value?] = []
    /// Where each row's values start in `storage`.
    @usableFromInline var starts: [Int] = []
    /// Where each attribute's value is from a row's start.
    @usableFromInline let offsets: [Int]
    /// Whether `storage` is shared: rows are then appended by their start only.
    private let shared: Bool
    /// The largest offset (-1: none).
    private let reach: Int

    /// An empty batch of changes to `entity` objects, each row setting or clearing `attributes`.
    public init(entity: String, attributes: [String]) {
        self.entity = entity
        self.attributes = attributes
        offsets = Array(attributes.indices)
        shared = false
        reach = attributes.count - 1
    }

    /// An empty batch whose rows are read from `storage`: a row appended at `start` sets attribute
    /// `a` to `storage[start + offsets[a]]`. The import's values are shared so, not copied.
    init(entity: String, attributes: [String], sharing storage: [Value?], offsets: [Int]) {
        precondition(offsets.count == attributes.count, "one offset per attribute")
        self.entity = entity
        self.attributes = attributes
        self.storage = storage
        self.offsets = offsets
        shared = true
        reach = offsets.max() ?? -1
    }

    /// The number of rows.
    public var count: Int { ids.count }

    /// Appends a row: the object and one value (nil: clear) per attribute, in order.
    public mutating func append(_ id: ObjectID, _ values: some Collection<Value?>) {
        precondition(!shared, "a batch sharing its values appends rows by their start")
        precondition(values.count == attributes.count, "a row of \(entity) needs \(attributes.count) values, got \(values.count)")
        ids.append(id)
        starts.append(storage.count)
        storage.append(contentsOf: values)
    }

    /// Appends a row of a batch sharing its values: the object, whose values start at `start`.
    mutating func append(_ id: ObjectID, rowAt start: Int) {
        precondition(shared, "a batch of its own values appends rows with their values")
        precondition(start >= 0 && start + reach < storage.count, "a row of \(entity) needs \(attributes.count) values")
        ids.append(id)
        starts.append(start)
    }

    /// The value (nil: clear) of attribute number `attribute` in row `row`.
    @inlinable
    public func value(row: Int, attribute: Int) -> Value? { storage[starts[row] + offsets[attribute]] }
}

/// New links of many objects through one relationship, set together by
/// ``StoreWriter/setRelated(_:)``: each row replaces the links of one object of ``entity`` through
/// ``relationship`` with its targets (in order, for an ordered relationship; none unlinks
/// everything), keeping the inverse consistent, as ``StoreWriter/setRelated(_:of:to:)`` does.
///
/// ```swift
/// var labels = LinkBatch(entity: "Issue", relationship: "labels")
/// labels.append(issue1, to: [bug, ui])
/// labels.append(issue2, to: [])          // unlinks every label of issue2
/// try writer.setRelated(labels)
/// ```
public struct LinkBatch: Sendable {
    /// The entity of the objects whose links change.
    public let entity: String
    /// The relationship of ``entity`` the rows set.
    public let relationship: String
    /// The objects whose links the rows replace, in order.
    public var sources: [ObjectID] { rows }
    @usableFromInline var rows: [ObjectID] = []
    /// Row -> the end of its targets in `allTargets`.
    @usableFromInline var ends: [Int] = []
    @usableFromInline var allTargets: [ObjectID] = []

    /// An empty batch of links of `entity` objects through `relationship`.
    public init(entity: String, relationship: String) {
        self.entity = entity
        self.relationship = relationship
    }

    /// The number of rows.
    public var count: Int { rows.count }
    /// True when the batch has no rows.
    public var isEmpty: Bool { rows.isEmpty }

    /// Appends a row: `source`'s links through the relationship become exactly `targets`.
    @inlinable
    public mutating func append(_ source: ObjectID, to targets: some Collection<ObjectID>) {
        rows.append(source)
        allTargets.append(contentsOf: targets)
        ends.append(allTargets.count)
    }

    /// The targets of row `row`, in order.
    @inlinable
    public func targets(row: Int) -> ArraySlice<ObjectID> { allTargets[(row == 0 ? 0 : ends[row - 1])..<ends[row]] }

    /// Reserves room for `rows` rows with `targets` targets in all.
    public mutating func reserveCapacity(rows: Int, targets: Int) {
        self.rows.reserveCapacity(rows)
        ends.reserveCapacity(rows)
        allTargets.reserveCapacity(targets)
    }

    /// The one entity of `sources` (empty when there are none): what a batch of their links is of.
    /// Throws ``StoreError/Kind/typeMismatch`` for sources of several entities.
    package static func entity(of sources: [ObjectID], _ relationship: String) throws -> String {
        guard let first = sources.first else { return "" }
        if let other = sources.first(where: { $0.entity != first.entity }) {
            throw StoreError(.typeMismatch, entity: first.entity, member: relationship,
                             "a batch of \(first.entity).\(relationship) links names \(other), an object of another entity")
        }
        return first.entity
    }
}

/// One stored object found by identity: its id and the values of the attributes asked for, by
/// position (nil: unset). What ``StoreReader/find(_:identities:attributes:)`` returns.
public struct StoredRow: Sendable, Hashable {
    /// The stored object.
    public var id: ObjectID
    /// The object's values of the attributes asked for, by position (nil: unset).
    public var values: [Value?]

    /// A row for the object `id` with these values.
    public init(id: ObjectID, values: [Value?]) {
        self.id = id
        self.values = values
    }
}

/// The objects of one entity an import looks up, by identity, with the values the payload gives
/// for each: what ``StoreReader/compare(_:)`` takes. A store reports which given values differ from
/// the stored ones, without handing the stored values over.
///
/// A row's values are by position, in the order of ``attributes``; only the positions the row
/// marks as given are compared (the payload left the others out). Like ``InsertBatch``, an import's
/// lookup shares the array of its mapped batch's values rather than copying them.
///
/// ```swift
/// var lookup = LookupBatch(entity: "Repository", attributes: ["id", "name", "stars"])
/// lookup.append(IdentityKey(.int(1)), values: [.int(1), .string("tether"), nil], given: [0, 1, 2])
/// lookup.append(IdentityKey(.int(2)))   // only the id is wanted
/// let found = try reader.compare(lookup)   // one entry per identity, nil: not stored
/// ```
///
/// A batch may also name to-one ``relationships``: the store then reports the current target of
/// each (``StoredDifference/targets``), so that an import can tell an unchanged link without
/// reading it again with ``StoreReader/related(_:of:)``.
public struct LookupBatch: Sendable {
    /// The entity whose objects are looked up.
    public let entity: String
    /// The attributes the values are of, in order.
    public let attributes: [String]
    /// To-one relationships of ``entity`` whose current target is reported for each stored object.
    public let relationships: [String]
    /// The identities to look up, in order (repeats allowed).
    public private(set) var identities: [IdentityKey] = []
    /// The rows' values, each row's in a run of `attributes.count` (see ``InsertBatch``).
    @usableFromInline var storage: [Value?] = []
    /// Row -> the index of its first value in `storage` (-1: a row that gives no values).
    @usableFromInline var starts: [Int] = []
    /// `words` bits per row: bit `a` set when attribute `a` is given.
    @usableFromInline var given: [UInt64] = []
    @usableFromInline let words: Int

    /// An empty lookup of `entity` objects, whose rows may give values of `attributes`, reporting
    /// the current targets of `relationships` (to-one relationships of the entity).
    public init(entity: String, attributes: [String], relationships: [String] = []) {
        self.entity = entity
        self.attributes = attributes
        self.relationships = relationships
        self.words = max(1, (attributes.count + 63) / 64)
    }

    /// A batch whose rows are runs of `storage`, appended with ``append(_:rowAt:given:)``.
    init(entity: String, attributes: [String], relationships: [String], sharing storage: [Value?]) {
        self.init(entity: entity, attributes: attributes, relationships: relationships)
        self.storage = storage
    }

    /// The number of rows.
    public var count: Int { identities.count }

    /// Reserves room for `rows` rows.
    public mutating func reserveCapacity(_ rows: Int) {
        identities.reserveCapacity(rows)
        starts.reserveCapacity(rows)
        given.reserveCapacity(rows * words)
    }

    /// Appends a row: an identity, one value (nil: null) per attribute, and the positions of the
    /// attributes the payload gives (the others are not compared).
    public mutating func append(_ identity: IdentityKey, values: [Value?], given positions: some Sequence<Int>) {
        precondition(values.count == attributes.count, "a row of \(entity) needs \(attributes.count) values, got \(values.count)")
        let base = given.count
        given.append(contentsOf: repeatElement(0, count: words))
        for position in positions {
            precondition(attributes.indices.contains(position), "a row of \(entity) gives position \(position) of \(attributes.count)")
            given[base + position / 64] |= 1 << UInt64(position % 64)
        }
        identities.append(identity)
        starts.append(storage.count)
        storage.append(contentsOf: values)
    }

    /// Appends a row like ``append(_:values:given:)`` whose values are the run of the shared
    /// storage that begins at `start`, without copying them, taking the given positions as the
    /// import keeps them.
    mutating func append(_ identity: IdentityKey, rowAt start: Int, given positions: PositionSet) {
        precondition(start >= 0 && start + attributes.count <= storage.count, "a row of \(entity) needs \(attributes.count) values")
        let (low, high) = positions.words
        given.append(low)
        for word in 1..<words { given.append(word - 1 < high.count ? high[word - 1] : 0) }
        identities.append(identity)
        starts.append(start)
    }

    /// Appends a row that gives no values: only whether the identity is stored, and its id, is wanted.
    public mutating func append(_ identity: IdentityKey) {
        identities.append(identity)
        starts.append(-1)
        given.append(contentsOf: repeatElement(0, count: words))
    }

    /// Whether row `row` gives attribute number `attribute`.
    @inlinable
    public func isGiven(row: Int, attribute: Int) -> Bool {
        given[row * words + attribute / 64] & (1 << UInt64(attribute % 64)) != 0
    }

    /// The value (nil: null) row `row` gives for attribute number `attribute`; nil when not given.
    @inlinable
    public func value(row: Int, attribute: Int) -> Value? {
        isGiven(row: row, attribute: attribute) ? storage[starts[row] + attribute] : nil
    }

    /// Calls `body` with the value row `row` gives for attribute number `attribute` (which it
    /// must give), borrowed where it lies rather than copied.
    @inlinable
    public func withValue<R>(row: Int, attribute: Int, _ body: (borrowing Value?) throws -> R) rethrows -> R {
        try body(storage[starts[row] + attribute])
    }

    /// The positions row `row` gives, ascending.
    public func givenPositions(row: Int) -> [Int] {
        attributes.indices.filter { isGiven(row: row, attribute: $0) }
    }
}

/// One stored object found by ``StoreReader/compare(_:)``: its id, the positions (into the
/// batch's attributes, ascending) of the given values that differ from the stored ones, as `==`
/// on ``Value`` tells (empty: nothing the payload gives would change the object), and the current
/// target of each of the batch's relationships.
public struct StoredDifference: Sendable, Hashable {
    /// The stored object with the row's identity.
    public var id: ObjectID
    /// The positions, ascending, of the given values that differ from the stored ones; empty when
    /// the payload would change nothing.
    public var changed: [Int]
    /// The object each of the batch's ``LookupBatch/relationships`` links to, in order (nil: none).
    public var targets: [ObjectID?]

    /// What a store found for one identity: the object, the differing positions and the current
    /// targets of the batch's relationships.
    public init(id: ObjectID, changed: [Int], targets: [ObjectID?] = []) {
        self.id = id
        self.changed = changed
        self.targets = targets
    }
}

extension StoreReader {
    /// Batched find-by-identity by position: for each of `identities`, in order, the stored
    /// object's id and its values of `attributes`, or nil when there is none.
    ///
    /// This default asks ``objects(_:identities:)``; a store overrides it to skip building an
    /// ``Object`` per row.
    public func find(_ entity: String, identities: [IdentityKey], attributes: [String]) throws -> [StoredRow?] {
        let found = try objects(entity, identities: identities)
        return identities.map { key in
            found[key].map { object in StoredRow(id: object.id, values: attributes.map { object.values[$0] }) }
        }
    }

    /// The import's lookup: for each row of `batch`, in order, the stored object's id and which of
    /// the given values differ from the stored ones, or nil when nothing is stored under the
    /// identity.
    ///
    /// This default reads the stored values with ``find(_:identities:attributes:)``, compares
    /// them with `==`, and reads the relationships' targets with ``related(_:of:)``
    /// (``readTargets(ofRelationship:in:into:)``); a store overrides it to compare without building the stored
    /// values.
    public func compare(_ batch: LookupBatch) throws -> [StoredDifference?] {
        let rows = try find(batch.entity, identities: batch.identities, attributes: batch.attributes)
        let none = [ObjectID?](repeating: nil, count: batch.relationships.count)
        var found = rows.enumerated().map { i, row in
            row.map { row in
                StoredDifference(id: row.id, changed: batch.givenPositions(row: i).filter { batch.value(row: i, attribute: $0) != row.values[$0] }, targets: none)
            }
        }
        for r in batch.relationships.indices { try readTargets(ofRelationship: r, in: batch, into: &found) }
        return found
    }

    /// Reads the current target of relationship number `r` of `batch` (a to-one relationship)
    /// for each object in `found` with one ``related(_:of:)`` call, into its `targets[r]` (nil:
    /// none; each found object's `targets` has one entry per relationship). Throws
    /// ``StoreError/Kind/unsupported`` for a to-many relationship that links one of them to
    /// several objects. For stores that implement ``compare(_:)`` and read some relationships
    /// another way.
    public func readTargets(ofRelationship r: Int, in batch: LookupBatch, into found: inout [StoredDifference?]) throws {
        let relationship = batch.relationships[r]
        var asked = Set<ObjectID>()
        let related = try related(relationship, of: found.compactMap { $0?.id }.filter { asked.insert($0).inserted })
        for i in found.indices {
            guard let id = found[i]?.id, let targets = related[id] else { continue }
            guard targets.count <= 1 else {
                throw StoreError(.unsupported, entity: id.entity, member: relationship,
                                 "'\(relationship)' links \(id) to \(targets.count) objects: a lookup reads to-one relationships only")
            }
            found[i]!.targets[r] = targets.first
        }
    }
}

extension StoreWriter {
    /// Inserts every row of `batch` and links it through the batch's relationships; returns the
    /// new ids in row order. The effect, the checks and the errors are those of calling
    /// ``insert(_:values:)`` and then ``setRelated(_:of:to:)`` for each row; a store may do it
    /// faster (the SQLite store writes a to-one link as a column of the row).
    ///
    /// This default does exactly that, row by row.
    public func insert(_ batch: InsertBatch) throws -> [ObjectID] {
        var ids: [ObjectID] = []
        ids.reserveCapacity(batch.count)
        let identity = try batch.identity.map { name in
            guard let position = batch.attributes.firstIndex(of: name) else {
                throw StoreError(.missingIdentity, entity: batch.entity, member: name,
                                 "an insert batch of \(batch.entity) gives no values of its identity attribute '\(name)'")
            }
            return position
        }
        for row in 0..<batch.count {
            try batch.checkIdentity(row: row, positions: identity)
            let id = try insert(batch.entity, values: batch.values(row: row)).id
            for (r, relationship) in batch.relationships.enumerated() {
                if let target = batch.target(row: row, relationship: r) { try setRelated(relationship, of: id, to: [target]) }
            }
            ids.append(id)
        }
        return ids
    }

    /// Sets the relationship of each row's source to its targets with
    /// ``setRelated(_:of:to:)``, row by row: the effect every store's ``setRelated(_:)`` has.
    public func setRelated(_ batch: LinkBatch) throws {
        for (row, source) in batch.sources.enumerated() {
            guard source.entity == batch.entity else {
                throw StoreError(.typeMismatch, entity: batch.entity, member: batch.relationship,
                                 "a link batch of \(batch.entity).\(batch.relationship) names \(source), an object of another entity")
            }
            try setRelated(batch.relationship, of: source, to: Array(batch.targets(row: row)))
        }
    }

    /// Sets and clears the batch's attributes of each of its objects. The effect, the checks and
    /// the errors are those of ``update(_:setting:clearing:)`` for each row; this default does
    /// exactly that.
    public func update(_ batch: UpdateBatch) throws {
        for (row, id) in batch.ids.enumerated() {
            var setting: [String: Value] = [:]
            var clearing = Set<String>()
            for (a, name) in batch.attributes.enumerated() {
                if let value = batch.value(row: row, attribute: a) { setting[name] = value } else { clearing.insert(name) }
            }
            try update(id, setting: setting, clearing: clearing)
        }
    }
}
