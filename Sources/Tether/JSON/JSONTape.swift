import Foundation

/// A validated JSON document as a flat tape of entries over its bytes, for the import's fast path.
///
/// One pass over the bytes checks them exactly as ``JSONParser`` does (same grammar, UTF-8 and
/// escape checks, depth limit, number range, same error messages and offsets) and records one
/// ``Entry`` per value and per object key, in document order. A container records how many
/// children it has and the index just past its subtree, so a reader skips it in O(1). Nothing is
/// decoded up front: strings without escapes are read straight from the bytes, numbers are
/// parsed when asked for, and ``TapeValue/materialize()`` builds the ``JSON`` tree of a value
/// only where a caller needs one.
struct JSONTape: Sendable {
    enum Kind: UInt8, Sendable {
        case null, `false`, `true`, int, double, string, array, object
    }

    struct Entry: Sendable {
        /// Strings: the first byte after the opening quote; numbers: the first byte of the literal;
        /// containers: the opening bracket.
        var start: UInt32
        /// Strings and numbers: byte length; arrays: element count; objects: member count.
        var length: UInt32
        /// The index of the entry after this value and everything inside it.
        var next: UInt32
        var kind: Kind
        /// A string with at least one escape sequence.
        var escaped: Bool
    }

    /// The entries; an object's members are key, value, key, value, ...
    private(set) var entries: [Entry] = []
    /// The first entry of each document appended (one per ``append(_:offset:)`` call).
    private(set) var roots: [Int] = []

    /// The largest input a tape addresses (offsets are 32-bit).
    static let maximumSize = Int(UInt32.max) - 1

    init() {}

    /// Parses one complete JSON document from `bytes` and appends it; `offset` is where `bytes`
    /// start in the tape's byte buffer. Throws the same error as ``JSONParser/parse(bytes:)`` for
    /// the same bytes, its offset shifted by `errorOffset` (by default `offset`).
    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>, offset: Int = 0, errorOffset: Int? = nil) throws(JSONParseError) {
        precondition(offset + bytes.count <= Self.maximumSize, "JSON input too large for a tape")
        // Move the entries into the parser so that they stay uniquely referenced (no copy).
        var parser = TapeParser(bytes, offset: offset, entries: [])
        swap(&parser.entries, &entries)
        // Grow geometrically (about one entry per 8-20 bytes of JSON): a streamed batch appends
        // many small documents.
        let needed = parser.entries.count + bytes.count / 8 + 16
        if parser.entries.capacity < needed { parser.entries.reserveCapacity(max(needed, parser.entries.capacity * 2)) }
        defer { entries = parser.entries }
        let root = parser.entries.count
        do throws(JSONParseError) {
            try parser.parseDocument()
        } catch {
            parser.entries.removeLast(parser.entries.count - root)
            throw JSONParseError(offset: (errorOffset ?? offset) + error.offset, message: error.message)
        }
        roots.append(root)
    }

    /// Parses the value at the start of `bytes` (a top-level array element of a streamed file,
    /// followed by whatever of the file is buffered) onto the tape as one document, when it is
    /// well formed and followed, after whitespace, by `,` or `]` within `bytes`; returns its
    /// length. The value is checked as an element of a top-level array (one level deep, no byte
    /// order mark), as the whole document's parse checks it. Otherwise leaves the tape as it was
    /// and returns nil: the caller (``JSONStream``) then checks the element with what follows it
    /// buffered, and appends it with ``append(_:offset:errorOffset:)``, which gives the same
    /// entries for a well-formed element. One pass over the bytes instead of three (finding the
    /// end, checking, then parsing).
    mutating func appendElement(prefixOf bytes: UnsafeBufferPointer<UInt8>, offset: Int) -> Int? {
        precondition(offset + bytes.count <= Self.maximumSize, "JSON input too large for a tape")
        var parser = TapeParser(bytes, offset: offset, entries: [])
        swap(&parser.entries, &entries)
        defer { swap(&parser.entries, &entries) }
        let root = parser.entries.count
        guard let length = parser.parseElementValue() else {
            parser.entries.removeLast(parser.entries.count - root)
            return nil
        }
        roots.append(root)
        return length
    }

    /// Checks the value at the start of `bytes` as an element of a top-level array (nested one
    /// level deep, no byte order mark), exactly as the whole document's parse checks it when
    /// `bytes` hold everything that follows it in the document (or enough: see
    /// ``JSONStream/Splitter``); returns the value's length. Errors are offsets into `bytes`.
    static func checkElement(_ bytes: UnsafeBufferPointer<UInt8>) throws(JSONParseError) -> Int {
        var parser = TapeParser(bytes, offset: 0, entries: [])
        return try parser.parseElement()
    }

    /// How an error message names a byte: `character 'x'`, or `byte 0xEF`.
    static func describe(_ byte: UInt8) -> String {
        (0x20..<0x7F).contains(byte) ? "character '\(String(UnicodeScalar(byte)))'" : "byte \(hex(byte))"
    }

    static func hex(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16, uppercase: true)
        return byte < 0x10 ? "0x0" + digits : "0x" + digits
    }

    /// Parses a whole document.
    init(parsing bytes: UnsafeBufferPointer<UInt8>) throws(JSONParseError) {
        try append(bytes)
    }

    mutating func removeAll() {
        entries.removeAll(keepingCapacity: true)
        roots.removeAll(keepingCapacity: true)
    }

    /// Calls `body` with the root values, valid only inside `body`; `bytes` must be the buffer the
    /// tape was built from.
    func withRoots<R>(bytes: UnsafeBufferPointer<UInt8>, _ body: ([TapeValue]) throws -> R) rethrows -> R {
        try entries.withUnsafeBufferPointer { tape in
            let base = bytes.baseAddress ?? UnsafePointer(bitPattern: 1)!
            let entries = tape.baseAddress ?? UnsafePointer(bitPattern: MemoryLayout<Entry>.alignment)!
            return try body(roots.map { TapeValue(entries: entries, bytes: base, index: $0) })
        }
    }
}

