/// At most `capacity` values by key; past it, the value used least recently is dropped.
/// Reading (``value(for:)``) and writing (``set(_:for:)``) make a key the most recent; every
/// operation is O(1). Not thread-safe: keep it behind a lock.
struct LRUCache<Key: Hashable, Value> {
    fileprivate struct Node {
        var key: Key
        /// Nil in a free slot, so that a forgotten value is released at once.
        var value: Value?
        /// The next more recent node, or -1.
        var newer: Int
        /// The next less recent node, or -1.
        var older: Int
    }

    /// The most values kept (0: none).
    let capacity: Int
    private var nodes: [Node] = []
    private var slots: [Key: Int] = [:]
    /// Slots of removed nodes, reused before growing `nodes`.
    private var free: [Int] = []
    private var newest = -1
    private var oldest = -1

    init(capacity: Int) { self.capacity = max(0, capacity) }

    /// How many values are kept.
    var count: Int { slots.count }

    /// The keys from the most to the least recently used.
    var keysByRecency: [Key] {
        var keys: [Key] = []
        var slot = newest
        while slot >= 0 {
            keys.append(nodes[slot].key)
            slot = nodes[slot].older
        }
        return keys
    }

    /// The value of `key`, which becomes the most recent; nil when none is kept.
    mutating func value(for key: Key) -> Value? {
        guard let slot = slots[key] else { return nil }
        moveToNewest(slot)
        return nodes[slot].value
    }

    /// Keeps `value` for `key` as the most recent, dropping the least recent past the capacity;
    /// nil forgets `key`.
    mutating func set(_ value: Value?, for key: Key) {
        guard let value else {
            if let slot = slots.removeValue(forKey: key) {
                unlink(slot)
                nodes[slot].value = nil
                free.append(slot)
            }
            return
        }
        if let slot = slots[key] {
            nodes[slot].value = value
            moveToNewest(slot)
            return
        }
        guard capacity > 0 else { return }
        let slot: Int
        if slots.count >= capacity {
            // Reuse the least recent node.
            slot = oldest
            slots[nodes[slot].key] = nil
            unlink(slot)
            nodes[slot] = Node(key: key, value: value, newer: -1, older: -1)
        } else if let reused = free.popLast() {
            slot = reused
            nodes[slot] = Node(key: key, value: value, newer: -1, older: -1)
        } else {
            slot = nodes.count
            nodes.append(Node(key: key, value: value, newer: -1, older: -1))
        }
        slots[key] = slot
        linkAsNewest(slot)
    }

    private mutating func moveToNewest(_ slot: Int) {
        guard slot != newest else { return }
        unlink(slot)
        linkAsNewest(slot)
    }

    private mutating func unlink(_ slot: Int) {
        let (newer, older) = (nodes[slot].newer, nodes[slot].older)
        if newer >= 0 { nodes[newer].older = older } else { newest = older }
        if older >= 0 { nodes[older].newer = newer } else { oldest = newer }
        nodes[slot].newer = -1
        nodes[slot].older = -1
    }

    private mutating func linkAsNewest(_ slot: Int) {
        nodes[slot].older = newest
        nodes[slot].newer = -1
        if newest >= 0 { nodes[newest].newer = slot }
        newest = slot
        if oldest < 0 { oldest = slot }
    }
}

extension LRUCache: Sendable where Key: Sendable, Value: Sendable {}
extension LRUCache.Node: Sendable where Key: Sendable, Value: Sendable {}
