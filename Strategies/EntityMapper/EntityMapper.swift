public import Tether

/// The explicit dictionaries of one entity (AeroGear's `AGEntityMapper`): model property name ->
/// JSON key path.
///
/// ```swift
/// EntityMap("Task", ["desc": "description", "projectTitle": "project.title"])
/// EntityMap("Employee", ["employeeId": "id"], foreignKeys: ["department": "dept_id"])
/// ```
public struct EntityMap: Sendable, Hashable {
    /// The entity the dictionaries apply to.
    public var entity: String
    /// Attribute or relationship name -> JSON key path (`desc` -> `description`, or a nested
    /// path such as `owner.login`).
    public var keys: [String: JSONKeyPath]
    /// Relationship name -> the JSON key carrying the related ids (`department` -> `dept_id`).
    public var foreignKeys: [String: String]

    /// The map of `entity`: `keys` gives the JSON key path of each listed property (model name ->
    /// JSON key path), `foreignKeys` the JSON key carrying the ids of each listed relationship.
    public init(_ entity: String, _ keys: [String: JSONKeyPath], foreignKeys: [String: String] = [:]) {
        self.entity = entity
        self.keys = keys
        self.foreignKeys = foreignKeys
    }
}

/// Explicit per-entity dictionaries collected in one value, applied with
/// `builder.keyMapping(mapper)`. Properties that are not listed fall back to the builder's
/// naming strategy.
///
/// ```swift
/// let mapper = EntityMapper {
///     EntityMap("Task", ["desc": "description"])
///     EntityMap("Project", ["summary": "details.summary"])
/// }
/// let client = try Client.Builder(schema: schema).keyMapping(mapper).build()
/// ```
///
/// `build()` checks the mapper against the schema: an entity mapped twice, an entity or a
/// property the schema lacks, a foreign key on something that is not a relationship, and an empty
/// key path are each a `ConfigurationError` naming the entity and the property.
public struct EntityMapper: KeyMapping, Hashable {
    /// The maps, in declaration order.
    public private(set) var maps: [EntityMap]

    /// A mapper of these maps, at most one per entity (checked by `build()`).
    public init(_ maps: [EntityMap]) { self.maps = maps }

    /// A mapper declared as a list of maps, one per line; `if` and `for` may choose or repeat them.
    ///
    /// ```swift
    /// let mapper = EntityMapper {
    ///     EntityMap("Task", ["desc": "description"])
    ///     if legacyServer { EntityMap("Project", ["title": "name"]) }
    /// }
    /// ```
    public init(@EntityMapperBuilder _ maps: () -> [EntityMap]) { self.maps = maps() }

    /// A copy with one more map.
    public func mapping(_ entity: String, _ keys: [String: JSONKeyPath], foreignKeys: [String: String] = [:]) -> EntityMapper {
        var copy = self
        copy.maps.append(EntityMap(entity, keys, foreignKeys: foreignKeys))
        return copy
    }

    /// The map of `entity`, if any.
    public subscript(entity: String) -> EntityMap? { maps.first { $0.entity == entity } }

    /// The property of `entity` that reads `keyPath`, if the mapper lists one
    /// (`description` -> `desc` for `Task`).
    public func property(forKeyPath keyPath: JSONKeyPath, in entity: String) -> String? {
        self[entity]?.keys.first { $0.value == keyPath }?.key
    }

    // MARK: KeyMapping

    public func keyPath(for name: String, in entity: String) -> JSONKeyPath? { self[entity]?.keys[name] }

    public func foreignKey(for relationship: String, in entity: String) -> String? {
        self[entity]?.foreignKeys[relationship]
    }

    public func validate(against schema: Schema) throws {
        var seen = Set<String>()
        for map in maps {
            guard seen.insert(map.entity).inserted else {
                throw ConfigurationError(
                    .conflictingKeys, entity: map.entity,
                    "the entity mapper maps entity '\(map.entity)' twice; put its keys in one EntityMap")
            }
            guard let entity = schema[map.entity] else {
                throw ConfigurationError(
                    .unknownEntity, entity: map.entity,
                    "the entity mapper maps entity '\(map.entity)', which is not in the schema")
            }
            for (name, keyPath) in map.keys.sorted(by: { $0.key < $1.key }) {
                guard entity.attribute(named: name) != nil || entity.relationship(named: name) != nil else {
                    throw ConfigurationError(
                        .unknownProperty, entity: map.entity, member: name,
                        "the entity mapper maps \(map.entity).\(name) to '\(keyPath)', but \(map.entity) has no attribute or relationship '\(name)'")
                }
                guard !keyPath.components.isEmpty, !keyPath.components.contains(where: \.isEmpty) else {
                    throw ConfigurationError(
                        .invalidKeyPath, entity: map.entity, member: name,
                        "the entity mapper maps \(map.entity).\(name) to '\(keyPath)', which has an empty key")
                }
            }
            for (name, key) in map.foreignKeys.sorted(by: { $0.key < $1.key }) {
                guard entity.relationship(named: name) != nil else {
                    throw ConfigurationError(
                        .unknownProperty, entity: map.entity, member: name,
                        "the entity mapper gives \(map.entity).\(name) the foreign key '\(key)', but \(map.entity) has no relationship '\(name)'")
                }
                guard !key.isEmpty else {
                    throw ConfigurationError(
                        .invalidKeyPath, entity: map.entity, member: name,
                        "the entity mapper gives \(map.entity).\(name) an empty foreign key")
                }
            }
        }
    }
}

/// Collects ``EntityMap``s in an ``EntityMapper`` declaration.
@resultBuilder
public enum EntityMapperBuilder {
    /// Makes one map a part of the declaration.
    public static func buildExpression(_ map: EntityMap) -> [EntityMap] { [map] }
    /// Joins the parts of the declaration, in order.
    public static func buildBlock(_ parts: [EntityMap]...) -> [EntityMap] { parts.flatMap { $0 } }
    /// The maps a `for` loop declares, one iteration after the other.
    public static func buildArray(_ parts: [[EntityMap]]) -> [EntityMap] { parts.flatMap { $0 } }
    /// The maps of an `if` without `else`: none when the condition is false.
    public static func buildOptional(_ part: [EntityMap]?) -> [EntityMap] { part ?? [] }
    /// The maps of the first branch of an `if`-`else` or a `switch`.
    public static func buildEither(first part: [EntityMap]) -> [EntityMap] { part }
    /// The maps of the other branch of an `if`-`else` or a `switch`.
    public static func buildEither(second part: [EntityMap]) -> [EntityMap] { part }
}

extension ConfigurationError.Kind {
    /// A key mapping names an empty JSON key or key path.
    public static let invalidKeyPath = ConfigurationError.Kind("invalidKeyPath")
}
