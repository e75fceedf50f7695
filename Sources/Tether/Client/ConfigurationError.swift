import Foundation

/// A builder that cannot produce a working client; thrown by ``Client/Builder/build()``.
public struct ConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What is wrong; compare with the static members (`.unknownEntity`, ...).
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The kind's name, as its static member is spelled (`unknownEntity`).
        public let name: String
        /// A kind named `name`, for a strategy module's own problems (`TetherEntityMapper` adds
        /// `.invalidKeyPath`); Tether's own checks use the static members.
        public init(_ name: String) { self.name = name }
        /// A registration (key mapping, transport, resource URL, pagination, response shape, save
        /// method, read-only set, route) names an entity that is not in the schema.
        public static let unknownEntity = Kind("unknownEntity")
        /// A registration names an attribute or relationship that its entity does not have.
        public static let unknownProperty = Kind("unknownProperty")
        /// A `.transformable(name)` attribute has no transformer registered under `name`
        /// (``Client/Builder/transformer(_:named:)``).
        public static let missingTransformer = Kind("missingTransformer")
        /// An entity's identity names no attribute of it, or the store refuses the schema.
        public static let invalidIdentity = Kind("invalidIdentity")
        /// A URL template names a value the entity's mapping cannot give, or a route of a route
        /// table is malformed (empty name, declared twice, bad path, no entity).
        public static let invalidRoute = Kind("invalidRoute")
        /// No usable base URL: a route table's environment has none and the builder sets none.
        public static let invalidURL = Kind("invalidURL")
        /// Two properties of an entity map to one JSON key, or one entity is mapped twice.
        public static let conflictingKeys = Kind("conflictingKeys")
        /// Date formats are given for an attribute that holds no dates, or the list is empty
        /// (``KeyOverrides/dateFormats``, ``ModelDescription/dateFormats(_:_:)``).
        public static let invalidDateFormats = Kind("invalidDateFormats")
        /// A schema that cannot be used, for checks of your own; Tether reports its schema's
        /// problems as ``invalidIdentity`` (and ``Schema`` throws ``SchemaError``s).
        public static let schema = Kind("schema")
        /// The store could not be prepared with the schema: its stored data cannot follow it, or
        /// its storage failed (the ``StoreError``'s message is kept).
        public static let store = Kind("store")
        public var description: String { name }
    }

    /// What is wrong.
    public let kind: Kind
    /// The entity at fault, if any.
    public let entity: String?
    /// The attribute, relationship, template variable or route at fault, if any.
    public let member: String?
    /// A sentence naming what is wrong and where (`Repository.fullName and Repository.name both
    /// map to the JSON key 'name'`).
    public let message: String

    /// An error of `kind`, about `entity` and `member` when given; a ``ClientExtension`` throws
    /// these from ``ClientExtension/validate(for:)`` so that `build()` reports every problem alike.
    public init(_ kind: Kind, entity: String? = nil, member: String? = nil, _ message: String) {
        self.kind = kind
        self.entity = entity
        self.member = member
        self.message = message
    }

    public var description: String { "configuration error (\(kind)): \(message)" }
}
