import Foundation

/// The import engine: JSON objects -> uniqued, wired objects in one store transaction.
///
/// Data flows one way, in batches of top-level objects (``ImportOptions/batchSize``):
/// 1. **collect**: walk the batch and gather the identity of every object and every id reference
///    (`owner_id`, `label_ids`), per entity;
/// 2. **resolve**: one ``StoreReader/find(_:identities:attributes:)`` call per entity finds what
///    is stored, with the values of its mapped attributes;
/// 3. **apply**: walk again, merging each JSON object into its slot (found, or new), validating
///    values against the schema and recording links; a repeated object lands in the same slot,
///    so the last occurrence wins;
/// 4. **write**: update changed objects (one ``UpdateBatch`` per entity and set of changed
///    attributes), insert new ones (one ``InsertBatch`` per entity, to-one destinations first,
///    to-one links written with the row), and set the other changed relationships.
struct Importer: Sendable {
    let mapping: Mapping
    let identity: any IdentityStrategy
    let dateDecoding: DateDecoding
    let transformers: [String: any AttributeTransformer]
    let options: ImportOptions
    /// The first date format is ISO 8601: dates are read straight from the bytes.
    let iso8601Dates: Bool
    /// Every entity of the mapping, prepared for the import, by ordinal (entity names sorted).
    let plans: [EntityPlan]
    let planIndex: [String: Int]
    let insertOrder: [Int]

    init(client: Client, options: ImportOptions) throws {
        mapping = client.mapping
        identity = client.identityStrategy
        dateDecoding = client.dateDecoding
        transformers = client.transformers
        self.options = options
        iso8601Dates = dateDecoding.formats.first?.isISO8601 == true
        (plans, planIndex, insertOrder) = (client.importPlans.plans, client.importPlans.index, client.importPlans.insertOrder)
    }

    func run<V: ImportValue>(_ payloads: [(entity: String, json: V)], in writer: any StoreWriter) throws -> ImportResult {
        let session = ImportSession<V>(importer: self, writer: writer)
        for payload in payloads {
            let entity = try entityPlan(payload.entity)
            let base: [JSONPath.Component] = payloads.count > 1 ? [.key(payload.entity)] : []
            if payload.json.isArray {
                let elements = payload.json.elements
                var start = 0
                while start < elements.count {
                    let end = min(elements.count, start + options.batchSize)
                    try session.importBatch(elements[start..<end], entity: entity, base: base, indexed: true, offset: start)
                    start = end
                }
            } else {
                try importDocument(payload.json, entity, base, session)
            }
        }
        return session.result()
    }

    /// Imports the bytes of a JSON document. A top-level array is read onto a tape one batch at a
    /// time, in one pass over the bytes, so the tape holds one batch's entries; any other document
    /// is read whole.
    func run(bytes: UnsafeBufferPointer<UInt8>, as entityName: String, in writer: any StoreWriter) throws -> ImportResult {
        guard var reader = JSONTape.ArrayReader(bytes) else {
            let tape = try JSONTape(parsing: bytes)
            return try tape.withRoots(bytes: bytes) { roots in try run([(entityName, roots[0])], in: writer) }
        }
        let session = ImportSession<TapeValue>(importer: self, writer: writer)
        let entity = try entityPlan(entityName)
        var tape = JSONTape()
        var first = 0
        while case let count = try reader.read(options.batchSize, into: &tape), count > 0 {
            try tape.withRoots(bytes: bytes) { roots in
                try session.importBatch(roots[...], entity: entity, base: [], indexed: true, offset: first)
            }
            first += count
        }
        return session.result()
    }

    /// Streams the top-level array of a file through the import, one batch at a time: each
    /// element is checked onto the batch's tape as it arrives, and a full batch is imported.
    func run(_ stream: JSONStream, as entityName: String, in writer: any StoreWriter) throws -> ImportResult {
        let session = ImportSession<TapeValue>(importer: self, writer: writer)
        let entity = try entityPlan(entityName)
        var tape = JSONTape()
        var bytes: [UInt8] = []
        var first = 0
        func flush() throws {
            try bytes.withUnsafeBufferPointer { buffer in
                try tape.withRoots(bytes: buffer) { roots in
                    try session.importBatch(roots[...], entity: entity, base: [], indexed: true, offset: first)
                }
            }
            tape.removeAll()
            bytes.removeAll(keepingCapacity: true)
        }
        try stream.forEachElementBytes { element, fileOffset, index in
            guard let index else {
                var document = JSONTape()
                try document.append(element, offset: 0, errorOffset: fileOffset)
                return try document.withRoots(bytes: element) { roots in try importDocument(roots[0], entity, [], session) }
            }
            if tape.roots.isEmpty { first = index }
            try tape.append(element, offset: bytes.count, errorOffset: fileOffset)
            bytes.append(contentsOf: element)
            if tape.roots.count == options.batchSize { try flush() }
        }
        if !tape.roots.isEmpty { try flush() }
        return session.result()
    }

