import Foundation

/// The import engine: JSON objects -> uniqued, wired objects in one store transaction.
///
/// Data flows one way, in batches of top-level objects (``ImportOptions/batchSize``):
/// 1. **map** (``BatchMapper``): walk the batch, gathering every object once per identity with
///    the values the payload gives it, converted and checked against the schema, and its links
///    (nested objects, `owner_id`, `label_ids`); the store is not read;
/// 2. **resolve** (``ImportSession``, from here on): one ``StoreReader/compare(_:)`` call per
///    entity finds what is stored and which of the values the payload gives differ from it;
/// 3. **merge**: a stored object keeps the stored values of the attributes the payload did not
///    give, and takes the given values that differ;
/// 4. **write**: update changed objects (one ``UpdateBatch`` per entity and set of changed
///    attributes), insert new ones (one ``InsertBatch`` per entity, to-one destinations first,
///    to-one links written with the row), and set the other changed relationships;
/// 5. **record** what each object became, for the ``ImportResult``.
///
/// Imports of bytes and files read and map the next batch on a second thread while the last one
/// goes through steps 2 to 5 (``readAhead(produce:consume:)``): step 1 touches neither the store
/// nor the session.
struct Importer: Sendable {
    let schema: Schema
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
    /// Where the client keeps the objects imports remember for the next (``RememberedObjects``);
    /// nil when this import neither takes nor leaves any.
    let memory: RememberedSlot?
    /// What the client remembered when this import was made.
    private let carried: RememberedObjects?
    /// What this import leaves remembered, until its transaction has committed.
    private let left = RememberedSlot()
    /// The client, when it writes local-first: its queued changes are kept over what the import
    /// brings (``OutboxRebase``).
    let localFirst: Client?

    /// An import of `client`'s mapping with `options`. With `remembering`, the import takes the
    /// objects the client's last import remembered, if its transaction begins from the state that
    /// one committed, and leaves its own: its `run` must be the first write of its transaction,
    /// and the caller calls ``keepRemembered()`` once the transaction has committed.
    init(client: Client, options: ImportOptions, remembering: Bool = false) throws {
        let remembers = remembering && RememberedObjects.allowed(by: options)
        memory = remembers ? client.importMemory : nil
        carried = remembers ? client.importMemory.current : nil
        schema = client.schema
        mapping = client.mapping
        identity = client.identityStrategy
        dateDecoding = client.dateDecoding
        transformers = client.transformers
        self.options = options
        iso8601Dates = dateDecoding.formats.first?.isISO8601 == true
        (plans, planIndex, insertOrder) = (client.importPlans.plans, client.importPlans.index, client.importPlans.insertOrder)
        localFirst = client.outboxOptions != nil ? client : nil
    }

    /// Imports `payloads` in one session. `included` (a document's objects beside its primary
    /// data: JSON:API's `included`) are imported first, in the same session, so that the primary
    /// data's links to them resolve at once; they are never deleted for missing, and the result's
    /// ``ImportResult/objects`` are the payloads' alone (its other lists cover both).
    /// `reported` are what the document format left out of the payloads (``Document/diagnostics``):
    /// they open the result's diagnostics, and under ``ImportOptions/Policy/fail`` the first is
    /// the error, before anything is written.
    func run<V: ImportValue>(
        _ payloads: [(entity: String, json: V)], including included: [(entity: String, json: V)] = [],
        reported: [ImportDiagnostic] = [], in writer: any StoreWriter
    ) throws -> ImportResult {
        if options.policy == .fail, let first = reported.first { throw ImportError(first) }
        let remembered = remembered(in: writer)
        let session = ImportSession(importer: self, writer: writer, rememberedRows: remembered?.rows)
        var mapper = BatchMapper<V>(importer: self, earlierTexts: remembered?.texts)
        let all = included + payloads
        var includedObjects = 0
        for (index, payload) in all.enumerated() {
            if index == included.count { includedObjects = session.topLevelCount }
            let entity = try entityPlan(payload.entity)
            try checkOptions(topLevel: entity.name)
            let base: [JSONPath.Component] = all.count > 1 ? [.key(payload.entity)] : []
            if options.deleteMissing != nil, index >= included.count, !payload.json.isArray {
                throw ImportError(path: JSONPath(base), entity: entity.name, message: Self.notAList(payload.json.typeName))
            }
            if payload.json.isArray {
                let elements = payload.json.elements
                var start = 0
                while start < elements.count {
                    let end = min(elements.count, start + options.batchSize)
                    var mapped = try mapper.map(elements[start..<end], entity: entity, base: base, indexed: true, offset: start)
                    try session.write(&mapped)
                    start = end
                }
            } else if var mapped = try mapDocument(payload.json, entity, base, &mapper) {
                try session.write(&mapped)
            }
        }
        var result = try finish(session, mapper, deletingMissingOf: payloads.map(\.entity), in: writer)
        if includedObjects > 0 { result.objects = ObjectIDList(result.objects.dropFirst(includedObjects)) }
        if !reported.isEmpty { result.diagnostics = reported + result.diagnostics }
        return result
    }

