public import Foundation

/// The one seam through which Tether turns bytes into ``JSON``.
///
/// Every import, transport response and fixture goes through `JSONParser.parse(_:)`.
///
/// The parser is Tether's own strict RFC 8259 parser working directly on the UTF-8 bytes:
/// - an integer literal (no fraction, no exponent) that fits in `Int64` becomes ``JSON/int(_:)``,
///   so ids above 2^53 survive; every other number becomes a correctly rounded
///   ``JSON/double(_:)`` (numbers beyond the range of `Double` are an error);
/// - strings are checked for valid UTF-8, raw control characters and escapes (`\uXXXX`
///   including surrogate pairs; a lone surrogate is an error);
/// - a repeated key in one object keeps its last value;
/// - nesting deeper than ``maximumDepth`` is an error, not a crash;
/// - anything but whitespace after the value is an error; trailing commas, comments,
///   unquoted keys, single quotes, `NaN` and leading zeros are errors. A leading UTF-8 byte
///   order mark is skipped (RFC 8259 §8.1 allows ignoring it).
///
/// ```swift
/// let json = try JSONParser.parse(Data(#"{"id": 1234567890123456789}"#.utf8))
/// json["id"]   // .int(1234567890123456789)
///
/// do {
///     _ = try JSONParser.parse(Data("[1, 2,]".utf8))
/// } catch {
///     print(error)   // malformed JSON at byte 5: trailing comma before ']'
/// }
/// ```
public enum JSONParser {
    /// The deepest nesting of arrays and objects the parser accepts.
    public static let maximumDepth = 512

    /// Parses a complete JSON document (RFC 8259). Malformed input throws a ``JSONParseError``
    /// carrying the byte offset of the problem.
    public static func parse(_ data: Data) throws(JSONParseError) -> JSON {
        let result: Result<JSON, JSONParseError> = data.withUnsafeBytes { raw in
            parse(raw.bindMemory(to: UInt8.self))
        }
        return try result.get()
    }

