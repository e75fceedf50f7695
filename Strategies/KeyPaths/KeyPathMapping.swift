public import Tether

/// A model type that key-path mappings can build from its default instance.
///
/// A struct whose stored properties all have default values gets `init()` for free, so
/// conforming is one line: `extension Task: KeyPathModel {}`. Types without such an initializer
/// pass a factory to ``KeyPathMapping/init(_:identity:make:members:)`` instead.
public protocol KeyPathModel: Sendable {
    /// A default instance, which a mapping fills property by property from stored values.
    init()
}

/// Maps a plain Swift struct to an entity: strings for the JSON keys, compiler-checked
/// `WritableKeyPath`s for the model.
///
/// ```swift
/// struct Task: KeyPathModel { var id: Int64 = 0; var desc = ""; var done = false; var dueDate: Date? }
///
/// let taskMapping = KeyPathMapping<Task>("Task", identity: \.id) {
///     $0.map("id", to: \.id)
///     $0.map("description", to: \.desc, named: "desc")
///     $0.map("done", to: \.done)
///     $0.map("due_date", to: \.dueDate)
/// }
/// ```
///
/// The mapping is the single declaration of the model: the entity of the schema
/// (``entity()``), the key mapping the import engine uses (``keyOverrides``) and the setters
/// that turn stored objects back into structs all come from it.
///
/// **Names.** Each `map` call declares one attribute. Its name in the schema (used by the store,
/// by core `Query`s and by other strategies) is `named:` when given, else the JSON key.
/// A nested JSON key path (`"owner.login"`) needs `named:`. Relationships follow the same rule.
public struct KeyPathMapping<Model: Sendable>: Sendable {
    /// The entity name.
    public let entityName: String
    let identityKeyPaths: [any PartialKeyPath<Model> & Sendable]
    let make: @Sendable () -> Model
    let members: Members

    /// A mapping whose models start from `make()`, with `members` declaring attributes and
    /// relationships.
    ///
    /// - Parameters:
    ///   - entityName: the entity in the schema.
    ///   - identity: the key paths of the identity attributes (each must be mapped with `map`);
    ///     none leaves the choice to the builder's identity strategy.
    ///   - make: the default instance the setters are applied to.
    ///   - members: declares the attributes (`map`) and relationships (`toOne`, `toMany`).
    public init(
        _ entityName: String, identity: any PartialKeyPath<Model> & Sendable..., make: @escaping @Sendable () -> Model,
        members: (inout Members) -> Void
    ) {
        self.entityName = entityName
        self.identityKeyPaths = identity
        self.make = make
        var declared = Members()
        members(&declared)
        self.members = declared
    }

    /// Declares the attributes and relationships of a mapping; the `$0` of the mapping's closure.
    public struct Members: Sendable {
        var attributes: [AttributeBinding] = []
        var relationships: [RelationshipBinding] = []

        /// Maps the JSON key path `jsonKey` to the property at `keyPath`. The attribute type comes
        /// from the property's type (see ``KeyPathValue``); `named:` is the attribute's name in the
        /// schema (default: the JSON key).
        public mutating func map<V: KeyPathValue>(
            _ jsonKey: JSONKeyPath, to keyPath: any WritableKeyPath<Model, V> & Sendable, named name: String? = nil
        ) {
            attributes.append(AttributeBinding(
                name: name, jsonKey: jsonKey, type: V.attributeType, keyPath: keyPath,
                set: { model, value in
                    if let converted = V(storedValue: value) { model[keyPath: keyPath] = converted }
                },
                get: { model in model[keyPath: keyPath].storedValue }))
        }

        /// Maps a to-one relationship: nested objects under `jsonKey` (or ids under `foreignKey`)
        /// import into `mapping`'s entity, and fetched models get the related model at `keyPath`.
        ///
        /// `mapping` is evaluated lazily, so two mappings may point at each other.
        public mutating func toOne<Destination: Sendable>(
            _ jsonKey: JSONKeyPath, _ keyPath: any WritableKeyPath<Model, Destination?> & Sendable,
            mapping: @autoclosure @escaping @Sendable () -> KeyPathMapping<Destination>,
            named name: String? = nil, inverse: String? = nil, foreignKey: String? = nil, deleteRule: DeleteRule = .nullify
        ) {
            relationships.append(RelationshipBinding(
                name: name, jsonKey: jsonKey, kind: .toOne, inverse: inverse, foreignKey: foreignKey, deleteRule: deleteRule,
                keyPath: keyPath,
                destination: { mapping().entityName },
                load: { models, ids, reader, depth in
                    let links = try reader.related(memberName(name, jsonKey), of: ids)
                    let targets = Array(Set(links.values.flatMap { $0 }))
                    let related = try mapping().materialize(targets, reader: reader, depth: depth)
                    for (index, id) in ids.enumerated() {
                        models[index][keyPath: keyPath] = links[id]?.first.flatMap { related[$0] }
                    }
                }))
        }

