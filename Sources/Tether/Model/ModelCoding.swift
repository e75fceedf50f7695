import Foundation

/// Stored values to and from the Swift types a model's properties have.
enum ValueConversion {
    /// The property value of type `T` for a stored value, or nil when it cannot be one.
    static func decode<T>(_ type: T.Type, from value: Value) -> T? {
        switch type {
        case is String.Type:
            if case .string(let s) = value { return s as? T }
        case is Bool.Type:
            if case .bool(let b) = value { return b as? T }
            if case .int(let i) = value, i == 0 || i == 1 { return (i == 1) as? T }
        case is Int64.Type: return int(value).flatMap { $0 as? T }
        case is Int.Type: return int(value).flatMap { Int(exactly: $0) as? T }
        case is Int32.Type: return int(value).flatMap { Int32(exactly: $0) as? T }
        case is Int16.Type: return int(value).flatMap { Int16(exactly: $0) as? T }
        case is Int8.Type: return int(value).flatMap { Int8(exactly: $0) as? T }
        case is UInt8.Type: return int(value).flatMap { UInt8(exactly: $0) as? T }
        case is UInt16.Type: return int(value).flatMap { UInt16(exactly: $0) as? T }
        case is UInt32.Type: return int(value).flatMap { UInt32(exactly: $0) as? T }
        case is Double.Type: return double(value) as? T
        case is Float.Type: return double(value).map { Float($0) } as? T
        case is Decimal.Type:
            switch value {
            case .decimal(let d): return d as? T
            case .int(let i): return Decimal(i) as? T
            case .double(let d): return Decimal(d) as? T
            default: return nil
            }
        case is Date.Type:
            if case .date(let d) = value { return d as? T }
        case is Data.Type:
            if case .data(let d) = value { return d as? T }
        case is UUID.Type:
            if case .uuid(let u) = value { return u as? T }
            if case .string(let s) = value { return UUID(uuidString: s) as? T }
        case is URL.Type:
            if case .url(let u) = value { return u as? T }
            if case .string(let s) = value { return URL(string: s) as? T }
        case let collection as any ModelCollectionValue.Type:
            return collection.init(storedValue: value) as? T
        default: return nil
        }
        return nil
    }

    private static func int(_ value: Value) -> Int64? {
        switch value {
        case .int(let i): return i
        case .double(let d): return Int64(exactly: d)
        case .decimal(let d): return Int64(exactly: NSDecimalNumber(decimal: d).doubleValue)
        default: return nil
        }
    }

    private static func double(_ value: Value) -> Double? {
        switch value {
        case .double(let d): return d
        case .int(let i): return Double(i)
        case .decimal(let d): return NSDecimalNumber(decimal: d).doubleValue
        default: return nil
        }
    }

    /// The stored value of a property value of a value type, or nil for another type.
    static func encode(_ value: Any) -> Value? {
        switch value {
        case let v as String: return .string(v)
        case let v as Bool: return .bool(v)
        case let v as Int64: return .int(v)
        case let v as Int: return .int(Int64(v))
        case let v as Int32: return .int(Int64(v))
        case let v as Int16: return .int(Int64(v))
        case let v as Int8: return .int(Int64(v))
        case let v as UInt8: return .int(Int64(v))
        case let v as UInt16: return .int(Int64(v))
        case let v as UInt32: return .int(Int64(v))
        case let v as Double: return .double(v)
        case let v as Float: return .double(Double(v))
        case let v as Decimal: return .decimal(v)
        case let v as Date: return .date(v)
        case let v as Data: return .data(v)
        case let v as UUID: return .uuid(v)
        case let v as URL: return .url(v)
        case let v as any ModelCollectionValue: return v.storedValue
        default: return nil
        }
    }

