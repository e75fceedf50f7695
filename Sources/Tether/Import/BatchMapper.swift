import Foundation

/// One batch of the payload, mapped (step 1 of an import): every object it names, once per
/// identity, with the values and links the payload gives it. Nothing here comes from the store;
/// ``ImportSession`` resolves, merges and writes it (steps 2 to 5). It holds no JSON, so it may
/// cross from the thread that maps to the thread that writes.
struct MappedBatch: Sendable {
    /// One distinct object of the batch.
    struct Slot: Sendable {
        /// The entity's ordinal.
        let entity: Int
        /// Set when the object is found in the store, or inserted.
        var id: ObjectID?
        /// For a stored object, the positions of the given values that differ from the stored
        /// ones, ascending (nil for an object that is not stored yet).
        var changed: [Int]?
        /// For a stored object, the current target of each of its entity's
        /// ``EntityPlan/lookupLinks`` the lookup read, in order (nil: none).
        var targets: [ObjectID?] = []
        /// Where the slot's values begin in ``MappedBatch/values`` (-1: none, a slot the lookup
        /// added): one per attribute, by position (the last occurrence of each key wins; nil for
        /// null or not given).
        let start: Int
        /// The positions of its values the payload gave, a value or null; a stored object keeps
        /// its stored values of the others.
        var given = PositionSet()
        var attributesChanged = false
        var linksChanged = false
        var inserted = false
        /// A nested object whose text the mapper remembers for the import's later batches (its
        /// last occurrence in the batch named no related objects and reported nothing): the
        /// session remembers its id.
        var remembered = false
        /// A nested object each of whose occurrences in the batch has the text of its last
        /// occurrence in an earlier batch: applying it changes nothing, so the mapper gives no
        /// values for it, and the session need not look it up when it remembers the id (it is
        /// stored: an earlier batch wrote it).
        var repeatsEarlierBatch = false
        /// Its last occurrence is a tombstone (``ImportOptions/tombstones``): the stored object
        /// is deleted, a new one is not inserted, and no link is made to or from it.
        var tombstone = false
    }

    enum LinkTarget: Sendable {
        case slot(Int)
        case identity(IdentityKey)
    }

    struct PendingLink: Sendable {
        let slot: Int
        /// The relationship's position in its entity's mapping (kept small: an import has one
        /// link per object and relationship).
        let position: Int
        /// The destination entity's ordinal.
        let destination: Int
        var targets: LinkTargets
        /// An id list (foreign keys) rather than nested objects: an id naming nothing stored is
        /// kept as a pending reference.
        let byReference: Bool
        /// For a link by reference, where the payload gives the ids (for the diagnostic of a
        /// pending reference).
        var path: JSONPath? = nil
        /// Replaced by a later occurrence of the same object's link, further on in ``links``.
        var superseded = false
        /// For an ordered list of ids: the positions of the ids that named no object of the batch
        /// when the list was read (objects that arrive later, if at all): such an object takes
        /// its position in the list when it arrives, as a pending reference's does.
        var unseen: [Int] = []
    }

    /// The targets of a link, in order: one is kept inline (a to-one link, the most common, then
    /// allocates nothing), more in an array.
    struct LinkTargets: RandomAccessCollection, Sendable {
        private enum Storage: Sendable {
            case one(LinkTarget)
            case many([LinkTarget])
        }
        private let storage: Storage

        init(_ target: LinkTarget) { storage = .one(target) }
        init(_ targets: [LinkTarget]) { storage = .many(targets) }

        var startIndex: Int { 0 }
        var endIndex: Int {
            switch storage {
            case .one: 1
            case .many(let targets): targets.count
            }
        }
        subscript(position: Int) -> LinkTarget {
            switch storage {
            case .one(let target):
                precondition(position == 0, "index out of range")
                return target
            case .many(let targets): return targets[position]
            }
        }
    }

    /// The key of ``linkIndex`` for the link of `slot` through a relationship (its position in
    /// the slot's entity's mapping): one integer, which a dictionary hashes faster than a pair.
    @inline(__always)
    static func linkKey(slot: Int, relationship: Int) -> Int {
        assert(relationship < 1 << 20, "too many relationships")
        return slot << 20 | relationship
    }

