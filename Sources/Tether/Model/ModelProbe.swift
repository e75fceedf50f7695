import Foundation

/// An array of models, seen through its element type (a to-many relationship property).
protocol ModelArray {
    static var elementModel: any EntityModel.Type { get }
    /// The array of these elements (each of the element type).
    static func of(_ elements: [any EntityModel]) -> Self
}

extension Array: ModelArray where Element: EntityModel {
    static var elementModel: any EntityModel.Type { Element.self }
    static func of(_ elements: [any EntityModel]) -> Self { elements.compactMap { $0 as? Element } }
}

/// The values a probe gives each kind of property: the base value, and a different marked one.
enum ProbeValues {
    static func make<T>(_ type: T.Type, marked: Bool) -> (value: T, type: AttributeType)? {
        func pick<V>(_ base: V, _ mark: V, _ attribute: AttributeType) -> (T, AttributeType)? {
            ((marked ? mark : base) as? T).map { ($0, attribute) }
        }
        switch type {
        case is String.Type: return pick("", "\u{1}", .string)
        case is Bool.Type: return pick(false, true, .bool)
        case is Int.Type: return pick(0 as Int, 1, .int64)
        case is Int64.Type: return pick(0 as Int64, 1, .int64)
        case is Int32.Type: return pick(0 as Int32, 1, .int32)
        case is Int16.Type: return pick(0 as Int16, 1, .int16)
        case is Int8.Type: return pick(0 as Int8, 1, .int16)
        case is UInt8.Type: return pick(0 as UInt8, 1, .int16)
        case is UInt16.Type: return pick(0 as UInt16, 1, .int32)
        case is UInt32.Type: return pick(0 as UInt32, 1, .int64)
        case is Double.Type: return pick(0 as Double, 1, .double)
        case is Float.Type: return pick(0 as Float, 1, .float)
        case is Decimal.Type: return pick(Decimal(0), Decimal(1), .decimal)
        case is Date.Type: return pick(Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 1), .date)
        case is Data.Type: return pick(Data(), Data([1]), .data)
        case is UUID.Type:
            return pick(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
                        UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1)), .uuid)
        case is URL.Type: return pick(URL(string: "tether:a")!, URL(string: "tether:b")!, .url)
        case let collection as any ModelCollectionValue.Type:
            return (collection.probe(marked: marked) as? T).map { ($0, collection.attributeType) }
        default: return nil
        }
    }
}

/// Decodes a model type with made-up values to learn what it declares: each key its
/// `init(from:)` asks for, with the type it asks for. With a member marked, that member gets
/// a value different from the base one (and a to-one or to-many relationship a model).
struct ModelProbe {
    let entity: String

    func decode<M: EntityModel>(_ type: M.Type, marking marked: String?) throws(ModelError) -> (model: M, members: [ModelMember]) {
        try decode(type, markingPath: marked.map { [$0] } ?? [])
    }

    /// A model whose to-one relationships along `path` lead to probe models, the last member of
    /// the path marked: `["repository", "owner", "login"]` gives an issue whose repository's
    /// owner's login is marked (its other relationships nil or empty).
    func decode<M: EntityModel>(_ type: M.Type, markingPath path: [String]) throws(ModelError) -> (model: M, members: [ModelMember]) {
        let state = State(entity: entity, path: path)
        do {
            let model = try M(from: Decoder(state: state))
            if let failure = state.failure { throw failure }
            return (model, state.members)
        } catch let error as ModelError {
            throw error
        } catch {
            throw state.failure ?? ModelError(
                .unsupportedProperty, entity: entity,
                "\(M.self) cannot be decoded by a probe to learn its properties (\(error)); its init(from:) must decode a keyed container of values and models")
        }
    }

    final class State {
        let entity: String
        /// The member marked, or the to-one relationship the marked path goes through first.
        let marked: String?
        /// The rest of the marked path, for the related model's probe.
        let rest: [String]
        var members: [ModelMember] = []
        var failure: ModelError?
        init(entity: String, path: [String]) {
            self.entity = entity
            self.marked = path.first
            self.rest = Array(path.dropFirst())
        }

        func fail(_ error: ModelError) -> ModelError {
            if failure == nil { failure = error }
            return failure!
        }

        /// The probe value of the member `name` of type `T`.
        func value<T: Decodable>(_ type: T.Type, name: String, optional: Bool) throws -> T {
            let marked = self.marked == name
            if let (value, attribute) = ProbeValues.make(T.self, marked: marked) {
                members.append(ModelMember(name: name, kind: .attribute(attribute, optional: optional)))
                return value
            }
            if let model = T.self as? any EntityModel.Type {
                guard optional else {
                    throw fail(ModelError(
                        .nonOptionalToOne, entity: entity, member: name,
                        "\(entity).\(name): a to-one relationship must be optional (\(model)?): an object's related object may be unknown"))
                }
                members.append(ModelMember(name: name, kind: .toOne(model)))
                guard marked else { throw Absent() }
                return try probe(model, markingPath: rest) as! T
            }
            if let array = T.self as? any ModelArray.Type {
                members.append(ModelMember(name: name, kind: .toMany(array.elementModel)))
                return array.of(marked ? [try probe(array.elementModel)] : []) as! T
            }
            // An enum or a wrapper that codes as one value.
            let single = SingleValue(marked: marked)
            let decoded: T
            do {
                decoded = try T(from: single)
            } catch {
                guard let attribute = single.type else {
                    throw fail(ModelError(
                        .unsupportedProperty, entity: entity, member: name,
                        "\(entity).\(name): \(T.self) is neither a value (String, numbers, Bool, Date, Data, UUID, URL, an enum coding as one; an array or a String-keyed dictionary of strings, numbers, Bools or Dates; JSON), an optional model nor an array of models"))
                }
                // An enum with raw values: the probe's raw value is none of its cases, so it
                // needs its cases to make one.
                guard let cases = (T.self as? any CaseIterable.Type)?.allCases as? any Collection,
                    let values = Array(cases) as? [T], !values.isEmpty
                else {
                    throw fail(ModelError(
                        .unsupportedProperty, entity: entity, member: name,
                        "\(entity).\(name): \(T.self) codes as one \(attribute) value but rejects made-up values; declare it CaseIterable (enum \(T.self): \(attribute == .string ? "String" : "…"), Codable, CaseIterable)"))
                }
                members.append(ModelMember(name: name, kind: .attribute(attribute, optional: optional)))
                return values[marked && values.count > 1 ? 1 : 0]
            }
            guard let attribute = single.type else {
                throw fail(ModelError(
                    .unsupportedProperty, entity: entity, member: name,
                    "\(entity).\(name): \(T.self) decodes no single value; only values, optional models and arrays of models are properties of an entity"))
            }
            members.append(ModelMember(name: name, kind: .attribute(attribute, optional: optional)))
            return decoded
        }