    /// The stored value of any encodable property value: a value type, or an enum or wrapper
    /// that encodes one value (nil for `nil`).
    static func encode<T: Encodable>(any value: T) throws -> Value? {
        if let value = encode(value) { return value }
        let encoder = SingleValueEncoder()
        try value.encode(to: encoder)
        guard let encoded = encoder.value else {
            if encoder.isNil { return nil }
            throw EncodingError.invalidValue(value, EncodingError.Context(codingPath: [], debugDescription: "\(T.self) encodes no single value"))
        }
        return encoded
    }

    /// The encoder an enum or wrapper encodes its one value into.
    final class SingleValueEncoder: Encoder, SingleValueEncodingContainer {
        var value: Value?
        var isNil = false
        var codingPath: [any CodingKey] { [] }
        var userInfo: [CodingUserInfoKey: Any] { [:] }
        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            KeyedEncodingContainer(Refusing<Key>())
        }
        func unkeyedContainer() -> any UnkeyedEncodingContainer { Refusing<AnyKey>() }
        func singleValueContainer() -> any SingleValueEncodingContainer { self }
        func encodeNil() throws { isNil = true }
        func encode<T: Encodable>(_ value: T) throws {
            if let stored = ValueConversion.encode(value) {
                self.value = stored
            } else {
                try value.encode(to: self)
            }
        }
    }

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { return nil }
    }

    /// Swallows what a non-value type encodes; ``SingleValueEncoder`` then reports no value.
    struct Refusing<Key: CodingKey>: KeyedEncodingContainerProtocol, UnkeyedEncodingContainer {
        var codingPath: [any CodingKey] { [] }
        var count: Int { 0 }
        mutating func encodeNil(forKey key: Key) throws {}
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {}
        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            KeyedEncodingContainer(Refusing<NestedKey>())
        }
        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { Refusing<AnyKey>() }
        mutating func superEncoder() -> any Encoder { SingleValueEncoder() }
        mutating func superEncoder(forKey key: Key) -> any Encoder { SingleValueEncoder() }
        mutating func encodeNil() throws {}
        mutating func encode<T: Encodable>(_ value: T) throws {}
        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            KeyedEncodingContainer(Refusing<NestedKey>())
        }
        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { Refusing<AnyKey>() }
    }
}

// MARK: - Reading models

/// A store reader that hands a typed read the values it asks for, row by row, without building
/// ``Object``s (`SQLiteStore`'s transactions are one). A typed read from any other reader reads
/// objects and decodes those.
package protocol ModelRowReader {
    /// Those of `relationships` (to-one relationships of `entity`) whose target a row can carry
    /// beside the attributes (a foreign key column).
    func rowRelationships(of entity: String, among relationships: [String]) -> [String]
    /// Calls `row` for each object `query` finds, in the query's order, with its id and its values
    /// of `attributes` by position (nil: unset), then the row id of the target of each of
    /// `toOne` (which ``rowRelationships(of:among:)`` gave) as an `.int` (nil: none), in one
    /// array reused from row to row. Returns false, having called nothing, when the store would
    /// evaluate the query in Swift anyway: the caller then reads objects.
    func forEachRow(_ query: Query, attributes: [String], toOne: [String], _ row: (ObjectID, [Value?]) throws -> Void) throws -> Bool
    /// The same for those of `ids` (all of `entity`) that exist, in no particular order.
    func forEachRow(of ids: [ObjectID], entity: String, attributes: [String], toOne: [String], _ row: (ObjectID, [Value?]) throws -> Void) throws
}

/// Where a decoder finds each member of a model: an attribute at its position among the columns
/// a typed read selects, a relationship in its slot among the related models read with it.
/// Computed once per model type (``ModelLayout/columns``).
struct ModelColumns: Sendable {
    enum Place: Sendable {
        case column(Int)
        case toOne(slot: Int)
        case toMany(slot: Int)
    }

    /// The members' names and places in the layout's order, which is the order a synthesized
    /// `init(from:)` asks for them.
    let names: [String]
    let places: [Place]
    let index: [String: Int]
    /// The attributes a typed read selects, in column order.
    let attributes: [String]
    /// The relationship members, by slot.
    let relationships: [ModelMember]