    /// What the client's last import remembered, if this import may take it: its transaction
    /// begins from the state that import committed, and it converts values alike.
    func remembered(in writer: any StoreWriter) -> RememberedObjects? {
        guard let carried, let version = writer.version, carried.version == version, carried.coercion == options.coercion else { return nil }
        return carried
    }

    /// Finishes the import (deleting what its options delete) and leaves what it remembered for
    /// the next import, unless it deleted anything.
    func finish<V: ImportValue>(_ session: ImportSession, _ mapper: BatchMapper<V>, deletingMissingOf entities: [String], in writer: any StoreWriter) throws -> ImportResult {
        let rebase = try OutboxRebase(client: localFirst, reader: writer)
        try session.finish(deletingMissingOf: entities, sparing: rebase?.spared ?? [])
        let rebased = try rebase?.apply(in: writer)
        if memory != nil, let version = writer.version, !session.deletedAny, rebased?.changed != true {
            left.set(RememberedObjects(version: version.next, coercion: options.coercion, texts: mapper.earlierTexts, rows: session.rememberedRows))
        }
        guard let gone = rebased?.deleted, !gone.isEmpty else { return session.result() }
        // Deleted locally and queued: not part of what the import gives.
        var result = session.result()
        result.objects = ObjectIDList(result.objects.filter { !gone.contains($0) })
        result.inserted = ObjectIDList(result.inserted.filter { !gone.contains($0) })
        result.updated = ObjectIDList(result.updated.filter { !gone.contains($0) })
        result.unchanged = ObjectIDList(result.unchanged.filter { !gone.contains($0) })
        return result
    }

    /// Keeps what this import remembered in the client, once its transaction has committed.
    func keepRemembered() {
        if let memory, let remembered = left.take() { memory.set(remembered) }
    }

    static func notAList(_ found: String) -> String {
        "expected an array: deleteMissing deletes what a list does not hold, and the payload is \(found == "object" ? "one object" : found), not a list"
    }

    /// Imports the bytes of a JSON document. A top-level array is read onto a tape one batch at a
    /// time, in one pass over the bytes, so the tape holds one batch's entries; any other document
    /// is read whole. When the first batch is not the last, the others are read and mapped on a
    /// second thread while each is written. A syntax error anywhere is the error, whatever
    /// went wrong in an earlier batch (so the error does not depend on the batch size), unless
    /// the import was cancelled.
    ///
    /// `payload` finds what to import in a top-level object (the entity's response shape: the
    /// array of an envelope, or the object itself), on the tape, so that an enveloped list is
    /// read without a ``JSON`` tree.
    func run(
        bytes: UnsafeBufferPointer<UInt8>, as entityName: String, in writer: any StoreWriter, payload: ((TapeValue) throws -> TapeValue)? = nil
    ) throws -> ImportResult {
        do {
            return try runTape(bytes: bytes, as: entityName, in: writer, payload: payload)
        } catch let error where !(error is JSONParseError || error is CancellationError) {
            try JSONParser.validate(bytes: bytes)
            throw error
        }
    }