    /// Parses a complete JSON document held in a byte buffer.
    public static func parse(bytes: UnsafeBufferPointer<UInt8>) throws(JSONParseError) -> JSON {
        try parse(bytes).get()
    }

    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Result<JSON, JSONParseError> {
        var parser = ByteParser(bytes)
        do throws(JSONParseError) {
            return .success(try parser.parseDocument())
        } catch {
            return .failure(error)
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

// MARK: - The byte-level parser

private enum ASCII {
    static let quote = UInt8(ascii: "\"")
    static let backslash = UInt8(ascii: "\\")
    static let slash = UInt8(ascii: "/")
    static let comma = UInt8(ascii: ",")
    static let colon = UInt8(ascii: ":")
    static let openBrace = UInt8(ascii: "{")
    static let closeBrace = UInt8(ascii: "}")
    static let openBracket = UInt8(ascii: "[")
    static let closeBracket = UInt8(ascii: "]")
    static let minus = UInt8(ascii: "-")
    static let plus = UInt8(ascii: "+")
    static let dot = UInt8(ascii: ".")
    static let zero = UInt8(ascii: "0")
    static let nine = UInt8(ascii: "9")
    static let lowerE = UInt8(ascii: "e")
    static let upperE = UInt8(ascii: "E")
    static let space = UInt8(ascii: " ")
    static let tab = UInt8(ascii: "\t")
    static let lineFeed = UInt8(ascii: "\n")
    static let carriageReturn = UInt8(ascii: "\r")
}

/// A recursive-descent parser over one contiguous byte buffer.
///
/// Children of the array and object being built are collected on two scratch stacks that live
/// for the whole parse, so every container is allocated once at its final size.
private struct ByteParser {
    private let base: UnsafePointer<UInt8>
    private let end: Int
    private var index = 0
    private var depth = 0
    private var values: [JSON] = []
    private var members: [(String, JSON)] = []
    private var scratch: [UInt8] = []
    private var keyCache: KeyCache

    init(_ buffer: UnsafeBufferPointer<UInt8>) {
        // An empty buffer may have no base address; `end == 0` keeps every read off it.
        self.base = buffer.baseAddress ?? UnsafePointer(bitPattern: 1)!
        self.end = buffer.count
        self.keyCache = KeyCache()
    }

    mutating func parseDocument() throws(JSONParseError) -> JSON {
        // Skip a UTF-8 byte order mark.
        if end >= 3, base[0] == 0xEF, base[1] == 0xBB, base[2] == 0xBF { index = 3 }
        let value = try parseValue()
        skipWhitespace()
        if index < end {
            throw error(at: index, "unexpected \(describe(base[index])) after the JSON value")
        }
        return value
    }

    // MARK: Values

    private mutating func parseValue() throws(JSONParseError) -> JSON {
        skipWhitespace()
        guard index < end else { throw error(at: index, "unexpected end of input, expected a value") }
        let byte = base[index]
        switch byte {
        case ASCII.quote:
            return .string(try parseString())
        case ASCII.openBrace:
            return try parseObject()
        case ASCII.openBracket:
            return try parseArray()
        case ASCII.minus, ASCII.zero...ASCII.nine:
            return try parseNumber()
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        default:
            throw error(at: index, "unexpected \(describe(byte)), expected a value")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let start = index
        let count = literal.utf8CodeUnitCount
        let text = literal.utf8Start
        var k = 0
        while k < count {
            guard index + k < end, base[index + k] == text[k] else {
                throw error(at: start, "invalid literal, expected '\(literal)'")
            }
            k += 1
        }
        index += count
    }

    private mutating func enter() throws(JSONParseError) {
        depth += 1
        if depth > JSONParser.maximumDepth {
            throw error(at: index, "nesting deeper than \(JSONParser.maximumDepth) levels")
        }
    }

    private mutating func parseArray() throws(JSONParseError) -> JSON {
        try enter()
        index += 1  // [
        skipWhitespace()
        if index < end, base[index] == ASCII.closeBracket {
            index += 1
            depth -= 1
            return .array([])
        }
        let first = values.count
        while true {
            let element = try parseValue()
            values.append(element)
            skipWhitespace()
            guard index < end else { throw error(at: index, "unexpected end of input in an array, expected ',' or ']'") }
            let byte = base[index]
            if byte == ASCII.comma {
                let comma = index
                index += 1
                skipWhitespace()
                if index < end, base[index] == ASCII.closeBracket {
                    throw error(at: comma, "trailing comma before ']'")
                }
            } else if byte == ASCII.closeBracket {
                index += 1
                break
            } else {
                throw error(at: index, "unexpected \(describe(byte)) in an array, expected ',' or ']'")
            }
        }
        let elements = Array(values[first...])
        values.removeLast(values.count - first)
        depth -= 1
        return .array(elements)
    }

    private mutating func parseObject() throws(JSONParseError) -> JSON {
        try enter()
        index += 1  // {
        skipWhitespace()
        if index < end, base[index] == ASCII.closeBrace {
            index += 1
            depth -= 1
            return .object([:])
        }
        let first = members.count
        while true {
            skipWhitespace()
            guard index < end else { throw error(at: index, "unexpected end of input in an object, expected a key") }
            guard base[index] == ASCII.quote else {
                throw error(at: index, "unexpected \(describe(base[index])) in an object, expected a string key")
            }
            let key = try parseKey()
            skipWhitespace()
            guard index < end else { throw error(at: index, "unexpected end of input in an object, expected ':'") }
            guard base[index] == ASCII.colon else {
                throw error(at: index, "unexpected \(describe(base[index])) after an object key, expected ':'")
            }
            index += 1
            let value = try parseValue()
            members.append((key, value))
            skipWhitespace()
            guard index < end else { throw error(at: index, "unexpected end of input in an object, expected ',' or '}'") }
            let byte = base[index]
            if byte == ASCII.comma {
                let comma = index
                index += 1
                skipWhitespace()
                if index < end, base[index] == ASCII.closeBrace {
                    throw error(at: comma, "trailing comma before '}'")
                }
            } else if byte == ASCII.closeBrace {
                index += 1
                break
            } else {
                throw error(at: index, "unexpected \(describe(byte)) in an object, expected ',' or '}'")
            }
        }
        var object = [String: JSON](minimumCapacity: members.count - first)
        for k in first..<members.count {
            let (key, value) = members[k]
            object[key] = value  // a repeated key: the last one wins
        }
        members.removeLast(members.count - first)
        depth -= 1
        return .object(object)
    }

    // MARK: Numbers

    private mutating func parseNumber() throws(JSONParseError) -> JSON {
        let start = index
        let negative = base[index] == ASCII.minus
        if negative { index += 1 }
        guard index < end, isDigit(base[index]) else {
            throw error(at: index, index < end ? "unexpected \(describe(base[index])), expected a digit" : "unexpected end of input, expected a digit")
        }
        let digitsStart = index
        if base[index] == ASCII.zero {
            index += 1
            if index < end, isDigit(base[index]) {
                throw error(at: digitsStart, "leading zeros are not allowed in numbers")
            }
        } else {
            while index < end, isDigit(base[index]) { index += 1 }
        }
        let digitsEnd = index
        var integral = true
        if index < end, base[index] == ASCII.dot {
            integral = false
            index += 1
            guard index < end, isDigit(base[index]) else {
                throw error(at: index, "expected a digit after the decimal point")
            }
            while index < end, isDigit(base[index]) { index += 1 }
        }
        if index < end, base[index] == ASCII.lowerE || base[index] == ASCII.upperE {
            integral = false
            index += 1
            if index < end, base[index] == ASCII.plus || base[index] == ASCII.minus { index += 1 }
            guard index < end, isDigit(base[index]) else {
                throw error(at: index, "expected a digit in the exponent")
            }
            while index < end, isDigit(base[index]) { index += 1 }
        }
        if integral, let value = integer(from: digitsStart, to: digitsEnd, negative: negative) {
            return .int(value)
        }
        // Let the standard library (strtod) round the literal text correctly.
        let text = String(decoding: UnsafeBufferPointer(start: base + start, count: index - start), as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            throw error(at: start, "number \(text) is out of range")
        }
        return .double(value)
    }

    /// The value of a run of decimal digits, or nil when it does not fit in `Int64`.
    private func integer(from start: Int, to stop: Int, negative: Bool) -> Int64? {
        // Accumulate negatively so that Int64.min fits.
        var value: Int64 = 0
        if stop - start <= 18 {
            for k in start..<stop { value = value &* 10 &- Int64(base[k] &- ASCII.zero) }
        } else {
            for k in start..<stop {
                let (times10, o1) = value.multipliedReportingOverflow(by: 10)
                let (next, o2) = times10.subtractingReportingOverflow(Int64(base[k] &- ASCII.zero))
                if o1 || o2 { return nil }
                value = next
            }
        }
        if negative { return value }
        return value == .min ? nil : -value
    }

    @inline(__always)
    private func isDigit(_ byte: UInt8) -> Bool { byte &- ASCII.zero < 10 }

    // MARK: Strings

    /// An object key: short keys without escapes come from a cache, so the repeated keys of an
    /// array of objects are decoded once.
    private mutating func parseKey() throws(JSONParseError) -> String {
        let start = index + 1
        let stop = scanPlainString(from: start)
        if stop < end, base[stop] == ASCII.quote {
            index = stop + 1
            let span = UnsafeBufferPointer(start: base + start, count: stop - start)
            return keyCache.string(for: span)
        }
        return try parseString()
    }

    /// Parses a string starting at the opening quote and leaves the index after the closing one.
    private mutating func parseString() throws(JSONParseError) -> String {
        let start = index + 1
        var stop = scanPlainString(from: start)
        while true {
            guard stop < end else { throw error(at: index, "unterminated string") }
            let byte = base[stop]
            if byte == ASCII.quote {
                index = stop + 1
                return String(decoding: UnsafeBufferPointer(start: base + start, count: stop - start), as: UTF8.self)
            }
            if byte == ASCII.backslash {
                return try parseEscapedString(contentStart: start, firstEscape: stop)
            }
            if byte < 0x20 {
                throw error(at: stop, "unescaped control character \(describe(byte)) in a string")
            }
            stop = try skipMultibyte(at: stop)
            stop = scanPlainString(from: stop)
        }
    }

    /// Advances over bytes that need no attention (printable ASCII other than `"` and `\`),
    /// eight at a time where possible. Returns the index of the first byte that needs a look.
    @inline(__always)
    private func scanPlainString(from start: Int) -> Int {
        var i = start
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        while i + 8 <= end {
            let word = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
            let quote = word ^ (ones &* UInt64(ASCII.quote))
            let backslash = word ^ (ones &* UInt64(ASCII.backslash))
            let hasQuote = (quote &- ones) & ~quote
            let hasBackslash = (backslash &- ones) & ~backslash
            let hasControl = (word &- ones &* 0x20) & ~word
            if (hasQuote | hasBackslash | hasControl | word) & highs != 0 { break }
            i += 8
        }
        while i < end {
            let byte = base[i]
            if byte == ASCII.quote || byte == ASCII.backslash || byte < 0x20 || byte >= 0x80 { return i }
            i += 1
        }
        return i
    }

    /// Validates one UTF-8 encoded scalar (RFC 3629) whose lead byte is at `i` and returns the
    /// index after it.
    private func skipMultibyte(at i: Int) throws(JSONParseError) -> Int {
        let lead = base[i]
        let count: Int
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: count = 2
        case 0xE0: count = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: count = 3
        case 0xED: count = 3; high = 0x9F
        case 0xF0: count = 4; low = 0x90
        case 0xF1...0xF3: count = 4
        case 0xF4: count = 4; high = 0x8F
        default: throw error(at: i, "invalid UTF-8 byte \(hex(lead)) in a string")
        }
        guard i + count <= end else { throw error(at: i, "truncated UTF-8 sequence in a string") }
        let second = base[i + 1]
        guard second >= low, second <= high else {
            throw error(at: i, "invalid UTF-8 sequence \(hex(lead)) \(hex(second)) in a string")
        }
        for k in 2..<max(count, 2) where base[i + k] & 0xC0 != 0x80 {
            throw error(at: i, "invalid UTF-8 continuation byte \(hex(base[i + k])) in a string")
        }
        return i + count
    }

    /// The slow path: a string with at least one escape, decoded into the scratch buffer.
    private mutating func parseEscapedString(contentStart: Int, firstEscape: Int) throws(JSONParseError) -> String {
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeBufferPointer(start: base + contentStart, count: firstEscape - contentStart))
        var i = firstEscape
        while true {
            guard i < end else { throw error(at: index, "unterminated string") }
            let byte = base[i]
            switch byte {
            case ASCII.quote:
                index = i + 1
                return String(decoding: scratch, as: UTF8.self)
            case ASCII.backslash:
                i = try decodeEscape(at: i)
            case 0..<0x20:
                throw error(at: i, "unescaped control character \(describe(byte)) in a string")
            case 0x80...:
                let next = try skipMultibyte(at: i)
                scratch.append(contentsOf: UnsafeBufferPointer(start: base + i, count: next - i))
                i = next
            default:
                let next = scanPlainString(from: i + 1)
                scratch.append(contentsOf: UnsafeBufferPointer(start: base + i, count: next - i))
                i = next
            }
        }
    }

    /// Decodes the escape at `i` (a backslash) into the scratch buffer; returns the index after it.
    private mutating func decodeEscape(at i: Int) throws(JSONParseError) -> Int {
        guard i + 1 < end else { throw error(at: i, "unterminated escape sequence") }
        let code = base[i + 1]
        switch code {
        case ASCII.quote, ASCII.backslash, ASCII.slash: scratch.append(code)
        case UInt8(ascii: "b"): scratch.append(0x08)
        case UInt8(ascii: "f"): scratch.append(0x0C)
        case UInt8(ascii: "n"): scratch.append(0x0A)
        case UInt8(ascii: "r"): scratch.append(0x0D)
        case UInt8(ascii: "t"): scratch.append(0x09)
        case UInt8(ascii: "u"):
            let unit = try hexQuad(at: i + 2, escapeStart: i)
            switch unit {
            case 0xD800...0xDBFF:
                guard i + 7 < end, base[i + 6] == ASCII.backslash, base[i + 7] == UInt8(ascii: "u") else {
                    throw error(at: i, "lone high surrogate \\u\(String(unit, radix: 16, uppercase: true)) in a string")
                }
                let low = try hexQuad(at: i + 8, escapeStart: i + 6)
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw error(at: i, "high surrogate \\u\(String(unit, radix: 16, uppercase: true)) not followed by a low surrogate")
                }
                let scalar = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
                appendUTF8(scalar)
                return i + 12
            case 0xDC00...0xDFFF:
                throw error(at: i, "lone low surrogate \\u\(String(unit, radix: 16, uppercase: true)) in a string")
            default:
                appendUTF8(UInt32(unit))
                return i + 6
            }
        default:
            throw error(at: i, "invalid escape sequence '\\\(describeRaw(code))' in a string")
        }
        return i + 2
    }

    private func hexQuad(at i: Int, escapeStart: Int) throws(JSONParseError) -> UInt16 {
        guard i + 4 <= end else { throw error(at: escapeStart, "truncated \\u escape in a string") }
        var value: UInt16 = 0
        for k in i..<i + 4 {
            let byte = base[k]
            let digit: UInt8
            switch byte {
            case ASCII.zero...ASCII.nine: digit = byte - ASCII.zero
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error(at: escapeStart, "invalid \\u escape: \(describe(byte)) is not a hex digit")
            }
            value = value << 4 | UInt16(digit)
        }
        return value
    }

    private mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case 0..<0x80:
            scratch.append(UInt8(scalar))
        case 0x80..<0x800:
            scratch.append(UInt8(0xC0 | scalar >> 6))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        case 0x800..<0x10000:
            scratch.append(UInt8(0xE0 | scalar >> 12))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        default:
            scratch.append(UInt8(0xF0 | scalar >> 18))
            scratch.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        }
    }

    // MARK: Whitespace and errors

    @inline(__always)
    private mutating func skipWhitespace() {
        while index < end {
            let byte = base[index]
            guard byte == ASCII.space || byte == ASCII.lineFeed || byte == ASCII.carriageReturn || byte == ASCII.tab
            else { return }
            index += 1
        }
    }

    private func error(at offset: Int, _ message: String) -> JSONParseError {
        JSONParseError(offset: offset, message: message)
    }

    private func describe(_ byte: UInt8) -> String {
        (0x20..<0x7F).contains(byte) ? "character '\(describeRaw(byte))'" : "byte \(hex(byte))"
    }

    private func describeRaw(_ byte: UInt8) -> String {
        (0x20..<0x7F).contains(byte) ? String(UnicodeScalar(byte)) : hex(byte)
    }

    private func hex(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16, uppercase: true)
        return byte < 0x10 ? "0x0" + digits : "0x" + digits
    }
}

