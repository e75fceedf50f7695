import Foundation

/// The resolved mapping of every entity: where each attribute and relationship lives in JSON,
/// which attributes form the identity, and the resource path. Computed once by
/// ``Client/Builder/build()`` from the naming strategy, the key mappings and the identity strategy,
/// so an import never asks a strategy per object.
public struct Mapping: Sendable {
    public let entities: [String: EntityMapping]

    public subscript(entity: String) -> EntityMapping? { entities[entity] }
}

/// How one entity maps to JSON.
public struct EntityMapping: Sendable {
    public let entity: Entity
    /// The resource path segment from the naming strategy (`repositories`).
    public let resourcePath: String
    public let attributes: [AttributeMapping]
    public let relationships: [RelationshipMapping]
    /// The identity attributes, in order; empty when objects of this entity have no identity.
    public let identity: [AttributeMapping]

    public var name: String { entity.name }

    /// The JSON key path of an attribute or relationship.
    public func keyPath(for property: String) -> JSONKeyPath? {
        attributes.first { $0.name == property }?.keyPath ?? relationships.first { $0.name == property }?.keyPath
    }

    /// The attribute or relationship read from a JSON key path (the reverse of ``keyPath(for:)``).
    public func property(forKeyPath keyPath: JSONKeyPath) -> String? {
        attributes.first { $0.keyPath == keyPath }?.name ?? relationships.first { $0.keyPath == keyPath }?.name
    }

    public func attribute(_ name: String) -> AttributeMapping? { attributes.first { $0.name == name } }
    public func relationship(_ name: String) -> RelationshipMapping? { relationships.first { $0.name == name } }
}

/// Where one attribute lives in JSON.
public struct AttributeMapping: Sendable, Hashable {
    public let attribute: Attribute
    public let keyPath: JSONKeyPath
    /// Where an import also looks, in order, when a payload lacks ``keyPath`` (request bodies use
    /// ``keyPath`` only).
    public internal(set) var fallbackKeyPaths: [JSONKeyPath] = []
    public var name: String { attribute.name }
    public var type: AttributeType { attribute.type }
}

/// Where one relationship lives in JSON: nested objects under ``keyPath``, ids under ``foreignKey``.
public struct RelationshipMapping: Sendable, Hashable {
    public let relationship: Relationship
    public let keyPath: JSONKeyPath
    /// Where an import also looks for nested objects, in order, when a payload lacks ``keyPath``.
    public internal(set) var fallbackKeyPaths: [JSONKeyPath] = []
    public let foreignKey: String
    public var name: String { relationship.name }
}
