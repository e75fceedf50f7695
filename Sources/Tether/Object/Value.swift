public import Foundation

/// A stored attribute value. Absence (`nil`) means the attribute is not set.
///
/// All integer attribute types (16, 32, 64 bit) are stored as ``int(_:)``; `float` is stored as
/// ``double(_:)``.
///
/// Strings compare by their UTF-8 bytes, as SQLite compares text: `"\u{E9}"` and `"e\u{301}"`
/// (the same text, composed and decomposed) are two values, two identities, and ``compare(_:_:)``
/// orders strings byte by byte (which is code point order). Swift's `String` equality, which
/// treats canonically equivalent strings as equal, is not used, so every store agrees.
public enum Value: Sendable, Hashable, CustomStringConvertible {
    /// The value of a `string` attribute.
    case string(String)
    /// The value of an `int16`, `int32` or `int64` attribute.
    case int(Int64)
    /// The value of a `double` or `float` attribute.
    case double(Double)
    /// The value of a `decimal` attribute.
    case decimal(Decimal)
    /// The value of a `bool` attribute.
    case bool(Bool)
    /// The value of a `date` attribute.
    case date(Date)
    /// The value of a `data` attribute (base64 in JSON).
    case data(Data)
    /// The value of a `uuid` attribute.
    case uuid(UUID)
    /// The value of a `url` attribute.
    case url(URL)
    /// The value of an ``AttributeType/array(_:)`` attribute: its elements in order, each a
    /// value of the element type (`.array([.string("swift"), .string("ios")])`).
    case array([Value])
    /// The value of a ``AttributeType/map(_:)`` attribute: string keys to values of the element
    /// type (Stripe's `metadata`).
    case map([String: Value])
    /// The value of a ``AttributeType/json`` attribute: the JSON as it came (never `null`, which
    /// clears the attribute).
    ///
    /// Indirect (a boxed payload, one reference): held inline, the nested enum made every copy
    /// and release of any `Value` switch over `JSON`'s cases too, on every import's hot path.
    indirect case json(JSON)

    public var description: String {
        switch self {
        case .string(let v): "\"\(v)\""
        case .int(let v): "\(v)"
        case .double(let v): "\(v)"
        case .decimal(let v): "\(v)"
        case .bool(let v): "\(v)"
        case .date(let v): v.formatted(.iso8601)
        case .data(let v): "<\(v.count) bytes>"
        case .uuid(let v): v.uuidString
        case .url(let v): v.absoluteString
        case .array(let v): "[" + v.map(\.description).joined(separator: ", ") + "]"
        case .map(let v):
            "[" + (v.isEmpty ? ":" : v.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
                .map { "\"\($0.key)\": \($0.value)" }.joined(separator: ", ")) + "]"
        case .json(let v): v.description
        }
    }
}

extension Value {
    /// Equal kinds and equal payloads; strings by their UTF-8 bytes (not canonical equivalence).
    public static func == (lhs: Value, rhs: Value) -> Bool {
        switch (lhs, rhs) {
        case (.string(let a), .string(let b)): return equalUTF8(a, b)
        case (.int(let a), .int(let b)): return a == b
        case (.double(let a), .double(let b)): return a == b
        case (.decimal(let a), .decimal(let b)): return a == b
        case (.bool(let a), .bool(let b)): return a == b
        case (.date(let a), .date(let b)): return a == b
        case (.data(let a), .data(let b)): return a == b
        case (.uuid(let a), .uuid(let b)): return a == b
        case (.url(let a), .url(let b)): return a == b
        case (.array, .array), (.map, .map), (.json, .json): return equalCollections(lhs, rhs)
        default: return false
        }
    }

    /// `==` of two arrays, maps or JSON values, out of line: a recursive comparison in `==`
    /// itself kept the compiler from specialising and inlining the scalar cases that imports and
    /// stores compare by the million.
    @inline(never)
    private static func equalCollections(_ lhs: Value, _ rhs: Value) -> Bool {
        switch (lhs, rhs) {
        case (.array(let a), .array(let b)): return a == b
        case (.map(let a), .map(let b)): return a == b
        case (.json(let a), .json(let b)): return a == b
        default: return false
        }
    }

