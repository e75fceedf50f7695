import Foundation

/// A `Codable` struct that is the typed view of one entity: declare it once, and import, fetch,
/// relate, create, save, delete and observe with it, without string names.
///
/// ```swift
/// struct User: EntityModel {
///     var id: Int64
///     var login: String
///     var avatarURL: URL?
///     var repositories: [Repository] = []       // to-many: an array of models
/// }
///
/// struct Repository: EntityModel {
///     var id: Int64?                              // nil until the server assigns one
///     var fullName: String
///     var createdAt: Date?
///     var owner: User?                            // to-one: an optional model
/// }
///
/// let client = try Client.Builder(models: [User.self, Repository.self])
///     .naming(RailsNaming())                     // TetherRails: fullName ↔ "full_name"
///     .build()
/// let repositories = try await client.import(data, as: Repository.self)
/// let recent = try await client.fetch(Repository.self, where: .greater(\.createdAt, lastWeek),
///                                     sortedBy: [.descending(\.createdAt)])
/// ```
///
/// **What the struct declares.** Each coded property (its `CodingKeys` name) is an attribute or
/// a relationship of the entity of the same name: a value (`String`, integers, `Double`, `Float`,
/// `Decimal`, `Bool`, `Date`, `Data`, `UUID`, `URL`, or an enum or wrapper that codes as one of
/// them) is an attribute; an optional model is a to-one relationship; an array of models is a
/// to-many one. An optional property maps an attribute that may be unset; a non-optional one
/// must have a stored value when read (``ModelError/Kind/unsetAttribute``). The identity is the
/// `id` property unless ``describe(_:)`` says otherwise.
///
/// **Deriving the schema.** ``Client/Builder/init(models:entities:)`` derives each entity from
/// what the type's `init(from:)` asks a probing decoder for: synthesized conformances work as
/// they are; a hand-written `init(from:)` must ask for every key it maps. A model may also be a
/// partial view of an entity declared by hand (``Client/Builder/init(schema:)``): then it need
/// not declare every attribute, and its properties are checked against the entity on first use.
public protocol EntityModel: Codable, Sendable {
    /// The entity's name in the schema. By default the type's name.
    static var entityName: String { get }

    /// Declares what the properties cannot say: another identity, JSON keys, inverses, ordered
    /// relationships, delete rules, read-only properties. By default nothing.
    ///
    /// ```swift
    /// static func describe(_ model: inout ModelDescription<Self>) {
    ///     model.identity(\.number)
    ///     model.jsonKey(\.repositoryDescription, "description")
    ///     model.inverse(\.issues, \Issue.repository)
    ///     model.readOnly(\.createdAt)
    /// }
    /// ```
    static func describe(_ model: inout ModelDescription<Self>)
}

extension EntityModel {
    public static var entityName: String { String(describing: Self.self) }
    public static func describe(_ model: inout ModelDescription<Self>) {}
}

/// What an ``EntityModel`` declares beyond its properties, by key path. Filled in by
/// ``EntityModel/describe(_:)``; each key path must name a coded property of the model.
public struct ModelDescription<Model: EntityModel>: Sendable {
    typealias KeyPath = any PartialKeyPath<Model> & Sendable

    struct Member: Sendable {
        let keyPath: KeyPath
        /// Finds the member's name among the probes.
        let resolve: @Sendable (ModelLayout<Model>) -> String?
    }

    var identity: [Member] = []
    var declaresNoIdentity = false
    var jsonKeys: [(Member, JSONKeyPath)] = []
    var fallbackKeys: [(Member, [JSONKeyPath])] = []
    var ignoringNull: [Member] = []
    var dateFormats: [(Member, DateDecoding)] = []
    var foreignKeys: [(Member, String)] = []
    var inverses: [(Member, destination: String, resolve: @Sendable (ModelLayoutCache) throws -> String?)] = []
    var ordered: [Member] = []
    var deleteRules: [(Member, DeleteRule)] = []
    var readOnly: [Member] = []

    init() {}

    private func member<V: Encodable & Sendable>(_ keyPath: any Swift.KeyPath<Model, V> & Sendable) -> Member {
        Member(keyPath: keyPath, resolve: { $0.name(of: keyPath) })
    }

    /// The identity attributes (several for a composite key), instead of `id`.
    public mutating func identity<V: Encodable & Sendable>(_ keyPath: any Swift.KeyPath<Model, V> & Sendable) {
        identity = [member(keyPath)]
        declaresNoIdentity = false
    }

    /// Declares that objects of this model have no identity, even with an `id` property (an `id`
    /// unique only within its owner): nested in an owner, they are the owner's and replaced with
    /// it on each import (``Entity/declaresNoIdentity``).
    public mutating func noIdentity() {
        identity = []
        declaresNoIdentity = true
    }

    /// A composite identity of two attributes.
    public mutating func identity<V: Encodable & Sendable, W: Encodable & Sendable>(
        _ first: any Swift.KeyPath<Model, V> & Sendable, _ second: any Swift.KeyPath<Model, W> & Sendable
    ) {
        identity = [member(first), member(second)]
        declaresNoIdentity = false
    }

    /// The JSON key path of a property, instead of the naming strategy's (`"description"` for
    /// `repositoryDescription`, `"owner.login"` for a nested value).
    public mutating func jsonKey<V: Encodable & Sendable>(_ keyPath: any Swift.KeyPath<Model, V> & Sendable, _ key: JSONKeyPath) {
        jsonKeys.append((member(keyPath), key))
    }

