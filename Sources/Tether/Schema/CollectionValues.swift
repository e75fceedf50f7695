import Foundation

/// The rules of array, map and JSON attributes (``AttributeType/array(_:)``,
/// ``AttributeType/map(_:)``, ``AttributeType/json``) that every store and the import share:
/// which element types they take, which values no store could keep exactly, and the JSON a
/// store keeps for them (a SQLite column holds its text). A store of your own (as the PostgreSQL
/// store in `Stores/Postgres`) keeps them with ``storageText(_:)`` and reads them back with
/// ``value(storageText:as:)``, so that every store keeps the same text.
public enum CollectionValues {
    /// Whether `type` may be the element type of an array or a map attribute: a string, an
    /// integer, a double or float, a boolean or a date.
    package static func isElementType(_ type: AttributeType) -> Bool {
        switch type {
        case .string, .int16, .int32, .int64, .double, .float, .bool, .date: true
        default: false
        }
    }

    /// What in `value` (an array, a map or a JSON value) no store can keep exactly, described
    /// for an error ("element 2: the number inf"), or nil when all of it can be kept: a number
    /// that is not finite (JSON has none) or a date outside years 1 to 9999.
    package static func problem(in value: Value) -> String? {
        func scalar(_ value: Value) -> String? {
            switch value {
            case .double(let d) where !d.isFinite: return "the number \(d) (only finite numbers can be kept)"
            case .date(let d) where !d.timeIntervalSinceReferenceDate.isFinite || !DateDecoding.representableRange.contains(d):
                return "the date \(d.timeIntervalSince1970) (seconds since 1970): a date must be finite and within years 1 to 9999"
            default: return nil
            }
        }
        switch value {
        case .array(let elements):
            for (i, e) in elements.enumerated() { if let p = scalar(e) { return "element \(i): \(p)" } }
            return nil
        case .map(let members):
            for (k, v) in members { if let p = scalar(v) { return "the value of '\(k)': \(p)" } }
            return nil
        case .json(.null):
            return "a JSON null: null is no value (clear the attribute instead)"
        case .json(let value):
            return jsonProblem(value, "$")
        default:
            return scalar(value)
        }
    }

    /// A number in `json` that is not finite, with its path under `path`.
    private static func jsonProblem(_ json: JSON, _ path: String) -> String? {
        switch json {
        case .double(let d) where !d.isFinite: return "the number \(d) at \(path) (only finite numbers can be kept)"
        case .array(let elements):
            for (i, e) in elements.enumerated() { if let p = jsonProblem(e, "\(path)[\(i)]") { return p } }
            return nil
        case .object(let members):
            for (k, v) in members.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
                if let p = jsonProblem(v, "\(path).\(k)") { return p }
            }
            return nil
        default: return nil
        }
    }

    /// The JSON a store keeps for an array, map or JSON value: elements as JSON scalars (a date
    /// as its seconds since 2001-01-01, exactly), a JSON value as it is.
    ///
    /// A string element holding a NUL character is kept as `{"nul": [the parts between NULs]}`:
    /// SQLite's JSON functions end a string at an escaped NUL, so a query would see less of it.
    package static func storageJSON(_ value: Value) -> JSON {
        switch value {
        case .array(let elements): .array(elements.map(storageJSON))
        case .map(let members): .object(members.mapValues(storageJSON))
        case .json(let json): json
        case .string(let s) where s.utf8.contains(0):
            .object([nulKey: .array(s.utf8.split(separator: 0, omittingEmptySubsequences: false).map { .string(String(decoding: $0, as: UTF8.self)) })])
        case .string(let s): .string(s)
        case .int(let i): .int(i)
        case .double(let d): .double(d)
        case .bool(let b): .bool(b)
        case .date(let d): .double(d.timeIntervalSinceReferenceDate)
        // Not an element type: kept with its kind.
        default: ValueCoding.json(value)
        }
    }

    /// The value of an attribute of `type` (an array, map or JSON type) from the JSON
    /// ``storageJSON(_:)`` gave, or nil when it does not fit the type.
    package static func value(storageJSON json: JSON, as type: AttributeType) -> Value? {
        switch (type, json) {
        case (.array(let element), .array(let elements)):
            var values: [Value] = []
            values.reserveCapacity(elements.count)
            for e in elements {
                guard let v = scalar(e, as: element) else { return nil }
                values.append(v)
            }
            return .array(values)
        case (.map(let element), .object(let members)):
            var values: [String: Value] = [:]
            values.reserveCapacity(members.count)
            for (k, e) in members {
                guard let v = scalar(e, as: element) else { return nil }
                values[k] = v
            }
            return .map(values)
        case (.json, .null):
            return nil
        case (.json, _):
            return .json(json)
        default:
            return nil
        }
    }

    /// The member of the object a string element with NUL characters is kept as.
    package static let nulKey = "nul"

    /// An element kept as ``storageJSON(_:)`` writes it, read as `type`.
    private static func scalar(_ json: JSON, as type: AttributeType) -> Value? {
        switch (type, json) {
        case (.string, .string(let s)): return .string(s)
        case (.string, .object(let members)):
            guard members.count == 1, let parts = members[nulKey]?.arrayValue, parts.count > 1 else { return nil }
            let strings = parts.compactMap(\.stringValue)
            return strings.count == parts.count ? .string(strings.joined(separator: "\u{0}")) : nil
        case (.int16, .int(let i)), (.int32, .int(let i)), (.int64, .int(let i)): return .int(i)
        case (.double, .double(let d)), (.float, .double(let d)): return .double(d)
        case (.double, .int(let i)), (.float, .int(let i)): return .double(Double(i))
        case (.bool, .bool(let b)): return .bool(b)
        case (.date, .double(let d)): return .date(Date(timeIntervalSinceReferenceDate: d))
        case (.date, .int(let i)): return .date(Date(timeIntervalSinceReferenceDate: Double(i)))
        default: return nil
        }
    }

    /// The JSON text a store keeps for an array, map or JSON value: dates as seconds since
    /// 2001-01-01, map and object keys sorted by their bytes, a string holding NUL kept as an
    /// object (JSON text a database may hold has no `\u0000`), so that equal values have equal text.
    public static func storageText(_ value: Value) -> String {
        storageJSON(value).description
    }

    /// The value of kept JSON text for an attribute of `type`, or nil when the text is not JSON or
    /// does not fit the type.
    public static func value(storageText text: String, as type: AttributeType) -> Value? {
        guard let json = try? JSON(parsing: text) else { return nil }
        return value(storageJSON: json, as: type)
    }
}
