import Foundation

/// Protocol 2 of 6: per-entity overrides of where an attribute or relationship lives in JSON.
///
/// A key mapping answers for some properties and returns nil for the rest, which then fall back
/// to the ``NamingStrategy``. A builder may hold several; the first that answers wins.
///
/// ## Use a built-in one
/// ```swift
/// builder.keyMapping(KeyOverrides([
///     "User": ["identifier": "id", "avatarURL": "avatar_url"],
///     "Repository": ["ownerLogin": "owner.login"],      // a nested key path
/// ]))
/// ```
/// The `TetherEntityMapper` module adds AeroGear-style explicit dictionaries.
///
/// ## Write your own
/// Implement ``keyPath(for:in:)``; implement ``validate(against:)`` to reject, at `build()`, a
/// mapping that names something the schema lacks.
public protocol KeyMapping: Sendable {
    /// Where the attribute or relationship `name` of `entity` lives in a JSON object, or nil to
    /// use the naming strategy.
    func keyPath(for name: String, in entity: String) -> JSONKeyPath?
    /// The JSON key carrying a relationship as ids (`owner_id`), or nil to use the naming strategy.
    func foreignKey(for relationship: String, in entity: String) -> String?
    /// Other key paths an import reads the attribute or relationship `name` from when the payload
    /// lacks its own key path, first present wins (`avatarUrl` beside `avatar_url`). Empty by default.
    func fallbackKeyPaths(for name: String, in entity: String) -> [JSONKeyPath]
    /// Whether an import leaves the attribute `name` of `entity` as it is when the payload gives
    /// it as `null`, instead of clearing it (CTRESTfulCoreData's per-attribute "ignore null": a
    /// server that sends `null` for "not included in this view"). False by default: `null` clears.
    func ignoresNull(for name: String, in entity: String) -> Bool
    /// The date formats of the attribute `name` of `entity` (a date, or an array or map of
    /// dates), read by imports and written in request bodies and URLs instead of the client's
    /// ``Client/Builder/dateDecoding(_:)``: a `birthday` as `yyyy-MM-dd` beside ISO 8601
    /// timestamps. Nil by default: the client's formats.
    func dateDecoding(for name: String, in entity: String) -> DateDecoding?
    /// Called by ``Client/Builder/build()``: throw when the mapping names an entity or property
    /// that the schema does not have.
    func validate(against schema: Schema) throws
}

extension KeyMapping {
    public func foreignKey(for relationship: String, in entity: String) -> String? { nil }
    public func fallbackKeyPaths(for name: String, in entity: String) -> [JSONKeyPath] { [] }
    public func ignoresNull(for name: String, in entity: String) -> Bool { false }
    public func dateDecoding(for name: String, in entity: String) -> DateDecoding? { nil }
    public func validate(against schema: Schema) throws {}
}

/// Explicit overrides: `[entity: [property: JSON key path]]`.
///
/// ```swift
/// KeyOverrides(["User": ["avatarURL": "avatar_url"]],
///              fallbacks: ["User": ["avatarURL": ["avatarUrl", "picture.url"]]],   // read when avatar_url is absent
///              dateFormats: ["User": ["birthday": DateDecoding([.format("yyyy-MM-dd")])]])
/// ```
public struct KeyOverrides: KeyMapping {
    /// Per entity, per attribute or relationship name, the JSON key path
    /// (`["User": ["avatarURL": "avatar_url"]]`).
    public var table: [String: [String: JSONKeyPath]]
    /// Per entity, per relationship name, the JSON key that carries the related ids
    /// (`["Employee": ["department": "dept_id"]]`).
    public var foreignKeys: [String: [String: String]]
    /// Per entity, per attribute or relationship name, other key paths an import reads when the
    /// payload lacks the property's own, in order (first present wins).
    public var fallbacks: [String: [String: [JSONKeyPath]]]
    /// Per entity, the attributes an import leaves as they are when the payload gives `null`
    /// (``KeyMapping/ignoresNull(for:in:)``).
    public var ignoringNull: [String: Set<String>]
    /// Per entity, per date attribute (or array or map of dates), the formats it is read and
    /// written in instead of the client's (``KeyMapping/dateDecoding(for:in:)``).
    public var dateFormats: [String: [String: DateDecoding]]

