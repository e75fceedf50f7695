/// An ordered list of ``ObjectID``s kept as runs of consecutive row ids of one entity.
///
/// The lists an ``ImportResult`` holds. Stores hand out consecutive row ids on insert, so the
/// objects a big import reports come in long runs (`Repository#1, #2, #3, ...`), and a run costs
/// the same few bytes whatever its length: the result of a million-object import stays small.
///
/// It behaves like `[ObjectID]`: a random-access collection in the order the ids were appended,
/// duplicates included, built with ``append(_:)`` or an array literal, equal to another list with
/// the same ids in the same order. Indexing is O(log runs); iterating is O(1) per id. Use
/// `Array(list)` where an array is needed.
///
/// ```swift
/// var ids: ObjectIDList = [ObjectID(entity: "User", rowID: 7)]
/// ids.append(ObjectID(entity: "User", rowID: 8))      // still one run: User#7...8
/// ids[1]                                              // User#8
/// ```
public struct ObjectIDList: RandomAccessCollection, Sendable, Hashable, ExpressibleByArrayLiteral, CustomStringConvertible {
    public typealias Element = ObjectID
    public typealias Index = Int
    public typealias Indices = Range<Int>

    /// `count` ids of `names[entity]` from row id `first` on; `end` is the list position after the run.
    struct Run: Sendable, Hashable {
        var first: Int64
        var end: Int
        var count: Int32
        var entity: Int32
    }

    /// Entity names in order of first appearance (so that equal lists have equal storage).
    private var names: [String] = []
    private var runs: [Run] = []

    /// An empty list.
    public init() {}

    /// A list of the ids of `sequence`, in its order, duplicates included.
    public init<S: Sequence>(_ sequence: S) where S.Element == ObjectID {
        for id in sequence { append(id) }
    }

    public init(arrayLiteral elements: ObjectID...) {
        self.init(elements)
    }

    // MARK: Changes

    /// Adds `id` at the end: O(1) amortised, and free when it continues the last run.
    public mutating func append(_ id: ObjectID) {
        if let last = runs.indices.last {
            let run = runs[last]
            let (next, overflow) = run.first.addingReportingOverflow(Int64(run.count))
            if !overflow, next == id.rowID, run.count < Int32.max, names[Int(run.entity)] == id.entity {
                runs[last].count += 1
                runs[last].end += 1
                return
            }
        }
        runs.append(Run(first: id.rowID, end: count + 1, count: 1, entity: ordinal(of: id.entity)))
    }

    /// Adds the ids of `ids` at the end, in order.
    public mutating func append<S: Sequence>(contentsOf ids: S) where S.Element == ObjectID {
        for id in ids { append(id) }
    }

    /// Empties the list.
    public mutating func removeAll() {
        names = []
        runs = []
    }

    private mutating func ordinal(of entity: String) -> Int32 {
        if let last = runs.last, names[Int(last.entity)] == entity { return last.entity }
        if let index = names.firstIndex(of: entity) { return Int32(index) }
        names.append(entity)
        return Int32(names.count - 1)
    }

    // MARK: Collection

    public var startIndex: Int { 0 }
    public var endIndex: Int { runs.last?.end ?? 0 }
    public var count: Int { endIndex }
    public var isEmpty: Bool { runs.isEmpty }

    /// The number of runs of consecutive row ids: what the list's memory grows with.
    public var runCount: Int { runs.count }

    public subscript(position: Int) -> ObjectID {
        precondition(position >= 0 && position < endIndex, "ObjectIDList index out of range")
        var low = 0, high = runs.count - 1
        while low < high {
            let mid = (low + high) / 2
            if runs[mid].end <= position { low = mid + 1 } else { high = mid }
        }
        let run = runs[low]
        return ObjectID(entity: names[Int(run.entity)], rowID: run.first + Int64(position - (run.end - Int(run.count))))
    }

    public func makeIterator() -> Iterator { Iterator(list: self) }

    /// Walks the runs in order: O(1) per id.
    public struct Iterator: IteratorProtocol, Sendable {
        private let list: ObjectIDList
        private var run = 0
        private var offset: Int32 = 0

        init(list: ObjectIDList) { self.list = list }

        public mutating func next() -> ObjectID? {
            guard run < list.runs.count else { return nil }
            let current = list.runs[run]
            let id = ObjectID(entity: list.names[Int(current.entity)], rowID: current.first + Int64(offset))
            offset += 1
            if offset == current.count {
                run += 1
                offset = 0
            }
            return id
        }
    }

    public var description: String {
        let parts = runs.map { run in
            let name = names[Int(run.entity)]
            return run.count == 1 ? "\(name)#\(run.first)" : "\(name)#\(run.first)...\(run.first + Int64(run.count) - 1)"
        }
        return "[" + parts.joined(separator: ", ") + "]"
    }
}
