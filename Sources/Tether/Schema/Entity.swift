import Foundation

/// An entity of the model: typed attributes, relationships and an identity.
///
/// ```swift
/// Entity("User", identity: "identifier") {
///     Attribute("identifier", .int64)
///     Attribute("login", .string)
///     Relationship.toMany("repositories", "Repository", inverse: "owner")
/// }
/// ```
public struct Entity: Sendable, Hashable {
    public var name: String
    public var attributes: [Attribute]
    public var relationships: [Relationship]
    /// The attributes that identify an object of this entity (one or several). Empty means the
    /// builder's ``IdentityStrategy`` decides.
    public var identity: [String]

    public init(_ name: String, identity: [String] = [], attributes: [Attribute], relationships: [Relationship] = []) {
        self.name = name
        self.identity = identity
        self.attributes = attributes
        self.relationships = relationships
    }

    public init(_ name: String, identity: String..., @EntityBuilder members: () -> [Member]) {
        var attributes: [Attribute] = []
        var relationships: [Relationship] = []
        for member in members() {
            switch member {
            case .attribute(let a): attributes.append(a)
            case .relationship(let r): relationships.append(r)
            }
        }
        self.init(name, identity: identity, attributes: attributes, relationships: relationships)
    }

    public func attribute(named name: String) -> Attribute? { attributes.first { $0.name == name } }
    public func relationship(named name: String) -> Relationship? { relationships.first { $0.name == name } }

    /// A member of an entity declaration.
    public enum Member: Sendable, Hashable {
        case attribute(Attribute)
        case relationship(Relationship)
    }
}

/// Collects attributes and relationships in an ``Entity`` declaration.
@resultBuilder
public enum EntityBuilder {
    public static func buildExpression(_ attribute: Attribute) -> [Entity.Member] { [.attribute(attribute)] }
    public static func buildExpression(_ relationship: Relationship) -> [Entity.Member] { [.relationship(relationship)] }
    public static func buildBlock(_ parts: [Entity.Member]...) -> [Entity.Member] { parts.flatMap { $0 } }
    public static func buildArray(_ parts: [[Entity.Member]]) -> [Entity.Member] { parts.flatMap { $0 } }
    public static func buildOptional(_ part: [Entity.Member]?) -> [Entity.Member] { part ?? [] }
    public static func buildEither(first part: [Entity.Member]) -> [Entity.Member] { part }
    public static func buildEither(second part: [Entity.Member]) -> [Entity.Member] { part }
}
