import Foundation

/// Protocol 5 of 6: where objects live.
///
/// A store keeps objects by ``ObjectID``, exactly one per ``IdentityKey`` per entity, with their
/// relationships, and runs every change inside a transaction: ``write(_:)`` commits everything the
/// body did, or nothing when it throws. Each committed transaction that changed something is
/// announced once, as one ``ChangeSet``, on every ``changes()`` stream.
///
/// ## Use a built-in one
/// - ``InMemoryStore``: the default, and the store for tests.
/// - `SQLiteStore` (module `TetherSQLite`): persistent, in one file.
///
/// ## Write your own
/// Conform a `Sendable` type, prepare storage in ``prepare(for:)``, and run the store
/// conformance suite of `TetherTesting` against it (see Docs/Stores.md).
///
/// Relationships: each relationship and its inverse are one set of links. Setting a relationship
/// on either side updates the other, and setting a to-one side (or linking an object to the
/// to-many side of a one-to-many relationship) moves the object away from its previous partner.
/// ``StoreWriter/delete(_:)`` removes the object and every link to it; delete rules (cascade,
/// deny) are applied by Tether before it calls the store.
public protocol Store: Sendable {
    /// Called once by ``Client/Builder/build()`` with the resolved schema, in which every entity's
    /// ``Entity/identity`` is filled in. Create or migrate storage here.
    func prepare(for schema: Schema) throws
    /// Called by ``Client/Builder/build()`` instead of ``prepare(for:)`` with the
    /// ``SchemaMigration``s the app declared (oldest first): apply each migration the storage has
    /// not applied yet, then prepare for `schema`, all or nothing (see Docs/Stores.md,
    /// "Migrations"). The default implementation applies none: it calls ``prepare(for:)`` when
    /// `migrations` is empty, and otherwise throws a ``StoreError/Kind/incompatibleSchema`` error
    /// naming the first step, so that a store that does not honour steps never ignores them.
    func prepare(for schema: Schema, migrations: [SchemaMigration]) throws
    /// Runs `body` with a consistent view of the store. Reads may run while a write is in progress
    /// and see the last committed state.
    func read<T: Sendable>(_ body: @Sendable (any StoreReader) throws -> T) async throws -> T
    /// Runs `body` in one transaction: all of its changes are committed together, or none when it
    /// throws. Writes are serialised.
    func write<T: Sendable>(_ body: @Sendable (any StoreWriter) throws -> T) async throws -> T
    /// A stream of the changes of every transaction committed after the call.
    func changes() -> AsyncStream<ChangeSet>
}

extension Store {
    /// Refuses migration steps (this store does not apply them) and prepares for `schema` when
    /// there are none.
    public func prepare(for schema: Schema, migrations: [SchemaMigration]) throws {
        try SchemaMigration.validate(migrations)
        if let migration = migrations.first(where: { !$0.steps.isEmpty }), let step = migration.steps.first {
            throw StoreError(.incompatibleSchema, entity: step.entity, member: step.member,
                             "\(type(of: self)) does not apply schema migration steps: migration '\(migration.id)' (\(step)) was not applied; the store was left untouched")
        }
        try prepare(for: schema)
    }
}

