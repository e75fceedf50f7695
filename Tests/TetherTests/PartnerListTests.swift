import Testing
@testable import Tether
import TetherTestSupport

/// `InMemoryStore.PartnerList` (the partners of one object on a to-many side, in segments past
/// 128) holds exactly what a plain array would, in the same order, through random appends,
/// removals of few and of many partners, and replacements, across the one-array and segmented
/// forms and back.
@Suite struct PartnerListTests {
    @Test(arguments: [1, 2, 3])
    func matchesAnArrayThroughRandomChanges(_ seed: UInt64) {
        var random = SeededRandom(seed: seed)
        var list = InMemoryStore.PartnerList()
        var model: [Int64] = []
        var next: Int64 = 1
        for step in 0..<4_000 {
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<6:
                // Mostly increasing row ids (as an import adds them), sometimes an old one again.
                let row: Int64
                if Bool.random(using: &random) && next > 10, case let old = Int64.random(in: 1..<next, using: &random), !model.contains(old) {
                    row = old
                } else {
                    row = next
                    next += 1
                }
                list.append(row)
                model.append(row)
            case 6..<9 where !model.isEmpty:
                // A few partners leave, or many (a batch), some of them not partners at all.
                let count = Bool.random(using: &random) ? Int.random(in: 1...3, using: &random) : Int.random(in: 9...30, using: &random)
                var gone = (0..<count).map { _ in model.randomElement(using: &random)! }
                if Bool.random(using: &random) { gone.append(next + 1_000) }
                list.remove(gone)
                model.removeAll { gone.contains($0) }
            default:
                let count = [0, 5, 127, 128, 129, 300, 600, 600].randomElement(using: &random)!
                model = (0..<count).map { _ in
                    next += 1
                    return next
                }.shuffled(using: &random)
                list = InMemoryStore.PartnerList(model)
            }
            #expect(list.rows == model, "step \(step)")
            #expect(list.isEmpty == model.isEmpty, "step \(step)")
            if list.rows != model { return }
        }
    }
}
