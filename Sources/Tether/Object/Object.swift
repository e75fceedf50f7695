import Foundation

/// The stable identifier of a stored object: its entity and a row number the store assigned.
///
/// Object IDs never change while the object exists, and a store never reuses one.
public struct ObjectID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The name of the object's entity.
    public let entity: String
    /// The number the store gave the object when it inserted it, unique within the entity (the
    /// SQLite store's `rowid`). It says nothing about the object's identity on the server.
    public let rowID: Int64

    /// The id of the object `rowID` of `entity`. Stores make ids; code outside a store reads them
    /// from objects and results.
    public init(entity: String, rowID: Int64) {
        self.entity = entity
        self.rowID = rowID
    }

    /// Hashes the row id only: cheap, and objects of different entities rarely share one.
    public func hash(into hasher: inout Hasher) { hasher.combine(rowID) }

    public static func < (lhs: ObjectID, rhs: ObjectID) -> Bool {
        (lhs.entity, lhs.rowID) < (rhs.entity, rhs.rowID)
    }

    public var description: String { "\(entity)#\(rowID)" }
}

/// A snapshot of a stored object: its ID and its attribute values by name.
///
/// Objects are values. Two snapshots of the same stored object have the same ``id``; the store
/// keeps exactly one object per identity per entity. Relationships are read through the store
/// (``StoreReader/related(_:of:)``) or the client (``Client/related(_:of:)``).
public struct Object: Hashable, Sendable, Identifiable, CustomStringConvertible {
    public let id: ObjectID
    /// Set attributes; an attribute that is not set (or was cleared by `null`) is absent.
    public var values: [String: Value]

    /// A snapshot of the object `id` holding `values` (set attributes only).
    public init(id: ObjectID, values: [String: Value]) {
        self.id = id
        self.values = values
    }

    /// The name of the object's entity.
    public var entity: String { id.entity }

    /// The value of `attribute`, or nil when it is not set. Setting it changes this snapshot only:
    /// write through the client (``Client/updateLocally(_:setting:clearing:relating:)``) or a store
    /// transaction to change the stored object.
    public subscript(attribute: String) -> Value? {
        get { values[attribute] }
        set { values[attribute] = newValue }
    }

    /// The attribute converted to a Swift type, or nil when unset or of another type.
    public subscript<V: AttributeValue>(attribute: String, as type: V.Type = V.self) -> V? {
        values[attribute].flatMap(V.init(attributeValue:))
    }

    public var description: String {
        let fields = values.keys.sorted().map { "\($0): \(values[$0]!)" }.joined(separator: ", ")
        return "\(id) { \(fields) }"
    }
}

/// The values that identify an object of an entity, in the order of the entity's identity
/// attributes. JSON `12345` and `"12345"` produce the same key for an integer identity.
public struct IdentityKey: Hashable, Sendable, CustomStringConvertible {
    /// One value (the common case) is kept without an array, so building and hashing a key is cheap.
    private enum Storage: Hashable, Sendable {
        case single(Value)
        case composite([Value])
    }

    private let storage: Storage

    /// The key made of `values`, one per identity attribute, in the entity's identity order.
    public init(_ values: [Value]) { storage = values.count == 1 ? .single(values[0]) : .composite(values) }
    /// The key of an entity identified by one attribute.
    public init(_ value: Value) { storage = .single(value) }

    /// The value of a one-value key (no array is built), nil for a composite key.
    public var single: Value? {
        if case .single(let value) = storage { return value }
        return nil
    }

    /// The key's values, one per identity attribute.
    public var values: [Value] {
        switch storage {
        case .single(let value): [value]
        case .composite(let values): values
        }
    }

    public var description: String {
        switch storage {
        case .single(let value): value.description
        case .composite(let values): "(" + values.map(\.description).joined(separator: ", ") + ")"
        }
    }
}
