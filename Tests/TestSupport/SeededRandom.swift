/// A small deterministic generator (SplitMix64), so that a randomised test's failing run can be
/// repeated with its seed.
package struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    package init(seed: UInt64) { state = seed }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<n` (0 when `n` is not positive).
    package mutating func below(_ n: Int) -> Int { n <= 0 ? 0 : Int(next() % UInt64(n)) }
    /// True `percent` times in a hundred.
    package mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
    /// One element of a list that is not empty.
    package mutating func pick<T>(_ list: [T]) -> T { list[below(list.count)] }
    /// The list in a random order (Fisher–Yates).
    package mutating func shuffled<T>(_ list: [T]) -> [T] {
        var list = list
        for i in stride(from: list.count - 1, to: 0, by: -1) { list.swapAt(i, below(i + 1)) }
        return list
    }
}