/// Reading inside ``Store/read(_:)`` or ``Store/write(_:)``. Not to be kept after the body returns.
public protocol StoreReader {
    /// Batched find-by-identity: the stored objects of `entity` among `identities`, keyed by identity.
    /// Unknown identities are absent from the result. Stores must answer a large batch efficiently
    /// (Tether calls this once per entity per import).
    func objects(_ entity: String, identities: [IdentityKey]) throws -> [IdentityKey: Object]
    /// The object with `id`, or nil.
    func object(_ id: ObjectID) throws -> Object?
    /// Objects matching `query`, sorted and limited as it says.
    func fetch(_ query: Query) throws -> [Object]
    /// The number of objects matching `query`'s entity and condition (ignoring limit and offset).
    func count(_ query: Query) throws -> Int
    /// The ids of the objects matching `query`, in its order: what ``fetch(_:)`` finds, without
    /// building the objects (an import's ``ImportOptions/deleteMissing`` reads its scope so). Has
    /// a default implementation over ``fetch(_:)``.
    func ids(_ query: Query) throws -> [ObjectID]
    /// Batched relationship read: for each of `ids` that has links, the related objects, in order
    /// for an ordered to-many relationship. Objects without links are absent from the result.
    func related(_ relationship: String, of ids: [ObjectID]) throws -> [ObjectID: [ObjectID]]
    /// Batched relationship read, row by row: the links of each of `sources` (objects of one
    /// entity), in order, as a ``LinkBatch`` with one row per source, in order (a source without
    /// links has a row with no targets): the batch that ``StoreWriter/setRelated(_:)`` would be
    /// given to leave the links as they are. What ``related(_:of:)`` says, without a dictionary
    /// or an array per object (the import reads the current links of every object it may relink
    /// so). Throws ``StoreError/Kind/typeMismatch`` for sources of several entities. Has a default
    /// implementation over ``related(_:of:)``.
    func links(_ relationship: String, of sources: [ObjectID]) throws -> LinkBatch
    /// Batched find-by-identity by position: for each of `identities`, in
    /// order, the stored object's id and its values of `attributes`, or nil. Has a default
    /// implementation over ``objects(_:identities:)``.
    func find(_ entity: String, identities: [IdentityKey], attributes: [String]) throws -> [StoredRow?]
    /// The import's lookup: for each row of `batch`, in order, the stored object's id, the
    /// positions of the given values that differ from the stored ones and the current targets of
    /// the batch's to-one relationships, or nil. Has a default implementation over
    /// ``find(_:identities:attributes:)`` and ``related(_:of:)``, which defines its effect (a store
    /// may also throw ``StoreError/Kind/unsupported`` for any to-many relationship).
    func compare(_ batch: LookupBatch) throws -> [StoredDifference?]
    /// What Tether keeps about the server's copy of an object (its `ETag`, the values the server
    /// last confirmed for what was changed locally since), as opaque bytes; nil when there is none.
    /// The default implementation throws ``StoreError/Kind/unsupported``: such a store can still
    /// import and save whole objects, but not send only what changed.
    func remoteRecord(of id: ObjectID) throws -> Data?
}

/// Writing inside ``Store/write(_:)``.
public protocol StoreWriter: StoreReader {
    /// Inserts a new object. Throws ``StoreError/Kind/duplicateIdentity`` when an object with the same
    /// identity exists.
    @discardableResult
    func insert(_ entity: String, values: [String: Value]) throws -> Object
    /// Sets and clears attributes of an object; attributes not named are left as they are.
    func update(_ id: ObjectID, setting values: [String: Value], clearing cleared: Set<String>) throws
    /// Removes an object and every link to it.
    func delete(_ id: ObjectID) throws
    /// Replaces the objects `id` is linked to through `relationship` (an empty array unlinks
    /// everything), keeping the inverse consistent.
    func setRelated(_ relationship: String, of id: ObjectID, to targets: [ObjectID]) throws
    /// Inserts new objects of one entity with their to-one links (the import's write path); returns
    /// the new ids in row order. A row that leaves an identity attribute of the entity unset is
    /// refused with ``StoreError/Kind/missingIdentity``. Has a default implementation over ``insert(_:values:)`` and
    /// ``setRelated(_:of:to:)``, which defines its effect. When it throws, rows before the failing
    /// one may or may not have been inserted (an import then rolls its transaction back).
    func insert(_ batch: InsertBatch) throws -> [ObjectID]
    /// Sets and clears the same attributes of many objects of one entity (the import's update
    /// path). Has a default implementation over ``update(_:setting:clearing:)``, which defines its
    /// effect.
    func update(_ batch: UpdateBatch) throws
    /// Sets one relationship of many objects of one entity (the import's link path): the effect,
    /// the checks and the errors are those of ``setRelated(_:of:to:)`` for each row, in order. Has
    /// a default implementation that does exactly that; a store writes the rows' links in set
    /// operations, at a cost per link that does not grow with how many links a target has.
    func setRelated(_ batch: LinkBatch) throws
    /// Replaces the remote record of an object (nil removes it). The record is the object's: it
    /// persists with it, and ``delete(_:)`` removes it. The default implementation throws
    /// ``StoreError/Kind/unsupported``.
    func setRemoteRecord(_ record: Data?, of id: ObjectID) throws
    /// The committed state this write transaction began from, or nil when the store cannot tell
    /// (the default). An import remembers the nested objects it stored (a repository's owner, an
    /// issue's labels) for the next import on the same client, which skips the unchanged ones
    /// without reading them; it trusts them only when that import's transaction begins from
    /// exactly the state the remembering one committed, ``StoreVersion/next``.
    var version: StoreVersion? { get }
}