    private func entityPlan(_ name: String) throws -> EntityPlan {
        guard let ordinal = planIndex[name] else {
            throw ImportError(path: .root, entity: name, message: "unknown entity '\(name)'")
        }
        return plans[ordinal]
    }

    /// A payload that is not an array: one object, or null (nothing to import).
    private func importDocument<V: ImportValue>(_ json: V, _ entity: EntityPlan, _ base: [JSONPath.Component], _ session: ImportSession<V>) throws {
        if json.isObject {
            try session.importBatch([json][...], entity: entity, base: base, indexed: false, offset: 0)
        } else if !json.isNull {
            throw ImportError(
                path: JSONPath(base), entity: entity.name,
                message: "expected an object or an array of objects, found \(json.typeName)")
        }
    }

    /// Converts a value (not null) to the attribute's stored value.
    @inline(__always)
    func value<V: ImportValue>(_ json: V, _ kind: DirectKind, for attribute: @autoclosure () -> Attribute) -> Result<Value, Rejection> {
        if let value = json.directValue(kind, iso8601Dates: iso8601Dates) { return .success(value) }
        return value(json.materialize(), for: attribute())
    }

    /// Converts a JSON value (not null) to the attribute's stored value.
    func value(_ json: JSON, for attribute: Attribute) -> Result<Value, Rejection> {
        func mismatch() -> Result<Value, Rejection> {
            .failure(Rejection(.typeMismatch, "expected \(attribute.type), found \(json.typeName) \(json)"))
        }
        func invalid(_ why: String) -> Result<Value, Rejection> { .failure(Rejection(.invalidValue, why)) }
        func integer(_ range: ClosedRange<Int64>) -> Result<Value, Rejection> {
            guard case .int = json, let i = json.int64Value else {
                if case .double(let d) = json, let i = Int64(exactly: d), range.contains(i) { return .success(.int(i)) }
                return json.doubleValue != nil ? invalid("\(json) is not an integer") : mismatch()
            }
            return range.contains(i) ? .success(.int(i)) : invalid("\(i) is out of range for \(attribute.type)")
        }
        switch attribute.type {
        case .string:
            if case .string(let s) = json { return .success(.string(s)) }
            return mismatch()
        case .int16: return integer(Int64(Int16.min)...Int64(Int16.max))
        case .int32: return integer(Int64(Int32.min)...Int64(Int32.max))
        case .int64: return integer(Int64.min...Int64.max)
        case .double, .float:
            if let d = json.doubleValue { return .success(.double(d)) }
            return mismatch()
        case .decimal:
            switch json {
            case .int(let i): return .success(.decimal(Decimal(i)))
            case .double(let d): return .success(.decimal(Decimal(string: "\(d)") ?? Decimal(d)))
            case .string(let s):
                if let d = Decimal(string: s, locale: Locale(identifier: "en_US_POSIX")), !s.isEmpty { return .success(.decimal(d)) }
                return invalid("'\(s)' is not a decimal number")
            default: return mismatch()
            }
        case .bool:
            if case .bool(let b) = json { return .success(.bool(b)) }
            return mismatch()
        case .date:
            if let date = dateDecoding.date(from: json) { return .success(.date(date)) }
            switch json {
            case .string, .int, .double: return invalid("\(json) matches none of the date formats")
            default: return mismatch()
            }
        case .data:
            guard case .string(let s) = json else { return mismatch() }
            if let data = Data(base64Encoded: s) { return .success(.data(data)) }
            return invalid("the string is not base64")
        case .uuid:
            guard case .string(let s) = json else { return mismatch() }
            if let uuid = UUID(uuidString: s) { return .success(.uuid(uuid)) }
            return invalid("'\(s)' is not a UUID")
        case .url:
            guard case .string(let s) = json else { return mismatch() }
            if let url = URL(string: s) { return .success(.url(url)) }
            return invalid("'\(s)' is not a URL")
        case .transformable(let name):
            do {
                return .success(try transformers[name]!.value(from: json))
            } catch {
                return invalid("transformer '\(name)' rejected \(json): \(error)")
            }
        }
    }