    private func runTape(
        bytes: UnsafeBufferPointer<UInt8>, as entityName: String, in writer: any StoreWriter, payload: ((TapeValue) throws -> TapeValue)?
    ) throws -> ImportResult {
        guard var reader = JSONTape.ArrayReader(bytes) else {
            let tape = try JSONTape(parsing: bytes)
            return try tape.withRoots(bytes: bytes) { roots in try run([(entityName, payload?(roots[0]) ?? roots[0])], in: writer) }
        }
        let entity = try entityPlan(entityName)
        try checkOptions(topLevel: entityName)
        let remembered = remembered(in: writer)
        let session = ImportSession(importer: self, writer: writer, totalBytes: bytes.count, rememberedRows: remembered?.rows)
        var mapper = BatchMapper<TapeValue>(importer: self, earlierTexts: remembered?.texts)
        var sizes = BatchSizes(options.batchSize)
        var tape = JSONTape()
        var first = 0
        var last = false
        /// The next batch, mapped; nil at the end of the array.
        func next() throws -> MappedBatch? {
            let size = sizes.next()
            let count = try reader.read(size, into: &tape)
            guard count > 0 else { return nil }
            defer { first += count }
            last = count < size
            var mapped = try tape.withRoots(bytes: bytes) { roots in
                try mapper.map(roots[...], entity: entity, base: [], indexed: true, offset: first)
            }
            mapped.bytesEnd = reader.bytesRead
            return mapped
        }
        guard let head = try next() else {
            return try finish(session, mapper, deletingMissingOf: [entityName], in: writer)
        }
        if last {
            var only = head
            try session.write(&only)
            return try finish(session, mapper, deletingMissingOf: [entityName], in: writer)
        }
        // Handed over, not kept: the closure must not hold the first batch for the whole import.
        var pending: MappedBatch? = consume head
        try readAhead(produce: { emit in
            if let batch = pending {
                pending = nil
                try emit(batch)
            }
            while let batch = try next() { try emit(batch) }
        }, consume: session.write)
        return try finish(session, mapper, deletingMissingOf: [entityName], in: writer)
    }

    /// Streams the top-level array of a file through the import, one batch at a time: each
    /// element is checked onto the batch's tape as it arrives, and a full batch is mapped. The
    /// file is read and mapped on a second thread while each batch is written. A syntax error
    /// anywhere is the error, as for bytes.
    func run(_ stream: JSONStream, as entityName: String, in writer: any StoreWriter) throws -> ImportResult {
        do {
            return try runStream(stream, as: entityName, in: writer)
        } catch let error where !(error is JSONParseError || error is CancellationError) {
            try stream.validate()
            throw error
        }
    }

    private func runStream(_ stream: JSONStream, as entityName: String, in writer: any StoreWriter) throws -> ImportResult {
        let entity = try entityPlan(entityName)
        try checkOptions(topLevel: entityName)
        let remembered = remembered(in: writer)
        let session = ImportSession(importer: self, writer: writer, totalBytes: options.progress == nil ? nil : stream.size,
                                    rememberedRows: remembered?.rows)
        var mapper = BatchMapper<TapeValue>(importer: self, earlierTexts: remembered?.texts)
        let batchSize = options.batchSize
        let deletesMissing = options.deleteMissing != nil
        try readAhead(produce: { emit in
            var sizes = BatchSizes(batchSize)
            var size = sizes.next()
            var tape = JSONTape()
            var bytes: [UInt8] = []
            var first = 0
            var end = 0  // the file offset after the last element taken
            func flush() throws {
                var batch = try bytes.withUnsafeBufferPointer { buffer in
                    try tape.withRoots(bytes: buffer) { roots in
                        try mapper.map(roots[...], entity: entity, base: [], indexed: true, offset: first)
                    }
                }
                batch.bytesEnd = end
                tape.removeAll()
                bytes.removeAll(keepingCapacity: true)
                size = sizes.next()
                try emit(batch)
            }
            /// Keeps the bytes of element `index`, just appended to the tape, and maps a full batch.
            func appended(_ element: UnsafeBufferPointer<UInt8>, _ index: Int) throws {
                if tape.roots.count == 1 { first = index }
                bytes.append(contentsOf: element)
                if tape.roots.count == size { try flush() }
            }
            // An element is parsed onto the tape straight from the file's buffer when it can be
            // (one pass); otherwise its end is found first and it is parsed on its own.
            func take(_ buffered: UnsafeBufferPointer<UInt8>, _ fileOffset: Int, _ index: Int) throws -> Int? {
                guard let length = tape.appendElement(prefixOf: buffered, offset: bytes.count) else { return nil }
                end = fileOffset + length
                try appended(UnsafeBufferPointer(rebasing: buffered[..<length]), index)
                return length
            }
            try stream.forEachElementBytes(take: take) { element, fileOffset, index in
                guard let index else {
                    if deletesMissing { throw ImportError(path: .root, entity: entity.name, message: Self.notAList("one object")) }
                    var document = JSONTape()
                    try document.append(element, offset: 0, errorOffset: fileOffset)
                    var batch = try document.withRoots(bytes: element) { roots in try mapDocument(roots[0], entity, [], &mapper) }
                    batch?.bytesEnd = fileOffset + element.count
                    if let batch { try emit(batch) }
                    return
                }
                try tape.append(element, offset: bytes.count, errorOffset: fileOffset)
                end = fileOffset + element.count
                try appended(element, index)
            }
            if !tape.roots.isEmpty { try flush() }
        }, consume: session.write)
        return try finish(session, mapper, deletingMissingOf: [entityName], in: writer)
    }