    init(_ members: [ModelMember]) {
        var places: [Place] = [], attributes: [String] = [], relationships: [ModelMember] = []
        for member in members {
            switch member.kind {
            case .attribute:
                places.append(.column(attributes.count))
                attributes.append(member.name)
            case .toOne:
                places.append(.toOne(slot: relationships.count))
                relationships.append(member)
            case .toMany:
                places.append(.toMany(slot: relationships.count))
                relationships.append(member)
            }
        }
        names = members.map(\.name)
        self.places = places
        index = Dictionary(members.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.attributes = attributes
        self.relationships = relationships
    }
}

/// Builds models from stored objects or rows, with their relationships filled `depth` levels
/// deep: one batched read per relationship and level (``StoreReader/related(_:of:)``, or, for a
/// to-one relationship a ``ModelRowReader`` keeps in the row, none at all).
struct ModelReader: Sendable {
    let schema: Schema
    let layouts: ModelLayoutCache
    /// Where the states handed out as models are remembered (what a struct was read with).
    var reads: ModelReads?

    /// Rows read from a ``ModelRowReader``: each row's attributes (``ModelColumns/attributes``)
    /// and the targets of its `toOne` relationships, one row after the other.
    private struct Rows {
        var ids: [ObjectID] = []
        var values: [Value?] = []
        let attributes: Int
        let toOne: [String]
        var width: Int { attributes + toOne.count }

        init(attributes: Int, toOne: [String]) {
            self.attributes = attributes
            self.toOne = toOne
        }

        mutating func append(_ id: ObjectID, _ row: [Value?]) {
            ids.append(id)
            values.append(contentsOf: row)
        }
    }

    /// The models of the objects `query` finds, in its order. From a ``ModelRowReader``, only the
    /// model's attributes (and its to-one targets kept in the row) are read, and at depth 0 each
    /// model is decoded as its row comes.
    func fetch<M: EntityModel>(_ query: Query, as type: M.Type, reader: any StoreReader, depth: Int) throws -> [M] {
        let layout = try layouts.layout(of: M.self, in: schema)
        if let rows = reader as? any ModelRowReader {
            let attributes = layout.columns.attributes
            if depth == 0 || layout.columns.relationships.isEmpty {
                let decoder = ObjectDecoder(layout: layout, related: [], depth: depth)
                var models: [M] = []
                // What the models were read with, for the reads' memory, compared as it comes
                // with what the last read of the query kept.
                let key = query.hashValue
                var recorder = reads.map { ModelReads.RowRecorder(names: attributes, candidate: $0.kept(query: key)) }
                if try rows.forEachRow(query, attributes: attributes, toOne: [], { id, row in
                    models.append(try decoder.decode(id, row: row, at: 0, index: 0))
                    recorder?.add(id, row.prefix(attributes.count))
                }) {
                    if let reads, let recorder { reads.record(recorder, query: key) }
                    return models
                }
            } else {
                var read = Rows(attributes: attributes.count, toOne: rowRelationships(layout, rows))
                if try rows.forEachRow(query, attributes: attributes, toOne: read.toOne, { read.append($0, $1) }) {
                    return try models(read, layout: layout, reader: reader, depth: depth)
                }
            }
        }
        let objects = try reader.fetch(query)
        let models = try models(of: objects, as: M.self, reader: reader, depth: depth)
        return objects.compactMap { models[$0.id] }
    }

    /// The models of the objects with these ids that exist, by id.
    func models<M: EntityModel>(_ ids: [ObjectID], as type: M.Type, reader: any StoreReader, depth: Int) throws -> [ObjectID: M] {
        if let rows = reader as? any ModelRowReader, ids.allSatisfy({ $0.entity == M.entityName }) {
            let layout = try layouts.layout(of: M.self, in: schema)
            var read = Rows(attributes: layout.columns.attributes.count, toOne: depth > 0 ? rowRelationships(layout, rows) : [])
            try rows.forEachRow(of: ids, entity: M.entityName, attributes: layout.columns.attributes, toOne: read.toOne) {
                read.append($0, $1)
            }
            let models = try models(read, layout: layout, reader: reader, depth: depth)
            return Dictionary(zip(read.ids, models), uniquingKeysWith: { first, _ in first })
        }
        let objects = try reader.objects(ids)
        return try models(of: objects, as: type, reader: reader, depth: depth)
    }

