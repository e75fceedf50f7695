public import Foundation

/// Tether's own JSON value: a `Sendable` tree that replaces `[String: Any]`.
///
/// Numbers keep their integer form when the text had no fraction or exponent and fits in
/// `Int64`, so ids above 2^53 (Twitter's, say) are not mangled by a `Double`.
///
/// ```swift
/// let json = try JSON(parsing: Data(#"{"id": 1, "login": "octocat"}"#.utf8))
/// json["login"]?.stringValue   // "octocat"
/// ```
public enum JSON: Sendable, Hashable {
    /// `null`: in an import, it clears the attribute it is mapped to.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// An integer literal that fits in `Int64`.
    case int(Int64)
    /// Any other number.
    case double(Double)
    /// A string, its escapes decoded.
    case string(String)
    /// An array, its elements in order.
    case array([JSON])
    /// An object. When a key appears twice in the text, the last occurrence wins.
    case object([String: JSON])
}

extension JSON {
    /// Parses UTF-8 JSON bytes with Tether's parser (see ``JSONParser``).
    public init(parsing data: Data) throws(JSONParseError) {
        self = try JSONParser.parse(data)
    }

    /// Parses a UTF-8 JSON string.
    public init(parsing text: String) throws(JSONParseError) {
        self = try JSONParser.parse(Data(text.utf8))
    }

    /// The member `key` of an object; nil when it is missing or the value is not an object.
    ///
    /// `json["owner"]?["login"]` reads a nested member; ``subscript(_:)-(JSONKeyPath)`` does the
    /// same with a dotted path.
    public subscript(key: String) -> JSON? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The element at `index` of an array; nil when the index is out of range or the value is not
    /// an array.
    public subscript(index: Int) -> JSON? {
        if case .array(let elements) = self, elements.indices.contains(index) { return elements[index] }
        return nil
    }

    /// Follows a key path such as `owner.login` through nested objects.
    public subscript(keyPath: JSONKeyPath) -> JSON? {
        var current = self
        for component in keyPath.components {
            guard case .object(let members) = current, let next = members[component] else { return nil }
            current = next
        }
        return current
    }

    /// True for `null` (not for a missing member: `json["missing"]` is nil, not `.null`).
    public var isNull: Bool { if case .null = self { return true } else { return false } }
    /// The string, or nil for any other value (a number is not converted).
    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    /// The boolean, or nil for any other value (`0` and `"true"` are not converted).
    public var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    /// The elements of an array, or nil for any other value.
    public var arrayValue: [JSON]? { if case .array(let a) = self { return a } else { return nil } }
    /// The members of an object, or nil for any other value.
    public var objectValue: [String: JSON]? { if case .object(let o) = self { return o } else { return nil } }
    /// The integer a JSON number with a fraction or an exponent stands for (`12.0`, `1e3`), or nil
    /// when it has a fraction or is too large for its text to be known exactly: from 2^53 on, a
    /// parsed number is already rounded (`9007199254740993.0` parses as `…992`).
    static func exactInteger(_ d: Double) -> Int64? {
        guard d.rounded() == d, abs(d) < 9_007_199_254_740_992 else { return nil }
        return Int64(d)
    }

    /// The value as an integer: an integer literal, or a number that is an exact integer
    /// (`12.0`; not `12.5`, nor an integral number of 2^53 or more, whose text cannot be known exactly).
    public var int64Value: Int64? {
        switch self {
        case .int(let i): return i
        case .double(let d): return Self.exactInteger(d)
        default: return nil
        }
    }
    /// The value of any number as a `Double` (an integer above 2^53 loses precision); nil for
    /// anything else.
    public var doubleValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    /// A short name of the JSON type, used in diagnostics ("string", "number", ...).
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .int, .double: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// Compact JSON text. Object keys are sorted by their UTF-8 bytes so the output is stable.
    public func serialized() -> Data {
        var out = [UInt8]()
        out.reserveCapacity(64)
        JSONWriter.write(self, into: &out)
        return Data(out)
    }
}

extension JSON: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSON)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension JSON: CustomStringConvertible {
    public var description: String { String(decoding: serialized(), as: UTF8.self) }
}

/// Writes JSON text. Used for request bodies and descriptions.
enum JSONWriter {
    static func write(_ json: JSON, into out: inout [UInt8]) {
        switch json {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let i): out.append(contentsOf: String(i).utf8)
        case .double(let d):
            if d.isFinite {
                out.append(contentsOf: "\(d)".utf8)
            } else {
                out.append(contentsOf: "null".utf8)
            }
        case .string(let s): writeString(s, into: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (i, e) in elements.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                write(e, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            // By bytes: Swift's `<` on strings is not a total order for some non-ASCII keys
            // (`"\u{E9}$"` and `"e\u{301}"`: neither is less), so it would not give one output.
            for (i, key) in members.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }).enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                writeString(key, into: &out)
                out.append(UInt8(ascii: ":"))
                write(members[key]!, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): out.append(contentsOf: #"\\"#.utf8)
            case 0x0A: out.append(contentsOf: #"\n"#.utf8)
            case 0x0D: out.append(contentsOf: #"\r"#.utf8)
            case 0x09: out.append(contentsOf: #"\t"#.utf8)
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: #"\u00"#.utf8)
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