extension JSONTape {
    /// Reads a document whose top level is an array onto a tape a batch of elements at a time, in
    /// one pass over the bytes: the import of bytes already in memory keeps one batch's entries,
    /// not the whole document's. The checks and errors are those of ``JSONTape/init(parsing:)``.
    struct ArrayReader {
        private var parser: TapeParser
        private var started = false
        private var finished = false

        /// A reader of `bytes`, or nil when the document's first value is not an array.
        init?(_ bytes: UnsafeBufferPointer<UInt8>) {
            parser = TapeParser(bytes, offset: 0, entries: [])
            guard parser.beginTopLevelArray() else { return nil }
        }

        /// Bytes of the document read so far.
        var bytesRead: Int { parser.position }

        /// Empties `tape` and reads up to `count` more elements onto it, one root each (their
        /// offsets are into the whole document); returns how many were read, 0 at the end.
        mutating func read(_ count: Int, into tape: inout JSONTape) throws(JSONParseError) -> Int {
            tape.removeAll()
            swap(&parser.entries, &tape.entries)
            defer { swap(&parser.entries, &tape.entries) }
            var read = 0
            while read < count, !finished {
                let root = parser.entries.count
                if try parser.nextTopLevelElement(first: !started) {
                    tape.roots.append(root)
                    read += 1
                } else {
                    finished = true
                }
                started = true
            }
            return read
        }
    }
}

/// One value on a tape: two pointers and an index, no reference counting. Valid only inside
/// ``JSONTape/withRoots(bytes:_:)``.
struct TapeValue {
    let entries: UnsafePointer<JSONTape.Entry>
    let bytes: UnsafePointer<UInt8>
    let index: Int

    @inline(__always) var entry: JSONTape.Entry { entries[index] }
    @inline(__always) var kind: JSONTape.Kind { entries[index].kind }

    var isNull: Bool { kind == .null }

    /// The raw bytes of a string's content (between the quotes, escapes not decoded) or of a number.
    @inline(__always) var span: UnsafeBufferPointer<UInt8> {
        let e = entries[index]
        return UnsafeBufferPointer(start: bytes + Int(e.start), count: Int(e.length))
    }

    var stringValue: String? {
        let e = entries[index]
        guard e.kind == .string else { return nil }
        if !e.escaped { return String(decoding: span, as: UTF8.self) }
        // Validated already: decode the escapes.
        let quoted = UnsafeBufferPointer(start: bytes + Int(e.start) - 1, count: Int(e.length) + 2)
        return TapeParser.decodeEscapedString(quoted)
    }

