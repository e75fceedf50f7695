/// A dictionary keyed by ``IdentityKey`` that keeps one-integer identities (most entities') in a
/// table keyed by the integer: a third of the memory of a key, and hashed about three times as
/// fast, which matters for the tables an import fills per object (its identity maps) and for a
/// store's index once it outgrows the processor's caches (a million objects).
struct IdentityMap<Element> {
    private var integers: [Int64: Element] = [:]
    private var others: [IdentityKey: Element] = [:]

    init() {}

    /// A map with room for `capacity` one-integer identities.
    init(integerCapacity capacity: Int) {
        integers.reserveCapacity(capacity)
    }

    subscript(key: IdentityKey) -> Element? {
        get {
            if case .int(let integer)? = key.single { return integers[integer] }
            return others[key]
        }
        set {
            if case .int(let integer)? = key.single {
                integers[integer] = newValue
            } else {
                others[key] = newValue
            }
        }
    }

    /// Sets (or, with nil, removes) the element of `key`; returns the element it replaced.
    @discardableResult
    mutating func updateValue(_ element: Element?, forKey key: IdentityKey) -> Element? {
        if case .int(let integer)? = key.single {
            guard let element else { return integers.removeValue(forKey: integer) }
            return integers.updateValue(element, forKey: integer)
        }
        guard let element else { return others.removeValue(forKey: key) }
        return others.updateValue(element, forKey: key)
    }

    var count: Int { integers.count + others.count }
    var isEmpty: Bool { integers.isEmpty && others.isEmpty }

    mutating func removeAll() {
        integers.removeAll()
        others.removeAll()
    }
}

extension IdentityMap: Sendable where Element: Sendable {}
