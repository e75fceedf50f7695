import Foundation

/// The model: a checked set of entities.
///
/// Building a schema checks it: duplicate names, a relationship to an unknown entity, an
/// unknown or mismatched inverse and an identity naming a missing attribute are errors.
///
/// ```swift
/// let schema = try Schema {
///     Entity("User", identity: "identifier") { Attribute("identifier", .int64) }
/// }
/// ```
public struct Schema: Sendable, Hashable {
    /// Entities in declaration order.
    public let entities: [Entity]
    private let index: [String: Int]

    /// A schema of `entities`, checked. An inverse declared on one side only is completed on the
    /// other.
    ///
    /// - Throws: a ``SchemaError`` naming the entity and member at fault: a name declared twice or
    ///   empty, a relationship to an unknown entity, an unknown or mismatched inverse, an identity
    ///   naming a missing attribute.
    public init(_ entities: [Entity]) throws(SchemaError) {
        var index: [String: Int] = [:]
        for (i, entity) in entities.enumerated() {
            if index[entity.name] != nil {
                throw SchemaError(.duplicateName, entity: entity.name, member: nil, "entity '\(entity.name)' is declared twice")
            }
            if entity.name.isEmpty {
                throw SchemaError(.invalidName, entity: entity.name, member: nil, "an entity has an empty name")
            }
            index[entity.name] = i
        }
        self.entities = Self.completingInverses(entities, index)
        self.index = index
        try validate()
    }

    /// A schema declared entity by entity (see the example above), checked as
    /// ``init(_:)-([Entity])`` checks it.
    public init(@SchemaBuilder _ entities: () -> [Entity]) throws(SchemaError) {
        try self.init(entities())
    }

    /// The entity named `entityName`, or nil.
    public subscript(entityName: String) -> Entity? {
        index[entityName].map { entities[$0] }
    }

    /// The schema with each entity's identity replaced by `identity(entity)`, checked again.
    public func resolvingIdentities(_ identity: (Entity) -> [String]) throws(SchemaError) -> Schema {
        try Schema(entities.map { entity in
            var entity = entity
            entity.identity = entity.declaresNoIdentity ? [] : identity(entity)
            return entity
        })
    }

    /// A relationship whose inverse was declared on the other side only gets it on both sides, so
    /// stores see one consistent pair whatever the declaration order.
    private static func completingInverses(_ entities: [Entity], _ index: [String: Int]) -> [Entity] {
        var entities = entities
        for entity in entities {
            for relationship in entity.relationships {
                guard let inverse = relationship.inverse, let d = index[relationship.destination],
                    let r = entities[d].relationships.firstIndex(where: { $0.name == inverse }),
                    entities[d].relationships[r].inverse == nil,
                    entities[d].relationships[r].destination == entity.name
                else { continue }
                entities[d].relationships[r].inverse = relationship.name
            }
        }
        return entities
    }

