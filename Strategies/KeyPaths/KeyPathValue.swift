public import Foundation
public import Tether

/// A Swift type that a key-path mapping can store in an attribute: it names its
/// `AttributeType` (which goes into the derived schema) and converts to and from the
/// core `Value`.
///
/// The standard types conform (`String`, `Int`, `Int64`, `Int32`, `Int16`, `Double`, `Float`,
/// `Decimal`, `Bool`, `Date`, `Data`, `UUID`, `URL`), and so does `Optional` of any of them.
/// A `RawRepresentable` enum conforms with an empty extension:
///
/// ```swift
/// enum State: String { case open, closed }
/// extension State: KeyPathValue {}      // stored as a string attribute
/// ```
public protocol KeyPathValue: Sendable {
    /// The attribute type of the derived schema.
    static var attributeType: AttributeType { get }
    /// Converts a stored value (nil: the attribute is unset) to this type; nil when it cannot
    /// be converted, in which case the model keeps the value of its default instance.
    init?(storedValue: Value?)
    /// The stored value of this Swift value; nil means "unset".
    var storedValue: Value? { get }
}

extension KeyPathValue where Self: AttributeValue {
    public init?(storedValue: Value?) {
        guard let storedValue, let value = Self(attributeValue: storedValue) else { return nil }
        self = value
    }
    public var storedValue: Value? { attributeValue }
}

extension KeyPathValue where Self: RawRepresentable, RawValue: KeyPathValue {
    public static var attributeType: AttributeType { RawValue.attributeType }
    public init?(storedValue: Value?) {
        guard let raw = RawValue(storedValue: storedValue), let value = Self(rawValue: raw) else { return nil }
        self = value
    }
    public var storedValue: Value? { rawValue.storedValue }
}

extension Optional: KeyPathValue where Wrapped: KeyPathValue {
    public static var attributeType: AttributeType { Wrapped.attributeType }
    /// An unset attribute becomes `nil`; a value that does not convert fails.
    public init?(storedValue: Value?) {
        guard let storedValue else {
            self = .none
            return
        }
        guard let value = Wrapped(storedValue: storedValue) else { return nil }
        self = .some(value)
    }
    public var storedValue: Value? { self.flatMap(\.storedValue) }
}

extension String: KeyPathValue { public static var attributeType: AttributeType { .string } }
extension Int: KeyPathValue { public static var attributeType: AttributeType { .int64 } }
extension Int64: KeyPathValue { public static var attributeType: AttributeType { .int64 } }
extension Int32: KeyPathValue { public static var attributeType: AttributeType { .int32 } }
extension Int16: KeyPathValue { public static var attributeType: AttributeType { .int16 } }
extension Double: KeyPathValue { public static var attributeType: AttributeType { .double } }
extension Float: KeyPathValue { public static var attributeType: AttributeType { .float } }
extension Decimal: KeyPathValue { public static var attributeType: AttributeType { .decimal } }
extension Bool: KeyPathValue { public static var attributeType: AttributeType { .bool } }
extension Date: KeyPathValue { public static var attributeType: AttributeType { .date } }
extension Data: KeyPathValue { public static var attributeType: AttributeType { .data } }
extension UUID: KeyPathValue { public static var attributeType: AttributeType { .uuid } }
extension URL: KeyPathValue { public static var attributeType: AttributeType { .url } }

/// An array of strings, integers, doubles, booleans or dates is an `AttributeType.array`
/// attribute (GitHub's `topics`).
extension Array: KeyPathValue where Element: KeyPathValue & AttributeValue {
    public static var attributeType: AttributeType { .array(Element.attributeType) }
    /// The array of a stored array whose every element converts; nil otherwise.
    public init?(storedValue: Value?) {
        guard case .array(let values)? = storedValue else { return nil }
        var elements: [Element] = []
        elements.reserveCapacity(values.count)
        for value in values {
            guard let element = Element(attributeValue: value) else { return nil }
            elements.append(element)
        }
        self = elements
    }
    public var storedValue: Value? { .array(map(\.attributeValue)) }
}

/// A `String`-keyed dictionary of strings, integers, doubles, booleans or dates is an
/// `AttributeType.map` attribute (Stripe's `metadata`).
extension Dictionary: KeyPathValue where Key == String, Value: KeyPathValue & AttributeValue {
    public static var attributeType: AttributeType { .map(Value.attributeType) }
    /// The dictionary of a stored map whose every value converts; nil otherwise.
    public init?(storedValue: Tether.Value?) {
        guard case .map(let values)? = storedValue else { return nil }
        var members: [String: Value] = [:]
        members.reserveCapacity(values.count)
        for (key, value) in values {
            guard let member = Value(attributeValue: value) else { return nil }
            members[key] = member
        }
        self = members
    }
    public var storedValue: Tether.Value? { .map(mapValues(\.attributeValue)) }
}

/// Any JSON, kept as it came, is an `AttributeType.json` attribute; `JSON.null` is unset.
extension JSON: KeyPathValue {
    public static var attributeType: AttributeType { .json }
    /// The JSON of a stored JSON value; `.null` for an unset attribute.
    public init?(storedValue: Tether.Value?) {
        switch storedValue {
        case nil: self = .null
        case .json(let json)?: self = json
        default: return nil
        }
    }
    public var storedValue: Tether.Value? { self == .null ? nil : .json(self) }
}