    /// The sizes of the batches of an array read from bytes or a file: an eighth of
    /// ``ImportOptions/batchSize``, a quarter, a half, then the whole from the fourth batch on
    /// (each at least 1: with a batch size of 4, batches of 1, 2, 4, 4, …). Nothing is written
    /// until the first batch is mapped, so a small first batch starts the writing thread early.
    struct BatchSizes {
        private let full: Int
        private var current: Int

        init(_ batchSize: Int) {
            full = batchSize
            current = max(1, batchSize / 8)
        }

        mutating func next() -> Int {
            defer { current = min(full, current * 2) }
            return current
        }
    }

    /// A tombstone resolved against the mapping: the keys of its key path and the marking values.
    struct TombstoneRule: Sendable {
        let keys: [ImportKey]
        let values: [JSON]
    }

    /// By entity ordinal: the tombstones that apply to its objects when `imported` (an ordinal)
    /// is the top-level entity. Checked by ``checkOptions()``.
    func tombstoneRules(imported: Int) -> [[TombstoneRule]] {
        guard !options.tombstones.isEmpty else { return [] }
        var rules = [[TombstoneRule]](repeating: [], count: plans.count)
        for tombstone in options.tombstones {
            guard let ordinal = tombstone.entity.map({ planIndex[$0] }) ?? imported else { continue }
            rules[ordinal].append(TombstoneRule(keys: tombstone.keyPath.components.map(ImportKey.init), values: tombstone.values))
        }
        return rules
    }

    /// Options that cannot be honoured are errors before anything is read.
    func checkOptions(topLevel entity: String) throws {
        for tombstone in options.tombstones {
            let name = tombstone.entity ?? entity
            guard let plan = planIndex[name].map({ plans[$0] }) else {
                throw ImportError(path: .root, entity: name, message: "a tombstone names unknown entity '\(name)'")
            }
            guard !plan.mapping.identity.isEmpty else {
                throw ImportError(path: .root, entity: name, message: "a tombstone for \(name), whose objects have no identity: nothing could be deleted")
            }
        }
        if let (name, owner) = options.deleteMissing?.parent {
            guard let relationship = mapping[owner.entity]?.entity.relationship(named: name) else {
                throw ImportError(path: .root, entity: owner.entity, attribute: name,
                                  message: "deleteMissing is scoped to \(owner.entity).\(name), which is not a relationship")
            }
            guard relationship.destination == entity else {
                throw ImportError(path: .root, entity: entity, attribute: name,
                                  message: "deleteMissing is scoped to \(owner.entity).\(name), whose objects are \(relationship.destination), not \(entity)")
            }
        }
    }

    private func entityPlan(_ name: String) throws -> EntityPlan {
        guard let ordinal = planIndex[name] else {
            throw ImportError(path: .root, entity: name, message: "unknown entity '\(name)'")
        }
        return plans[ordinal]
    }