    var slots: [Slot] = []
    /// The values of every slot, a run per slot (``Slot/start``): one array per batch, which the
    /// lookups and inserts share, rather than one per object.
    var values: [Value?] = []
    /// entity ordinal -> identity -> slot
    var identityMap: [IdentityMap<Int>]
    /// entity ordinal -> identities named by an id only (`owner_id`, `label_ids`), while mapping.
    var references: [Set<IdentityKey>]
    /// entity ordinal -> the identities to look up in the store: every slot's, then those named
    /// only by id; and for each, its slot (-1: named only by id).
    var lookups: [[IdentityKey]]
    var lookupSlots: [[Int]]
    /// Slots `0..<objectSlots` are the payload's objects, in the order each first occurs (a slot
    /// is made at an object's first occurrence); slots after them are added by the lookup, for
    /// objects named only by id.
    var objectSlots = 0
    /// The slots of the top-level objects, in payload order.
    var topLevel: [Int] = []
    var links: [PendingLink] = []
    /// ``linkKey(slot:relationship:)`` -> index in ``links``.
    var linkIndex: [Int: Int] = [:]
    var diagnostics: [ImportDiagnostic] = []
    /// The entities whose remembered objects the mapper forgot after this batch (past
    /// ``ImportOptions/rememberedLimit``): the session forgets their ids then too, so that it
    /// remembers the same objects as the mapper.
    var forgotten: [Int] = []
    /// Top-level elements of the payload the batch maps (for ``ImportOptions/progress``).
    var elementCount = 0
    /// How far into the payload's bytes the batch reaches, when the payload is bytes (0: unknown).
    var bytesEnd = 0

    init(entities: Int) {
        identityMap = Array(repeating: IdentityMap(), count: entities)
        references = Array(repeating: [], count: entities)
        lookups = Array(repeating: [], count: entities)
        lookupSlots = Array(repeating: [], count: entities)
    }
}

/// A set of attribute positions, in one word for the first 64.
struct PositionSet: Sendable {
    private var low: UInt64 = 0
    private var high: [UInt64] = []

    @inline(__always)
    mutating func insert(_ position: Int) {
        if position < 64 {
            low |= 1 << UInt64(position)
        } else {
            let word = position / 64 - 1
            while high.count <= word { high.append(0) }
            high[word] |= 1 << UInt64(position % 64)
        }
    }

    /// The positions from 64 on, 64 per word: `high[k]` holds positions `64 * (k + 1)` and up.
    var words: (low: UInt64, high: [UInt64]) { (low, high) }

    @inline(__always)
    func contains(_ position: Int) -> Bool {
        if position < 64 { return low & (1 << UInt64(position)) != 0 }
        let word = position / 64 - 1
        return word < high.count && high[word] & (1 << UInt64(position % 64)) != 0
    }
}

/// Step 1 of an import: walks a batch of JSON objects and maps it into a ``MappedBatch``:
/// each object's identity, its attribute values converted and checked against the schema, and
/// its links, nested objects included. A repeated object lands in the same slot, so the last
/// occurrence of each key wins. It reads nothing from the store, so the next batch can be mapped
/// while the last one is written (see ``Importer``).
struct BatchMapper<V: ImportValue> {
    private let importer: Importer
    private let plans: [EntityPlan]
    private var batch: MappedBatch
    private var path: [JSONPath.Component] = []
    /// The matched members of the objects being applied (a stack: nested objects push theirs).
    private var found: [V?] = []
    /// By slot: the source text of the object last applied to it (or found to repeat an earlier
    /// batch's), when applying it again would change nothing (it reported nothing and named no
    /// related objects); nil otherwise.
    private var lastApplied: [UnsafeBufferPointer<UInt8>?] = []
    /// By slot: whether the object occurs nested in another.
    private var nested: [Bool] = []
    /// By entity ordinal: the hash of the source text of each nested object last applied in an
    /// earlier batch of the import, when applying it again would change nothing (as
    /// ``lastApplied``). A keyed hash (``Hasher``), so that a payload cannot be made to collide.
    private(set) var earlierTexts: [IdentityMap<Int>]
    /// By entity ordinal: the tombstones of its objects (``ImportOptions/tombstones``), for the
    /// top-level entity of the batch being mapped.
    private var tombstones: [[Importer.TombstoneRule]] = []
    private var tombstonesEntity = -1