    /// The models of these objects, by id.
    func models<M: EntityModel>(of objects: [Object], as type: M.Type, reader: any StoreReader, depth: Int) throws -> [ObjectID: M] {
        let layout = try layouts.layout(of: M.self, in: schema)
        var targets: [ObjectID: [String: ObjectID?]] = [:]
        let related = depth > 0 && !objects.isEmpty
            ? try self.related(of: objects.map(\.id), rows: nil, layout.columns, reader: reader, depth: depth, targets: &targets) : []
        let decoder = ObjectDecoder(layout: layout, related: related, depth: depth)
        var result: [ObjectID: M] = [:]
        result.reserveCapacity(objects.count)
        for object in objects { result[object.id] = try decoder.decode(object) }
        reads?.record(objects, toOne: depth > 0 ? targets : [:])
        return result
    }

    /// The to-one relationships of `layout`'s model whose targets `rows` reads with the attributes.
    private func rowRelationships<M: EntityModel>(_ layout: ModelLayout<M>, _ rows: any ModelRowReader) -> [String] {
        let toOne = layout.columns.relationships.compactMap { member -> String? in
            if case .toOne = member.kind { return member.name }
            return nil
        }
        return toOne.isEmpty ? [] : rows.rowRelationships(of: M.entityName, among: toOne)
    }

    /// The models of rows read from a ``ModelRowReader``, in row order.
    private func models<M: EntityModel>(_ rows: Rows, layout: ModelLayout<M>, reader: any StoreReader, depth: Int) throws -> [M] {
        var targets: [ObjectID: [String: ObjectID?]] = [:]
        let related = depth > 0 && !rows.ids.isEmpty
            ? try self.related(of: rows.ids, rows: rows, layout.columns, reader: reader, depth: depth, targets: &targets) : []
        let decoder = ObjectDecoder(layout: layout, related: related, depth: depth)
        var models: [M] = []
        models.reserveCapacity(rows.ids.count)
        for (i, id) in rows.ids.enumerated() {
            models.append(try decoder.decode(id, row: rows.values, at: i * rows.width, index: i))
        }
        if let reads {
            // The rows hold the to-one targets after the attributes: the batch takes the attributes.
            let values = rows.width == rows.attributes ? rows.values : (0..<rows.ids.count).flatMap { i in
                rows.values[(i * rows.width)..<(i * rows.width + rows.attributes)]
            }
            let toOne = depth > 0 ? rows.ids.map { targets[$0] ?? [:] } : []
            reads.record(rows.ids, ModelReads.Batch(names: layout.columns.attributes, values: values, count: rows.ids.count, toOne: toOne))
        }
        return models
    }