/// Names a committed state of a store (``StoreWriter/version``): equal versions mean that no
/// transaction committed in between, by this process or any other.
///
/// A store that reports versions counts its committed write transactions in ``commits`` (every
/// one, even one that changed nothing, and every other change to its contents, such as a schema
/// migration), so that a transaction that began from version `v` leaves the store at `v.next`.
/// A store whose storage others may change too (another process writing the same file) reports
/// in ``external`` a number that changes whenever they commit.
public struct StoreVersion: Hashable, Sendable, CustomStringConvertible {
    /// The write transactions this store has committed (and other changes it made).
    public var commits: UInt64
    /// Changes by other writers of the same storage; 0 when nothing else writes it.
    public var external: UInt64

    /// A version of `commits` write transactions, and `external` for what other writers did.
    public init(commits: UInt64, external: UInt64 = 0) {
        self.commits = commits
        self.external = external
    }

    /// The version once a transaction that began from this one has committed, when nothing else
    /// committed in between.
    public var next: StoreVersion { StoreVersion(commits: commits &+ 1, external: external) }

    /// `commits.external`.
    public var description: String { "\(commits).\(external)" }
}

extension StoreWriter {
    public var version: StoreVersion? { nil }

    public func setRemoteRecord(_ record: Data?, of id: ObjectID) throws {
        throw StoreError(.unsupported, entity: id.entity, "this store keeps no remote records (setRemoteRecord(_:of:)) for \(id)")
    }
}

extension StoreReader {
    public func ids(_ query: Query) throws -> [ObjectID] { try fetch(query).map(\.id) }

    public func remoteRecord(of id: ObjectID) throws -> Data? {
        throw StoreError(.unsupported, entity: id.entity, "this store keeps no remote records (remoteRecord(of:)), so Tether cannot tell what changed since the server last confirmed \(id)")
    }

    /// The objects `id` is linked to through `relationship`.
    public func related(_ relationship: String, of id: ObjectID) throws -> [ObjectID] {
        try related(relationship, of: [id])[id] ?? []
    }

    public func links(_ relationship: String, of sources: [ObjectID]) throws -> LinkBatch {
        let entity = try LinkBatch.entity(of: sources, relationship)
        let related = try related(relationship, of: sources)
        var batch = LinkBatch(entity: entity, relationship: relationship)
        for source in sources { batch.append(source, to: related[source] ?? []) }
        return batch
    }

    /// The objects with these ids that exist, in the same order.
    public func objects(_ ids: [ObjectID]) throws -> [Object] {
        try ids.compactMap { try object($0) }
    }
}

/// What one committed transaction changed.
///
/// The sets are ``ObjectIDSet``s: runs of consecutive row ids per entity, so that a transaction
/// that inserts or updates a million objects keeps a few runs, not a million hash table entries.
///
/// For updated objects it also says which properties (attribute and relationship names) changed,
/// so that an observer can tell whether a change touches what it reads
/// (``mayHaveChanged(_:properties:)``). Objects whose changed properties are the same share one
/// ``PropertyUpdate``: an import that changes the same attributes of 100,000 objects records one.
public struct ChangeSet: Sendable, Hashable {
    /// Objects the transaction inserted.
    public var inserted: ObjectIDSet
    /// Objects whose attributes or relationships changed (not counting inserted ones).
    public var updated: ObjectIDSet
    /// Objects the transaction deleted; they are no longer in the store.
    public var deleted: ObjectIDSet
    /// The changed properties of updated objects, one entry per distinct set of properties. An
    /// updated object found in no entry changed in ways not recorded (a store that does not say).
    public private(set) var propertyUpdates: [PropertyUpdate] = []
    private var propertyIndex: [Set<String>: Int] = [:]
    /// The entries of one property, found without hashing a set (links change one at a time).
    private var singlePropertyIndex: [String: Int] = [:]