    /// The value of an integer literal (kind `.int`, known to fit in `Int64`).
    var intValue: Int64 {
        let s = span
        var i = 0
        let negative = s[0] == UInt8(ascii: "-")
        if negative { i = 1 }
        var value: Int64 = 0
        while i < s.count {
            value = value &* 10 &- Int64(s[i] &- 48)
            i += 1
        }
        return negative ? value : -value
    }

    var doubleValue: Double? {
        switch kind {
        case .int: return Double(intValue)
        case .double: return Double(String(decoding: span, as: UTF8.self))
        default: return nil
        }
    }

    var typeName: String {
        switch kind {
        case .null: "null"
        case .true, .false: "boolean"
        case .int, .double: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// The elements of an array (empty for anything else).
    var elements: [TapeValue] {
        let e = entries[index]
        guard e.kind == .array else { return [] }
        var result: [TapeValue] = []
        result.reserveCapacity(Int(e.length))
        var i = index + 1
        for _ in 0..<e.length {
            result.append(TapeValue(entries: entries, bytes: bytes, index: i))
            i = Int(entries[i].next)
        }
        return result
    }

    /// The value of the last member named by `key` (UTF-8 bytes, no escapes), or nil. Keys with
    /// escapes are compared decoded, byte for byte.
    func member(_ key: UnsafeBufferPointer<UInt8>, _ string: String) -> TapeValue? {
        let e = entries[index]
        guard e.kind == .object else { return nil }
        var found = -1
        var i = index + 1
        let count = key.count
        for _ in 0..<e.length {
            let k = entries[i]
            if k.escaped {
                if TapeValue(entries: entries, bytes: bytes, index: i).stringValue?.utf8.elementsEqual(key) == true { found = i + 1 }
            } else if Int(k.length) == count, count == 0 || (bytes[Int(k.start)] == key[0] && memcmp(bytes + Int(k.start), key.baseAddress!, count) == 0) {
                found = i + 1
            }
            i = Int(entries[i + 1].next)
        }
        return found < 0 ? nil : TapeValue(entries: entries, bytes: bytes, index: found)
    }

    /// The ``JSON`` tree of this value.
    func materialize() -> JSON {
        let e = entries[index]
        switch e.kind {
        case .null: return .null
        case .false: return .bool(false)
        case .true: return .bool(true)
        case .int: return .int(intValue)
        case .double: return .double(doubleValue ?? 0)
        case .string: return .string(stringValue ?? "")
        case .array: return .array(elements.map { $0.materialize() })
        case .object:
            var object = [String: JSON](minimumCapacity: Int(e.length))
            var i = index + 1
            for _ in 0..<e.length {
                let key = TapeValue(entries: entries, bytes: bytes, index: i).stringValue ?? ""
                object[key] = TapeValue(entries: entries, bytes: bytes, index: i + 1).materialize()
                i = Int(entries[i + 1].next)
            }
            return .object(object)
        }
    }
}

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

/// ``JSONParser``'s byte parser, recording entries instead of building values. Keep the two in step.
private struct TapeParser {
    private let base: UnsafePointer<UInt8>
    private let end: Int
    /// Added to every recorded byte offset (the position of `base` in the tape's buffer).
    private let offset: Int
    private var index = 0
    /// Bytes read so far.
    var position: Int { index }
    private var depth = 0
    private var scratch: [UInt8] = []
    var entries: [JSONTape.Entry]

    init(_ buffer: UnsafeBufferPointer<UInt8>, offset: Int, entries: [JSONTape.Entry]) {
        self.base = buffer.baseAddress ?? UnsafePointer(bitPattern: 1)!
        self.end = buffer.count
        self.offset = offset
        self.entries = entries
    }

    /// The text of a validated, quoted string literal that contains escapes.
    static func decodeEscapedString(_ quoted: UnsafeBufferPointer<UInt8>) -> String {
        var parser = TapeParser(quoted, offset: 0, entries: [])
        var firstEscape = 1
        while firstEscape < quoted.count, quoted[firstEscape] != ASCII.backslash { firstEscape += 1 }
        do throws(JSONParseError) {
            try parser.parseEscapedString(contentStart: 1, firstEscape: firstEscape)
        } catch {
            return String(decoding: quoted.dropFirst().dropLast(), as: UTF8.self)
        }
        return String(decoding: parser.scratch, as: UTF8.self)
    }

    mutating func parseDocument() throws(JSONParseError) {
        skipByteOrderMark()
        try parseValue()
        try finishDocument()
    }

    private mutating func skipByteOrderMark() {
        if end >= 3, base[0] == 0xEF, base[1] == 0xBB, base[2] == 0xBF { index = 3 }
    }

    /// Checks that nothing but whitespace follows the document's value.
    private mutating func finishDocument() throws(JSONParseError) {
        skipWhitespace()
        if index < end {
            throw error(at: index, "unexpected \(describe(base[index])) after the JSON value")
        }
    }

    /// Skips a byte order mark and whitespace and enters a top-level array; false (nothing
    /// consumed) when the document does not start with one.
    mutating func beginTopLevelArray() -> Bool {
        skipByteOrderMark()
        skipWhitespace()
        guard index < end, base[index] == ASCII.openBracket else {
            index = 0
            return false
        }
        index += 1
        depth = 1
        return true
    }

    /// Parses the next element of the top-level array entered by ``beginTopLevelArray()``;
    /// false after its closing bracket, once the rest of the document is checked.
    mutating func nextTopLevelElement(first: Bool) throws(JSONParseError) -> Bool {
        skipWhitespace()
        let more: Bool
        if first {
            more = !(index < end && base[index] == ASCII.closeBracket)
            if !more { index += 1 }
        } else {
            more = try afterArrayElement()
        }
        guard more else {
            depth = 0
            try finishDocument()
            return false
        }
        try parseValue()
        return true
    }

    /// Parses one value from the start, as the value of a document, and returns the index after
    /// it, when it is followed (after whitespace) by `,` or `]`; nil when it is malformed or
    /// what follows it is not there (or not one of those).
    mutating func parseElementValue() -> Int? {
        do throws(JSONParseError) {
            _ = try parseElement()
        } catch {
            return nil
        }
        let valueEnd = index
        skipWhitespace()
        guard index < end, base[index] == ASCII.comma || base[index] == ASCII.closeBracket else { return nil }
        return valueEnd
    }

    /// Parses one value from the start as an element of a top-level array (one level deep, as
    /// in ``nextTopLevelElement(first:)``); returns the index after it.
    mutating func parseElement() throws(JSONParseError) -> Int {
        depth = 1
        try parseValue()
        return index
    }

    @inline(__always)
    private mutating func record(_ kind: JSONTape.Kind, _ start: Int, _ length: Int, escaped: Bool = false) {
        entries.append(JSONTape.Entry(
            start: UInt32(truncatingIfNeeded: offset + start), length: UInt32(truncatingIfNeeded: length),
            next: UInt32(truncatingIfNeeded: entries.count + 1), kind: kind, escaped: escaped))
    }

    // MARK: Values

    private mutating func parseValue() throws(JSONParseError) {
        skipWhitespace()
        guard index < end else { throw error(at: index, "unexpected end of input, expected a value") }
        let byte = base[index]
        switch byte {
        case ASCII.quote:
            try parseString()
        case ASCII.openBrace:
            try parseObject()
        case ASCII.openBracket:
            try parseArray()
        case ASCII.minus, ASCII.zero...ASCII.nine:
            try parseNumber()
        case UInt8(ascii: "t"):
            record(.true, index, 4)
            try expectLiteral("true")
        case UInt8(ascii: "f"):
            record(.false, index, 5)
            try expectLiteral("false")
        case UInt8(ascii: "n"):
            record(.null, index, 4)
            try expectLiteral("null")
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

    private mutating func close(_ container: Int, count: Int) {
        entries[container].length = UInt32(truncatingIfNeeded: count)
        entries[container].next = UInt32(truncatingIfNeeded: entries.count)
    }

    private mutating func parseArray() throws(JSONParseError) {
        try enter()
        let container = entries.count
        record(.array, index, 0)
        index += 1  // [
        skipWhitespace()
        if index < end, base[index] == ASCII.closeBracket {
            index += 1
            depth -= 1
            return
        }
        var count = 0
        while true {
            try parseValue()
            count += 1
            skipWhitespace()
            guard try afterArrayElement() else { break }
        }
        close(container, count: count)
        depth -= 1
    }

    /// After an array element (and whitespace): consumes a ',' and returns true when another
    /// element follows, or the ']' and returns false.
    @inline(__always)
    private mutating func afterArrayElement() throws(JSONParseError) -> Bool {
        guard index < end else { throw error(at: index, "unexpected end of input in an array, expected ',' or ']'") }
        let byte = base[index]
        if byte == ASCII.comma {
            let comma = index
            index += 1
            skipWhitespace()
            if index < end, base[index] == ASCII.closeBracket {
                throw error(at: comma, "trailing comma before ']'")
            }
            return true
        } else if byte == ASCII.closeBracket {
            index += 1
            return false
        } else {
            throw error(at: index, "unexpected \(describe(byte)) in an array, expected ',' or ']'")
        }
    }

    private mutating func parseObject() throws(JSONParseError) {
        try enter()
        let container = entries.count
        record(.object, index, 0)
        index += 1  // {
        skipWhitespace()
        if index < end, base[index] == ASCII.closeBrace {
            index += 1
            depth -= 1
            return
        }
        var count = 0
        while true {
            skipWhitespace()
            guard index < end else { throw error(at: index, "unexpected end of input in an object, expected a key") }
            guard base[index] == ASCII.quote else {
                throw error(at: index, "unexpected \(describe(base[index])) in an object, expected a string key")
            }
            try parseString()
            skipWhitespace()
            guard index < end else { throw error(at: index, "unexpected end of input in an object, expected ':'") }
            guard base[index] == ASCII.colon else {
                throw error(at: index, "unexpected \(describe(base[index])) after an object key, expected ':'")
            }
            index += 1
            try parseValue()
            count += 1
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
        close(container, count: count)
        depth -= 1
    }

    // MARK: Numbers

    private mutating func parseNumber() throws(JSONParseError) {
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
        if integral, integer(from: digitsStart, to: digitsEnd, negative: negative) != nil {
            record(.int, start, index - start)
            return
        }
        // Let the standard library (strtod) round the literal text correctly.
        let text = String(decoding: UnsafeBufferPointer(start: base + start, count: index - start), as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            throw error(at: start, "number \(Self.abbreviatedNumber(text)) is out of range")
        }
        _ = value
        record(.double, start, index - start)
    }

    /// A number's text for a message: whole up to 40 characters, else its first 40 and how many
    /// digits it has (`1234…(10000 digits)`), so that a hostile number does not make a message of
    /// its size.
    static func abbreviatedNumber(_ text: String) -> String {
        guard text.utf8.count > 40 else { return text }
        let digits = text.utf8.reduce(0) { $0 + ($1 &- ASCII.zero < 10 ? 1 : 0) }
        return "\(text.prefix(40))…(\(digits) digits)"
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

    /// Parses a string starting at the opening quote and leaves the index after the closing one.
    private mutating func parseString() throws(JSONParseError) {
        let start = index + 1
        var stop = scanPlainString(from: start)
        while true {
            guard stop < end else { throw error(at: index, "unterminated string") }
            let byte = base[stop]
            if byte == ASCII.quote {
                index = stop + 1
                record(.string, start, stop - start)
                return
            }
            if byte == ASCII.backslash {
                try parseEscapedString(contentStart: start, firstEscape: stop)
                record(.string, start, index - 1 - start, escaped: true)
                return
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
    private mutating func parseEscapedString(contentStart: Int, firstEscape: Int) throws(JSONParseError) {
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeBufferPointer(start: base + contentStart, count: firstEscape - contentStart))
        var i = firstEscape
        while true {
            guard i < end else { throw error(at: index, "unterminated string") }
            let byte = base[i]
            switch byte {
            case ASCII.quote:
                index = i + 1
                return
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
        guard index < end, base[index] <= ASCII.space else { return }
        while index < end {
            let byte = base[index]
            if byte == ASCII.space {
                // Indentation: a run of spaces measured eight bytes at a time.
                if index + 8 <= end {
                    let word = UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
                    let other = word ^ 0x2020_2020_2020_2020
                    index += other == 0 ? 8 : other.trailingZeroBitCount >> 3
                } else {
                    index += 1
                }
                continue
            }
            guard byte == ASCII.lineFeed || byte == ASCII.carriageReturn || byte == ASCII.tab else { return }
            index += 1
        }
    }

    private func error(at offset: Int, _ message: String) -> JSONParseError {
        JSONParseError(offset: offset, message: message)
    }

    private func describe(_ byte: UInt8) -> String { JSONTape.describe(byte) }

    private func describeRaw(_ byte: UInt8) -> String {
        (0x20..<0x7F).contains(byte) ? String(UnicodeScalar(byte)) : hex(byte)
    }

    private func hex(_ byte: UInt8) -> String { JSONTape.hex(byte) }
}