    /// The related models of `ids` for each relationship of the model, by slot, read `depth - 1`
    /// levels deep: the targets of a to-one relationship that `rows` carries come from the rows
    /// (by row), the others from one batched ``StoreReader/related(_:of:)`` (by object). When
    /// reads are remembered, `targets` receives each object's to-one targets (nil: none).
    private func related(
        of ids: [ObjectID], rows: Rows?, _ columns: ModelColumns, reader: any StoreReader, depth: Int,
        targets toOneTargets: inout [ObjectID: [String: ObjectID?]]
    ) throws -> [RelatedModels] {
        try columns.relationships.map { member in
            let destination: any EntityModel.Type
            switch member.kind {
            case .attribute: return .byObject([:])
            case .toOne(let d), .toMany(let d): destination = d
            }
            func load<D: EntityModel>(_ type: D.Type, _ targets: [ObjectID]) throws -> [ObjectID: any EntityModel] {
                try models(targets, as: D.self, reader: reader, depth: depth - 1)
            }
            if let rows, let column = rows.toOne.firstIndex(of: member.name) {
                let entity = destination.entityName
                let targets = rows.ids.indices.map { i -> ObjectID? in
                    guard case .int(let rowID)? = rows.values[i * rows.width + rows.attributes + column] else { return nil }
                    return ObjectID(entity: entity, rowID: rowID)
                }
                if reads != nil {
                    for (i, id) in rows.ids.enumerated() { toOneTargets[id, default: [:]].updateValue(targets[i], forKey: member.name) }
                }
                var seen = Set<ObjectID>()
                let loaded = try load(destination, targets.compactMap { $0 }.filter { seen.insert($0).inserted })
                return .byRow(targets.map { $0.flatMap { loaded[$0] } })
            }
            let links = try reader.related(member.name, of: ids)
            if reads != nil, case .toOne = member.kind {
                for id in ids { toOneTargets[id, default: [:]].updateValue(links[id]?.first, forKey: member.name) }
            }
            var seen = Set<ObjectID>()
            let loaded = try load(destination, links.values.flatMap { $0 }.filter { seen.insert($0).inserted })
            var byObject: [ObjectID: [any EntityModel]] = [:]
            byObject.reserveCapacity(links.count)
            for (id, targets) in links { byObject[id] = targets.compactMap { loaded[$0] } }
            return .byObject(byObject)
        }
    }
}

/// The related models of the objects a decoder decodes, for one relationship.
enum RelatedModels {
    /// By object id (any relationship).
    case byObject([ObjectID: [any EntityModel]])
    /// By the object's position among the rows decoded (a to-one relationship).
    case byRow([(any EntityModel)?])
}

/// Decodes models of one type, one object after the other: from a row's values by position (a
/// typed read from a ``ModelRowReader``) or from an ``Object``'s by name, with their related
/// models. One decoder serves a whole read; it is not to be shared between threads.
final class ObjectDecoder<Model: EntityModel>: Decoder {
    let layout: ModelLayout<Model>
    /// The related models of the objects, by relationship slot (empty: none read).
    let related: [RelatedModels]
    let depth: Int
    private let columns: ModelColumns
    // The state of the object being decoded, touched by every property a model decodes: not
    // checked for exclusive access at run time (a decoder is used by one decode at a time).
    /// The object being decoded: its id and its values, either those of a row from `base` on or
    /// those of `object`.
    @exclusivity(unchecked) private(set) var id = ObjectID(entity: "", rowID: 0)
    @exclusivity(unchecked) private var row: [Value?] = []
    @exclusivity(unchecked) private var base = 0
    /// The row's position among those decoded (related models kept by row).
    @exclusivity(unchecked) private var index = 0
    @exclusivity(unchecked) private var object: Object?
    /// The member `init(from:)` is expected to ask for next.
    @exclusivity(unchecked) private var next = 0

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(layout: ModelLayout<Model>, related: [RelatedModels], depth: Int) {
        self.layout = layout
        self.columns = layout.columns
        self.related = related
        self.depth = depth
    }

    /// A decoder of `object`, for `Model(from:)`, with related models by relationship name.
    convenience init(object: Object, layout: ModelLayout<Model>, related: [String: [ObjectID: [any EntityModel]]], depth: Int) {
        self.init(layout: layout, related: related.isEmpty ? [] : layout.columns.relationships.map { .byObject(related[$0.name] ?? [:]) },
                  depth: depth)
        start(object.id, object: object)
    }

    private func start(_ id: ObjectID, object: Object? = nil, row: [Value?] = [], base: Int = 0, index: Int = 0) {
        self.id = id
        self.object = object
        self.row = row
        self.base = base
        self.index = index
        next = 0
    }

    /// The model of the row whose values start at `base` in `row`, the `index`th row decoded.
    func decode(_ id: ObjectID, row: [Value?], at base: Int, index: Int) throws -> Model {
        start(id, row: row, base: base, index: index)
        // Let go of the row, so that a reader refilling its buffer does not copy it.
        defer { self.row = [] }
        return try decodeModel()
    }