    /// Objects of a change set that had the same properties changed.
    public struct PropertyUpdate: Sendable, Hashable {
        /// Attribute and relationship names. A relationship without an inverse is named, on the
        /// objects it links to, `Entity.relationship` (its source entity's and its own name).
        public var properties: Set<String>
        /// The updated objects whose changed properties are exactly ``properties``.
        public var objects: ObjectIDSet
    }

    /// A change set listing these objects, without changed properties (record those with
    /// ``recordUpdate(of:properties:)-(ObjectID,_)``).
    public init(inserted: ObjectIDSet = [], updated: ObjectIDSet = [], deleted: ObjectIDSet = []) {
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
    }

    /// True when the transaction changed nothing; stores do not announce such change sets.
    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }

    /// Two change sets are equal when they list the same inserted, updated and deleted objects
    /// (the properties recorded are details of the updates).
    public static func == (lhs: ChangeSet, rhs: ChangeSet) -> Bool {
        lhs.inserted == rhs.inserted && lhs.updated == rhs.updated && lhs.deleted == rhs.deleted
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(inserted)
        hasher.combine(updated)
        hasher.combine(deleted)
    }

    /// The entities touched by this change.
    public var entities: Set<String> {
        Set(inserted.entities).union(updated.entities).union(deleted.entities)
    }

    /// Records that `properties` of the objects `ids` changed: each becomes updated (unless this
    /// transaction inserted it) with those properties. What stores call as they write.
    public mutating func recordUpdate(of ids: some Sequence<ObjectID>, properties: Set<String>) {
        record(ids, properties)
    }

    /// Records that `properties` of the objects `ids` changed (see
    /// ``recordUpdate(of:properties:)-(Sequence<ObjectID>,_)``): the same, for an array, without
    /// generic dispatch per object when a store in another module calls it.
    public mutating func recordUpdate(of ids: [ObjectID], properties: Set<String>) {
        record(ids, properties)
    }

    private mutating func record(_ ids: some Sequence<ObjectID>, _ properties: Set<String>) {
        var index: Int?
        for id in ids where !inserted.contains(id) {
            updated.insert(id)
            if index == nil {
                if let known = propertyIndex[properties] {
                    index = known
                } else {
                    index = propertyUpdates.count
                    propertyIndex[properties] = propertyUpdates.count
                    propertyUpdates.append(PropertyUpdate(properties: properties, objects: []))
                }
            }
            propertyUpdates[index!].objects.insert(id)
        }
    }

    /// Records that `properties` of `id` changed (see ``recordUpdate(of:properties:)-(Sequence<ObjectID>,_)``).
    public mutating func recordUpdate(of id: ObjectID, properties: Set<String>) {
        recordUpdate(of: CollectionOfOne(id), properties: properties)
    }

    /// Records that one property of `id` changed (see ``recordUpdate(of:properties:)-(Sequence<ObjectID>,_)``).
    public mutating func recordUpdate(of id: ObjectID, property: String) {
        guard !inserted.contains(id) else { return }
        updated.insert(id)
        let index: Int
        if let known = singlePropertyIndex[property] {
            index = known
        } else if let known = propertyIndex[[property]] {
            index = known
            singlePropertyIndex[property] = known
        } else {
            index = propertyUpdates.count
            propertyIndex[[property]] = index
            singlePropertyIndex[property] = index
            propertyUpdates.append(PropertyUpdate(properties: [property], objects: []))
        }
        propertyUpdates[index].objects.insert(id)
    }

    /// Records that `id` was deleted: an object this transaction inserted is forgotten, any other
    /// is listed as deleted (and no longer as updated).
    public mutating func recordDeletion(of id: ObjectID) {
        if updated.remove(id) != nil {
            for index in propertyUpdates.indices { propertyUpdates[index].objects.remove(id) }
        }
        if inserted.remove(id) == nil { deleted.insert(id) }
    }

    /// Adds the changes of a later transaction: what an observer that missed both sees. Objects
    /// stay listed as they were (one inserted by the first and deleted by the second is both),
    /// and the recorded properties of updates are kept; ``mayHaveChanged(_:properties:)`` stays
    /// true wherever it was true for either.
    public mutating func formUnion(_ later: ChangeSet) {
        inserted.formUnion(later.inserted)
        updated.formUnion(later.updated)
        deleted.formUnion(later.deleted)
        for update in later.propertyUpdates {
            if let index = propertyIndex[update.properties] {
                propertyUpdates[index].objects.formUnion(update.objects)
            } else {
                propertyIndex[update.properties] = propertyUpdates.count
                if update.properties.count == 1 { singlePropertyIndex[update.properties.first!] = propertyUpdates.count }
                propertyUpdates.append(update)
            }
        }
    }

    /// The properties of `id` that changed, as recorded; nil when it was not updated, or its
    /// store did not say what changed.
    public func changedProperties(of id: ObjectID) -> Set<String>? {
        guard updated.contains(id) else { return nil }
        var found: Set<String>?
        for update in propertyUpdates where update.objects.contains(id) { found = (found ?? []).union(update.properties) }
        return found
    }

    /// Whether this change may have changed what an observer of `id` reads, `properties` (names):
    /// true when the object was inserted or deleted, or updated in any of those properties or in
    /// ways not recorded.
    public func mayHaveChanged(_ id: ObjectID, properties: Set<String>) -> Bool {
        if inserted.contains(id) || deleted.contains(id) { return true }
        guard updated.contains(id) else { return false }
        guard let changed = changedProperties(of: id) else { return true }
        return !changed.isDisjoint(with: properties)
    }
}

