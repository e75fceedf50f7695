import Foundation

/// The typed access layer: declare an entity's fields once, then read `user.login` instead of
/// `object["login"]`.
///
/// ```swift
/// struct UserFields: ObjectFields {
///     static let entityName = "User"
///     let login = Field<String>("login")
///     let identifier = Field<Int64>("identifier")
/// }
/// typealias User = TypedObject<UserFields>
///
/// let users: [User] = try await client.fetch(User.self)
/// users[0].login   // String?
/// ```
public protocol ObjectFields: Sendable {
    /// The entity these fields belong to.
    static var entityName: String { get }
    /// An instance to read the fields from; the fields are constants, so any instance will do.
    init()
}

/// A typed attribute of an ``ObjectFields`` declaration.
public struct Field<V: AttributeValue>: Sendable, Hashable {
    /// The attribute's name in the entity.
    public let name: String
    /// A field reading the attribute `name` as a `V`.
    public init(_ name: String) { self.name = name }
}

/// A stored ``Object`` read through typed fields.
@dynamicMemberLookup
public struct TypedObject<Fields: ObjectFields>: Sendable, Hashable, Identifiable {
    /// The object read through the fields.
    public let object: Object

    /// Wraps an object of `Fields.entityName`; nil for an object of another entity.
    public init?(_ object: Object) {
        guard object.entity == Fields.entityName else { return nil }
        self.object = object
    }

    public var id: ObjectID { object.id }

    /// The value of a field (`user.login`), converted to the field's type; nil when the attribute
    /// is unset or its value does not convert (``AttributeValue``).
    public subscript<V>(dynamicMember field: KeyPath<Fields, Field<V>>) -> V? {
        object[Fields()[keyPath: field].name, as: V.self]
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.object == rhs.object }
    public func hash(into hasher: inout Hasher) { hasher.combine(object) }
}
