import Foundation
import NIOCore
import PostgresNIO
import Tether

/// One bound parameter in PostgreSQL's binary format: a scalar or a one-dimensional array, whose
/// elements may be NULL (postgres-nio's own arrays cannot hold NULL, which a batch of optional
/// values needs).
enum Parameter: PostgresDynamicTypeEncodable, Sendable {
    case int(Int64)
    case double(Double)
    case bool(Bool)
    case bytes([UInt8])
    case text(String)
    /// An array of elements of `type` (int8, float8, bool, bytea or text); nil elements are NULL.
    case array(PostgresDataType, [Parameter?])

    var psqlType: PostgresDataType {
        switch self {
        case .int: .int8
        case .double: .float8
        case .bool: .bool
        case .bytes: .bytea
        case .text: .text
        case .array(let element, _): Self.arrayType(of: element)
        }
    }

    var psqlFormat: PostgresFormat { .binary }

    static func arrayType(of element: PostgresDataType) -> PostgresDataType {
        switch element {
        case .int8: .int8Array
        case .float8: .float8Array
        case .bool: .boolArray
        case .bytea: .byteaArray
        default: .textArray
        }
    }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        switch self {
        case .int(let v): buffer.writeInteger(v)
        case .double(let v): buffer.writeInteger(v.bitPattern)
        case .bool(let v): buffer.writeInteger(v ? 1 : 0, as: UInt8.self)
        case .bytes(let v): buffer.writeBytes(v)
        case .text(let v): buffer.writeString(v)
        case .array(let element, let elements):
            // ndim, has-nulls flag, element type, then the one dimension's length and lower bound.
            buffer.writeInteger(Int32(1))
            buffer.writeInteger(Int32(elements.contains { $0 == nil } ? 1 : 0))
            buffer.writeInteger(element.rawValue)
            buffer.writeInteger(Int32(elements.count))
            buffer.writeInteger(Int32(1))
            for item in elements {
                guard let item else {
                    buffer.writeInteger(Int32(-1))
                    continue
                }
                let lengthIndex = buffer.writerIndex
                buffer.writeInteger(Int32(0))
                item.encode(into: &buffer, context: context)
                buffer.setInteger(Int32(buffer.writerIndex - lengthIndex - 4), at: lengthIndex)
            }
        }
    }

    static func ints(_ values: some Sequence<Int64>) -> Parameter { .array(.int8, values.map { .int($0) }) }
}

/// A statement's SQL and its parameters, `$1`... in order.
struct SQL: Sendable {
    var text: String
    var parameters: [Parameter?]

    init(_ text: String, _ parameters: [Parameter?] = []) {
        self.text = text
        self.parameters = parameters
    }

    /// Appends a parameter and returns its placeholder (`$n`).
    mutating func bind(_ parameter: Parameter?) -> String {
        parameters.append(parameter)
        return "$\(parameters.count)"
    }

    var query: PostgresQuery {
        var bindings = PostgresBindings(capacity: parameters.count)
        for parameter in parameters {
            if let parameter { bindings.append(parameter) } else { bindings.appendNull() }
        }
        return PostgresQuery(unsafeSQL: text, binds: bindings)
    }
}

/// Reading columns of a result row in binary format.
struct Cells {
    private let cells: [PostgresCell]

    init(_ row: PostgresRow) { cells = Array(row) }

    var count: Int { cells.count }
    func isNull(_ i: Int) -> Bool { cells[i].bytes == nil }

    func int(_ i: Int) -> Int64? {
        guard var bytes = cells[i].bytes else { return nil }
        switch cells[i].dataType {
        case .int2: return bytes.readInteger(as: Int16.self).map(Int64.init)
        case .int4: return bytes.readInteger(as: Int32.self).map(Int64.init)
        default: return bytes.readInteger(as: Int64.self)
        }
    }

    func double(_ i: Int) -> Double? {
        guard var bytes = cells[i].bytes else { return nil }
        if cells[i].dataType == .float4 { return bytes.readInteger(as: UInt32.self).map { Double(Float(bitPattern: $0)) } }
        return bytes.readInteger(as: UInt64.self).map(Double.init(bitPattern:))
    }

    func bool(_ i: Int) -> Bool? {
        guard var bytes = cells[i].bytes else { return nil }
        return bytes.readInteger(as: UInt8.self).map { $0 != 0 }
    }

