#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import Foundation
import Tether

/// How attribute values map to SQLite column values.
///
/// | Attribute type | Column | Stored as |
/// |---|---|---|
/// | string | TEXT | the string |
/// | int16, int32, int64 | INTEGER | the integer |
/// | double, float | REAL | the double |
/// | decimal | TEXT | the decimal's description (exact) |
/// | bool | INTEGER | 0 or 1 |
/// | date | REAL | seconds since 2001-01-01T00:00:00Z (Foundation's reference date: exact round trip) |
/// | data | BLOB | the bytes |
/// | uuid | TEXT | the uppercase UUID string |
/// | url | TEXT | the absolute string |
/// | transformable | BLOB | a kind tag byte followed by the value |
/// | array, map, json | TEXT | JSON text (`CollectionValues.storageJSON`: dates as seconds since 2001-01-01, keys sorted) |
enum Codec {
    static func columnType(_ type: AttributeType) -> String {
        switch type {
        case .string, .decimal, .uuid, .url, .array, .map, .json: "TEXT"
        case .int16, .int32, .int64, .bool: "INTEGER"
        case .double, .float, .date: "REAL"
        case .data, .transformable: "BLOB"
        }
    }

    /// The stored column value of an attribute value (already checked to fit the type).
    static func encode(_ value: Value, as type: AttributeType) -> SQLValue {
        if case .transformable = type { return .blob(tagged(value)) }
        return plain(value)
    }

    /// A value bound as an SQL argument, the way columns store it.
    static func plain(_ value: Value) -> SQLValue {
        switch value {
        case .string(let v): .text(v)
        case .int(let v): .int(v)
        case .double(let v): .double(v)
        case .decimal(let v): .text(v.description)
        case .bool(let v): .int(v ? 1 : 0)
        case .date(let v): .double(v.timeIntervalSinceReferenceDate)
        case .data(let v): .blob(v)
        case .uuid(let v): .text(v.uuidString)
        case .url(let v): .text(v.absoluteString)
        case .array, .map, .json: .text(CollectionValues.storageText(value))
        }
    }

    /// Reads column `i` of `row` as an attribute of `type`; nil when NULL.
    static func decode(_ row: Row, _ i: Int, as type: AttributeType) -> Value? {
        if row.isNull(i) { return nil }
        switch type {
        case .string: return .string(row.text(i))
        case .int16, .int32, .int64: return .int(row.int(i))
        case .double, .float: return .double(row.double(i))
        case .decimal: return Decimal(string: row.text(i), locale: Locale(identifier: "en_US_POSIX")).map(Value.decimal)
        case .bool: return .bool(row.int(i) != 0)
        case .date: return .date(Date(timeIntervalSinceReferenceDate: row.double(i)))
        case .data: return .data(row.blob(i))
        case .uuid: return UUID(uuidString: row.text(i)).map(Value.uuid)
        case .url: return URL(string: row.text(i)).map(Value.url)
        case .transformable: return untagged(row.blob(i))
        case .array, .map, .json: return CollectionValues.value(storageText: row.text(i), as: type)
        }
    }

    /// Whether column `i` of `row` holds `value` (nil: NULL) for an attribute of `type`: exactly
    /// `decode(row, i, as: type) == value`, without building the stored value where the column
    /// holds what this codec writes. Strings are equal when their UTF-8 bytes are, as `Value.==`
    /// has it (not by Unicode canonical equivalence).
    static func matches(_ row: Row, _ i: Int, _ value: borrowing Value?, as type: AttributeType) -> Bool {
        let stored = row.type(i)
        if stored == SQLITE_NULL { return value == nil }
        switch value {
        case nil:
            return false
        case .string(let string)?:
            guard case .string = type, stored == SQLITE_TEXT else { break }
            let bytes = row.textBytes(i)
            // By UTF-8 bytes, as `Value.==` compares strings (a string without contiguous UTF-8 is
            // decoded and compared below).
            let outcome: Bool? = string.utf8.withContiguousStorageIfAvailable { utf8 in
                utf8.count == bytes.count && (utf8.isEmpty || memcmp(utf8.baseAddress!, bytes.baseAddress!, utf8.count) == 0)
            }
            if let outcome { return outcome }
        case .int(let v)?:
            switch type {
            case .int16, .int32, .int64: if stored == SQLITE_INTEGER { return row.int(i) == v }
            default: break
            }
        case .double(let v)?:
            switch type {
            case .double, .float: if stored == SQLITE_FLOAT { return row.double(i) == v }
            default: break
            }
        case .bool(let v)?:
            if case .bool = type, stored == SQLITE_INTEGER { return (row.int(i) != 0) == v }
        case .date(let v)?:
            if case .date = type, stored == SQLITE_FLOAT { return row.double(i) == v.timeIntervalSinceReferenceDate }
        default:
            break
        }
        return decode(row, i, as: type) == value
    }