    /// A mapper for `importer`'s imports; `earlierTexts`: the texts of nested objects that an
    /// earlier import remembered (``RememberedObjects``), as if an earlier batch had stored them.
    init(importer: Importer, earlierTexts: [IdentityMap<Int>]? = nil) {
        self.importer = importer
        self.plans = importer.plans
        self.batch = MappedBatch(entities: importer.plans.count)
        self.earlierTexts = earlierTexts ?? Array(repeating: IdentityMap(), count: importer.plans.count)
    }

    /// Maps `elements`, the top-level objects of a batch (entity `entity`): `base` is the path of
    /// the payload, and with `indexed` each element's path adds its index, from `offset`.
    mutating func map(_ elements: ArraySlice<V>, entity: EntityPlan, base: [JSONPath.Component], indexed: Bool, offset: Int) throws -> MappedBatch {
        batch = MappedBatch(entities: plans.count)
        batch.elementCount = elements.count
        if tombstonesEntity != entity.ordinal {
            tombstones = importer.tombstoneRules(imported: entity.ordinal)
            tombstonesEntity = entity.ordinal
        }
        lastApplied.removeAll(keepingCapacity: true)
        nested.removeAll(keepingCapacity: true)
        defer { lastApplied.removeAll(keepingCapacity: true) }  // it points into the source
        // Room for one object per element of the top-level entity (nested ones grow as needed).
        batch.slots.reserveCapacity(elements.count)
        batch.values.reserveCapacity(elements.count * entity.attributeNames.count)
        batch.topLevel.reserveCapacity(elements.count)
        batch.identityMap[entity.ordinal] = IdentityMap(integerCapacity: elements.count)
        batch.lookups[entity.ordinal].reserveCapacity(elements.count)
        batch.lookupSlots[entity.ordinal].reserveCapacity(elements.count)
        for (i, element) in elements.enumerated() {
            path.removeAll(keepingCapacity: true)
            path.append(contentsOf: base)
            if indexed { path.append(.index(offset + i)) }
            if element.isObject {
                if let slot = try apply(element, entity, nested: false) { batch.topLevel.append(slot) }
            } else if !element.isNull {  // null entries are ignored
                throw ImportError(path: JSONPath(path), entity: entity.name, message: "expected an object, found \(element.typeName)")
            }
        }
        rememberTexts()
        for ordinal in plans.indices {
            for key in batch.references[ordinal] where batch.identityMap[ordinal][key] == nil {
                batch.lookups[ordinal].append(key)
                batch.lookupSlots[ordinal].append(-1)
            }
            batch.references[ordinal] = []
        }
        batch.objectSlots = batch.slots.count
        var mapped = MappedBatch(entities: 0)
        swap(&mapped, &batch)
        return mapped
    }

    /// Remembers the text of each nested object of the batch for the next ones (``earlierTexts``)
    /// and marks its slot ``MappedBatch/Slot/remembered``; forgets any other object of the batch
    /// (its last occurrence was not nested, or cannot be skipped).
    private mutating func rememberTexts() {
        for ordinal in plans.indices {
            let forgetting = !earlierTexts[ordinal].isEmpty
            for (key, slot) in zip(batch.lookups[ordinal], batch.lookupSlots[ordinal]) {
                if nested[slot], let text = lastApplied[slot] {
                    batch.slots[slot].remembered = true
                    // Otherwise it is the text remembered already.
                    if !batch.slots[slot].repeatsEarlierBatch { earlierTexts[ordinal][key] = Self.hash(text) }
                } else if forgetting {
                    earlierTexts[ordinal][key] = nil
                }
            }
            if earlierTexts[ordinal].count > importer.options.rememberedLimit {
                earlierTexts[ordinal].removeAll()
                batch.forgotten.append(ordinal)
            }
        }
    }