    struct Rejection: Error {
        let problem: ImportDiagnostic.Problem
        let message: String
        init(_ problem: ImportDiagnostic.Problem, _ message: String) {
            self.problem = problem
            self.message = message
        }
    }
}

/// One entity's mapping prepared for an import: keys as bytes, destinations by ordinal.
final class EntityPlan: Sendable {
    let mapping: EntityMapping
    /// Position in ``Importer/plans`` (entity names sorted).
    let ordinal: Int
    let attributeKeys: [[ImportKey]]
    let identityKeys: [[ImportKey]]
    let relationshipKeys: [[ImportKey]]
    let foreignKeys: [ImportKey]
    /// The ordinal of each relationship's destination (nil when it is not mapped).
    let destinations: [Int?]

    var name: String { mapping.name }

    /// Names of the mapped attributes, by position (the columns of inserts and lookups).
    let attributeNames: [String]
    /// How each mapped attribute's values convert, by position.
    let directKinds: [DirectKind]
    /// Positions of the to-one relationships with a mapped destination: linked with the row on insert.
    let toOne: [Int]
    /// The first key of every key path above; the fields below index into it.
    let keyTable: KeyTable
    let attributeFields: [Field]
    let identityFields: [Field]
    let relationshipFields: [Field]
    let foreignKeyFields: [Field]

    /// A key path as read from an object matched against ``keyTable``: the first key's index,
    /// then the rest of the path (usually empty).
    struct Field: Sendable {
        let key: Int
        let rest: [ImportKey]
    }

    /// The plans of every entity of `mapping`, by ordinal (entity names sorted). Computed once,
    /// when the client is built.
    static func plans(for mapping: Mapping) -> ImportPlans {
        let names = mapping.entities.keys.sorted()
        var index: [String: Int] = [:]
        for (ordinal, name) in names.enumerated() { index[name] = ordinal }
        let plans = names.enumerated().map { ordinal, name in EntityPlan(mapping[name]!, ordinal: ordinal, index: index) }
        // Insert order: the destinations of to-one relationships before their sources, so that a
        // new object's to-one targets have ids when it is inserted (a cycle is broken anywhere;
        // its links are then set after the inserts).
        var order: [Int] = []
        var state = [UInt8](repeating: 0, count: plans.count)  // 0 new, 1 visiting, 2 done
        func visit(_ ordinal: Int) {
            guard state[ordinal] == 0 else { return }
            state[ordinal] = 1
            for r in plans[ordinal].toOne { if let d = plans[ordinal].destinations[r] { visit(d) } }
            state[ordinal] = 2
            order.append(ordinal)
        }
        for ordinal in plans.indices { visit(ordinal) }
        return ImportPlans(plans: plans, index: index, insertOrder: order)
    }

    init(_ mapping: EntityMapping, ordinal: Int, index: [String: Int]) {
        func keys(_ path: JSONKeyPath) -> [ImportKey] { path.components.map(ImportKey.init) }
        self.mapping = mapping
        self.ordinal = ordinal
        attributeKeys = mapping.attributes.map { keys($0.keyPath) }
        identityKeys = mapping.identity.map { keys($0.keyPath) }
        relationshipKeys = mapping.relationships.map { keys($0.keyPath) }
        foreignKeys = mapping.relationships.map { ImportKey($0.foreignKey) }
        let destinations = mapping.relationships.map { index[$0.relationship.destination] }
        self.destinations = destinations
        attributeNames = mapping.attributes.map(\.name)
        directKinds = mapping.attributes.map { DirectKind($0.type) }
        var firstKeys: [ImportKey] = []
        var firstIndex: [String: Int] = [:]
        func field(_ path: [ImportKey]) -> Field {
            let first = path[0]
            if firstIndex[first.string] == nil {
                firstIndex[first.string] = firstKeys.count
                firstKeys.append(first)
            }
            return Field(key: firstIndex[first.string]!, rest: Array(path.dropFirst()))
        }
        attributeFields = attributeKeys.map(field)
        identityFields = identityKeys.map(field)
        relationshipFields = relationshipKeys.map(field)
        foreignKeyFields = foreignKeys.map { field([$0]) }
        keyTable = KeyTable(firstKeys)
        toOne = mapping.relationships.indices.filter { !mapping.relationships[$0].relationship.isToMany && destinations[$0] != nil }
    }
}