    /// A generic SQLite value as a ``Value`` (for raw SQL results).
    static func value(_ sql: SQLValue) -> Value? {
        switch sql {
        case .null: nil
        case .int(let v): .int(v)
        case .double(let v): .double(v)
        case .text(let v): .string(v)
        case .blob(let v): .data(v)
        }
    }

    // MARK: Transformable values: a tag byte, then the payload.

    private static func bigEndian(_ v: UInt64) -> Data { withUnsafeBytes(of: v.bigEndian) { Data($0) } }
    private static func uint64(_ data: Data) -> UInt64 {
        data.reduce(0) { $0 << 8 | UInt64($1) }
    }

    static func tagged(_ value: Value) -> Data {
        switch value {
        case .string(let v): Data([0]) + Data(v.utf8)
        case .int(let v): Data([1]) + bigEndian(UInt64(bitPattern: v))
        case .double(let v): Data([2]) + bigEndian(v.bitPattern)
        case .decimal(let v): Data([3]) + Data(v.description.utf8)
        case .bool(let v): Data([4, v ? 1 : 0])
        case .date(let v): Data([5]) + bigEndian(v.timeIntervalSinceReferenceDate.bitPattern)
        case .data(let v): Data([6]) + v
        case .uuid(let v): Data([7]) + withUnsafeBytes(of: v.uuid) { Data($0) }
        case .url(let v): Data([8]) + Data(v.absoluteString.utf8)
        case .array, .map, .json: Data([9]) + ValueCoding.json(value).serialized()
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
        case 9: return (try? JSON(parsing: payload)).flatMap(ValueCoding.value)
        default: return nil
        }
    }

    /// How to find `value` among the elements of an array column whose elements are of `type`
    /// (`json_each`): the argument its `value` column is compared with, and the JSON type the
    /// element must have, or nil when no element can equal it. A string with a NUL is kept as an
    /// object (`CollectionValues.storageJSON`), whose `value` is its JSON text.
    static func elementArgument(_ type: AttributeType, _ value: Value) -> (argument: SQLValue, jsonType: String?)? {
        guard let argument = comparisonArgument(type, value) else { return nil }
        guard case .string(let s) = value else { return (argument, nil) }
        return s.utf8.contains(0) ? (.text(CollectionValues.storageText(value)), "object") : (argument, "text")
    }

    /// The argument to compare a column of `type` with `value` in SQL, or nil when such a comparison
    /// is always false (the kinds are not comparable, as in `Condition.matches`).
    static func comparisonArgument(_ type: AttributeType, _ value: Value) -> SQLValue? {
        // NaN is bound as NULL, and a comparison with it is false (`Condition.matches`).
        if case .double(let v) = value, v.isNaN { return nil }
        switch (type, value) {
        case (.string, .string), (.int16, .int), (.int32, .int), (.int64, .int), (.int16, .double), (.int32, .double),
            (.int64, .double), (.double, .double), (.float, .double), (.double, .int), (.float, .int), (.bool, .bool),
            (.date, .date), (.data, .data), (.uuid, .uuid), (.url, .url):
            return plain(value)
        default:
            return nil
        }
    }
}