    /// Hashes the kind and the payload; a string by its UTF-8 bytes, as ``==(_:_:)`` compares them.
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .string(let v):
            hasher.combine(0 as UInt8)
            Self.hashUTF8(v, into: &hasher)
        case .int(let v): hasher.combine(1 as UInt8); hasher.combine(v)
        case .double(let v): hasher.combine(2 as UInt8); hasher.combine(v)
        case .decimal(let v): hasher.combine(3 as UInt8); hasher.combine(v)
        case .bool(let v): hasher.combine(4 as UInt8); hasher.combine(v)
        case .date(let v): hasher.combine(5 as UInt8); hasher.combine(v)
        case .data(let v): hasher.combine(6 as UInt8); hasher.combine(v)
        case .uuid(let v): hasher.combine(7 as UInt8); hasher.combine(v)
        case .url(let v): hasher.combine(8 as UInt8); hasher.combine(v)
        case .array(let v): hasher.combine(9 as UInt8); hasher.combine(v)
        case .map(let v): hasher.combine(10 as UInt8); hasher.combine(v)
        case .json(let v): hasher.combine(11 as UInt8); hasher.combine(v)
        }
    }

    /// Whether two strings have the same UTF-8 bytes.
    @inline(__always)
    static func equalUTF8(_ a: String, _ b: String) -> Bool {
        withUTF8(a) { pa in withUTF8(b) { pb in
            guard pa.count == pb.count else { return false }
            return pa.count == 0 || pa.baseAddress == pb.baseAddress || memcmp(pa.baseAddress!, pb.baseAddress!, pa.count) == 0
        } }
    }

    /// Orders two strings by their UTF-8 bytes (memcmp, then the shorter first), as SQLite's
    /// `BINARY` collation does: negative, zero or positive.
    @inline(__always)
    static func compareUTF8(_ a: String, _ b: String) -> Int {
        withUTF8(a) { pa in withUTF8(b) { pb in
            let common = min(pa.count, pb.count)
            if common > 0 {
                let c = memcmp(pa.baseAddress!, pb.baseAddress!, common)
                if c != 0 { return Int(c) }
            }
            return pa.count == pb.count ? 0 : (pa.count < pb.count ? -1 : 1)
        } }
    }

    @inline(__always)
    private static func hashUTF8(_ s: String, into hasher: inout Hasher) {
        withUTF8(s) { bytes in hasher.combine(bytes: UnsafeRawBufferPointer(bytes)) }
        hasher.combine(0xFF as UInt8)  // never in UTF-8: ends the string, as String's own hash does
    }

    /// Calls `body` with the string's UTF-8 bytes: in place for a native string (always on
    /// Linux), else from a contiguous copy (a bridged string).
    @inline(__always)
    private static func withUTF8<R>(_ s: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if let result = s.utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = s
        copy.makeContiguousUTF8()
        return copy.utf8.withContiguousStorageIfAvailable(body)!
    }

    /// Orders values of the same kind; values of different kinds order by kind, except integers
    /// and doubles, which compare exactly as numbers (as SQLite compares them). Strings order
    /// by their UTF-8 bytes (code point order), as SQLite orders text. Arrays order element by
    /// element, maps and JSON values by their JSON text (a total order; conditions and sorts do
    /// not compare them: see ``Condition``).
    /// Used by stores to sort and compare.
    public static func compare(_ lhs: Value, _ rhs: Value) -> ComparisonResult {
        func cmp<T: Comparable>(_ a: T, _ b: T) -> ComparisonResult {
            a < b ? .orderedAscending : (a > b ? .orderedDescending : .orderedSame)
        }
        switch (lhs, rhs) {
        case (.string(let a), .string(let b)): return cmp(compareUTF8(a, b), 0)
        case (.int(let a), .int(let b)): return cmp(a, b)
        case (.double(let a), .double(let b)): return cmp(a, b)
        case (.int(let a), .double(let b)): return compareExactly(a, b)
        case (.double(let a), .int(let b)): return compareExactly(b, a).reversed
        case (.decimal(let a), .decimal(let b)): return cmp(a, b)
        case (.bool(let a), .bool(let b)): return cmp(a ? 1 : 0, b ? 1 : 0)
        case (.date(let a), .date(let b)): return cmp(a, b)
        case (.data(let a), .data(let b)): return cmp(a.lexicographicallyPrecedes(b) ? 0 : (a == b ? 1 : 2), 1)
        case (.uuid(let a), .uuid(let b)): return cmp(a.uuidString, b.uuidString)
        case (.url(let a), .url(let b)): return cmp(a.absoluteString, b.absoluteString)
        case (.array(let a), .array(let b)):
            for (x, y) in zip(a, b) {
                let c = compare(x, y)
                if c != .orderedSame { return c }
            }
            return cmp(a.count, b.count)
        case (.map, .map), (.json, .json):
            return cmp(compareUTF8(lhs.jsonText, rhs.jsonText), 0)
        default: return cmp(lhs.kindOrder, rhs.kindOrder)
        }
    }

    /// An integer and a double compared as numbers, exactly (as SQLite compares them), not after
    /// rounding the integer to a double: `Int64.max` is less than 2^63, 2^53 + 1 more than 2^53.
    /// NaN is neither less nor greater than any integer.
    static func compareExactly(_ a: Int64, _ b: Double) -> ComparisonResult {
        if b.isNaN { return .orderedSame }
        if b >= 9223372036854775808.0 { return .orderedAscending }   // 2^63 and above
        if b < -9223372036854775808.0 { return .orderedDescending }  // below -2^63
        let whole = b.rounded(.towardZero)                          // in [-2^63, 2^63): fits
        let i = Int64(whole)
        if a != i { return a < i ? .orderedAscending : .orderedDescending }
        return whole < b ? .orderedAscending : (whole > b ? .orderedDescending : .orderedSame)
    }

    private var kindOrder: Int {
        switch self {
        case .bool: 0
        case .int, .double, .decimal: 1
        case .string: 2
        case .date: 3
        case .data: 4
        case .uuid: 5
        case .url: 6
        case .array: 7
        case .map: 8
        case .json: 9
        }
    }

    /// The JSON text of a map or JSON value (sorted keys), for ordering them.
    private var jsonText: String {
        switch self {
        case .json(let json): json.description
        default: ValueCoding.json(self).description
        }
    }

    /// Whether the value is an array, a map or a JSON value (a collection attribute's).
    public var isCollection: Bool {
        switch self {
        case .array, .map, .json: true
        default: false
        }
    }
}

