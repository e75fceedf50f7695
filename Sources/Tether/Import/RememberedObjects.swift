import Synchronization

/// The nested objects an import stored (an issue's author and labels, a repository's owner),
/// remembered for the next import on the same client.
///
/// Within one import, a nested object whose text repeats one that an earlier batch stored is
/// neither mapped nor looked up again (``BatchMapper``, ``ImportSession``). A client that imports
/// a page of the same list every few seconds sees the same authors and labels on every page, so
/// the next import starts from what the last one remembered: the hash of each object's text and
/// its row id.
///
/// That import trusts them only when its transaction begins from exactly the state the
/// remembering one committed: the store's ``StoreWriter/version`` equals ``version``, so that
/// nothing (another import, a save, SQL of the app's, another process writing the file) has
/// committed since. Otherwise it forgets them, as it does when the store reports no version.
/// Only an import that inserts and updates objects and relationships alike, without tombstones,
/// leaves objects remembered, and only when it deleted nothing; one with other conversions
/// (``ImportOptions/coercion``) does not take them.
struct RememberedObjects: Sendable {
    /// The store's version once the remembering import committed.
    let version: StoreVersion
    let coercion: ImportOptions.Coercion
    /// By entity ordinal: the hash of each remembered object's text, by identity
    /// (``BatchMapper``'s `earlierTexts`).
    let texts: [IdentityMap<Int>]
    /// By entity ordinal: the row id of each remembered object, by identity
    /// (``ImportSession``'s `rememberedRows`).
    let rows: [IdentityMap<Int64>]

    /// The most objects of one entity kept between imports: a large import's nested objects are
    /// not held for the life of the client.
    static let limit = 1 << 14

    init(version: StoreVersion, coercion: ImportOptions.Coercion, texts: [IdentityMap<Int>], rows: [IdentityMap<Int64>]) {
        self.version = version
        self.coercion = coercion
        // An entity with more than `limit` is not kept (its texts and rows go together).
        let kept = texts.indices.map { texts[$0].count <= Self.limit && rows[$0].count <= Self.limit }
        self.texts = texts.indices.map { kept[$0] ? texts[$0] : IdentityMap() }
        self.rows = rows.indices.map { kept[$0] ? rows[$0] : IdentityMap() }
    }

    /// Whether an import with `options` leaves objects remembered (and may take them).
    static func allowed(by options: ImportOptions) -> Bool {
        options.insert && options.update && options.insertRelationships && options.updateRelationships && options.tombstones.isEmpty
    }
}

/// Holds one ``RememberedObjects``: where a client keeps what its last committed import
/// remembered (``Client``'s `importMemory`), and where an import keeps what it leaves until its
/// transaction has committed (``Importer/keepRemembered()``).
final class RememberedSlot: Sendable {
    private let value = Mutex<RememberedObjects?>(nil)

    init() {}

    var current: RememberedObjects? { value.withLock { $0 } }

    /// Replaces what the slot holds. (Imports that commit one after the other may keep theirs in
    /// the client's slot in either order: a stale entry is never taken, its version being past.)
    func set(_ remembered: RememberedObjects?) { value.withLock { $0 = remembered } }

    /// What the slot holds, leaving it empty.
    func take() -> RememberedObjects? { value.withLock { value in defer { value = nil }; return value } }
}
