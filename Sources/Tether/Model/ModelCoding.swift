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

/// Builds models from stored objects, with their relationships filled `depth` levels deep:
/// one batched ``StoreReader/related(_:of:)`` call per relationship and level.
struct ModelReader: Sendable {
    let schema: Schema
    let layouts: ModelLayoutCache

    /// The models of the objects with these ids that exist, by id.
    func models<M: EntityModel>(_ ids: [ObjectID], as type: M.Type, reader: any StoreReader, depth: Int) throws -> [ObjectID: M] {
        let objects = try reader.objects(ids)
        return try models(of: objects, as: type, reader: reader, depth: depth)
    }

    /// The models of these objects, by id.
    func models<M: EntityModel>(of objects: [Object], as type: M.Type, reader: any StoreReader, depth: Int) throws -> [ObjectID: M] {
        let layout = try layouts.layout(of: M.self, in: schema)
        var related: [String: [ObjectID: [any EntityModel]]] = [:]
        if depth > 0 && !objects.isEmpty {
            let found = objects.map(\.id)
            for member in layout.members {
                let destination: any EntityModel.Type
                switch member.kind {
                case .attribute: continue
                case .toOne(let d), .toMany(let d): destination = d
                }
                let links = try reader.related(member.name, of: found)
                var seen = Set<ObjectID>()
                let targets = links.values.flatMap { $0 }.filter { seen.insert($0).inserted }
                func load<D: EntityModel>(_ type: D.Type) throws -> [ObjectID: any EntityModel] {
                    try models(targets, as: D.self, reader: reader, depth: depth - 1)
                }
                let loaded = try load(destination)
                var byObject: [ObjectID: [any EntityModel]] = [:]
                for (id, targets) in links { byObject[id] = targets.compactMap { loaded[$0] } }
                related[member.name] = byObject
            }
        }
        var result: [ObjectID: M] = [:]
        result.reserveCapacity(objects.count)
        for object in objects {
            let decoder = ObjectDecoder(object: object, layout: layout, related: related, depth: depth)
            do {
                result[object.id] = try M(from: decoder)
            } catch let error as ModelError {
                throw error
            } catch {
                throw ModelError(.unconvertibleValue, entity: object.entity, "\(object.id) cannot become a \(M.self): \(error)")
            }
        }
        return result
    }
}

/// Decodes one model from a stored object and its related models.
struct ObjectDecoder<Model: EntityModel>: Decoder {
    let object: Object
    let layout: ModelLayout<Model>
    let related: [String: [ObjectID: [any EntityModel]]]
    let depth: Int
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Keyed(decoder: self))
    }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw ModelError(.unsupportedProperty, entity: object.entity, "\(Model.self) decodes an array, not a model")
    }
    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw ModelError(.unsupportedProperty, entity: object.entity, "\(Model.self) decodes a single value, not a model")
    }

    func value<T: Decodable>(_ type: T.Type, name: String, optional: Bool) throws -> T? {
        if let array = T.self as? any ModelArray.Type {
            // Beyond the depth, or never linked: no models.
            return array.of(related[name]?[object.id] ?? []) as? T
        }
        if T.self is any EntityModel.Type {
            return related[name]?[object.id]?.first as? T
        }
        guard let stored = object.values[name] else {
            if optional { return nil }
            throw ModelError(
                .unsetAttribute, entity: object.entity, member: name,
                "\(object.id).\(name) is unset, but \(Model.self).\(name) is not optional; make it optional to read objects without it")
        }
        if let converted = ValueConversion.decode(T.self, from: stored) { return converted }
        do {
            return try T(from: StoredValueDecoder(value: stored))
        } catch {
            throw ModelError(
                .unconvertibleValue, entity: object.entity, member: name,
                "\(object.id).\(name) holds \(stored), which cannot become \(T.self) (\(Model.self).\(name))")
        }
    }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let decoder: ObjectDecoder
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { decoder.layout.members.compactMap { Key(stringValue: $0.name) } }
        func contains(_ key: Key) -> Bool {
            let name = key.stringValue
            if decoder.object.values[name] != nil { return true }
            return decoder.related[name]?[decoder.object.id]?.isEmpty == false
        }
        func decodeNil(forKey key: Key) throws -> Bool { !contains(key) }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            guard let value = try decoder.value(T.self, name: key.stringValue, optional: false) else {
                throw ModelError(
                    .nonOptionalToOne, entity: decoder.object.entity, member: key.stringValue,
                    "\(decoder.object.id).\(key.stringValue) cannot be read as a non-optional \(T.self)")
            }
            return value
        }
        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            try decoder.value(T.self, name: key.stringValue, optional: true)
        }
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decode(type as Bool.Type, key) }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try decode(type as String.Type, key) }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decode(type as Double.Type, key) }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decode(type as Float.Type, key) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decode(type as Int.Type, key) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decode(type as Int8.Type, key) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decode(type as Int16.Type, key) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decode(type as Int32.Type, key) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decode(type as Int64.Type, key) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decode(type as UInt.Type, key) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decode(type as UInt8.Type, key) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decode(type as UInt16.Type, key) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decode(type as UInt32.Type, key) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decode(type as UInt64.Type, key) }
        private func decode<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T {
            try decode(type, forKey: key) as T
        }
        func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try present(type, key) }
        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try present(type, key) }
        func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try present(type, key) }
        func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try present(type, key) }
        func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try present(type, key) }
        func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try present(type, key) }
        func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try present(type, key) }
        func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try present(type, key) }
        func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try present(type, key) }
        func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try present(type, key) }
        func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try present(type, key) }
        func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try present(type, key) }
        func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try present(type, key) }
        func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try present(type, key) }
        private func present<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T? {
            try decoder.value(T.self, name: key.stringValue, optional: true)
        }
        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            throw ModelError(.unsupportedProperty, entity: decoder.object.entity, member: key.stringValue, "nested containers are not properties of an entity")
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            throw ModelError(.unsupportedProperty, entity: decoder.object.entity, member: key.stringValue, "arrays of values are not properties of an entity")
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
        if let model = value as? any EntityModel {
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
