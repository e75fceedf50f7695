import Foundation

/// An object key prepared once per import: its text and its UTF-8 bytes.
struct ImportKey: Sendable {
    let string: String
    let utf8: [UInt8]

    init(_ string: String) {
        self.string = string
        self.utf8 = Array(string.utf8)
    }
}

/// What the import engine reads a JSON value through: the ``JSON`` tree (`client.import(json)`)
/// or a value on a ``JSONTape`` (bytes and files), so one engine serves both.
protocol ImportValue {
    var isNull: Bool { get }
    var isObject: Bool { get }
    var isArray: Bool { get }
    /// The number of members of an object (0 for anything else).
    var memberCount: Int { get }
    /// "string", "number", ... as in diagnostics.
    var typeName: String { get }
    /// The value of the member `key` of an object (nil when absent or not an object).
    func member(_ key: ImportKey) -> Self?
    /// The elements of an array (empty for anything else).
    var elements: [Self] { get }
    /// Stores the value of each member whose key is in `table` into `found`, at `base` plus the
    /// key's index in the table (a repeated key: the last one).
    func members(_ table: KeyTable, into found: inout [Self?], at base: Int)
    /// The value as a ``JSON`` tree, for transformers, identity strategies and messages.
    func materialize() -> JSON
    /// A conversion straight from the source for the common cases, giving exactly what
    /// ``Importer/value(_:for:)`` gives for ``materialize()``; nil means "take the general path".
    /// `iso8601Dates`: the first date format is ISO 8601.
    func directValue(_ kind: DirectKind, iso8601Dates: Bool) -> Value?
    /// The source text of an object, when it has one, up to the end of its last value (what
    /// follows is whitespace and closing brackets): two objects with the same text are the same
    /// object. Valid while the source is (for one batch).
    var sourceText: UnsafeBufferPointer<UInt8>? { get }
}

/// How an attribute's values may be converted straight from the source
/// (``ImportValue/directValue(_:iso8601Dates:)``); computed once per entity plan, so the import
/// does not copy the attribute's type for every value.
enum DirectKind: UInt8, Sendable {
    case string, int16, int32, int64, double, bool, date, general

    init(_ type: AttributeType) {
        switch type {
        case .string: self = .string
        case .int16: self = .int16
        case .int32: self = .int32
        case .int64: self = .int64
        case .double: self = .double
        // `.float` is checked against Float's range on the general path.
        case .bool: self = .bool
        case .date: self = .date
        default: self = .general
        }
    }
}

extension JSON: ImportValue {
    var isObject: Bool { if case .object = self { true } else { false } }
    var memberCount: Int { if case .object(let members) = self { members.count } else { 0 } }
    var isArray: Bool { if case .array = self { true } else { false } }
    /// The member whose key has the same UTF-8 bytes as `key` (as bytes are matched on a tape:
    /// a key in another normalization form is another key).
    func member(_ key: ImportKey) -> JSON? {
        if case .object(let members) = self { return Self.member(key, of: members) }
        return nil
    }

    /// A dictionary finds a key by canonical equivalence; the key it finds must also have the
    /// same bytes.
    @inline(__always)
    static func member(_ key: ImportKey, of members: [String: JSON]) -> JSON? {
        guard let index = members.index(forKey: key.string) else { return nil }
        let (found, value) = members[index]
        guard found.utf8.elementsEqual(key.utf8) else { return nil }  // (not `? value : nil`: JSON is a nil literal)
        return value
    }
    var elements: [JSON] { arrayValue ?? [] }
    func materialize() -> JSON { self }
    func directValue(_ kind: DirectKind, iso8601Dates: Bool) -> Tether.Value? { nil }
    var sourceText: UnsafeBufferPointer<UInt8>? { nil }
}

extension TapeValue: ImportValue {
    var isObject: Bool { kind == .object }
    var memberCount: Int { kind == .object ? Int(entries[index].length) : 0 }
    var isArray: Bool { kind == .array }

    var sourceText: UnsafeBufferPointer<UInt8>? {
        let object = entries[index]
        guard object.kind == .object else { return nil }
        // The last entry inside the object (the object itself when it is empty) and where it ends.
        let last = entries[Int(object.next) - 1]
        let end: UInt32 = switch last.kind {
        case .string: last.start + last.length + 1  // the closing quote
        case .array, .object: last.start + 1  // an empty container: its opening bracket
        default: last.start + last.length
        }
        return UnsafeBufferPointer(start: bytes + Int(object.start), count: Int(end - object.start))
    }

