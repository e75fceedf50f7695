import Foundation

/// The type of an attribute, which decides how a JSON value is validated and converted.
public enum AttributeType: Sendable, Hashable, CustomStringConvertible {
    /// Text. A JSON string; under lossless coercion, a number is taken as its text.
    case string
    /// A 16-bit signed integer, stored as ``Value/int(_:)``. A value out of range is rejected.
    case int16
    /// A 32-bit signed integer, stored as ``Value/int(_:)``. A value out of range is rejected.
    case int32
    /// A 64-bit signed integer, stored as ``Value/int(_:)``: exact up to `Int64.max`, so ids above
    /// 2^53 survive.
    case int64
    /// A base-10 number (`Decimal`): prices and amounts that a `Double` would round.
    case decimal
    /// A 64-bit floating-point number.
    case double
    /// A 32-bit floating-point number, held as ``Value/double(_:)``.
    case float
    /// `true` or `false`; under lossless coercion, also the strings `"true"` and `"false"`.
    case bool
    /// A point in time, read from JSON as the builder's ``DateDecoding`` says (ISO 8601 strings
    /// and Unix seconds by default).
    case date
    /// Binary data; JSON carries it as a base64 string.
    case data
    /// A UUID, read from its string form.
    case uuid
    /// A URL, read from a string.
    case url
    /// A value converted by the ``AttributeTransformer`` registered under this name in the builder.
    case transformable(String)
    /// An array of scalars of the element type (`string`, an integer type, `double`, `float`,
    /// `bool` or `date`), read from a JSON array: GitHub's `topics: ["swift", "ios"]`, a poll's
    /// `own_votes: [0, 2]`. Held as ``Value/array(_:)``; `.includes` finds an element.
    indirect case array(AttributeType)
    /// A string-keyed map of scalars of the element type (as for ``array(_:)``), read from a JSON
    /// object: Stripe's `metadata` (`.map(.string)`). Held as ``Value/map(_:)``.
    indirect case map(AttributeType)
    /// Any JSON value, kept as it came (a settings blob, a server's free-form `extra`). Held as
    /// ``Value/json(_:)``; a JSON `null` clears it, as it clears any attribute.
    case json

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
        case .array(let element): "array(\(element))"
        case .map(let element): "map(\(element))"
        case .json: "json"
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
        case (.array, .array), (.map, .map), (.json, .json):
            return acceptsCollection(value)
        default:
            return false
        }
    }

    /// ``accepts(_:)`` for an array, a map or a JSON value, out of line: recursion in
    /// `accepts` itself kept the scalar cases, checked for every value a store writes, from being
    /// inlined.
    @inline(never)
    private func acceptsCollection(_ value: Value) -> Bool {
        switch (self, value) {
        case (.array(let element), .array(let values)):
            return values.allSatisfy(element.accepts)
        case (.map(let element), .map(let values)):
            return values.values.allSatisfy(element.accepts)
        case (.json, .json):
            return true
        default:
            return false
        }
    }
}

extension AttributeType {
    /// True for an array, a map or a JSON attribute, whose values are ``Value/array(_:)``,
    /// ``Value/map(_:)`` or ``Value/json(_:)``: conditions do not compare them (`.includes`
    /// finds an array's element) and sorts do not order by them.
    public var isCollection: Bool {
        switch self {
        case .array, .map, .json: true
        default: false
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
    /// the value of `entity`.`attribute`, and a ``StoreError/Kind/invalidValue`` error for a date
    /// that is not finite or outside years 1 to 9999: one store would read it back as nil and the
    /// other as given, and no request body could carry it as a date.
    package func check(_ value: Value, entity: String, attribute: String) throws {
        guard accepts(value) else {
            throw StoreError(.typeMismatch, entity: entity, member: attribute, "\(entity).\(attribute) is \(self); cannot store \(value)")
        }
        if case .date(let date) = value, !date.timeIntervalSinceReferenceDate.isFinite || !DateDecoding.representableRange.contains(date) {
            throw StoreError(.invalidValue, entity: entity, member: attribute,
                             "\(entity).\(attribute) cannot store the date \(date.timeIntervalSince1970) (seconds since 1970): a date must be finite and within years 1 to 9999")
        }
        if value.isCollection, let problem = CollectionValues.problem(in: value) {
            throw StoreError(.invalidValue, entity: entity, member: attribute, "\(entity).\(attribute) cannot store \(problem)")
        }
    }
}

/// A typed attribute of an entity.
public struct Attribute: Sendable, Hashable {
    /// The attribute's name in the model: what queries, key mappings and URL templates use.
    public var name: String
    /// The type of the attribute's values, which decides how JSON is converted and what a store
    /// accepts.
    public var type: AttributeType

    /// An attribute named `name` holding values of `type`: `Attribute("createdAt", .date)`.
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
    /// How many objects a relationship leads to, and whether their order is kept.
    public enum Kind: Sendable, Hashable {
        /// At most one object (`Repository.owner`); setting it replaces the previous one, on both
        /// sides of the relationship.
        case toOne
        /// Any number of objects, in no particular order (`User.repositories`).
        case toMany
        /// A to-many relationship that keeps the order in which objects were set.
        case orderedToMany
    }

    /// The relationship's name in the model (`owner`).
    public var name: String
    /// The entity of the related objects.
    public var destination: String
    /// To-one, to-many or ordered to-many.
    public var kind: Kind
    /// The name of the relationship on the destination that points back, if any.
    public var inverse: String?
    /// What deleting an object of this entity does to the objects it relates to through this
    /// relationship (`.nullify` by default).
    public var deleteRule: DeleteRule

    /// A relationship named `name` of kind `kind` to `destination`; ``toOne(_:_:inverse:deleteRule:)``
    /// and ``toMany(_:_:inverse:ordered:deleteRule:)`` read better in a schema.
    public init(
        _ name: String, _ kind: Kind, _ destination: String, inverse: String? = nil, deleteRule: DeleteRule = .nullify
    ) {
        self.name = name
        self.kind = kind
        self.destination = destination
        self.inverse = inverse
        self.deleteRule = deleteRule
    }

    /// A to-one relationship: `Relationship.toOne("owner", "User", inverse: "repositories")`.
    public static func toOne(
        _ name: String, _ destination: String, inverse: String? = nil, deleteRule: DeleteRule = .nullify
    ) -> Relationship {
        Relationship(name, .toOne, destination, inverse: inverse, deleteRule: deleteRule)
    }

    /// A to-many relationship, ordered when `ordered` is true (the store then keeps the order in
    /// which objects are set): `Relationship.toMany("labels", "Label", ordered: true)`.
    public static func toMany(
        _ name: String, _ destination: String, inverse: String? = nil, ordered: Bool = false,
        deleteRule: DeleteRule = .nullify
    ) -> Relationship {
        Relationship(name, ordered ? .orderedToMany : .toMany, destination, inverse: inverse, deleteRule: deleteRule)
    }

    /// True for a to-many relationship, ordered or not.
    public var isToMany: Bool { kind != .toOne }
    /// True for an ordered to-many relationship.
    public var isOrdered: Bool { kind == .orderedToMany }
}