    /// Overrides with these key paths, foreign keys and fallbacks; what they do not name is left to the naming strategy.
    ///
    /// - Parameters:
    ///   - table: per entity, per attribute or relationship name, the JSON key path.
    ///   - foreignKeys: per entity, per relationship name, the JSON key carrying ids.
    ///   - fallbacks: per entity, per attribute or relationship name, key paths an import reads
    ///     when the payload lacks the property's own, in order (first present wins).
    ///   - ignoringNull: per entity, the attributes a `null` in a payload leaves as they are.
    ///   - dateFormats: per entity, per date attribute, the formats it is read and written in
    ///     instead of the client's.
    public init(
        _ table: [String: [String: JSONKeyPath]], foreignKeys: [String: [String: String]] = [:],
        fallbacks: [String: [String: [JSONKeyPath]]] = [:], ignoringNull: [String: Set<String>] = [:],
        dateFormats: [String: [String: DateDecoding]] = [:]
    ) {
        self.table = table
        self.foreignKeys = foreignKeys
        self.fallbacks = fallbacks
        self.ignoringNull = ignoringNull
        self.dateFormats = dateFormats
    }

    public func keyPath(for name: String, in entity: String) -> JSONKeyPath? { table[entity]?[name] }

    public func fallbackKeyPaths(for name: String, in entity: String) -> [JSONKeyPath] { fallbacks[entity]?[name] ?? [] }

    public func ignoresNull(for name: String, in entity: String) -> Bool { ignoringNull[entity]?.contains(name) ?? false }

    public func dateDecoding(for name: String, in entity: String) -> DateDecoding? { dateFormats[entity]?[name] }

    public func foreignKey(for relationship: String, in entity: String) -> String? {
        foreignKeys[entity]?[relationship]
    }

    public func validate(against schema: Schema) throws {
        for (entityName, properties) in table.sorted(by: { $0.key < $1.key }) {
            try Self.check(entityName, properties.keys.sorted(), relationshipsOnly: false, in: schema)
        }
        for (entityName, relationships) in foreignKeys.sorted(by: { $0.key < $1.key }) {
            try Self.check(entityName, relationships.keys.sorted(), relationshipsOnly: true, in: schema)
        }
        for (entityName, properties) in fallbacks.sorted(by: { $0.key < $1.key }) {
            try Self.check(entityName, properties.keys.sorted(), relationshipsOnly: false, in: schema)
        }
        for (entityName, names) in ignoringNull.sorted(by: { $0.key < $1.key }) {
            try Self.check(entityName, names.sorted(), relationshipsOnly: false, in: schema)
            if let relationship = names.sorted().first(where: { schema[entityName]?.attribute(named: $0) == nil }) {
                throw ConfigurationError(
                    .unknownProperty, entity: entityName, member: relationship,
                    "ignoringNull names \(entityName).\(relationship), which is a relationship: only attributes ignore null")
            }
        }
        for (entityName, formats) in dateFormats.sorted(by: { $0.key < $1.key }) {
            try Self.check(entityName, formats.keys.sorted(), relationshipsOnly: false, in: schema)
            for name in formats.keys.sorted() {
                try Self.checkDateAttribute(entityName, name, formats[name]!, in: schema)
            }
        }
    }

    /// Throws a ``ConfigurationError`` when the attribute `name` of `entityName` given date
    /// formats is not a date, an array of dates or a map of dates, or when `decoding` has no format.
    public static func checkDateAttribute(
        _ entityName: String, _ name: String, _ decoding: DateDecoding, in schema: Schema
    ) throws(ConfigurationError) {
        guard let attribute = schema[entityName]?.attribute(named: name) else {
            throw ConfigurationError(
                .unknownProperty, entity: entityName, member: name,
                "date formats are given for \(entityName).\(name), which is not an attribute: only date attributes have date formats")
        }
        switch attribute.type {
        case .date, .array(.date), .map(.date): break
        default:
            throw ConfigurationError(
                .invalidDateFormats, entity: entityName, member: name,
                "date formats are given for \(entityName).\(name), an attribute of type \(attribute.type): only dates (or arrays and maps of dates) have date formats")
        }
        if decoding.formats.isEmpty {
            throw ConfigurationError(
                .invalidDateFormats, entity: entityName, member: name,
                "the date formats of \(entityName).\(name) are empty: no date could be read")
        }
    }

    /// Throws a ``ConfigurationError`` when `entityName` or one of `names` is not in the schema.
    public static func check(
        _ entityName: String, _ names: [String], relationshipsOnly: Bool, in schema: Schema
    ) throws(ConfigurationError) {
        guard let entity = schema[entityName] else {
            throw ConfigurationError(.unknownEntity, entity: entityName, member: nil,
                                     "the key mapping names entity '\(entityName)', which is not in the schema")
        }
        for name in names {
            let known = entity.relationship(named: name) != nil || (!relationshipsOnly && entity.attribute(named: name) != nil)
            if !known {
                throw ConfigurationError(
                    .unknownProperty, entity: entityName, member: name,
                    "the key mapping names \(entityName).\(name), which is not \(relationshipsOnly ? "a relationship" : "an attribute or relationship") of \(entityName)")
            }
        }
    }
}
