public import Foundation

/// The one seam through which Tether turns bytes into ``JSON``.
///
/// Every import, transport response and fixture goes through `JSONParser.parse(_:)`, so a
/// faster parser replaces this one file.
public enum JSONParser {
    /// Parses a complete JSON document (RFC 8259). Malformed input throws a ``JSONParseError``
    /// carrying the byte offset of the problem.
    public static func parse(_ data: Data) throws(JSONParseError) -> JSON {
        // TEMPORARY: replaced by the byte-level parser.
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            throw JSONParseError(offset: 0, message: "\(error)")
        }
        return convert(object)
    }

    private static func convert(_ any: Any) -> JSON {
        switch any {
        case is NSNull: return .null
        case let s as String: return .string(s)
        case let n as NSNumber:
            if String(cString: n.objCType) == "c" { return .bool(n.boolValue) }
            if let i = Int64(exactly: n.doubleValue), !"\(n)".contains(".") { return .int(i) }
            return .double(n.doubleValue)
        case let a as [Any]: return .array(a.map(convert))
        case let d as [String: Any]: return .object(d.mapValues(convert))
        default: return .null
        }
    }
}

/// Malformed JSON: where (byte offset from the start of the input) and what.
public struct JSONParseError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Byte offset of the first byte that could not be parsed.
    public let offset: Int
    public let message: String

    public init(offset: Int, message: String) {
        self.offset = offset
        self.message = message
    }

    public var description: String { "malformed JSON at byte \(offset): \(message)" }
}
