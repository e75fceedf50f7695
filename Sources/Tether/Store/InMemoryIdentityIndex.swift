/// The row ids of one in-memory table by identity, split into 4,096 shards, so that a
/// transaction's first change to the index copies the shard it touches, not the whole index.
///
/// The in-memory store's transactions work on a copy-on-write snapshot of the committed state.
/// With one dictionary per table, the first insert or re-keying of a transaction copied every
/// identity of the table (and the replaced snapshot later released them all): a 40-object page
/// into a table of 100,000 paid for 100,000 entries, twice. Split, it pays for the array of
/// shards (4,096 references, copied once per transaction and table) and about 1/4,096 of the
/// table per shard it touches.
///
/// One level of shards, read in place: a lookup is a multiply, a shift and one dictionary lookup
/// more than an unsplit index (two levels, and a shard copied out per lookup, cost bulk imports
/// about a quarter of their time).
struct InMemoryIdentityIndex: Sendable {
    private static var shardBits: Int { 12 }
    private static var shardCount: Int { 1 << shardBits }

    /// Empty until the first key, then `shardCount` shards.
    private var shards: [IdentityMap<Int64>] = []
    private(set) var count = 0

    init() {}

    /// The shard of `key`: a mix of its integer (most identities are one integer) or of its hash.
    @inline(__always)
    private static func shard(of key: IdentityKey) -> Int {
        let bits: UInt64
        if case .int(let integer)? = key.single {
            bits = UInt64(bitPattern: integer)
        } else {
            bits = UInt64(bitPattern: Int64(key.hashValue))
        }
        // Fibonacci hashing: the top bits of the product spread consecutive ids over every shard.
        return Int(truncatingIfNeeded: (bits &* 0x9E37_79B9_7F4A_7C15) >> UInt64(64 - shardBits))
    }

    subscript(key: IdentityKey) -> Int64? {
        get {
            guard !shards.isEmpty else { return nil }
            let shard = Self.shard(of: key)
            return shards.withUnsafeBufferPointer { $0[shard][key] }
        }
        set {
            if shards.isEmpty {
                guard newValue != nil else { return }
                shards = Array(repeating: IdentityMap(), count: Self.shardCount)
            }
            let shard = Self.shard(of: key)
            let old = shards[shard].updateValue(newValue, forKey: key)
            count += (newValue == nil ? 0 : 1) - (old == nil ? 0 : 1)
        }
    }

    var isEmpty: Bool { count == 0 }
}