        /// Maps a to-many relationship: an array of nested objects under `jsonKey` (or ids under
        /// `foreignKey`) imports into `mapping`'s entity, and fetched models get the related models
        /// at `keyPath` (in link order for an ordered relationship).
        ///
        /// `mapping` is evaluated lazily, so two mappings may point at each other.
        public mutating func toMany<Destination: Sendable>(
            _ jsonKey: JSONKeyPath, _ keyPath: any WritableKeyPath<Model, [Destination]> & Sendable,
            mapping: @autoclosure @escaping @Sendable () -> KeyPathMapping<Destination>,
            named name: String? = nil, inverse: String? = nil, ordered: Bool = false, foreignKey: String? = nil,
            deleteRule: DeleteRule = .nullify
        ) {
            relationships.append(RelationshipBinding(
                name: name, jsonKey: jsonKey, kind: ordered ? .orderedToMany : .toMany, inverse: inverse,
                foreignKey: foreignKey, deleteRule: deleteRule, keyPath: keyPath,
                destination: { mapping().entityName },
                load: { models, ids, reader, depth in
                    let links = try reader.related(memberName(name, jsonKey), of: ids)
                    var seen = Set<ObjectID>()
                    let targets = links.values.flatMap { $0 }.filter { seen.insert($0).inserted }
                    let related = try mapping().materialize(targets, reader: reader, depth: depth)
                    for (index, id) in ids.enumerated() {
                        models[index][keyPath: keyPath] = (links[id] ?? []).compactMap { related[$0] }
                    }
                }))
        }
    }

    struct AttributeBinding: Sendable {
        let name: String?
        let jsonKey: JSONKeyPath
        let type: AttributeType
        let keyPath: any PartialKeyPath<Model> & Sendable
        let set: @Sendable (inout Model, Value?) -> Void
        let get: @Sendable (Model) -> Value?
    }

    struct RelationshipBinding: Sendable {
        let name: String?
        let jsonKey: JSONKeyPath
        let kind: Relationship.Kind
        let inverse: String?
        let foreignKey: String?
        let deleteRule: DeleteRule
        let keyPath: any PartialKeyPath<Model> & Sendable
        let destination: @Sendable () -> String
        /// Reads the relationship of `ids` (one batched `related` call) and sets it on `models`
        /// (same order as `ids`), building related models `depth` levels deep.
        let load: @Sendable (_ models: inout [Model], _ ids: [ObjectID], _ reader: any StoreReader, _ depth: Int) throws -> Void
    }
}

extension KeyPathMapping where Model: KeyPathModel {
    /// A mapping whose models start from `Model()`.
    public init(_ entityName: String, identity: any PartialKeyPath<Model> & Sendable..., members: (inout Members) -> Void) {
        self.entityName = entityName
        self.identityKeyPaths = identity
        self.make = { Model() }
        var declared = Members()
        members(&declared)
        self.members = declared
    }
}

/// The schema name of a member: `named:` or the JSON key.
func memberName(_ name: String?, _ jsonKey: JSONKeyPath) -> String {
    name ?? jsonKey.description
}

extension KeyPathMapping {
    /// The schema name of each attribute, in declaration order.
    public var attributeNames: [String] { members.attributes.map { memberName($0.name, $0.jsonKey) } }

    /// The schema name of each relationship, in declaration order.
    public var relationshipNames: [String] { members.relationships.map { memberName($0.name, $0.jsonKey) } }

    /// The attribute name mapped to `keyPath`, or nil when the key path is not mapped.
    public func attributeName(for keyPath: AnyKeyPath) -> String? {
        members.attributes.first { $0.keyPath == keyPath }.map { memberName($0.name, $0.jsonKey) }
    }

