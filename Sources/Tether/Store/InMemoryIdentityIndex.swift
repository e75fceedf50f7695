/// The row ids of one in-memory table by identity, split into 4,096 shards (64 groups of 64), so
/// that a transaction's first change to the index copies one group and one shard, not the
/// whole index.
///
/// The in-memory store's transactions work on a copy-on-write snapshot of the committed state.
/// With one dictionary per table, the first insert or re-keying of a transaction copied every
/// identity of the table (and the replaced snapshot later released them all): a 40-object page
/// into a table of 100,000 paid for 100,000 entries, twice. Split, it pays for about 1/4,096 of
/// the table per shard it touches, plus the 64 shards of each group it touches. A group is made
/// when a key first falls in it, so a small table holds a few empty shards. (One level of 4,096
/// shards made every transaction copy and release 4,096 shards per table it wrote: the
/// timeline page at 100k went from 18 to 40 ms.)
///
/// Read in place: a lookup borrows its group and shard (no copy of either, no retain), and a
/// write is one `updateValue` through both levels. (Copying the group out per lookup and
/// counting before and after each write cost bulk imports about a quarter of their time.)
struct InMemoryIdentityIndex: Sendable {
    private static var groupBits: Int { 6 }
    private static var groupSize: Int { 1 << groupBits }
    private static var groups: Int { 64 }

    /// `groups` entries, each empty until a key falls in it, then `groupSize` shards.
    private var shards: [[IdentityMap<Int64>]] = Array(repeating: [], count: Self.groups)
    private(set) var count = 0

    init() {}

    /// The shard of `key`: a mix of its integer (most identities are one integer) or of its hash.
    @inline(__always)
    private static func shard(of key: IdentityKey) -> (group: Int, shard: Int) {
        let bits: UInt64
        if case .int(let integer)? = key.single {
            bits = UInt64(bitPattern: integer)
        } else {
            bits = UInt64(bitPattern: Int64(key.hashValue))
        }
        // Fibonacci hashing: the top 12 bits of the product spread consecutive ids over every shard.
        let mixed = Int(truncatingIfNeeded: (bits &* 0x9E37_79B9_7F4A_7C15) >> 52)
        return (mixed >> Self.groupBits, mixed & (Self.groupSize - 1))
    }

    subscript(key: IdentityKey) -> Int64? {
        get {
            let (group, shard) = Self.shard(of: key)
            return shards.withUnsafeBufferPointer { groups in
                groups[group].withUnsafeBufferPointer { shards in shards.isEmpty ? nil : shards[shard][key] }
            }
        }
        set {
            let (group, shard) = Self.shard(of: key)
            if shards[group].isEmpty {
                guard newValue != nil else { return }
                shards[group] = Array(repeating: IdentityMap(), count: Self.groupSize)
            }
            let old = shards[group][shard].updateValue(newValue, forKey: key)
            count += (newValue == nil ? 0 : 1) - (old == nil ? 0 : 1)
        }
    }

    var isEmpty: Bool { count == 0 }
}