    /// JSON key paths an import reads, in order, when the property's own key is absent: Broker's
    /// `employeeId` read from `"employee_id"` or else `"id"`, an avatar under `"avatar_url"` or
    /// `"picture.url"`. The own key (``jsonKey(_:_:)`` or the naming strategy's) is read first; a
    /// fallback that is present wins over the later ones, including when it holds `null`.
    public mutating func fallbackKeys<V: Encodable & Sendable>(_ keyPath: any Swift.KeyPath<Model, V> & Sendable, _ keys: JSONKeyPath...) {
        fallbackKeys.append((member(keyPath), keys))
    }

    /// An attribute that a `null` in a payload leaves as it is, instead of clearing it: for a
    /// server that sends `null` for "not part of this view" (CTRESTfulCoreData's "ignore null").
    /// A missing key leaves every attribute as it is already.
    public mutating func ignoresNull<V: Encodable & Sendable>(_ keyPath: any Swift.KeyPath<Model, V> & Sendable) {
        ignoringNull.append(member(keyPath))
    }

    /// The date formats of one date attribute (or array of dates), tried in order when an import
    /// reads it and the first that writes used in request bodies and URLs, instead of the
    /// client's ``Client/Builder/dateDecoding(_:)``: a `birthday` as `yyyy-MM-dd` beside ISO 8601
    /// timestamps, Stripe's `created` in Unix seconds. A value none of them reads is a diagnostic
    /// naming the entity, the attribute and the JSON path, as for the client's formats.
    ///
    /// ```swift
    /// model.dateFormats(\.birthday, .format("yyyy-MM-dd"))
    /// ```
    public mutating func dateFormats<V: Encodable & Sendable>(
        _ keyPath: any Swift.KeyPath<Model, V> & Sendable, _ formats: DateFormat...
    ) {
        dateFormats.append((member(keyPath), DateDecoding(formats)))
    }

    /// The JSON key that carries a to-one relationship's identity (`"owner_id"`), instead of the
    /// naming strategy's.
    public mutating func foreignKey<D: EntityModel>(_ keyPath: any Swift.KeyPath<Model, D?> & Sendable, _ key: String) {
        foreignKeys.append((member(keyPath), key))
    }

    /// The inverse of a to-one relationship. Needed only when the destination has more than one
    /// relationship back to this model; otherwise the single pair is found by itself.
    public mutating func inverse<D: EntityModel, Back: Encodable & Sendable>(
        _ keyPath: any Swift.KeyPath<Model, D?> & Sendable, _ back: any Swift.KeyPath<D, Back> & Sendable
    ) {
        inverses.append((member(keyPath), D.entityName, { try $0.layout(of: D.self).name(of: back) }))
    }

    /// The inverse of a to-many relationship.
    public mutating func inverse<D: EntityModel, Back: Encodable & Sendable>(
        _ keyPath: any Swift.KeyPath<Model, [D]> & Sendable, _ back: any Swift.KeyPath<D, Back> & Sendable
    ) {
        inverses.append((member(keyPath), D.entityName, { try $0.layout(of: D.self).name(of: back) }))
    }

    /// Keeps a to-many relationship in the order of the payload (the store keeps positions).
    /// Without it, the models of a to-many relationship come in the store's order.
    public mutating func ordered<D: EntityModel>(_ keyPath: any Swift.KeyPath<Model, [D]> & Sendable) {
        ordered.append(member(keyPath))
    }

    /// What deleting an object does to the destination of a relationship (`.nullify` by default).
    public mutating func deleteRule<V: Encodable & Sendable>(_ keyPath: any Swift.KeyPath<Model, V> & Sendable, _ rule: DeleteRule) {
        deleteRules.append((member(keyPath), rule))
    }

    /// A property the server sets and refuses in request bodies (`createdAt`): create and save
    /// never send it.
    public mutating func readOnly<V: Encodable & Sendable>(_ keyPath: any Swift.KeyPath<Model, V> & Sendable) {
        readOnly.append(member(keyPath))
    }
}

/// An error of the typed model layer, naming the model's entity and the property at fault.
public struct ModelError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What is wrong; compare with the static members (`.unmappedKeyPath`, ...).
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The kind's name, as its static member is spelled (`unmappedKeyPath`).
        public let name: String
        /// A kind named `name`; the typed model layer throws the static members.
        public init(_ name: String) { self.name = name }
        /// A property whose type is neither a value, an optional model nor an array of models.
        public static let unsupportedProperty = Kind("unsupportedProperty")
        /// A to-one relationship declared as a non-optional model.
        public static let nonOptionalToOne = Kind("nonOptionalToOne")
        /// A key path (in a predicate, a sort or a description) that names no coded property.
        public static let unmappedKeyPath = Kind("unmappedKeyPath")
        /// Two model types declare one entity, or a model's entity is not in the client's schema.
        public static let unknownEntity = Kind("unknownEntity")
        /// A property that does not match the entity's attribute or relationship of that name.
        public static let mismatchedProperty = Kind("mismatchedProperty")
        /// A non-optional property read from an object whose attribute is unset.
        public static let unsetAttribute = Kind("unsetAttribute")
        /// A stored value that cannot become the property's type.
        public static let unconvertibleValue = Kind("unconvertibleValue")
        /// A model without identity values where an existing object is needed (save, delete).
        public static let noIdentity = Kind("noIdentity")
        /// A model whose identity names no stored object.
        public static let notStored = Kind("notStored")
        public var description: String { name }
    }

    /// What is wrong.
    public let kind: Kind
    /// The entity of the model.
    public let entity: String
    /// The property, when one is at fault.
    public let member: String?
    /// A sentence naming the model, the property and what is wrong with it.
    public let message: String

    /// An error of `kind` about `entity`'s model, and its property `member` when given.
    public init(_ kind: Kind, entity: String, member: String? = nil, _ message: String) {
        self.kind = kind
        self.entity = entity
        self.member = member
        self.message = message
    }

    public var description: String { "model error (\(kind)): \(message)" }
}