/// Every entity's ``EntityPlan``, computed once per client.
struct ImportPlans: Sendable {
    /// By ordinal (entity names sorted).
    let plans: [EntityPlan]
    let index: [String: Int]
    /// Ordinals in the order new objects are inserted: to-one destinations first.
    let insertOrder: [Int]
}

/// The mutable state of one import: slots for every object touched, the identity map, pending
/// links and the result. Lives inside one store transaction.
final class ImportSession<V: ImportValue> {
    private let importer: Importer
    private let writer: any StoreWriter
    private let plans: [EntityPlan]

    /// One slot per distinct object touched by the import.
    private struct Slot {
        /// The entity's ordinal.
        let entity: Int
        var id: ObjectID?
        /// Values as stored, by attribute position (nil for an object created by this import, until
        /// it is inserted).
        var stored: [Value?]?
        /// Values after applying the payload so far, by attribute position in `entity.attributes`.
        var values: [Value?]
        /// Some value was set to something other than what the slot held.
        var dirty = false
        var attributesChanged = false
        var linksChanged = false
        var inserted = false
    }

    private enum LinkTarget {
        case slot(Int)
        case identity(IdentityKey)
    }

    private struct PendingLink {
        let slot: Int
        let relationship: RelationshipMapping
        /// The destination entity's ordinal.
        let destination: Int
        var targets: [LinkTarget]
        /// An id list (foreign keys) rather than nested objects: unknown ids are ignored.
        let byReference: Bool
    }

    // Per batch: slots, the identity map and pending links start empty for every batch, so memory
    // is bounded by the batch, not the payload. Later batches find earlier ones in the store.
    private var slots: [Slot] = []
    /// entity ordinal -> identity -> slot
    private var identityMap: [[IdentityKey: Int]]
    private var batchSlots: [Int] = []
    private var topLevelSlots: [Int] = []
    private var links: [PendingLink] = []
    private var linkIndex: [LinkKey: Int] = [:]
    private var path: [JSONPath.Component] = []
    /// The matched members of the objects being applied (a stack: nested objects push theirs).
    private var found: [V?] = []

    // Across batches: what the result reports. One small entry per object touched: its status in
    // the low bits, and whether it is already listed as a top-level object, by entity ordinal and
    // row id (about a byte per object); the lists keep runs of consecutive row ids.
    private static var unchanged: UInt8 { 0 }
    private static var updated: UInt8 { 1 }
    private static var inserted: UInt8 { 2 }
    private static var statusMask: UInt8 { 3 }
    private static var listedAtTopLevel: UInt8 { 0x80 }
    private var status: [RowStatusMap]
    private var order = ObjectIDList()
    private var topLevel = ObjectIDList()
    private var diagnostics: [ImportDiagnostic] = []

    private struct LinkKey: Hashable {
        let slot: Int
        /// The relationship's position in its entity's mapping.
        let relationship: Int
    }

    init(importer: Importer, writer: any StoreWriter) {
        self.importer = importer
        self.writer = writer
        self.plans = importer.plans
        self.identityMap = Array(repeating: [:], count: importer.plans.count)
        self.status = Array(repeating: RowStatusMap(), count: importer.plans.count)
    }

    // MARK: Batches

    func importBatch(_ elements: ArraySlice<V>, entity: EntityPlan, base: [JSONPath.Component], indexed: Bool, offset: Int) throws {
        // 1. collect
        var wanted: [Set<IdentityKey>] = Array(repeating: [], count: plans.count)
        for (i, element) in elements.enumerated() {
            if element.isObject {
                collect(element, entity, into: &wanted)
            } else if !element.isNull {
                path = base + (indexed ? [.index(offset + i)] : [])
                throw ImportError(path: JSONPath(path), entity: entity.name, message: "expected an object, found \(element.typeName)")
            }
        }
        // 2. resolve: one lookup per entity (in name order)
        slots = []
        identityMap = Array(repeating: [:], count: plans.count)
        batchSlots = []
        topLevelSlots = []
        for plan in plans where !wanted[plan.ordinal].isEmpty {
            let keys = Array(wanted[plan.ordinal])
            let found = try writer.find(plan.name, identities: keys, attributes: plan.attributeNames)
            var map: [IdentityKey: Int] = [:]
            map.reserveCapacity(keys.count)
            for (key, row) in zip(keys, found) {
                guard let row else { continue }
                slots.append(Slot(entity: plan.ordinal, id: row.id, stored: row.values, values: row.values))
                map[key] = slots.count - 1
            }
            identityMap[plan.ordinal] = map
        }
        // 3. apply
        for (i, element) in elements.enumerated() {
            guard element.isObject else { continue }  // null entries are ignored
            path = base + (indexed ? [.index(offset + i)] : [])
            if let slot = try apply(element, entity) { topLevelSlots.append(slot) }
        }
        // 4. write
        try writeBatch()
        recordBatch()
    }