    private func validate() throws(SchemaError) {
        for entity in entities {
            var names = Set<String>()
            for name in entity.attributes.map(\.name) + entity.relationships.map(\.name) {
                if name.isEmpty {
                    throw SchemaError(.invalidName, entity: entity.name, member: name, "\(entity.name) has a member with an empty name")
                }
                if !names.insert(name).inserted {
                    throw SchemaError(.duplicateName, entity: entity.name, member: name, "\(entity.name).\(name) is declared twice")
                }
            }
            for attribute in entity.attributes {
                switch attribute.type {
                case .array(let element), .map(let element):
                    guard CollectionValues.isElementType(element) else {
                        throw SchemaError(
                            .unsupportedType, entity: entity.name, member: attribute.name,
                            "\(entity.name).\(attribute.name) is \(attribute.type); the elements of an array or a map are strings, integers, doubles, floats, booleans or dates")
                    }
                default: break
                }
            }
            var identitySeen = Set<String>()
            for attribute in entity.identity {
                if let type = entity.attribute(named: attribute)?.type, type.isCollection {
                    throw SchemaError(
                        .unsupportedType, entity: entity.name, member: attribute,
                        "the identity of \(entity.name) names '\(attribute)', an attribute of type \(type); an identity is made of single values")
                }
                guard entity.attribute(named: attribute) != nil else {
                    throw SchemaError(
                        .missingIdentityAttribute, entity: entity.name, member: attribute,
                        "the identity of \(entity.name) names '\(attribute)', which is not an attribute of \(entity.name)")
                }
                if !identitySeen.insert(attribute).inserted {
                    throw SchemaError(.duplicateName, entity: entity.name, member: attribute, "the identity of \(entity.name) lists '\(attribute)' twice")
                }
            }
            for relationship in entity.relationships {
                guard let destination = self[relationship.destination] else {
                    throw SchemaError(
                        .unknownDestination, entity: entity.name, member: relationship.name,
                        "\(entity.name).\(relationship.name) points to unknown entity '\(relationship.destination)'")
                }
                guard let inverseName = relationship.inverse else { continue }
                guard let inverse = destination.relationship(named: inverseName) else {
                    throw SchemaError(
                        .unknownInverse, entity: entity.name, member: relationship.name,
                        "the inverse of \(entity.name).\(relationship.name) is '\(inverseName)', which is not a relationship of \(destination.name)")
                }
                if inverse.destination != entity.name || (inverse.inverse != nil && inverse.inverse != relationship.name) {
                    throw SchemaError(
                        .inverseMismatch, entity: entity.name, member: relationship.name,
                        "\(entity.name).\(relationship.name) and \(destination.name).\(inverseName) are not inverses of each other")
                }
            }
        }
    }
}

/// Collects entities in a ``Schema`` declaration.
@resultBuilder
public enum SchemaBuilder {
    /// Makes an entity a part of the schema.
    public static func buildExpression(_ entity: Entity) -> [Entity] { [entity] }
    /// Joins the parts of the declaration, in order.
    public static func buildBlock(_ parts: [Entity]...) -> [Entity] { parts.flatMap { $0 } }
    /// The entities a `for` loop declares, one iteration after the other.
    public static func buildArray(_ parts: [[Entity]]) -> [Entity] { parts.flatMap { $0 } }
    /// The entities of an `if` without `else`: none when the condition is false.
    public static func buildOptional(_ part: [Entity]?) -> [Entity] { part ?? [] }
    /// The entities of the first branch of an `if`-`else` or a `switch`.
    public static func buildEither(first part: [Entity]) -> [Entity] { part }
    /// The entities of the other branch of an `if`-`else` or a `switch`.
    public static func buildEither(second part: [Entity]) -> [Entity] { part }
}

/// A schema that is not consistent.
public struct SchemaError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of problem; compare with the static members (`.duplicateName`, ...).
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The kind's name, as its static member is spelled (`duplicateName`).
        public let name: String
        /// A kind named `name`; the kinds a schema throws are the static members.
        public init(name: String) { self.name = name }
        /// Two entities, two members of an entity, or two identity attributes with one name.
        public static let duplicateName = Kind(name: "duplicateName")
        /// An empty entity or member name.
        public static let invalidName = Kind(name: "invalidName")
        /// A relationship to an entity the schema does not declare.
        public static let unknownDestination = Kind(name: "unknownDestination")
        /// A relationship whose inverse is not a relationship of the destination.
        public static let unknownInverse = Kind(name: "unknownInverse")
        /// Two relationships named as inverses that do not point at each other.
        public static let inverseMismatch = Kind(name: "inverseMismatch")
        /// An identity naming something that is not an attribute of the entity.
        public static let missingIdentityAttribute = Kind(name: "missingIdentityAttribute")
        /// An attribute type a schema cannot use where it is: an array or map whose elements are
        /// not scalars, or an array, map or JSON attribute in an identity.
        public static let unsupportedType = Kind(name: "unsupportedType")
        public var description: String { name }
    }

    /// What kind of problem it is.
    public let kind: Kind
    /// The entity at fault.
    public let entity: String
    /// The attribute or relationship at fault, if any.
    public let member: String?
    /// A sentence naming the entity, the member and the problem.
    public let message: String

    /// An error of `kind` in `entity`, about `member` if one is at fault.
    public init(_ kind: Kind, entity: String, member: String?, _ message: String) {
        self.kind = kind
        self.entity = entity
        self.member = member
        self.message = message
    }

    public var description: String { "schema error (\(kind)): \(message)" }
}