    /// The model of `object`.
    func decode(_ object: Object) throws -> Model {
        start(object.id, object: object)
        defer { self.object = nil }
        return try decodeModel()
    }

    private func decodeModel() throws -> Model {
        do {
            return try Model(from: self)
        } catch let error as ModelError {
            throw error
        } catch {
            throw ModelError(.unconvertibleValue, entity: id.entity, "\(id) cannot become a \(Model.self): \(error)")
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Keyed(decoder: self))
    }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw ModelError(.unsupportedProperty, entity: id.entity, "\(Model.self) decodes an array, not a model")
    }
    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw ModelError(.unsupportedProperty, entity: id.entity, "\(Model.self) decodes a single value, not a model")
    }

    /// The member named `name`: the expected one when `init(from:)` asks in the layout's order
    /// (a string comparison), otherwise found by name.
    private func member(_ name: String) -> Int? {
        if next < columns.names.count && columns.names[next] == name {
            next += 1
            return next - 1
        }
        guard let member = columns.index[name] else { return nil }
        next = member + 1
        return member
    }

    /// The models related to the object through the relationship in `slot`.
    private func relatedModels(_ slot: Int) -> [any EntityModel] {
        guard slot < related.count else { return [] }
        switch related[slot] {
        case .byObject(let models): return models[id] ?? []
        case .byRow(let models): return models[index].map { [$0] } ?? []
        }
    }

    /// The model related to the object through the to-one relationship in `slot`.
    private func relatedModel(_ slot: Int) -> (any EntityModel)? {
        guard slot < related.count else { return nil }
        switch related[slot] {
        case .byObject(let models): return models[id]?.first
        case .byRow(let models): return models[index]
        }
    }

    /// The stored value of attribute `name` (nil inside: unset), or nil when `name` is a
    /// relationship. A name the layout does not know is unset in a row (which holds the layout's
    /// attributes only) and looked up in an object.
    func attribute(_ name: String) -> Value?? {
        let member = self.member(name)
        let place = member.map { columns.places[$0] }
        if let place, case .column(let column) = place {
            return .some(object == nil ? row[base + column] : object!.values[name])
        }
        if place != nil { return nil }
        return .some(object?.values[name])
    }

    /// Whether `name` has a stored value or related models.
    func contains(_ name: String) -> Bool {
        switch member(name).map({ columns.places[$0] }) {
        case .toOne(let slot)?: relatedModel(slot) != nil
        case .toMany(let slot)?: !relatedModels(slot).isEmpty
        default: attribute(name).map { $0 != nil } ?? false
        }
    }

    func value<T: Decodable>(_ type: T.Type, name: String, optional: Bool) throws -> T? {
        switch member(name).map({ columns.places[$0] }) {
        case .toOne(let slot)?:
            guard let model = relatedModel(slot) else { return nil }
            return model as? T
        case .toMany(let slot)?:
            // Beyond the depth, or never linked: no models.
            return (T.self as? any ModelArray.Type)?.of(relatedModels(slot)) as? T
        case .column?:
            break
        case nil:
            if let array = T.self as? any ModelArray.Type { return array.of([]) as? T }
            if T.self is any EntityModel.Type { return nil }
        }
        guard let stored = attribute(name) ?? nil else {
            if optional { return nil }
            throw ModelError(
                .unsetAttribute, entity: id.entity, member: name,
                "\(id).\(name) is unset, but \(Model.self).\(name) is not optional; make it optional to read objects without it")
        }
        if let converted = ValueConversion.decode(T.self, from: stored) { return converted }
        do {
            return try T(from: StoredValueDecoder(value: stored))
        } catch {
            throw ModelError(
                .unconvertibleValue, entity: id.entity, member: name,
                "\(id).\(name) holds \(stored), which cannot become \(T.self) (\(Model.self).\(name))")
        }
    }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let decoder: ObjectDecoder
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { decoder.layout.members.compactMap { Key(stringValue: $0.name) } }
        func contains(_ key: Key) -> Bool { decoder.contains(key.stringValue) }
        func decodeNil(forKey key: Key) throws -> Bool { !contains(key) }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            // A date straight from the stored value, before any `T?` (whose metadata an
            // unspecialized generic looks up at run time).
            if T.self == Date.self, case .date(let date)?? = decoder.attribute(key.stringValue) {
                return unsafeBitCast(date, to: T.self)
            }
            guard let value = try decoder.value(T.self, name: key.stringValue, optional: false) else {
                throw ModelError(
                    .nonOptionalToOne, entity: decoder.id.entity, member: key.stringValue,
                    "\(decoder.id).\(key.stringValue) cannot be read as a non-optional \(T.self)")
            }
            return value
        }
        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            if T.self == Date.self {
                switch decoder.attribute(key.stringValue) {
                case .date(let date)??: return unsafeBitCast(date, to: T.self)
                case .some(nil): return nil
                default: break
                }
            }
            return try decoder.value(T.self, name: key.stringValue, optional: true)
        }
        // The common types straight from the stored value; anything else (a conversion, an
        // unset value, an error) through `value(_:name:optional:)`.
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
            if case .bool(let v)?? = decoder.attribute(key.stringValue) { return v }
            return try decode(type as Bool.Type, key)
        }
        func decode(_ type: String.Type, forKey key: Key) throws -> String {
            if case .string(let v)?? = decoder.attribute(key.stringValue) { return v }
            return try decode(type as String.Type, key)
        }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
            if case .double(let v)?? = decoder.attribute(key.stringValue) { return v }
            return try decode(type as Double.Type, key)
        }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decode(type as Float.Type, key) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int {
            if case .int(let v)?? = decoder.attribute(key.stringValue), let int = Int(exactly: v) { return int }
            return try decode(type as Int.Type, key)
        }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decode(type as Int8.Type, key) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decode(type as Int16.Type, key) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decode(type as Int32.Type, key) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 {
            if case .int(let v)?? = decoder.attribute(key.stringValue) { return v }
            return try decode(type as Int64.Type, key)
        }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decode(type as UInt.Type, key) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decode(type as UInt8.Type, key) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decode(type as UInt16.Type, key) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decode(type as UInt32.Type, key) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decode(type as UInt64.Type, key) }
        private func decode<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T {
            try decode(type, forKey: key) as T
        }
        func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
            switch decoder.attribute(key.stringValue) {
            case .bool(let v)??: return v
            case .some(nil): return nil
            default: return try present(type, key)
            }
        }
        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
            switch decoder.attribute(key.stringValue) {
            case .string(let v)??: return v
            case .some(nil): return nil
            default: return try present(type, key)
            }
        }
        func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
            switch decoder.attribute(key.stringValue) {
            case .double(let v)??: return v
            case .some(nil): return nil
            default: return try present(type, key)
            }
        }
        func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try present(type, key) }
        func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
            switch decoder.attribute(key.stringValue) {
            case .int(let v)??: if let int = Int(exactly: v) { return int }
            case .some(nil): return nil
            default: break
            }
            return try present(type, key)
        }
        func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try present(type, key) }
        func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try present(type, key) }
        func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try present(type, key) }
        func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? {
            switch decoder.attribute(key.stringValue) {
            case .int(let v)??: return v
            case .some(nil): return nil
            default: return try present(type, key)
            }
        }
        func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try present(type, key) }
        func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try present(type, key) }
        func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try present(type, key) }
        func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try present(type, key) }
        func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try present(type, key) }
        private func present<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T? {
            try decoder.value(T.self, name: key.stringValue, optional: true)
        }
        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            throw ModelError(.unsupportedProperty, entity: decoder.id.entity, member: key.stringValue, "nested containers are not properties of an entity")
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            throw ModelError(.unsupportedProperty, entity: decoder.id.entity, member: key.stringValue, "arrays of values are not properties of an entity")
        }
        func superDecoder() throws -> any Decoder { decoder }
        func superDecoder(forKey key: Key) throws -> any Decoder { decoder }
    }
}

