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

/// Where a client keeps what its last import remembered (``RememberedObjects``).
final class ImportMemory: Sendable {
    private let last = Mutex<RememberedObjects?>(nil)

    init() {}

    var current: RememberedObjects? { last.withLock { $0 } }

    /// Keeps what a committed import remembered, in place of what an earlier one did. (Imports
    /// that commit one after the other may keep theirs in either order: a stale entry is never
    /// taken, its version being past.)
    func keep(_ remembered: RememberedObjects) {
        last.withLock { $0 = remembered }
    }
}

/// What one import leaves remembered, until its transaction has committed: the client keeps it
/// then (``Importer/keepRemembered()``), and drops it when the transaction fails.
final class LeftRemembered: Sendable {
    private let value = Mutex<RememberedObjects?>(nil)

    init() {}

    func set(_ remembered: RememberedObjects?) { value.withLock { $0 = remembered } }
    func take() -> RememberedObjects? { value.withLock { value in defer { value = nil }; return value } }
}