    /// The schema entity this mapping declares.
    ///
    /// Throws a ``KeyPathMappingError`` when an identity key path is not mapped, a nested JSON
    /// key path has no name, or a key path is mapped twice.
    public func entity() throws(KeyPathMappingError) -> Entity {
        var attributes: [Attribute] = []
        var seenKeyPaths = Set<AnyKeyPath>()
        for binding in members.attributes {
            let name = memberName(binding.name, binding.jsonKey)
            if binding.name == nil && !binding.jsonKey.isSingleKey {
                throw KeyPathMappingError(
                    .unnamedKeyPath, entity: entityName, member: name,
                    "\(entityName): the nested JSON key path '\(binding.jsonKey)' needs a name: map(\"\(binding.jsonKey)\", to: ..., named: \"...\")")
            }
            if !seenKeyPaths.insert(binding.keyPath).inserted {
                throw KeyPathMappingError(
                    .duplicateKeyPath, entity: entityName, member: name,
                    "\(entityName): a property is mapped twice (the second time as '\(name)')")
            }
            attributes.append(Attribute(name, binding.type))
        }
        var relationships: [Relationship] = []
        for binding in members.relationships {
            let name = memberName(binding.name, binding.jsonKey)
            if binding.name == nil && !binding.jsonKey.isSingleKey {
                throw KeyPathMappingError(
                    .unnamedKeyPath, entity: entityName, member: name,
                    "\(entityName): the nested JSON key path '\(binding.jsonKey)' needs a name: toOne/toMany(\"\(binding.jsonKey)\", ..., named: \"...\")")
            }
            if !seenKeyPaths.insert(binding.keyPath).inserted {
                throw KeyPathMappingError(
                    .duplicateKeyPath, entity: entityName, member: name,
                    "\(entityName): a property is mapped twice (the second time as '\(name)')")
            }
            relationships.append(Relationship(
                name, binding.kind, binding.destination(), inverse: binding.inverse, deleteRule: binding.deleteRule))
        }
        var identity: [String] = []
        for (position, keyPath) in identityKeyPaths.enumerated() {
            guard let name = attributeName(for: keyPath) else {
                throw KeyPathMappingError(
                    .unmappedIdentity, entity: entityName, member: nil,
                    "\(entityName): identity key path #\(position + 1) is not mapped to an attribute; add a map(...) for it")
            }
            identity.append(name)
        }
        return Entity(entityName, identity: identity.isEmpty ? nil : identity, attributes: attributes, relationships: relationships)
    }

    /// The JSON keys of this mapping as a core key mapping: every attribute and relationship
    /// maps to exactly the JSON key path given in `map`/`toOne`/`toMany`.
    public var keyOverrides: KeyOverrides {
        var table: [String: JSONKeyPath] = [:]
        for binding in members.attributes { table[memberName(binding.name, binding.jsonKey)] = binding.jsonKey }
        var foreignKeys: [String: String] = [:]
        for binding in members.relationships {
            let name = memberName(binding.name, binding.jsonKey)
            table[name] = binding.jsonKey
            if let foreignKey = binding.foreignKey { foreignKeys[name] = foreignKey }
        }
        return KeyOverrides([entityName: table], foreignKeys: foreignKeys.isEmpty ? [:] : [entityName: foreignKeys])
    }

    /// Builds the models of `ids` (skipping ids that no longer exist), keyed by id. Relationships
    /// are filled `depth` levels deep: at depth 0 only attributes are set.
    func materialize(_ ids: [ObjectID], reader: any StoreReader, depth: Int) throws -> [ObjectID: Model] {
        let objects = try reader.objects(ids)
        var models = objects.map(model(from:))
        if depth > 0 && !objects.isEmpty {
            let found = objects.map(\.id)
            for relationship in members.relationships {
                try relationship.load(&models, found, reader, depth - 1)
            }
        }
        var result: [ObjectID: Model] = [:]
        for (object, model) in zip(objects, models) { result[object.id] = model }
        return result
    }

    /// The model of `object`'s attributes (relationships keep their default values): the key-path
    /// setters applied to the default instance.
    public func model(from object: Object) -> Model {
        var model = make()
        for binding in members.attributes {
            binding.set(&model, object.values[memberName(binding.name, binding.jsonKey)])
        }
        return model
    }

    /// The stored values of `model`'s mapped attributes (unset ones are left out), ready for
    /// `client.create(entityName, values:)` or `client.updateLocally`.
    ///
    /// An identity attribute still holding the default instance's value (the `0` of
    /// `var id: Int64 = 0` before the server assigned one) is unset: it is left out, so a create
    /// never sends `"id": 0`. Declare the identity optional (`var id: Int64?`) to say so exactly.
    public func values(of model: Model) -> [String: Value] {
        let placeholder = make()
        var values: [String: Value] = [:]
        for binding in members.attributes {
            guard let value = binding.get(model) else { continue }
            if identityKeyPaths.contains(where: { $0 == binding.keyPath }), binding.get(placeholder) == value { continue }
            values[memberName(binding.name, binding.jsonKey)] = value
        }
        return values
    }
}
