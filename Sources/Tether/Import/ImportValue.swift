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
    /// "string", "number", ... as in diagnostics.
    var typeName: String { get }
    /// The value of the member `key` of an object (nil when absent or not an object).
    func member(_ key: ImportKey) -> Self?
    /// The elements of an array (empty for anything else).
    var elements: [Self] { get }
    /// The value as a ``JSON`` tree, for transformers, identity strategies and messages.
    func materialize() -> JSON
    /// A conversion straight from the source for the common cases, giving exactly what
    /// ``Importer/value(_:for:)`` gives for ``materialize()``; nil means "take the general path".
    func directValue(for type: AttributeType, dates: DateDecoding) -> Value?
}

extension JSON: ImportValue {
    var isObject: Bool { if case .object = self { true } else { false } }
    var isArray: Bool { if case .array = self { true } else { false } }
    func member(_ key: ImportKey) -> JSON? {
        if case .object(let members) = self { return members[key.string] }
        return nil
    }
    var elements: [JSON] { arrayValue ?? [] }
    func materialize() -> JSON { self }
    func directValue(for type: AttributeType, dates: DateDecoding) -> Tether.Value? { nil }
}

extension TapeValue: ImportValue {
    var isObject: Bool { kind == .object }
    var isArray: Bool { kind == .array }

    @inline(__always)
    func member(_ key: ImportKey) -> TapeValue? {
        key.utf8.withUnsafeBufferPointer { member($0, key.string) }
    }

    func directValue(for type: AttributeType, dates: DateDecoding) -> Value? {
        let kind = self.kind
        switch type {
        case .string:
            return kind == .string ? stringValue.map(Value.string) : nil
        case .int16, .int32, .int64:
            guard kind == .int else { return nil }
            let i = intValue
            switch type {
            case .int16: return Int64(Int16.min)...Int64(Int16.max) ~= i ? .int(i) : nil
            case .int32: return Int64(Int32.min)...Int64(Int32.max) ~= i ? .int(i) : nil
            default: return .int(i)
            }
        case .double, .float:
            return doubleValue.map(Value.double)
        case .bool:
            return kind == .true ? .bool(true) : kind == .false ? .bool(false) : nil
        case .date:
            guard isPlainString, dates.formats.first?.isISO8601 == true else { return nil }
            return ISO8601.parse(bytes: span).map(Value.date)
        default:
            return nil
        }
    }
}
