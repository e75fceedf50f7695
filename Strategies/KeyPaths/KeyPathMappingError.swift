/// A key-path mapping that cannot become a schema, or a typed call the mapping cannot answer.
public struct KeyPathMappingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of problem; compare with the static members (`.unmappedIdentity`, ...).
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The kind's name, as its static member is spelled (`unmappedIdentity`).
        public let name: String
        /// A kind named `name`; the kinds this module throws are the static members.
        public init(_ name: String) { self.name = name }
        /// An identity key path is not mapped with `map(...)`.
        public static let unmappedIdentity = Kind("unmappedIdentity")
        /// A nested JSON key path (`owner.login`) was mapped without `named:`.
        public static let unnamedKeyPath = Kind("unnamedKeyPath")
        /// The same property is mapped twice.
        public static let duplicateKeyPath = Kind("duplicateKeyPath")
        /// Two mappings declare the same entity.
        public static let duplicateEntity = Kind("duplicateEntity")
        /// A predicate or sort names a key path the mapping does not map.
        public static let unmappedKeyPath = Kind("unmappedKeyPath")
        /// The client's schema does not have the mapping's entity.
        public static let unknownEntity = Kind("unknownEntity")
        /// A model to save whose identity is unset or names no stored object.
        public static let notStored = Kind("notStored")
        public var description: String { name }
    }

    /// What kind of problem it is.
    public let kind: Kind
    /// The entity of the mapping at fault.
    public let entity: String
    /// The attribute or relationship concerned, if any.
    public let member: String?
    /// A sentence naming the entity, the property and what to change.
    public let message: String

    /// An error of `kind` in the mapping of `entity`, about `member` if one is at fault.
    public init(_ kind: Kind, entity: String, member: String?, _ message: String) {
        self.kind = kind
        self.entity = entity
        self.member = member
        self.message = message
    }

    public var description: String { "key-path mapping error (\(kind)): \(message)" }
}