    private static func hash(_ text: UnsafeBufferPointer<UInt8>) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes: UnsafeRawBufferPointer(text))
        return hasher.finalize()
    }

    /// Merges one JSON object into its slot; returns the slot, or nil when the object was skipped.
    private mutating func apply(_ members: V, _ plan: EntityPlan, nested isNested: Bool) throws -> Int? {
        let entity = plan.mapping
        let diagnosticsBefore = batch.diagnostics.count
        // Match the object's members to the mapping in one walk.
        let base = found.count
        found.append(contentsOf: repeatElement(nil, count: plan.keyTable.count))
        members.members(plan.keyTable, into: &found, at: base)
        defer { found.removeLast(plan.keyTable.count) }

        let slot: Int
        var identity: IdentityKey?
        if entity.identity.isEmpty {
            slot = newSlot(plan)
        } else {
            guard let key = identityKey(plan, base) else {
                let attribute = entity.identity.count == 1 ? entity.identity[0] : nil
                if let attribute { push(attribute.keyPath.components) }
                let missing = entity.identity.map { "'\($0.keyPath)'" }.joined(separator: ", ")
                try report(plan, attribute?.name, .missingIdentity, .objectSkipped,
                           "the object has no usable identity (\(missing) missing, null or not convertible)")
                if let attribute { path.removeLast(attribute.keyPath.components.count) }
                return nil
            }
            identity = key
            if !isNested, try isHollow(members, plan, base) { return nil }
            if let existing = batch.identityMap[plan.ordinal][key] {
                slot = existing
                // The same text as the object last applied to this slot (a nested object many
                // objects share, as a repository's owner): applying it again would change nothing.
                if let last = lastApplied[slot], let text = members.sourceText,
                    last.count == text.count, memcmp(last.baseAddress!, text.baseAddress!, text.count) == 0 {
                    return slot
                }
                batch.slots[slot].repeatsEarlierBatch = false
                if isNested { nested[slot] = true }
            } else {
                slot = newSlot(plan)
                batch.identityMap[plan.ordinal][key] = slot
                batch.lookups[plan.ordinal].append(key)
                batch.lookupSlots[plan.ordinal].append(slot)
                if isNested {
                    nested[slot] = true
                    // The same text as the object's last occurrence in an earlier batch, which the
                    // store holds: applying it would change nothing, so its values are not made
                    // (a later occurrence that differs is applied, and compared, on its own).
                    if let earlier = earlierTexts[plan.ordinal][key], let text = members.sourceText, Self.hash(text) == earlier {
                        batch.slots[slot].repeatsEarlierBatch = true
                        lastApplied[slot] = text
                        return slot
                    }
                }
            }
        }

        if !tombstones.isEmpty, !tombstones[plan.ordinal].isEmpty {
            let marked = tombstones[plan.ordinal].contains { rule in
                lookup(members, rule.keys).map { rule.values.contains($0.materialize()) } ?? false
            }
            batch.slots[slot].tombstone = marked
            if marked {
                batch.slots[slot].repeatsEarlierBatch = false
                lastApplied[slot] = nil  // a later occurrence is applied, whatever its text
                return slot
            }
        }

        // Attributes: missing keys leave values alone, null clears (unless the attribute ignores
        // null: then it is as if missing), wrong types are reported.
        let start = batch.slots[slot].start
        var given = batch.slots[slot].given
        // An identity attribute takes its identity key's value below (an object of an entity with
        // identity has its key here): its own value is not converted.
        for position in plan.attributeFields.indices {
            if plan.identityPositionSet.contains(position) { continue }
            guard let json = value(of: plan.attributeFields[position], base)
                ?? fallback(plan.attributeFallbacks[position], base) else { continue }
            if json.isNull {
                if plan.attributeIgnoresNull[position] { continue }
                batch.values[start + position] = nil
                given.insert(position)
                continue
            }
            switch importer.value(json, plan.directKinds[position], for: entity.attributes[position].attribute, dates: entity.attributes[position].dateDecoding) {
            case .success(let value):
                batch.values[start + position] = value
                given.insert(position)
            case .failure(let rejection):
                let attribute = entity.attributes[position]
                push(attribute.keyPath.components)
                try report(plan, attribute.name, rejection.problem, .valueSkipped, rejection.message)
                path.removeLast(attribute.keyPath.components.count)
            }
        }
        // The identity stored is the one looked up: an object is never stored without it (a
        // value the attribute's conversion rejects) or with another (one the strategy normalised).
        if let identity {
            if let single = identity.single {
                batch.values[start + plan.identityPositions[0]] = single
                given.insert(plan.identityPositions[0])
            } else {
                for (k, value) in identity.values.enumerated() {
                    batch.values[start + plan.identityPositions[k]] = value
                    given.insert(plan.identityPositions[k])
                }
            }
        }
        // Kept before the relationships: a nested object may be this one again.
        batch.slots[slot].given = given

        var related = false
        defer {
            lastApplied[slot] = !related && batch.diagnostics.count == diagnosticsBefore ? members.sourceText : nil
            if lastApplied[slot] == nil { batch.slots[slot].repeatsEarlierBatch = false }
        }

        // Relationships: nested objects first, then id references.
        for (r, relationship) in entity.relationships.enumerated() {
            guard let d = plan.destinations[r] else { continue }
            let destination = plans[d]
            if let nested = value(of: plan.relationshipFields[r], base) ?? fallback(plan.relationshipFallbacks[r], base) {
                related = true
                push(relationship.keyPath.components)
                defer { path.removeLast(relationship.keyPath.components.count) }
                try applyNested(nested, slot: slot, relationship, r, destination, plan)
            } else if let reference = value(of: plan.foreignKeyFields[r], base) {
                related = true
                path.append(.key(relationship.foreignKey))
                defer { path.removeLast() }
                try applyReference(reference, slot: slot, relationship, r, destination, plan)
            }
        }
        return slot
    }

    /// Whether a top-level object carries its identity but none of the entity's other keys while
    /// it has keys of its own (`{"id": "1", "type": "articles", "attributes": {…}}` read as an
    /// article): the payload is not in the shape the mapping reads, and importing the object
    /// would store an identity and nothing else. Reported naming its keys (an ``ImportError``
    /// under ``ImportOptions/Policy/fail``) and skipped; under ``ImportOptions/deleteMissing``
    /// it is an error, so that a list read in the wrong shape deletes nothing.
    private mutating func isHollow(_ members: V, _ plan: EntityPlan, _ base: Int) throws -> Bool {
        var matched = 0
        for i in 0..<plan.keyTable.count where found[base + i] != nil {
            if !plan.identityOnlyKeys[i] { return false }
            matched += 1
        }
        guard members.memberCount > matched else { return false }
        // A tombstone (`{"id": 1, "deleted": true}`) says all it has to say.
        if !tombstones.isEmpty, tombstones[plan.ordinal].contains(where: { lookup(members, $0.keys) != nil }) { return false }
        let keys = (members.materialize().objectValue?.keys.sorted() ?? []).prefix(12)
            .map { $0.count > 64 ? "\($0.prefix(64))… (\($0.utf8.count) bytes)" : $0 } + (members.memberCount > 12 ? ["…"] : [])
        let mapped = plan.mapping.attributes.filter { !plan.mapping.identity.map(\.name).contains($0.name) }.map { "'\($0.keyPath)'" }
            + plan.mapping.relationships.map { "'\($0.keyPath)'" }
        let message = "the object carries its identity but none of \(plan.name)'s keys (\(mapped.prefix(6).joined(separator: ", "))"
            + "\(mapped.count > 6 ? ", …" : "")); it has the keys \(keys.joined(separator: ", ")). The response is not in the shape "
            + "the mapping reads: declare its format or shape with the builder"
        if importer.options.deleteMissing != nil {
            throw ImportError(path: JSONPath(path), entity: plan.name,
                              message: message + "; nothing was imported, and nothing deleted for missing from this list")
        }
        try report(plan, nil, .unmappedObject, .objectSkipped, message)
        return true
    }

    private mutating func newSlot(_ plan: EntityPlan) -> Int {
        batch.slots.append(MappedBatch.Slot(entity: plan.ordinal, start: batch.values.count))
        batch.values.append(contentsOf: repeatElement(nil, count: plan.attributeNames.count))
        lastApplied.append(nil)
        nested.append(false)
        return batch.slots.count - 1
    }

    /// Appends the keys of a key path to ``path`` (without building an array of them first).
    @inline(__always)
    private mutating func push(_ keys: [String]) {
        for key in keys { path.append(.key(key)) }
    }

    /// The value of a mapped key path in the object whose members were matched at `base` of
    /// ``found``: nil when absent; null when the path runs through a null.
    @inline(__always)
    private func value(of field: EntityPlan.Field, _ base: Int) -> V? {
        guard let first = found[base + field.key] else { return nil }
        if field.rest.isEmpty { return first }
        guard first.isObject else { return first.isNull ? first : nil }
        return lookup(first, field.rest)
    }

    /// The value of the first of a property's fallback key paths the object has (nil: none).
    @inline(__always)
    private func fallback(_ fields: [EntityPlan.Field], _ base: Int) -> V? {
        if fields.isEmpty { return nil }
        for field in fields { if let value = value(of: field, base) { return value } }
        return nil
    }

    private mutating func applyNested(
        _ nested: V, slot: Int, _ relationship: RelationshipMapping, _ position: Int, _ destination: EntityPlan, _ entity: EntityPlan
    ) throws {
        let toMany = relationship.relationship.isToMany
        if nested.isNull {
            setLink(slot, relationship, position, destination, .init([]), byReference: false)
        } else if nested.isObject && !toMany {
            if let childSlot = try apply(nested, destination, nested: true) {
                setLink(slot, relationship, position, destination, .init(.slot(childSlot)), byReference: false)
            }
        } else if nested.isArray && toMany {
            var targets: [MappedBatch.LinkTarget] = []
            var byReference = false
            for (i, element) in nested.elements.enumerated() {
                path.append(.index(i))
                defer { path.removeLast() }
                if element.isNull {
                    continue
                } else if element.isObject {
                    if let childSlot = try apply(element, destination, nested: true) { targets.append(.slot(childSlot)) }
                } else {
                    if let key = referenceKey(element, destination) {
                        targets.append(.identity(key))
                        byReference = true
                    } else {
                        try report(entity, relationship.name, .invalidRelationship, .valueSkipped,
                                   "expected an object or an id of \(destination.name), found \(element.typeName) \(element.materialize())")
                    }
                }
            }
            setLink(slot, relationship, position, destination, .init(targets), byReference: byReference)
        } else {
            if let key = referenceKey(nested, destination), !toMany {
                setLink(slot, relationship, position, destination, .init(.identity(key)), byReference: true)
            } else {
                try report(entity, relationship.name, .invalidRelationship, .valueSkipped,
                           "expected \(toMany ? "an array of \(destination.name) objects" : "a \(destination.name) object"), found \(nested.typeName)")
            }
        }
    }

    private mutating func applyReference(
        _ reference: V, slot: Int, _ relationship: RelationshipMapping, _ position: Int, _ destination: EntityPlan, _ entity: EntityPlan
    ) throws {
        let toMany = relationship.relationship.isToMany
        if reference.isNull {
            setLink(slot, relationship, position, destination, .init([]), byReference: false)
        } else if reference.isArray && toMany {
            var keys: [MappedBatch.LinkTarget] = []
            for (i, element) in reference.elements.enumerated() where !element.isNull {
                if let key = referenceKey(element, destination) {
                    keys.append(.identity(key))
                } else {
                    path.append(.index(i))
                    defer { path.removeLast() }
                    try report(entity, relationship.name, .invalidRelationship, .valueSkipped,
                               "expected \(referenceShape(destination)), found \(element.typeName) \(element.materialize())")
                }
            }
            setLink(slot, relationship, position, destination, .init(keys), byReference: !keys.isEmpty)
        } else {
            if !toMany, let key = referenceKey(reference, destination) {
                setLink(slot, relationship, position, destination, .init(.identity(key)), byReference: true)
            } else {
                try report(entity, relationship.name, .invalidRelationship, .valueSkipped,
                           "expected \(toMany ? "an array of references to \(destination.name) (each \(referenceShape(destination)))" : referenceShape(destination)), found \(reference.typeName)")
            }
        }
    }

    /// Records the links of `slot` through one relationship (a later occurrence replaces them);
    /// identities named by id are looked up with the batch.
    private mutating func setLink(
        _ slot: Int, _ relationship: RelationshipMapping, _ position: Int, _ destination: EntityPlan, _ targets: MappedBatch.LinkTargets,
        byReference: Bool
    ) {
        var unseen: [Int] = []
        for (k, target) in targets.enumerated() {
            guard case .identity(let key) = target, batch.identityMap[destination.ordinal][key] == nil else { continue }
            batch.references[destination.ordinal].insert(key)
            if relationship.relationship.isOrdered { unseen.append(k) }
        }
        let key = MappedBatch.linkKey(slot: slot, relationship: position)
        var link = MappedBatch.PendingLink(
            slot: slot, position: position, destination: destination.ordinal, targets: targets, byReference: byReference)
        link.unseen = unseen
        if byReference { link.path = JSONPath(path) }
        // A later occurrence replaces the link, and takes its place in payload order: when the
        // other side is set too, links are applied in that order.
        let earlier = batch.linkIndex[key]
        if let earlier, earlier == batch.links.count - 1, batch.links[earlier].targets.isEmpty || !plans[batch.slots[slot].entity].movesTargets[position] {
            batch.links[earlier] = link
        } else {
            if let earlier { batch.links[earlier].superseded = true }
            batch.linkIndex[key] = batch.links.count
            batch.links.append(link)
        }
    }

    // MARK: Helpers

    private mutating func report(
        _ entity: EntityPlan, _ attribute: String?, _ problem: ImportDiagnostic.Problem, _ action: ImportDiagnostic.Action,
        _ message: String
    ) throws {
        let diagnostic = ImportDiagnostic(
            path: JSONPath(path), entity: entity.name, attribute: attribute, problem: problem, action: action, message: message)
        if importer.options.policy == .fail { throw ImportError(diagnostic) }
        batch.diagnostics.append(diagnostic)
    }

    private func lookup(_ members: V, _ keys: [ImportKey]) -> V? {
        if keys.count == 1 { return members.member(keys[0]) }
        var current = members
        for (i, key) in keys.enumerated() {
            guard let next = current.member(key) else { return nil }
            if i == keys.count - 1 { return next }
            if next.isObject {
                current = next
            } else if next.isNull {
                return next
            } else {
                return nil
            }
        }
        return nil
    }

    /// The identity of the object whose members were matched at `base` of ``found``.
    private func identityKey(_ plan: EntityPlan, _ base: Int) -> IdentityKey? {
        let identity = plan.mapping.identity
        if identity.count == 1 {
            guard let json = value(of: plan.identityFields[0], base) ?? fallback(plan.identityFallbacks[0], base), !json.isNull,
                let value = importer.identityValue(json.materialize(), for: identity[0])
            else { return nil }
            return IdentityKey(value)
        }
        var values: [Value] = []
        for (k, attribute) in identity.enumerated() {
            guard let json = value(of: plan.identityFields[k], base) ?? fallback(plan.identityFallbacks[k], base), !json.isNull,
                let value = importer.identityValue(json.materialize(), for: attribute)
            else { return nil }
            values.append(value)
        }
        return IdentityKey(values)
    }

    /// The identity a reference names in `destination`: a scalar id for a single identity, an
    /// object holding each identity attribute at its key path for a composite one
    /// (`{"owner": "octocat", "name": "hello"}` under `repository_id`).
    private func referenceKey(_ json: V, _ destination: EntityPlan) -> IdentityKey? {
        let identity = destination.mapping.identity
        if identity.count > 1 {
            guard json.isObject else { return nil }
            var values: [Value] = []
            values.reserveCapacity(identity.count)
            for (k, attribute) in identity.enumerated() {
                guard let member = lookup(json, destination.identityKeys[k]), !member.isNull,
                    let value = importer.identityValue(member.materialize(), for: attribute)
                else { return nil }
                values.append(value)
            }
            return IdentityKey(values)
        }
        guard identity.count == 1, !json.isObject, !json.isArray, !json.isNull else { return nil }
        return importer.identityValue(json.materialize(), for: identity[0]).map(IdentityKey.init)
    }

    /// What a reference to `destination` is, for messages: "an id of User", or for a composite
    /// identity "an object with Repository's identity (owner, name)".
    private func referenceShape(_ destination: EntityPlan) -> String {
        let identity = destination.mapping.identity
        if identity.count > 1 {
            return "an object with \(destination.name)'s identity (\(identity.map { "'\($0.keyPath)'" }.joined(separator: ", ")))"
        }
        return "an id of \(destination.name)"
    }
}