    @inline(__always)
    func member(_ key: ImportKey) -> TapeValue? {
        key.utf8.withUnsafeBufferPointer { member($0, key.string) }
    }

    @inline(__always)
    func directValue(_ kind: DirectKind, iso8601Dates: Bool) -> Value? {
        let e = entries[index]
        switch kind {
        case .string:
            return e.kind == .string ? stringValue.map(Value.string) : nil
        case .int64:
            return e.kind == .int ? .int(intValue) : nil
        case .int32:
            guard e.kind == .int else { return nil }
            let i = intValue
            return Int64(Int32.min)...Int64(Int32.max) ~= i ? .int(i) : nil
        case .int16:
            guard e.kind == .int else { return nil }
            let i = intValue
            return Int64(Int16.min)...Int64(Int16.max) ~= i ? .int(i) : nil
        case .double:
            return doubleValue.map(Value.double)
        case .bool:
            return e.kind == .true ? .bool(true) : e.kind == .false ? .bool(false) : nil
        case .date:
            guard iso8601Dates, e.kind == .string, !e.escaped else { return nil }
            return ISO8601.parse(bytes: span).map(Value.date)
        case .general:
            return nil
        }
    }
}

/// The first key of every key path an entity's mapping reads, with a hash table over their UTF-8
/// bytes, so that an object's members are matched to the mapping in one walk over the object
/// instead of one search per mapped key.
struct KeyTable: Sendable {
    let keys: [ImportKey]
    /// Open addressing: a key's index, or -1.
    private let buckets: [Int32]
    private let mask: Int

    init(_ keys: [ImportKey]) {
        self.keys = keys
        var size = 8
        while size < keys.count * 4 { size *= 2 }
        var buckets = [Int32](repeating: -1, count: size)
        for (index, key) in keys.enumerated() {
            var bucket = key.utf8.withUnsafeBufferPointer(Self.hash) & (size - 1)
            while buckets[bucket] >= 0 { bucket = (bucket + 1) & (size - 1) }
            buckets[bucket] = Int32(index)
        }
        self.buckets = buckets
        self.mask = size - 1
    }

    var count: Int { keys.count }

    /// FNV-1a over the bytes.
    @inline(__always)
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { h = (h ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return Int(truncatingIfNeeded: h ^ (h >> 29))
    }

    /// The index of the key with these bytes, or nil.
    @inline(__always)
    func index(of bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        var bucket = Self.hash(bytes) & mask
        return buckets.withUnsafeBufferPointer { buckets in
            while true {
                let index = Int(buckets[bucket])
                if index < 0 { return nil }
                let match = keys[index].utf8.withUnsafeBufferPointer { key in
                    key.count == bytes.count && (key.isEmpty || memcmp(key.baseAddress!, bytes.baseAddress!, key.count) == 0)
                }
                if match { return index }
                bucket = (bucket + 1) & mask
            }
        }
    }

    func index(of string: String) -> Int? {
        var string = string
        return string.withUTF8 { index(of: $0) }
    }
}

extension JSON {
    func members(_ table: KeyTable, into found: inout [JSON?], at base: Int) {
        guard case .object(let members) = self else { return }
        for (i, key) in table.keys.enumerated() {
            if let value = Self.member(key, of: members) { found[base + i] = value }
        }
    }
}

extension TapeValue {
    /// Stores the value of each member whose key is in `table` at `base` + the key's index; a
    /// repeated key: the last one.
    func members(_ table: KeyTable, into found: inout [TapeValue?], at base: Int) {
        let e = entries[index]
        guard e.kind == .object else { return }
        var i = index + 1
        for _ in 0..<e.length {
            let k = entries[i]
            let slot: Int?
            if k.escaped {
                slot = TapeValue(entries: entries, bytes: bytes, index: i).stringValue.flatMap(table.index(of:))
            } else {
                slot = table.index(of: UnsafeBufferPointer(start: bytes + Int(k.start), count: Int(k.length)))
            }
            if let slot { found[base + slot] = TapeValue(entries: entries, bytes: bytes, index: i + 1) }
            i = Int(entries[i + 1].next)
        }
    }
}
