import Foundation

/// The resolved mapping of every entity: where each attribute and relationship lives in JSON,
/// which attributes form the identity, and the resource path. Computed once by
/// ``Client/Builder/build()`` from the naming strategy, the key mappings and the identity strategy,
/// so an import never asks a strategy per object.
public struct Mapping: Sendable {
    /// Every entity's mapping, by entity name.
    public let entities: [String: EntityMapping]

    /// The mapping of `entity`, or nil when the schema has no such entity.
    public subscript(entity: String) -> EntityMapping? { entities[entity] }
}

/// How one entity maps to JSON.
public struct EntityMapping: Sendable {
    /// The entity, its identity resolved.
    public let entity: Entity
    /// The resource path segment from the naming strategy (`repositories`).
    public let resourcePath: String
    /// Every attribute's mapping, in the entity's declaration order.
    public let attributes: [AttributeMapping]
    /// Every relationship's mapping, in the entity's declaration order.
    public let relationships: [RelationshipMapping]
    /// The identity attributes, in order; empty when objects of this entity have no identity.
    public let identity: [AttributeMapping]

    /// The entity's name (`Repository`).
    public var name: String { entity.name }

    /// The JSON key path of an attribute or relationship.
    public func keyPath(for property: String) -> JSONKeyPath? {
        attributes.first { $0.name == property }?.keyPath ?? relationships.first { $0.name == property }?.keyPath
    }

    /// The attribute or relationship read from a JSON key path (the reverse of ``keyPath(for:)``).
    public func property(forKeyPath keyPath: JSONKeyPath) -> String? {
        attributes.first { $0.keyPath == keyPath }?.name ?? relationships.first { $0.keyPath == keyPath }?.name
    }

    /// The mapping of the attribute `name` (its model name, `fullName`), or nil.
    public func attribute(_ name: String) -> AttributeMapping? { attributes.first { $0.name == name } }
    /// The mapping of the relationship `name` (its model name, `owner`), or nil.
    public func relationship(_ name: String) -> RelationshipMapping? { relationships.first { $0.name == name } }
}

/// Where one attribute lives in JSON.
public struct AttributeMapping: Sendable, Hashable {
    /// The attribute, as the schema declares it.
    public let attribute: Attribute
    /// Where the value is read and written: a key (`full_name`) or a nested path (`owner.login`).
    public let keyPath: JSONKeyPath
    /// Where an import also looks, in order, when a payload lacks ``keyPath`` (request bodies use
    /// ``keyPath`` only).
    public internal(set) var fallbackKeyPaths: [JSONKeyPath] = []
    /// Whether an import leaves the stored value as it is when the payload gives `null`
    /// (``KeyMapping/ignoresNull(for:in:)``); false: `null` clears it.
    public internal(set) var ignoresNull = false
    /// The attribute's own date formats (``KeyMapping/dateDecoding(for:in:)``), read by imports
    /// and written in request bodies and URLs; nil: the client's ``Client/dateDecoding``.
    public internal(set) var dateDecoding: DateDecoding? = nil
    /// The attribute's model name (`fullName`).
    public var name: String { attribute.name }
    /// The attribute's type, which JSON values are converted to.
    public var type: AttributeType { attribute.type }
}

/// Where one relationship lives in JSON: nested objects under ``keyPath``, ids under ``foreignKey``.
public struct RelationshipMapping: Sendable, Hashable {
    /// The relationship, as the schema declares it.
    public let relationship: Relationship
    /// Where an import reads nested objects (or an array of them): a key (`owner`) or a nested
    /// path (`data.owner`). Request bodies write the relationship under ``foreignKey`` instead.
    public let keyPath: JSONKeyPath
    /// Where an import also looks for nested objects, in order, when a payload lacks ``keyPath``.
    public internal(set) var fallbackKeyPaths: [JSONKeyPath] = []
    /// The JSON key carrying the relationship as identities instead of nested objects, read by
    /// imports and written in request bodies: `owner_id` for a to-one `owner`, `label_ids` for a
    /// to-many `labels` under Rails naming.
    public let foreignKey: String
    /// The relationship's model name (`owner`).
    public var name: String { relationship.name }
}