/// A small direct-mapped cache of object keys: the keys of an array of similar objects are
/// decoded into `String`s once and shared afterwards.
private struct KeyCache {
    private static let slots = 256
    private static let maximumLength = 32
    private var bytes: [UInt8]
    private var lengths: [Int]
    private var strings: [String]

    init() {
        bytes = [UInt8](repeating: 0, count: Self.slots * Self.maximumLength)
        lengths = [Int](repeating: -1, count: Self.slots)
        strings = [String](repeating: "", count: Self.slots)
    }

    /// The string for validated, escape-free UTF-8 key bytes.
    mutating func string(for span: UnsafeBufferPointer<UInt8>) -> String {
        let count = span.count
        guard count <= Self.maximumLength, let start = span.baseAddress else {
            return String(decoding: span, as: UTF8.self)
        }
        // FNV-1a over the bytes.
        var hash: UInt32 = 2_166_136_261
        for k in 0..<count { hash = (hash ^ UInt32(start[k])) &* 16_777_619 }
        let slot = Int(hash ^ hash >> 16) & (Self.slots - 1)
        let offset = slot * Self.maximumLength
        if lengths[slot] == count {
            let same = bytes.withUnsafeBufferPointer { stored in
                memcmp(stored.baseAddress! + offset, start, count) == 0
            }
            if same { return strings[slot] }
        }
        let string = String(decoding: span, as: UTF8.self)
        bytes.withUnsafeMutableBufferPointer { stored in
            (stored.baseAddress! + offset).update(from: start, count: count)
        }
        lengths[slot] = count
        strings[slot] = string
        return string
    }
}