/// A store failure.
public struct StoreError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure; compare with the static members (`.duplicateIdentity`, ...).
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The kind's name, as its static member is spelled (`objectNotFound`).
        public let name: String
        /// A kind named `name`, for a store's own failures; the built-in stores use the static members.
        public init(_ name: String) { self.name = name }
        /// An entity the store was not prepared with.
        public static let unknownEntity = Kind("unknownEntity")
        /// An attribute the entity does not have (in values, a condition or a sort).
        public static let unknownAttribute = Kind("unknownAttribute")
        /// A relationship the entity does not have.
        public static let unknownRelationship = Kind("unknownRelationship")
        /// An object id that names no stored object (deleted, or never inserted).
        public static let objectNotFound = Kind("objectNotFound")
        /// An insert or update that would give two objects of an entity the same identity.
        public static let duplicateIdentity = Kind("duplicateIdentity")
        /// A row of an ``InsertBatch`` (the import's write path) leaves an identity attribute unset.
        public static let missingIdentity = Kind("missingIdentity")
        /// A value the attribute's type does not accept, or a link to an object of the wrong entity
        /// (or to two objects through a to-one relationship).
        public static let typeMismatch = Kind("typeMismatch")
        /// A value of the attribute's type that no store can keep faithfully: a date that is not
        /// finite, or outside years 1 to 9999 (what imports read and request bodies write).
        public static let invalidValue = Kind("invalidValue")
        /// A read or write before ``Store/prepare(for:)``.
        public static let notPrepared = Kind("notPrepared")
        /// A schema the stored data cannot follow (an attribute's type or an entity's identity changed);
        /// the store is left untouched.
        public static let incompatibleSchema = Kind("incompatibleSchema")
        /// A delete refused by a relationship whose rule is ``DeleteRule/deny`` while it links objects.
        public static let deleteDenied = Kind("deleteDenied")
        /// An operation the store does not offer (a store that keeps no remote records, say).
        public static let unsupported = Kind("unsupported")
        /// The underlying storage failed (I/O, disk full, locked, read-only, corrupt).
        public static let storage = Kind("storage")
        public var description: String { name }
    }

    /// What kind of failure it is.
    public let kind: Kind
    /// The entity concerned, if any.
    public let entity: String?
    /// The attribute or relationship concerned, if any.
    public let member: String?
    /// A sentence saying what failed, naming the entity, member and object.
    public let message: String

    /// An error of `kind`, about `entity` and `member` when given; stores of your own throw these
    /// too, so the client reports every store alike.
    public init(_ kind: Kind, entity: String? = nil, member: String? = nil, _ message: String) {
        self.kind = kind
        self.entity = entity
        self.member = member
        self.message = message
    }

    public var description: String { "store error (\(kind)): \(message)" }
}
