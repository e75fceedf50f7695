import Foundation

/// One release's changes to the stored shape that keep the data: an identifier and ordered steps.
///
/// Migrations are declared with the schema, oldest first, and given to the builder with
/// ``Client/Builder/migrations(_:)``. A persistent store applies each migration once per file
/// (it records the identifiers it applied), before it adds what is new in the schema, all in one
/// transaction: a step that fails leaves the file as it was.
///
/// ```swift
/// let migrations = [
///     SchemaMigration("2-user-handle", [
///         .renameAttribute(entity: "User", from: "login", to: "handle"),
///         .changeType(entity: "User", attribute: "age", to: .int64),
///     ]),
/// ]
/// ```
///
/// A file created by this version of the app starts in the schema's shape, so every migration
/// declared then is recorded as applied without running. Never change or reuse a shipped
/// migration's identifier: add a new migration instead.
public struct SchemaMigration: Sendable {
    /// The stable name the store records once the migration is applied (`"2-user-handle"`).
    public var id: String
    /// The steps, applied in order, each to the stored shape the previous ones left.
    public var steps: [MigrationStep]

    /// A migration named `id` made of `steps`, applied in order.
    public init(_ id: String, _ steps: [MigrationStep]) {
        self.id = id
        self.steps = steps
    }

    /// Throws a ``StoreError/Kind/incompatibleSchema`` error for an empty or repeated identifier.
    public static func validate(_ migrations: [SchemaMigration]) throws(StoreError) {
        var seen = Set<String>()
        for migration in migrations {
            if migration.id.isEmpty {
                throw StoreError(.incompatibleSchema, "a schema migration has an empty identifier")
            }
            if !seen.insert(migration.id).inserted {
                throw StoreError(.incompatibleSchema, "the schema migration '\(migration.id)' is declared twice")
            }
        }
    }
}

/// A change to the stored shape of one entity that keeps its data (a step of a ``SchemaMigration``).
///
/// Names are those the stored data has when the step runs: the names of the previous release,
/// after the steps before this one. Splitting or merging entities is not a step.
public enum MigrationStep: Sendable, CustomStringConvertible {
    /// Renames an entity, keeping its objects, their links and what Tether keeps about them.
    case renameEntity(from: String, to: String)
    /// Renames an attribute of `entity`, keeping its values (and the identity that names it).
    case renameAttribute(entity: String, from: String, to: String)
    /// Renames a relationship of `entity`, keeping its links (the inverse keeps its own name).
    case renameRelationship(entity: String, from: String, to: String)
    /// Changes the type of an attribute, converting every stored value with `conversion`
    /// (``MigrationConversion/standard`` unless given). A value that does not convert fails the
    /// migration, naming the objects, unless the conversion says otherwise
    /// (``MigrationConversion/nullifyingFailures``).
    case changeType(entity: String, attribute: String, to: AttributeType, conversion: MigrationConversion = .standard)
    /// Changes the identity of `entity` to the attributes `to` (none: objects without identity),
    /// re-keying its objects. Two objects with the same new identity fail the migration, naming them.
    case changeIdentity(entity: String, to: [String])

    /// The entity the step applies to (for a rename of an entity, its old name).
    public var entity: String {
        switch self {
        case .renameEntity(let from, _): from
        case .renameAttribute(let entity, _, _), .renameRelationship(let entity, _, _),
             .changeType(let entity, _, _, _), .changeIdentity(let entity, _): entity
        }
    }

    /// The attribute or relationship the step applies to, if any.
    public var member: String? {
        switch self {
        case .renameEntity, .changeIdentity: nil
        case .renameAttribute(_, let from, _), .renameRelationship(_, let from, _): from
        case .changeType(_, let attribute, _, _): attribute
        }
    }

    public var description: String {
        switch self {
        case .renameEntity(let from, let to): "renameEntity(\(from) → \(to))"
        case .renameAttribute(let entity, let from, let to): "renameAttribute(\(entity).\(from) → \(to))"
        case .renameRelationship(let entity, let from, let to): "renameRelationship(\(entity).\(from) → \(to))"
        case .changeType(let entity, let attribute, let type, let conversion): "changeType(\(entity).\(attribute) → \(type), \(conversion))"
        case .changeIdentity(let entity, let identity): "changeIdentity(\(entity) → (\(identity.joined(separator: ", "))))"
        }
    }
}