    /// Folds the batch's slots into the result: first-touch order, strongest status wins.
    private func recordBatch() {
        var seen = [Bool](repeating: false, count: slots.count)
        for slot in batchSlots where !seen[slot] {
            seen[slot] = true
            guard let id = slots[slot].id else { continue }
            let entity = slots[slot].entity
            let now = slots[slot].inserted ? Self.inserted
                : (slots[slot].attributesChanged || slots[slot].linksChanged) ? Self.updated : Self.unchanged
            if let before = status[entity][id.rowID] {
                if now > before & Self.statusMask { status[entity][id.rowID] = (before & ~Self.statusMask) | now }
            } else {
                status[entity][id.rowID] = now
                order.append(id)
            }
        }
        for slot in topLevelSlots {
            let entity = slots[slot].entity
            guard let id = slots[slot].id, let entry = status[entity][id.rowID], entry & Self.listedAtTopLevel == 0 else { continue }
            status[entity][id.rowID] = entry | Self.listedAtTopLevel
            topLevel.append(id)
        }
        slots = []
        identityMap = Array(repeating: [:], count: plans.count)
        batchSlots = []
        topLevelSlots = []
    }

    private func collect(_ members: V, _ entity: EntityPlan, into wanted: inout [Set<IdentityKey>]) {
        if let key = identityKey(members, entity) { wanted[entity.ordinal].insert(key) }
        for r in entity.mapping.relationships.indices {
            guard let d = entity.destinations[r] else { continue }
            let destination = plans[d]
            if let nested = lookup(members, entity.relationshipKeys[r]) {
                if nested.isObject {
                    collect(nested, destination, into: &wanted)
                } else if nested.isArray {
                    for element in nested.elements {
                        if element.isObject {
                            collect(element, destination, into: &wanted)
                        } else if let key = referenceKey(element, destination) {
                            wanted[d].insert(key)
                        }
                    }
                } else if let key = referenceKey(nested, destination) {
                    wanted[d].insert(key)
                }
            } else if let reference = members.member(entity.foreignKeys[r]) {
                for element in reference.isArray ? reference.elements : [reference] {
                    if let key = referenceKey(element, destination) { wanted[d].insert(key) }
                }
            }
        }
    }

    // MARK: Apply