    func bytes(_ i: Int) -> [UInt8]? {
        guard var bytes = cells[i].bytes else { return nil }
        return bytes.readBytes(length: bytes.readableBytes)
    }

    func text(_ i: Int) -> String? {
        guard var bytes = cells[i].bytes else { return nil }
        return bytes.readString(length: bytes.readableBytes)
    }

    /// The cell as a generic value, by its column type (raw SQL results).
    func value(_ i: Int) -> Value? {
        switch cells[i].dataType {
        case .int2, .int4, .int8: return int(i).map(Value.int)
        case .float4, .float8: return double(i).map(Value.double)
        case .bool: return bool(i).map(Value.bool)
        case .bytea: return bytes(i).map { .data(Data($0)) }
        default: return text(i).map(Value.string)
        }
    }

    func name(_ i: Int) -> String { cells[i].columnName }
}

/// How attribute values map to PostgreSQL columns.
///
/// | Attribute type | Column | Stored as |
/// |---|---|---|
/// | string | bytea | the UTF-8 bytes (NUL allowed; ordered by bytes, as Tether orders strings) |
/// | int16, int32, int64 | bigint | the integer |
/// | double, float | double precision | the double (NaN is stored as NULL, as SQLite does) |
/// | decimal | text | the decimal's description (exact) |
/// | bool | boolean | the boolean |
/// | date | double precision | seconds since 2001-01-01T00:00:00Z (exact round trip) |
/// | data | bytea | the bytes |
/// | uuid | text COLLATE "C" | the uppercase UUID string |
/// | url | text COLLATE "C" | the absolute string |
/// | transformable | bytea | a kind tag byte followed by the value |
/// | array, map, json | text | JSON text (`CollectionValues.storageText`, as the SQLite store keeps it) |
enum Codec {
    static func columnType(_ type: AttributeType) -> String {
        switch type {
        case .string, .data, .transformable: "bytea"
        case .int16, .int32, .int64: "bigint"
        case .double, .float, .date: "double precision"
        case .decimal: "text"
        case .bool: "boolean"
        case .uuid, .url: "text COLLATE \"C\""
        case .array, .map, .json: "text"
        }
    }

    /// The element type of the column of `type`, for arrays of its values.
    static func elementType(_ type: AttributeType) -> PostgresDataType {
        switch type {
        case .string, .data, .transformable: .bytea
        case .int16, .int32, .int64: .int8
        case .double, .float, .date: .float8
        case .decimal, .uuid, .url, .array, .map, .json: .text
        case .bool: .bool
        }
    }

    /// The SQL type of an array of `type`'s column values (for `unnest`).
    static func arrayCast(_ type: AttributeType) -> String {
        switch type {
        case .string, .data, .transformable: "bytea[]"
        case .int16, .int32, .int64: "bigint[]"
        case .double, .float, .date: "double precision[]"
        case .decimal, .uuid, .url, .array, .map, .json: "text[]"
        case .bool: "boolean[]"
        }
    }

    /// The stored column value of an attribute value (already checked to fit the type); nil: NULL.
    static func encode(_ value: Value?, as type: AttributeType) -> Parameter? {
        guard let value else { return nil }
        if case .transformable = type { return .bytes(tagged(value)) }
        return plain(value)
    }

    /// A value bound the way columns store it.
    static func plain(_ value: Value) -> Parameter? {
        switch value {
        case .string(let v): .bytes(Array(v.utf8))
        case .int(let v): .int(v)
        case .double(let v): v.isNaN ? nil : .double(v)
        case .decimal(let v): .text(v.description)
        case .bool(let v): .bool(v)
        case .date(let v): .double(v.timeIntervalSinceReferenceDate)
        case .data(let v): .bytes(Array(v))
        case .uuid(let v): .text(v.uuidString)
        case .url(let v): .text(v.absoluteString)
        case .array, .map, .json: .text(CollectionValues.storageText(value))
        }
    }