/// A Swift type that an attribute value converts to and from. Used by the typed access layer
/// (``TypedObject``, ``Field``) and by typed models.
public protocol AttributeValue: Sendable {
    /// The Swift value of a stored value, or nil when the stored value is of another kind (or does
    /// not fit: `Int32` of an integer out of its range).
    init?(attributeValue: Value)
    /// The stored value for this Swift value: what a predicate compares and a write stores.
    var attributeValue: Value { get }
}

extension String: AttributeValue {
    public init?(attributeValue: Value) { if case .string(let v) = attributeValue { self = v } else { return nil } }
    public var attributeValue: Value { .string(self) }
}
extension Int64: AttributeValue {
    public init?(attributeValue: Value) { if case .int(let v) = attributeValue { self = v } else { return nil } }
    public var attributeValue: Value { .int(self) }
}
extension Int: AttributeValue {
    /// The integer of an ``Value/int(_:)`` that fits in `Int`; nil otherwise.
    public init?(attributeValue: Value) { if case .int(let v) = attributeValue, let i = Int(exactly: v) { self = i } else { return nil } }
    public var attributeValue: Value { .int(Int64(self)) }
}
extension Int32: AttributeValue {
    /// The integer of an ``Value/int(_:)`` that fits in `Int32`; nil otherwise.
    public init?(attributeValue: Value) { if case .int(let v) = attributeValue, let i = Int32(exactly: v) { self = i } else { return nil } }
    public var attributeValue: Value { .int(Int64(self)) }
}
extension Int16: AttributeValue {
    /// The integer of an ``Value/int(_:)`` that fits in `Int16`; nil otherwise.
    public init?(attributeValue: Value) { if case .int(let v) = attributeValue, let i = Int16(exactly: v) { self = i } else { return nil } }
    public var attributeValue: Value { .int(Int64(self)) }
}
extension Double: AttributeValue {
    /// The number of a ``Value/double(_:)``, or of an ``Value/int(_:)`` (converted, so an integer
    /// above 2^53 is rounded); nil otherwise.
    public init?(attributeValue: Value) {
        switch attributeValue {
        case .double(let v): self = v
        case .int(let v): self = Double(v)
        default: return nil
        }
    }
    public var attributeValue: Value { .double(self) }
}
extension Float: AttributeValue {
    /// The number of a ``Value/double(_:)`` or ``Value/int(_:)``, rounded to `Float`; nil otherwise.
    public init?(attributeValue: Value) { guard let d = Double(attributeValue: attributeValue) else { return nil }; self = Float(d) }
    /// The stored value: a ``Value/double(_:)`` (a `float` attribute keeps doubles).
    public var attributeValue: Value { .double(Double(self)) }
}
extension Decimal: AttributeValue {
    public init?(attributeValue: Value) { if case .decimal(let v) = attributeValue { self = v } else { return nil } }
    public var attributeValue: Value { .decimal(self) }
}
extension Bool: AttributeValue {
    public init?(attributeValue: Value) { if case .bool(let v) = attributeValue { self = v } else { return nil } }
    public var attributeValue: Value { .bool(self) }
}
extension Date: AttributeValue {
    public init?(attributeValue: Value) { if case .date(let v) = attributeValue { self = v } else { return nil } }
    public var attributeValue: Value { .date(self) }
}
extension Data: AttributeValue {
    public init?(attributeValue: Value) { if case .data(let v) = attributeValue { self = v } else { return nil } }
    public var attributeValue: Value { .data(self) }
}
extension UUID: AttributeValue {
    public init?(attributeValue: Value) { if case .uuid(let v) = attributeValue { self = v } else { return nil } }
    public var attributeValue: Value { .uuid(self) }
}
extension URL: AttributeValue {
    public init?(attributeValue: Value) { if case .url(let v) = attributeValue { self = v } else { return nil } }
    public var attributeValue: Value { .url(self) }
}

extension ComparisonResult {
    /// The result with its sides swapped.
    var reversed: ComparisonResult {
        switch self {
        case .orderedAscending: .orderedDescending
        case .orderedDescending: .orderedAscending
        case .orderedSame: .orderedSame
        }
    }
}