/// The decoder an enum or wrapper property decodes itself from: one stored value.
struct StoredValueDecoder: Decoder, SingleValueDecodingContainer {
    let value: Value
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> { throw mismatch(Key.self) }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw mismatch([Value].self) }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }
    func decodeNil() -> Bool { false }
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        if let converted = ValueConversion.decode(T.self, from: value) { return converted }
        return try T(from: self)
    }
    private func mismatch(_ type: Any.Type) -> DecodingError {
        .typeMismatch(type, DecodingError.Context(codingPath: [], debugDescription: "the stored value \(value) is one value"))
    }
}

// MARK: - Writing models

/// What a model holds, as stored values: attributes set, attributes explicitly nil, and the
/// related models of its relationships.
struct EncodedModel {
    var values: [String: Value] = [:]
    var nulls: Set<String> = []
    var toOne: [String: any EntityModel] = [:]
    var toMany: [String: [any EntityModel]] = [:]

    init<M: EntityModel>(_ model: M, layout: ModelLayout<M>) throws {
        let encoder = ModelEncoder(entity: layout.entityName)
        do {
            try model.encode(to: encoder)
        } catch let error as ModelError {
            throw error
        } catch {
            throw ModelError(.unconvertibleValue, entity: layout.entityName, "\(M.self) cannot be encoded: \(error)")
        }
        self = encoder.encoded
    }