    /// Reads column `i` as an attribute of `type`; nil when NULL.
    static func decode(_ cells: Cells, _ i: Int, as type: AttributeType) -> Value? {
        if cells.isNull(i) { return nil }
        switch type {
        case .string: return cells.bytes(i).map { .string(String(decoding: $0, as: UTF8.self)) }
        case .int16, .int32, .int64: return cells.int(i).map(Value.int)
        case .double, .float: return cells.double(i).map(Value.double)
        case .decimal: return cells.text(i).flatMap { Decimal(string: $0, locale: Locale(identifier: "en_US_POSIX")) }.map(Value.decimal)
        case .bool: return cells.bool(i).map(Value.bool)
        case .date: return cells.double(i).map { .date(Date(timeIntervalSinceReferenceDate: $0)) }
        case .data: return cells.bytes(i).map { .data(Data($0)) }
        case .uuid: return cells.text(i).flatMap(UUID.init(uuidString:)).map(Value.uuid)
        case .url: return cells.text(i).flatMap { URL(string: $0) }.map(Value.url)
        case .transformable: return cells.bytes(i).flatMap { untagged(Data($0)) }
        case .array, .map, .json: return cells.text(i).flatMap { CollectionValues.value(storageText: $0, as: type) }
        }
    }

    // MARK: Transformable values: a tag byte, then the payload (the SQLite store's encoding).

    private static func bigEndian(_ v: UInt64) -> [UInt8] { withUnsafeBytes(of: v.bigEndian) { Array($0) } }
    private static func uint64(_ data: Data) -> UInt64 { data.reduce(0) { $0 << 8 | UInt64($1) } }

    static func tagged(_ value: Value) -> [UInt8] {
        switch value {
        case .string(let v): [0] + Array(v.utf8)
        case .int(let v): [1] + bigEndian(UInt64(bitPattern: v))
        case .double(let v): [2] + bigEndian(v.bitPattern)
        case .decimal(let v): [3] + Array(v.description.utf8)
        case .bool(let v): [4, v ? 1 : 0]
        case .date(let v): [5] + bigEndian(v.timeIntervalSinceReferenceDate.bitPattern)
        case .data(let v): [6] + Array(v)
        case .uuid(let v): [7] + withUnsafeBytes(of: v.uuid) { Array($0) }
        case .url(let v): [8] + Array(v.absoluteString.utf8)
        // Refused by check(_:_:entity:attribute:) before anything is written: a collection is kept
        // in an attribute of its own type, whose text says how to read it back.
        case .array, .map, .json: [9] + Array(CollectionValues.storageText(value).utf8)
        }
    }

    static func untagged(_ data: Data) -> Value? {
        guard let tag = data.first else { return nil }
        let payload = Data(data.dropFirst())
        switch tag {
        case 0: return .string(String(decoding: payload, as: UTF8.self))
        case 1 where payload.count == 8: return .int(Int64(bitPattern: uint64(payload)))
        case 2 where payload.count == 8: return .double(Double(bitPattern: uint64(payload)))
        case 3: return Decimal(string: String(decoding: payload, as: UTF8.self), locale: Locale(identifier: "en_US_POSIX")).map(Value.decimal)
        case 4 where payload.count == 1: return .bool(payload[payload.startIndex] != 0)
        case 5 where payload.count == 8: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: uint64(payload))))
        case 6: return .data(payload)
        case 7 where payload.count == 16:
            let b = Array(payload)
            return .uuid(UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])))
        case 8: return URL(string: String(decoding: payload, as: UTF8.self)).map(Value.url)
        default: return nil
        }
    }

    /// Throws the errors every store throws for a value `type` does not accept (the checks of
    /// Tether's own stores: a type mismatch, a date that is not finite or outside years 1 to 9999).
    static func check(_ value: Value, _ type: AttributeType, entity: String, attribute: String) throws {
        guard type.accepts(value) else {
            throw StoreError(.typeMismatch, entity: entity, member: attribute, "\(entity).\(attribute) is \(type); cannot store \(value)")
        }
        if case .transformable = type {
            switch value {
            case .array, .map, .json:
                throw StoreError(.invalidValue, entity: entity, member: attribute,
                                 "\(entity).\(attribute) is transformable; the PostgreSQL store keeps arrays, maps and JSON values in attributes "
                                     + "declared as such (AttributeType.array, .map, .json), so that they read back as what was written")
            default: break
            }
        }
        if case .date(let date) = value, !date.timeIntervalSinceReferenceDate.isFinite || !DateDecoding.representableRange.contains(date) {
            throw StoreError(.invalidValue, entity: entity, member: attribute,
                             "\(entity).\(attribute) cannot store the date \(date.timeIntervalSince1970) (seconds since 1970): a date must be finite and within years 1 to 9999")
        }
    }
}

/// Quotes an SQL identifier.
func quote(_ identifier: String) -> String {
    "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}
