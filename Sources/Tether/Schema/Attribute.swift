import Foundation

/// The type of an attribute, which decides how a JSON value is validated and converted.
public enum AttributeType: Sendable, Hashable, CustomStringConvertible {
    case string
    case int16
    case int32
    case int64
    case decimal
    case double
    case float
    case bool
    case date
    /// Binary data; JSON carries it as a base64 string.
    case data
    case uuid
    case url
    /// A value converted by the ``AttributeTransformer`` registered under this name in the builder.
    case transformable(String)

    public var description: String {
        switch self {
        case .string: "string"
        case .int16: "int16"
        case .int32: "int32"
        case .int64: "int64"
        case .decimal: "decimal"
        case .double: "double"
        case .float: "float"
        case .bool: "bool"
        case .date: "date"
        case .data: "data"
        case .uuid: "uuid"
        case .url: "url"
        case .transformable(let name): "transformable(\(name))"
        }
    }
}

extension AttributeType {
    /// Whether an attribute of this type can hold `value`: every store applies this rule.
    /// Integer types hold ``Value/int(_:)``, `float` holds ``Value/double(_:)``, and a transformable
    /// attribute holds whatever its transformer produces.
    public func accepts(_ value: Value) -> Bool {
        switch (self, value) {
        case (.string, .string), (.int16, .int), (.int32, .int), (.int64, .int), (.double, .double), (.float, .double),
            (.decimal, .decimal), (.bool, .bool), (.date, .date), (.data, .data), (.uuid, .uuid), (.url, .url):
            return true
        case (.transformable, _):
            return true
        default:
            return false
        }
    }
}

extension AttributeType {
    // The checks both stores make before writing a value, with the same errors.

    /// The type of each of `names`, in order, looked up in `types` (an entity's attribute types
    /// by name): how a store checks a batch's attributes once. An unknown name is a
    /// ``StoreError/Kind/unknownAttribute`` error.
    package static func types(of names: [String], in types: [String: AttributeType], entity: String) throws -> [AttributeType] {
        try names.map { name in
            guard let type = types[name] else {
                throw StoreError(.unknownAttribute, entity: entity, member: name, "\(entity) has no attribute '\(name)'")
            }
            return type
        }
    }

    /// Throws a ``StoreError/Kind/typeMismatch`` error unless this type ``accepts(_:)`` `value`,
    /// the value of `entity`.`attribute`.
    package func check(_ value: Value, entity: String, attribute: String) throws {
        guard accepts(value) else {
            throw StoreError(.typeMismatch, entity: entity, member: attribute, "\(entity).\(attribute) is \(self); cannot store \(value)")
        }
    }
}

/// A typed attribute of an entity.
public struct Attribute: Sendable, Hashable {
    public var name: String
    public var type: AttributeType

    public init(_ name: String, _ type: AttributeType) {
        self.name = name
        self.type = type
    }
}

/// What happens to related objects when an object is deleted.
public enum DeleteRule: Sendable, Hashable {
    /// Unlink the related objects and keep them (the default).
    case nullify
    /// Delete the related objects too.
    case cascade
    /// Refuse the delete while related objects exist.
    case deny
}

/// A relationship from one entity to another.
public struct Relationship: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        case toOne
        case toMany
        /// A to-many relationship that keeps the order in which objects were set.
        case orderedToMany
    }

    public var name: String
    public var destination: String
    public var kind: Kind
    /// The name of the relationship on the destination that points back, if any.
    public var inverse: String?
    public var deleteRule: DeleteRule

    public init(
        _ name: String, _ kind: Kind, _ destination: String, inverse: String? = nil, deleteRule: DeleteRule = .nullify
    ) {
        self.name = name
        self.kind = kind
        self.destination = destination
        self.inverse = inverse
        self.deleteRule = deleteRule
    }

    public static func toOne(
        _ name: String, _ destination: String, inverse: String? = nil, deleteRule: DeleteRule = .nullify
    ) -> Relationship {
        Relationship(name, .toOne, destination, inverse: inverse, deleteRule: deleteRule)
    }

    public static func toMany(
        _ name: String, _ destination: String, inverse: String? = nil, ordered: Bool = false,
        deleteRule: DeleteRule = .nullify
    ) -> Relationship {
        Relationship(name, ordered ? .orderedToMany : .toMany, destination, inverse: inverse, deleteRule: deleteRule)
    }

    public var isToMany: Bool { kind != .toOne }
    public var isOrdered: Bool { kind == .orderedToMany }
}