        private func probe(_ model: any EntityModel.Type, markingPath path: [String] = []) throws -> any EntityModel {
            func make<D: EntityModel>(_ type: D.Type) throws -> D {
                try ModelProbe(entity: D.entityName).decode(D.self, markingPath: path).model
            }
            return try make(model)
        }
    }

    /// Thrown to answer an optional with nil.
    struct Absent: Error {}

    struct Decoder: Swift.Decoder {
        let state: State
        var codingPath: [any CodingKey] { [] }
        var userInfo: [CodingUserInfoKey: Any] { [:] }
        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            KeyedDecodingContainer(Keyed<Key>(state: state))
        }
        func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            throw state.fail(ModelError(.unsupportedProperty, entity: state.entity, "a model must decode a keyed container, not an array"))
        }
        func singleValueContainer() throws -> any SingleValueDecodingContainer {
            throw state.fail(ModelError(.unsupportedProperty, entity: state.entity, "a model must decode a keyed container, not a single value"))
        }
    }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let state: State
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { [] }
        func contains(_ key: Key) -> Bool { true }
        func decodeNil(forKey key: Key) throws -> Bool { false }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            try state.value(T.self, name: key.stringValue, optional: false)
        }
        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            do { return try state.value(T.self, name: key.stringValue, optional: true) } catch is Absent { return nil }
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
            try state.value(T.self, name: key.stringValue, optional: false)
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
            try state.value(T.self, name: key.stringValue, optional: true)
        }
        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            throw state.fail(ModelError(
                .unsupportedProperty, entity: state.entity, member: key.stringValue,
                "\(state.entity).\(key.stringValue): nested containers are not properties of an entity; map nested JSON with ModelDescription.jsonKey"))
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            throw state.fail(ModelError(
                .unsupportedProperty, entity: state.entity, member: key.stringValue,
                "\(state.entity).\(key.stringValue): arrays of values are not attributes; use an array of models (a to-many relationship)"))
        }
        func superDecoder() throws -> any Swift.Decoder { throw state.fail(ModelError(.unsupportedProperty, entity: state.entity, "superDecoder is not supported")) }
        func superDecoder(forKey key: Key) throws -> any Swift.Decoder { try superDecoder() }
    }

    /// The decoder an enum or wrapper property decodes itself from: one value, whose type it records.
    final class SingleValue: Swift.Decoder, SingleValueDecodingContainer {
        let marked: Bool
        var type: AttributeType?
        init(marked: Bool) { self.marked = marked }
        var codingPath: [any CodingKey] { [] }
        var userInfo: [CodingUserInfoKey: Any] { [:] }
        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> { throw Absent() }
        func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw Absent() }
        func singleValueContainer() throws -> any SingleValueDecodingContainer { self }
        func decodeNil() -> Bool { false }
        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            guard let (value, attribute) = ProbeValues.make(T.self, marked: marked) else { throw Absent() }
            self.type = attribute
            return value
        }
        func decode(_ type: Bool.Type) throws -> Bool { try decode(type as Bool.Type, ()) }
        func decode(_ type: String.Type) throws -> String { try decode(type as String.Type, ()) }
        func decode(_ type: Double.Type) throws -> Double { try decode(type as Double.Type, ()) }
        func decode(_ type: Float.Type) throws -> Float { try decode(type as Float.Type, ()) }
        func decode(_ type: Int.Type) throws -> Int { try decode(type as Int.Type, ()) }
        func decode(_ type: Int8.Type) throws -> Int8 { try decode(type as Int8.Type, ()) }
        func decode(_ type: Int16.Type) throws -> Int16 { try decode(type as Int16.Type, ()) }
        func decode(_ type: Int32.Type) throws -> Int32 { try decode(type as Int32.Type, ()) }
        func decode(_ type: Int64.Type) throws -> Int64 { try decode(type as Int64.Type, ()) }
        func decode(_ type: UInt.Type) throws -> UInt { try decode(type as UInt.Type, ()) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try decode(type as UInt8.Type, ()) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try decode(type as UInt16.Type, ()) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try decode(type as UInt32.Type, ()) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try decode(type as UInt64.Type, ()) }
        private func decode<T: Decodable>(_ type: T.Type, _: Void) throws -> T { try decode(type) }
    }
}