    /// Merges one JSON object into its slot; returns the slot, or nil when the object was skipped.
    private func apply(_ members: V, _ plan: EntityPlan) throws -> Int? {
        let entity = plan.mapping
        // Match the object's members to the mapping in one walk.
        let base = found.count
        found.append(contentsOf: repeatElement(nil, count: plan.keyTable.count))
        members.members(plan.keyTable, into: &found, at: base)
        defer { found.removeLast(plan.keyTable.count) }

        let slot: Int
        if entity.identity.isEmpty {
            slots.append(Slot(entity: plan.ordinal, id: nil, stored: nil, values: Array(repeating: nil, count: entity.attributes.count)))
            slot = slots.count - 1
        } else {
            guard let key = identityKey(plan, base) else {
                let attribute = entity.identity.count == 1 ? entity.identity[0] : nil
                if let attribute { path.append(contentsOf: attribute.keyPath.components.map { .key($0) }) }
                let missing = entity.identity.map { "'\($0.keyPath)'" }.joined(separator: ", ")
                try report(plan, attribute?.name, .missingIdentity, .objectSkipped,
                           "the object has no usable identity (\(missing) missing, null or not convertible)")
                if let attribute { path.removeLast(attribute.keyPath.components.count) }
                return nil
            }
            if let existing = identityMap[plan.ordinal][key] {
                slot = existing
            } else {
                slots.append(Slot(entity: plan.ordinal, id: nil, stored: nil, values: Array(repeating: nil, count: entity.attributes.count)))
                slot = slots.count - 1
                identityMap[plan.ordinal][key] = slot
            }
        }
        batchSlots.append(slot)

        // Attributes: missing keys leave values alone, null clears, wrong types are reported.
        // The slot's values are moved out while they change, so they are changed in place.
        var values: [Value?] = []
        swap(&values, &slots[slot].values)
        var dirty = false
        for position in plan.attributeFields.indices {
            guard let json = value(of: plan.attributeFields[position], base) else { continue }
            if json.isNull {
                if values[position] != nil {
                    values[position] = nil
                    dirty = true
                }
                continue
            }
            switch importer.value(json, plan.directKinds[position], for: entity.attributes[position].attribute) {
            case .success(let value):
                if values[position] != value {
                    values[position] = value
                    dirty = true
                }
            case .failure(let rejection):
                let attribute = entity.attributes[position]
                path.append(contentsOf: attribute.keyPath.components.map { .key($0) })
                try report(plan, attribute.name, rejection.problem, .valueSkipped, rejection.message)
                path.removeLast(attribute.keyPath.components.count)
            }
        }
        swap(&values, &slots[slot].values)
        if dirty { slots[slot].dirty = true }

        // Relationships: nested objects first, then id references.
        for (r, relationship) in entity.relationships.enumerated() {
            guard let d = plan.destinations[r] else { continue }
            let destination = plans[d]
            if let nested = value(of: plan.relationshipFields[r], base) {
                path.append(contentsOf: relationship.keyPath.components.map { .key($0) })
                defer { path.removeLast(relationship.keyPath.components.count) }
                try applyNested(nested, slot: slot, relationship, r, destination, plan)
            } else if let reference = value(of: plan.foreignKeyFields[r], base) {
                path.append(.key(relationship.foreignKey))
                defer { path.removeLast() }
                try applyReference(reference, slot: slot, relationship, r, destination, plan)
            }
        }
        return slot
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

    private func applyNested(
        _ nested: V, slot: Int, _ relationship: RelationshipMapping, _ position: Int, _ destination: EntityPlan, _ entity: EntityPlan
    ) throws {
        let toMany = relationship.relationship.isToMany
        if nested.isNull {
            setLink(slot, relationship, position, destination, [], byReference: false)
        } else if nested.isObject && !toMany {
            if let childSlot = try apply(nested, destination) {
                setLink(slot, relationship, position, destination, [.slot(childSlot)], byReference: false)
            }
        } else if nested.isArray && toMany {
            var targets: [LinkTarget] = []
            var byReference = false
            for (i, element) in nested.elements.enumerated() {
                path.append(.index(i))
                defer { path.removeLast() }
                if element.isNull {
                    continue
                } else if element.isObject {
                    if let childSlot = try apply(element, destination) { targets.append(.slot(childSlot)) }
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
            setLink(slot, relationship, position, destination, targets, byReference: byReference)
        } else {
            if let key = referenceKey(nested, destination), !toMany {
                setLink(slot, relationship, position, destination, [.identity(key)], byReference: true)
            } else {
                try report(entity, relationship.name, .invalidRelationship, .valueSkipped,
                           "expected \(toMany ? "an array of \(destination.name) objects" : "a \(destination.name) object"), found \(nested.typeName)")
            }
        }
    }

    private func applyReference(
        _ reference: V, slot: Int, _ relationship: RelationshipMapping, _ position: Int, _ destination: EntityPlan, _ entity: EntityPlan
    ) throws {
        let toMany = relationship.relationship.isToMany
        if reference.isNull {
            setLink(slot, relationship, position, destination, [], byReference: false)
        } else if reference.isArray && toMany {
            var keys: [LinkTarget] = []
            for (i, element) in reference.elements.enumerated() where !element.isNull {
                if let key = referenceKey(element, destination) {
                    keys.append(.identity(key))
                } else {
                    path.append(.index(i))
                    defer { path.removeLast() }
                    try report(entity, relationship.name, .invalidRelationship, .valueSkipped,
                               "expected an id of \(destination.name), found \(element.typeName) \(element.materialize())")
                }
            }
            setLink(slot, relationship, position, destination, keys, byReference: !keys.isEmpty)
        } else {
            if !toMany, let key = referenceKey(reference, destination) {
                setLink(slot, relationship, position, destination, [.identity(key)], byReference: true)
            } else {
                try report(entity, relationship.name, .invalidRelationship, .valueSkipped,
                           "expected \(toMany ? "an array of ids" : "an id") of \(destination.name), found \(reference.typeName)")
            }
        }
    }

    private func setLink(_ slot: Int, _ relationship: RelationshipMapping, _ position: Int, _ destination: EntityPlan, _ targets: [LinkTarget], byReference: Bool) {
        let key = LinkKey(slot: slot, relationship: position)
        let link = PendingLink(slot: slot, relationship: relationship, destination: destination.ordinal, targets: targets, byReference: byReference)
        if let index = linkIndex[key] {
            links[index] = link
        } else {
            linkIndex[key] = links.count
            links.append(link)
        }
    }
    // MARK: Write

    private func writeBatch() throws {
        // Attribute updates of stored objects, once per object, grouped by entity and by the
        // attributes that changed (one update batch each); new objects are gathered by entity.
        var seen = [Bool](repeating: false, count: slots.count)
        var newSlots = [[Int]](repeating: [], count: plans.count)
        var updates: [UpdateGroup: UpdateBatch] = [:]
        var updateOrder: [UpdateGroup] = []
        for slot in batchSlots where !seen[slot] {
            seen[slot] = true
            guard let stored = slots[slot].stored else {
                newSlots[slots[slot].entity].append(slot)
                continue
            }
            guard slots[slot].dirty else { continue }
            slots[slot].dirty = false
            let values = slots[slot].values
            guard values != stored else { continue }
            let positions = values.indices.filter { values[$0] != stored[$0] }
            let group = UpdateGroup(entity: slots[slot].entity, positions: positions)
            if updates[group] == nil {
                let plan = plans[group.entity]
                updates[group] = UpdateBatch(entity: plan.name, attributes: positions.map { plan.attributeNames[$0] })
                updateOrder.append(group)
            }
            updates[group]!.append(slots[slot].id!, positions.lazy.map { values[$0] })
            slots[slot].stored = values
            slots[slot].attributesChanged = true
        }
        for group in updateOrder { try writer.update(updates[group]!) }

        // Relationships (by source entity and name) that have pending links in this batch.
        var pendingRelationships = Set<RelationshipKey>()
        for link in links {
            pendingRelationships.insert(RelationshipKey(entity: plans[slots[link.slot].entity].name, name: link.relationship.name))
        }

        // New objects, one batch insert per entity, to-one destinations first: a to-one link
        // whose target already has an id is written with the row (unless the inverse side is also
        // set in this batch: then links are applied in payload order below).
        var linkedOnInsert = [Bool](repeating: false, count: links.count)
        for ordinal in importer.insertOrder where !newSlots[ordinal].isEmpty {
            let plan = plans[ordinal]
            let relationships = plan.toOne.filter { r in
                let relationship = plan.mapping.relationships[r].relationship
                guard let inverse = relationship.inverse else { return true }
                return !pendingRelationships.contains(RelationshipKey(entity: relationship.destination, name: inverse))
            }
            var batch = InsertBatch(entity: plan.name, attributes: plan.attributeNames,
                                    relationships: relationships.map { plan.mapping.relationships[$0].name })
            batch.reserveCapacity(newSlots[ordinal].count)
            var targets = [ObjectID?](repeating: nil, count: relationships.count)
            for slot in newSlots[ordinal] {
                for (k, r) in relationships.enumerated() {
                    targets[k] = nil
                    guard let index = linkIndex[LinkKey(slot: slot, relationship: r)] else { continue }
                    let link = links[index]
                    if link.targets.isEmpty {
                        linkedOnInsert[index] = true  // null: a new object has no link to clear
                    } else if let target = resolve(link.targets[0], link.destination) {
                        targets[k] = target
                        linkedOnInsert[index] = true
                    } else if link.byReference {
                        linkedOnInsert[index] = true  // an id naming nothing stored is ignored
                    }
                }
                batch.append(slots[slot].values, targets: targets)
            }
            let ids = try writer.insert(batch)
            for (slot, id) in zip(newSlots[ordinal], ids) {
                slots[slot].id = id
                slots[slot].stored = slots[slot].values
                slots[slot].inserted = true
            }
        }

        // The other links: resolve targets, read the current links in one call per relationship,
        // and set those that differ.
        var resolved: [(PendingLink, [ObjectID])] = []
        for (index, link) in links.enumerated() where !linkedOnInsert[index] {
            let ids = link.targets.compactMap { resolve($0, link.destination) }
            // Ids that name nothing stored are ignored; if none is left, the link is left alone.
            if link.byReference && ids.isEmpty && !link.targets.isEmpty { continue }
            resolved.append((link, ids))
        }
        links = []
        linkIndex = [:]
        guard !resolved.isEmpty else { return }

        var sourcesByRelationship: [RelationshipKey: [ObjectID]] = [:]
        for (link, _) in resolved {
            let source = slots[link.slot].id!
            sourcesByRelationship[RelationshipKey(entity: source.entity, name: link.relationship.name), default: []].append(source)
        }
        var current: [RelationshipKey: [ObjectID: [ObjectID]]] = [:]
        for (key, sources) in sourcesByRelationship {
            current[key] = try writer.related(key.name, of: sources)
        }
        for (link, ids) in resolved {
            let source = slots[link.slot].id!
            let relationship = link.relationship.relationship
            let before = current[RelationshipKey(entity: source.entity, name: relationship.name)]?[source] ?? []
            let same = relationship.isOrdered || !relationship.isToMany ? before == ids : Set(before) == Set(ids) && before.count == ids.count
            // When both sides of a relationship are set in the same batch, the state read above
            // may be stale by the time this link is applied, so always write.
            let inverseAlsoSet = relationship.inverse.map {
                sourcesByRelationship[RelationshipKey(entity: relationship.destination, name: $0)] != nil
            } ?? false
            if same && !inverseAlsoSet { continue }
            try writer.setRelated(relationship.name, of: source, to: ids)
            if !same { slots[link.slot].linksChanged = true }
        }
    }

    /// The id of a link target, if it has one (stored, or inserted already).
    @inline(__always)
    private func resolve(_ target: LinkTarget, _ destination: Int) -> ObjectID? {
        switch target {
        case .slot(let s): return slots[s].id
        case .identity(let key): return identityMap[destination][key].flatMap { slots[$0].id }
        }
    }

    /// Objects of one entity whose changed attributes are the same.
    private struct UpdateGroup: Hashable {
        let entity: Int
        let positions: [Int]
    }

    private struct RelationshipKey: Hashable {
        let entity: String
        let name: String
    }

    func result() -> ImportResult {
        var result = ImportResult()
        result.objects = topLevel
        var entity = (name: "", ordinal: 0)
        for id in order {
            if id.entity != entity.name { entity = (id.entity, importer.planIndex[id.entity]!) }
            switch status[entity.ordinal][id.rowID]! & Self.statusMask {
            case Self.inserted: result.inserted.append(id)
            case Self.updated: result.updated.append(id)
            default: result.unchanged.append(id)
            }
        }
        result.diagnostics = diagnostics
        return result
    }

    // MARK: Helpers

    private func report(
        _ entity: EntityPlan, _ attribute: String?, _ problem: ImportDiagnostic.Problem, _ action: ImportDiagnostic.Action,
        _ message: String
    ) throws {
        let diagnostic = ImportDiagnostic(
            path: JSONPath(path), entity: entity.name, attribute: attribute, problem: problem, action: action, message: message)
        if importer.options.policy == .fail { throw ImportError(diagnostic) }
        diagnostics.append(diagnostic)
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

    private func identityKey(_ members: V, _ plan: EntityPlan) -> IdentityKey? {
        let identity = plan.mapping.identity
        guard !identity.isEmpty else { return nil }
        if identity.count == 1 {
            guard let json = lookup(members, plan.identityKeys[0]),
                let value = importer.identity.identityValue(from: json.materialize(), for: identity[0].attribute)
            else { return nil }
            return IdentityKey(value)
        }
        var values: [Value] = []
        for (k, attribute) in identity.enumerated() {
            guard let json = lookup(members, plan.identityKeys[k]),
                let value = importer.identity.identityValue(from: json.materialize(), for: attribute.attribute)
            else { return nil }
            values.append(value)
        }
        return IdentityKey(values)
    }

    /// The identity of the object whose members were matched at `base` of ``found``.
    private func identityKey(_ plan: EntityPlan, _ base: Int) -> IdentityKey? {
        let identity = plan.mapping.identity
        if identity.count == 1 {
            guard let json = value(of: plan.identityFields[0], base), !json.isNull,
                let value = importer.identity.identityValue(from: json.materialize(), for: identity[0].attribute)
            else { return nil }
            return IdentityKey(value)
        }
        var values: [Value] = []
        for (k, attribute) in identity.enumerated() {
            guard let json = value(of: plan.identityFields[k], base), !json.isNull,
                let value = importer.identity.identityValue(from: json.materialize(), for: attribute.attribute)
            else { return nil }
            values.append(value)
        }
        return IdentityKey(values)
    }

    /// The identity a scalar id names in `destination` (single-attribute identities only).
    private func referenceKey(_ json: V, _ destination: EntityPlan) -> IdentityKey? {
        guard destination.mapping.identity.count == 1, !json.isObject, !json.isArray, !json.isNull else { return nil }
        return importer.identity.identityValue(from: json.materialize(), for: destination.mapping.identity[0].attribute).map(IdentityKey.init)
    }
}