    init() {}
}

final class ModelEncoder: Encoder {
    let entity: String
    var encoded = EncodedModel()
    init(entity: String) { self.entity = entity }
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(Keyed(encoder: self))
    }
    func unkeyedContainer() -> any UnkeyedEncodingContainer { ValueConversion.Refusing<ValueConversion.AnyKey>() }
    func singleValueContainer() -> any SingleValueEncodingContainer { ValueConversion.SingleValueEncoder() }

    func put<T: Encodable>(_ value: T, name: String) throws {
        // First: an empty `[String]` would pass for an empty array of models.
        if let collection = value as? any ModelCollectionValue {
            if let stored = collection.storedValue { encoded.values[name] = stored } else { encoded.nulls.insert(name) }
        } else if let model = value as? any EntityModel {
            encoded.toOne[name] = model
        } else if let models = value as? [any EntityModel] {
            encoded.toMany[name] = models
        } else if let stored = try ValueConversion.encode(any: value) {
            encoded.values[name] = stored
        } else {
            encoded.nulls.insert(name)
        }
    }

    struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let encoder: ModelEncoder
        var codingPath: [any CodingKey] { [] }
        mutating func encodeNil(forKey key: Key) throws { encoder.encoded.nulls.insert(key.stringValue) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try encoder.put(value, name: key.stringValue) }
        mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws { try optional(value, key) }
        mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws { try optional(value, key) }
        mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws { try optional(value, key) }
        mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws { try optional(value, key) }
        mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws { try optional(value, key) }
        mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws { try optional(value, key) }
        mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws { try optional(value, key) }
        mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws { try optional(value, key) }
        mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws { try optional(value, key) }
        mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws { try optional(value, key) }
        mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws { try optional(value, key) }
        mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws { try optional(value, key) }
        mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws { try optional(value, key) }
        mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws { try optional(value, key) }
        mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws { try optional(value, key) }
        private func optional<T: Encodable>(_ value: T?, _ key: Key) throws {
            if let value { try encoder.put(value, name: key.stringValue) } else { encoder.encoded.nulls.insert(key.stringValue) }
        }
        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            KeyedEncodingContainer(ValueConversion.Refusing<NestedKey>())
        }
        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            ValueConversion.Refusing<ValueConversion.AnyKey>()
        }
        mutating func superEncoder() -> any Encoder { encoder }
        mutating func superEncoder(forKey key: Key) -> any Encoder { encoder }
    }
}