/// How a ``MigrationStep/changeType(entity:attribute:to:conversion:)`` step converts each stored
/// value to the new type.
///
/// A conversion never loses data silently: a value it cannot convert exactly fails the migration
/// (the store names the objects), unless the conversion is ``nullifyingFailures``.
public struct MigrationConversion: Sendable, CustomStringConvertible {
    /// A value that did not convert: why, for the store's error.
    public struct Failure: Error, Sendable {
        /// Why the value did not convert.
        public var reason: String
        /// A failure for `reason`.
        public init(_ reason: String) { self.reason = reason }
    }

    private let name: String
    private let body: @Sendable (Value, AttributeType) throws -> Value?
    /// Whether a value that does not convert is cleared rather than failing the migration.
    public private(set) var nullifies = false

    private init(name: String, body: @escaping @Sendable (Value, AttributeType) throws -> Value?) {
        self.name = name
        self.body = body
    }

    /// The built-in conversions between scalars, exact or failing: integers, doubles, decimals
    /// and their text (`"42"` ↔ 42, 42 ↔ 42.0, but not 4.5 → integer), booleans (`true`/`false`,
    /// 1/0), UUIDs and URLs from and to text, dates from and to ISO 8601 text or Unix seconds, and
    /// any value to its own type.
    public static let standard = MigrationConversion(name: "standard") { value, type in try StandardConversion.convert(value, to: type) }

    /// Dates from text in the date `format` (`DateFormatter`'s, in the POSIX locale and
    /// `timeZone`), and dates to text in it; other values as ``standard`` converts them.
    public static func dateFormat(_ format: String, timeZone: TimeZone = TimeZone(identifier: "UTC")!) -> MigrationConversion {
        let formatter = FormatterBox(format: format, timeZone: timeZone)
        return MigrationConversion(name: "dateFormat(\(format))") { value, type in
            switch (value, type) {
            case (.string(let text), .date):
                guard let date = formatter.date(from: text) else { throw Failure("'\(text)' is not a date in the format \(format)") }
                return .date(date)
            case (.date(let date), .string):
                return .string(formatter.string(from: date))
            default:
                return try StandardConversion.convert(value, to: type)
            }
        }
    }

    /// A conversion of your own: `convert` returns the new value (nil clears the attribute, as
    /// the step says) or throws (the value does not convert). The store checks that the new type
    /// accepts what it returns.
    public static func custom(_ convert: @escaping @Sendable (Value) throws -> Value?) -> MigrationConversion {
        MigrationConversion(name: "custom") { value, _ in try convert(value) }
    }

    /// This conversion, clearing the attribute of an object whose value does not convert instead
    /// of failing the migration: the explicit way to drop such values.
    public var nullifyingFailures: MigrationConversion {
        var copy = self
        copy.nullifies = true
        return copy
    }

    /// The stored `value` converted to `type`: nil clears the attribute. Throws a ``Failure`` when
    /// the value does not convert (or converts to a value `type` does not accept), unless the
    /// conversion ``nullifies``, which then returns nil.
    public func convert(_ value: Value, to type: AttributeType) throws(Failure) -> Value? {
        do {
            guard let converted = try body(value, type) else { return nil }
            guard type.accepts(converted) else { throw Failure("the conversion gave \(converted), which is not a \(type)") }
            return converted
        } catch {
            if nullifies { return nil }
            if let failure = error as? Failure { throw failure }
            throw Failure("\(error)")
        }
    }

    public var description: String { nullifies ? name + ", nullifying failures" : name }
}

/// A `DateFormatter` shared by the values of one conversion (a step runs on one thread at a time,
/// but the type is not `Sendable`).
private final class FormatterBox: @unchecked Sendable {
    private let formatter = DateFormatter()
    private let lock = NSLock()

    init(format: String, timeZone: TimeZone) {
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = timeZone
        formatter.dateFormat = format
    }

    func date(from text: String) -> Date? { lock.withLock { formatter.date(from: text) } }
    func string(from date: Date) -> String { lock.withLock { formatter.string(from: date) } }
}

/// ``MigrationConversion/standard``: exact conversions between scalars.
enum StandardConversion {
    typealias Failure = MigrationConversion.Failure

