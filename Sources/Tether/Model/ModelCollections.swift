import Foundation

/// A property type whose value is one stored array, map or JSON value: `[String]`, `[Int]`,
/// `[Date]`, `[String: String]`, ``JSON``. A model's property of such a type is an attribute of
/// ``AttributeType/array(_:)``, ``AttributeType/map(_:)`` or ``AttributeType/json``.
protocol ModelCollectionValue {
    /// The attribute type the property declares.
    static var attributeType: AttributeType { get }
    /// The probe's value: empty, or with one element (marked).
    static func probe(marked: Bool) -> Self
    /// The stored value; nil for none (a JSON `null`, which clears the attribute).
    var storedValue: Value? { get }
    /// The property value of a stored value; nil when it is not one.
    init?(storedValue: Value)
}

/// A Swift type that is an element of an array or a map property: a string, an integer, a
/// floating-point number, a boolean or a date.
protocol ModelElement: AttributeValue {
    static var elementType: AttributeType { get }
    static var probeElement: Self { get }
}

extension String: ModelElement {
    static var elementType: AttributeType { .string }
    static var probeElement: String { "\u{1}" }
}
extension Int: ModelElement {
    static var elementType: AttributeType { .int64 }
    static var probeElement: Int { 1 }
}
extension Int64: ModelElement {
    static var elementType: AttributeType { .int64 }
    static var probeElement: Int64 { 1 }
}
extension Int32: ModelElement {
    static var elementType: AttributeType { .int32 }
    static var probeElement: Int32 { 1 }
}
extension Int16: ModelElement {
    static var elementType: AttributeType { .int16 }
    static var probeElement: Int16 { 1 }
}
extension Double: ModelElement {
    static var elementType: AttributeType { .double }
    static var probeElement: Double { 1 }
}
extension Float: ModelElement {
    static var elementType: AttributeType { .float }
    static var probeElement: Float { 1 }
}
extension Bool: ModelElement {
    static var elementType: AttributeType { .bool }
    static var probeElement: Bool { true }
}
extension Date: ModelElement {
    static var elementType: AttributeType { .date }
    static var probeElement: Date { Date(timeIntervalSince1970: 1) }
}

extension Array: ModelCollectionValue where Element: ModelElement {
    static var attributeType: AttributeType { .array(Element.elementType) }
    static func probe(marked: Bool) -> Self { marked ? [Element.probeElement] : [] }
    var storedValue: Value? { .array(map(\.attributeValue)) }
    init?(storedValue: Value) {
        guard case .array(let values) = storedValue else { return nil }
        var elements: [Element] = []
        elements.reserveCapacity(values.count)
        for value in values {
            guard let element = Element(attributeValue: value) else { return nil }
            elements.append(element)
        }
        self = elements
    }
}

extension Dictionary: ModelCollectionValue where Key == String, Value: ModelElement {
    static var attributeType: AttributeType { .map(Value.elementType) }
    static func probe(marked: Bool) -> Self { marked ? ["\u{1}": Value.probeElement] : [:] }
    var storedValue: Tether.Value? { .map(mapValues(\.attributeValue)) }
    init?(storedValue: Tether.Value) {
        guard case .map(let values) = storedValue else { return nil }
        var members: [String: Value] = [:]
        members.reserveCapacity(values.count)
        for (key, value) in values {
            guard let member = Value(attributeValue: value) else { return nil }
            members[key] = member
        }
        self = members
    }
}

extension JSON: ModelCollectionValue {
    static var attributeType: AttributeType { .json }
    static func probe(marked: Bool) -> JSON { marked ? .string("\u{1}") : .null }
    var storedValue: Tether.Value? { self == .null ? nil : .json(self) }
    init?(storedValue: Tether.Value) {
        guard case .json(let json) = storedValue else { return nil }
        self = json
    }
}

/// A model property of type `JSON` holds any JSON value as it came (``AttributeType/json``);
/// `JSON` is `Codable` so that such a model is: it decodes from and encodes to whatever value a
/// decoder or encoder holds (with `JSONDecoder`, the JSON itself).
extension JSON: Codable {
    private struct MemberKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// The value a decoder holds: an object, an array, or one value (null, a boolean, an integer
    /// that fits in `Int64`, another number, a string), tried in that order.
    public init(from decoder: any Decoder) throws {
        if let container = try? decoder.container(keyedBy: MemberKey.self) {
            var members: [String: JSON] = [:]
            for key in container.allKeys { members[key.stringValue] = try container.decode(JSON.self, forKey: key) }
            self = .object(members)
        } else if var container = try? decoder.unkeyedContainer() {
            var elements: [JSON] = []
            while !container.isAtEnd { elements.append(try container.decode(JSON.self)) }
            self = .array(elements)
        } else {
            let single = try decoder.singleValueContainer()
            if single.decodeNil() {
                self = .null
            } else if let b = try? single.decode(Bool.self) {
                self = .bool(b)
            } else if let i = try? single.decode(Int64.self) {
                self = .int(i)
            } else if let d = try? single.decode(Double.self) {
                self = .double(d)
            } else {
                self = .string(try single.decode(String.self))
            }
        }
    }

    /// Encodes the value as what it is: an object as a keyed container, an array as an unkeyed
    /// one, anything else as one value.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .object(let members):
            var container = encoder.container(keyedBy: MemberKey.self)
            for (key, value) in members { try container.encode(value, forKey: MemberKey(stringValue: key)) }
        case .array(let elements):
            var container = encoder.unkeyedContainer()
            for element in elements { try container.encode(element) }
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .bool(let b):
            var container = encoder.singleValueContainer()
            try container.encode(b)
        case .int(let i):
            var container = encoder.singleValueContainer()
            try container.encode(i)
        case .double(let d):
            var container = encoder.singleValueContainer()
            try container.encode(d)
        case .string(let s):
            var container = encoder.singleValueContainer()
            try container.encode(s)
        }
    }
}

extension ModelPredicate {
    /// The array property has an element equal to `element` (``Condition/includes(_:_:)``):
    /// `.contains(\.topics, "swift")`.
    public static func contains<E: AttributeValue & Encodable>(_ keyPath: any KeyPath<Model, [E]> & Sendable, _ element: E) -> Self {
        Self { .includes(try $0.requireAttributeName(of: keyPath, for: "contains"), element.attributeValue) }
    }
    /// The optional array property is set and has an element equal to `element`.
    public static func contains<E: AttributeValue & Encodable>(_ keyPath: any KeyPath<Model, [E]?> & Sendable, _ element: E) -> Self {
        Self { .includes(try $0.requireAttributeName(of: keyPath, for: "contains"), element.attributeValue) }
    }
}