    /// A payload that is not an array: one object, or null (nothing to import).
    private func mapDocument<V: ImportValue>(
        _ json: V, _ entity: EntityPlan, _ base: [JSONPath.Component], _ mapper: inout BatchMapper<V>
    ) throws -> MappedBatch? {
        if json.isObject {
            return try mapper.map([json][...], entity: entity, base: base, indexed: false, offset: 0)
        } else if !json.isNull {
            throw ImportError(
                path: JSONPath(base), entity: entity.name,
                message: "expected an object or an array of objects, found \(json.typeName)")
        }
        return nil
    }

    /// The identity value of `json` for an identity attribute: the ``IdentityStrategy``'s, or for
    /// a date the attribute's date formats, else the client's (`"2011-01-26T19:01:12Z"`, Unix
    /// seconds) when the strategy gives none.
    func identityValue(_ json: JSON, for mapped: AttributeMapping) -> Value? {
        let attribute = mapped.attribute
        if let value = identity.identityValue(from: json, for: attribute) { return value }
        guard case .date = attribute.type, let date = (mapped.dateDecoding ?? dateDecoding).date(from: json), DateDecoding.representableRange.contains(date) else {
            return nil
        }
        return .date(date)
    }

    /// Converts a value (not null) to the attribute's stored value; `dates` are the attribute's
    /// own date formats (nil: the client's).
    @inline(__always)
    func value<V: ImportValue>(
        _ json: V, _ kind: DirectKind, for attribute: @autoclosure () -> Attribute, dates: @autoclosure () -> DateDecoding?
    ) -> Result<Value, Rejection> {
        if let value = json.directValue(kind, iso8601Dates: iso8601Dates) { return .success(value) }
        return value(json.materialize(), for: attribute(), dates: dates())
    }

    /// Converts a JSON value (not null) to the attribute's stored value, dates by `dates` (nil:
    /// the client's formats).
    func value(_ json: JSON, for attribute: Attribute, dates: DateDecoding?) -> Result<Value, Rejection> {
        let converted = exactValue(json, for: attribute, dates: dates)
        guard options.coercion == .lossless, case .failure(let rejection) = converted, rejection.problem == .typeMismatch,
            let coerced = ValueCoercion.lossless(json, to: attribute.type)
        else { return converted }
        // Converted to the attribute's own JSON type: then checked as such (range, date formats).
        return exactValue(coerced, for: attribute, dates: dates)
    }

    /// Converts a JSON value (not null) of the attribute's own JSON type to its stored value.
    private func exactValue(_ json: JSON, for attribute: Attribute, dates: DateDecoding?) -> Result<Value, Rejection> {
        func mismatch() -> Result<Value, Rejection> {
            .failure(Rejection(.typeMismatch, "expected \(attribute.type), found \(json.typeName) \(json)"))
        }
        func invalid(_ why: String) -> Result<Value, Rejection> { .failure(Rejection(.invalidValue, why)) }
        func integer(_ range: ClosedRange<Int64>) -> Result<Value, Rejection> {
            guard case .int = json, let i = json.int64Value else {
                if case .double(let d) = json {
                    // Only where the number is exact: 9007199254740993.0 reads as ...992.
                    guard let i = JSON.exactInteger(d) else {
                        return invalid(d.rounded() == d ? "\(json) is too large to be an exact integer" : "\(json) is not an integer")
                    }
                    return range.contains(i) ? .success(.int(i)) : invalid("\(i) is out of range for \(attribute.type)")
                }
                return mismatch()
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
        case .double:
            if let d = json.doubleValue { return .success(.double(d)) }
            return mismatch()
        case .float:
            guard let d = json.doubleValue else { return mismatch() }
            // A number a Float cannot hold would be stored as given and read back as infinity.
            if d.isFinite && Float(d).isInfinite { return invalid("\(json) is out of range for float") }
            return .success(.double(d))
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
            if let date = (dates ?? dateDecoding).date(from: json) {
                guard DateDecoding.representableRange.contains(date) else {
                    return invalid("\(json) is outside the dates Tether can store and send (years 1 to 9999)")
                }
                return .success(.date(date))
            }
            switch json {
            case .string, .int, .double:
                return invalid("\(json) matches none of the \(dates == nil ? "client's" : "attribute's own") date formats")
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
        case .array, .map, .json:
            return collectionValue(json, for: attribute, dates: dates)
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