    static func convert(_ value: Value, to type: AttributeType) throws(Failure) -> Value? {
        if type.accepts(value) {
            if case .int(let i) = value { return try integer(i, type) }
            return value
        }
        switch type {
        case .string:
            switch value {
            case .int(let i): return .string(String(i))
            case .double(let d): return .string(d.description)
            case .decimal(let d): return .string(d.description)
            case .bool(let b): return .string(b ? "true" : "false")
            case .uuid(let u): return .string(u.uuidString)
            case .url(let u): return .string(u.absoluteString)
            case .date(let d):
                // Whole seconds as ISO 8601 text; milliseconds when the date has them, exactly.
                let whole = d.formatted(.iso8601)
                if (try? Date(whole, strategy: .iso8601)) == d { return .string(whole) }
                let fractional = d.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
                if (try? Date(fractional, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))) == d { return .string(fractional) }
                throw Failure("\(d.timeIntervalSince1970) (seconds since 1970) has no exact ISO 8601 text")
            default: break
            }
        case .int16, .int32, .int64:
            switch value {
            case .string(let s):
                // The integer's own text only: "007" or "+7" would not read back as written.
                guard let i = Int64(s), String(i) == s else { throw Failure("'\(s)' is not the text of an integer") }
                return try integer(i, type)
            case .double(let d):
                guard let i = Int64(exactly: d) else { throw Failure("\(d) is not an integer") }
                return try integer(i, type)
            case .decimal(let d):
                guard let i = Int64(d.description) else { throw Failure("\(d) is not an integer") }
                return try integer(i, type)
            case .bool(let b): return try integer(b ? 1 : 0, type)
            default: break
            }
        case .double, .float:
            switch value {
            case .int(let i):
                guard let d = Double(exactly: i) else { throw Failure("\(i) has no exact double") }
                return .double(d)
            case .string(let s):
                guard isNumber(s), let d = Double(s), d.isFinite, decimal(s) == decimal(d.description) else {
                    throw Failure("'\(s)' is not a number a double holds exactly")
                }
                return .double(d)
            case .decimal(let d):
                guard let double = Double(d.description), decimal(double.description) == d else { throw Failure("\(d) has no exact double") }
                return .double(double)
            default: break
            }
        case .decimal:
            switch value {
            case .int(let i): return .decimal(Decimal(i))
            case .double(let d):
                guard d.isFinite, let decimal = Decimal(string: d.description, locale: Locale(identifier: "en_US_POSIX")) else {
                    throw Failure("\(d) is not a decimal")
                }
                return .decimal(decimal)
            case .string(let s):
                guard isNumber(s), let decimal = decimal(s) else { throw Failure("'\(s)' is not a decimal") }
                return .decimal(decimal)
            default: break
            }
        case .bool:
            switch value {
            case .int(0): return .bool(false)
            case .int(1): return .bool(true)
            case .string("true"), .string("1"): return .bool(true)
            case .string("false"), .string("0"): return .bool(false)
            default: break
            }
        case .uuid:
            if case .string(let s) = value {
                guard let uuid = UUID(uuidString: s) else { throw Failure("'\(s)' is not a UUID") }
                return .uuid(uuid)
            }
        case .url:
            if case .string(let s) = value {
                guard let url = URL(string: s) else { throw Failure("'\(s)' is not a URL") }
                return .url(url)
            }
        case .date:
            switch value {
            case .string(let s):
                guard let date = try? Date(s, strategy: .iso8601) else { throw Failure("'\(s)' is not an ISO 8601 date") }
                return .date(date)
            case .int(let i): return .date(Date(timeIntervalSince1970: TimeInterval(i)))
            case .double(let d): return .date(Date(timeIntervalSince1970: d))
            default: break
            }
        default:
            break
        }
        throw Failure("\(value) has no standard conversion to \(type)")
    }

    /// Whether `text` is a number as JSON writes one (no leading zeros, no `+`, no spaces).
    private static func isNumber(_ text: String) -> Bool {
        text.wholeMatch(of: /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?/) != nil
    }

    private static func decimal(_ text: String) -> Decimal? {
        Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))
    }

    private static func integer(_ i: Int64, _ type: AttributeType) throws(Failure) -> Value {
        let fits = switch type {
        case .int16: Int16(exactly: i) != nil
        case .int32: Int32(exactly: i) != nil
        default: true
        }
        guard fits else { throw Failure("\(i) is out of range for \(type)") }
        return .int(i)
    }
}
