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
    /// The entity's name: what imports, queries and ``ObjectID``s name it by (`"Repository"`).
    public var name: String
    /// The attributes, in declaration order.
    public var attributes: [Attribute]
    /// The relationships, in declaration order.
    public var relationships: [Relationship]
    /// The attributes that identify an object of this entity (one or several). Empty means the
    /// builder's ``IdentityStrategy`` decides, unless ``declaresNoIdentity``.
    public var identity: [String]
    /// True when the entity was declared with `identity: []`: its objects have no identity, even
    /// when it has an attribute the ``IdentityStrategy`` would pick (an `id` that is unique only
    /// within its owner, such as a poll's options). Nested in an owner, such objects are the
    /// owner's: replaced with it on each import, never duplicated; imported alone, each is new.
    public var declaresNoIdentity: Bool

    /// An entity from lists of attributes and relationships (to build one in code; the
    /// result-builder form reads better by hand). `identity`: the identifying attributes; nil (the
    /// default) lets the builder's ``IdentityStrategy`` decide; `[]` declares that objects of the
    /// entity have no identity (``declaresNoIdentity``).
    public init(_ name: String, identity: [String]? = nil, attributes: [Attribute], relationships: [Relationship] = []) {
        self.name = name
        self.identity = identity ?? []
        self.declaresNoIdentity = identity?.isEmpty ?? false
        self.attributes = attributes
        self.relationships = relationships
    }

    /// An entity declared member by member with an explicit identity list:
    /// `Entity("PollOption", identity: []) { … }` declares that its objects have no identity.
    public init(_ name: String, identity: [String], @EntityBuilder members: () -> [Member]) {
        let (attributes, relationships) = Self.split(members())
        self.init(name, identity: identity, attributes: attributes, relationships: relationships)
    }

    /// An entity declared member by member, attributes and relationships mixed:
    /// `Entity("User", identity: "id") { Attribute("id", .int64); ... }`. Without `identity`, the
    /// builder's ``IdentityStrategy`` decides (`id` by default).
    public init(_ name: String, identity: String..., @EntityBuilder members: () -> [Member]) {
        let (attributes, relationships) = Self.split(members())
        self.init(name, identity: identity.isEmpty ? nil : identity, attributes: attributes, relationships: relationships)
    }

    private static func split(_ members: [Member]) -> ([Attribute], [Relationship]) {
        var attributes: [Attribute] = []
        var relationships: [Relationship] = []
        for member in members {
            switch member {
            case .attribute(let a): attributes.append(a)
            case .relationship(let r): relationships.append(r)
            }
        }
        return (attributes, relationships)
    }

    /// The attribute named `name`, or nil.
    public func attribute(named name: String) -> Attribute? { attributes.first { $0.name == name } }
    /// The relationship named `name`, or nil.
    public func relationship(named name: String) -> Relationship? { relationships.first { $0.name == name } }

    /// A member of an entity declaration.
    public enum Member: Sendable, Hashable {
        /// An attribute.
        case attribute(Attribute)
        /// A relationship.
        case relationship(Relationship)
    }
}

/// Collects attributes and relationships in an ``Entity`` declaration.
@resultBuilder
public enum EntityBuilder {
    /// Makes an attribute a member of the entity.
    public static func buildExpression(_ attribute: Attribute) -> [Entity.Member] { [.attribute(attribute)] }
    /// Makes a relationship a member of the entity.
    public static func buildExpression(_ relationship: Relationship) -> [Entity.Member] { [.relationship(relationship)] }
    /// Joins the parts of the declaration, in order.
    public static func buildBlock(_ parts: [Entity.Member]...) -> [Entity.Member] { parts.flatMap { $0 } }
    /// The members a `for` loop declares, one iteration after the other.
    public static func buildArray(_ parts: [[Entity.Member]]) -> [Entity.Member] { parts.flatMap { $0 } }
    /// The members of an `if` without `else`: none when the condition is false.
    public static func buildOptional(_ part: [Entity.Member]?) -> [Entity.Member] { part ?? [] }
    /// The members of the first branch of an `if`-`else` or a `switch`.
    public static func buildEither(first part: [Entity.Member]) -> [Entity.Member] { part }
    /// The members of the other branch of an `if`-`else` or a `switch`.
    public static func buildEither(second part: [Entity.Member]) -> [Entity.Member] { part }
}
