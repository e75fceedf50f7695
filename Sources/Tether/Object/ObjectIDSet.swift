/// A set of ``ObjectID``s kept as sorted runs of consecutive row ids, per entity.
///
/// The set a ``ChangeSet`` holds. Stores hand out consecutive row ids on insert, so the objects a
/// big import inserts or updates form a handful of runs: a million inserted objects cost a few
/// bytes, not a hash table entry each, which keeps the memory of a big transaction bounded.
///
/// It behaves like `Set<ObjectID>` (`SetAlgebra`, array literals, `contains`, `insert`,
/// `remove`, `union`, `subtracting`, ...). Inserting the row id that follows the last one of an
/// entity is O(1) amortised, `contains` is O(log runs), and removing an id from the middle of a
/// run splits the run. Iteration is ordered by entity name, then row id; two sets are equal when
/// they hold the same ids.
///
/// ```swift
/// var ids: ObjectIDSet = [ObjectID(entity: "User", rowID: 1)]
/// ids.insert(ObjectID(entity: "User", rowID: 2))      // extends the run 1...2
/// ids.contains(ObjectID(entity: "User", rowID: 2))    // true
/// ```
public struct ObjectIDSet: Sendable, Hashable, SetAlgebra, Collection, CustomStringConvertible {
    public typealias Element = ObjectID
    public typealias ArrayLiteralElement = ObjectID

    /// The row ids of one entity; entities without ids are removed, and the array is sorted by name.
    struct Entry: Sendable {
        var name: String
        var rows: RowIDRuns
    }

    private var entries: [Entry] = []
    private var total = 0

    public init() {}

    public init<S: Sequence>(_ sequence: S) where S.Element == ObjectID {
        for id in sequence { insert(id) }
    }

    public init(arrayLiteral elements: ObjectID...) {
        self.init(elements)
    }

    // MARK: Queries

    public var count: Int { total }
    public var isEmpty: Bool { total == 0 }

    /// The entities that have ids in the set, sorted by name.
    public var entities: [String] { entries.map(\.name) }

    /// The number of runs of consecutive row ids (all entities): what the set's memory grows with.
    public var runCount: Int { entries.reduce(0) { $0 + $1.rows.runCount } }

    /// The row ids of `entity` as sorted, disjoint, non-adjacent closed ranges.
    public func rowIDRanges(of entity: String) -> [ClosedRange<Int64>] {
        guard case .found(let e) = find(entity) else { return [] }
        return entries[e].rows.runs.map { $0.lower...$0.upper }
    }

    public func contains(_ member: ObjectID) -> Bool {
        guard case .found(let e) = find(member.entity) else { return false }
        return entries[e].rows.contains(member.rowID)
    }

    // MARK: Changes

    @discardableResult
    public mutating func insert(_ newMember: ObjectID) -> (inserted: Bool, memberAfterInsert: ObjectID) {
        let e: Int
        switch find(newMember.entity) {
        case .found(let found): e = found
        case .missing(let position):
            entries.insert(Entry(name: newMember.entity, rows: RowIDRuns()), at: position)
            e = position
        }
        guard entries[e].rows.insert(newMember.rowID) else { return (false, newMember) }
        total += 1
        return (true, newMember)
    }

    @discardableResult
    public mutating func remove(_ member: ObjectID) -> ObjectID? {
        guard case .found(let e) = find(member.entity), entries[e].rows.remove(member.rowID) else { return nil }
        total -= 1
        if entries[e].rows.isEmpty { entries.remove(at: e) }
        return member
    }

    @discardableResult
    public mutating func update(with newMember: ObjectID) -> ObjectID? {
        insert(newMember).inserted ? nil : newMember
    }

    /// Empties the set.
    public mutating func removeAll() {
        entries = []
        total = 0
    }

    // MARK: Set algebra (run by run)

    public func union(_ other: ObjectIDSet) -> ObjectIDSet {
        combine(other, keepOnlyInSelf: true, keepOnlyInOther: true) { RowIDRuns.union($0, $1) }
    }

    public func intersection(_ other: ObjectIDSet) -> ObjectIDSet {
        combine(other, keepOnlyInSelf: false, keepOnlyInOther: false) { RowIDRuns.intersection($0, $1) }
    }

    public func subtracting(_ other: ObjectIDSet) -> ObjectIDSet {
        combine(other, keepOnlyInSelf: true, keepOnlyInOther: false) { RowIDRuns.subtracting($0, $1) }
    }

    public func symmetricDifference(_ other: ObjectIDSet) -> ObjectIDSet {
        union(other).subtracting(intersection(other))
    }

    public mutating func formUnion(_ other: ObjectIDSet) { self = union(other) }
    public mutating func formIntersection(_ other: ObjectIDSet) { self = intersection(other) }
    public mutating func formSymmetricDifference(_ other: ObjectIDSet) { self = symmetricDifference(other) }
    public mutating func subtract(_ other: ObjectIDSet) { self = subtracting(other) }

    /// The ids of the set and those of `other`, which may be any sequence of ids (an array, an
    /// ``ObjectIDList``).
    public func union<S: Sequence>(_ other: S) -> ObjectIDSet where S.Element == ObjectID {
        var result = self
        for id in other { result.insert(id) }
        return result
    }

    /// The ids of the set that `other`, any sequence of ids, does not hold.
    public func subtracting<S: Sequence>(_ other: S) -> ObjectIDSet where S.Element == ObjectID {
        var result = self
        for id in other { result.remove(id) }
        return result
    }

    public func isSubset(of other: ObjectIDSet) -> Bool { count <= other.count && subtracting(other).isEmpty }
    public func isSuperset(of other: ObjectIDSet) -> Bool { other.isSubset(of: self) }
    public func isDisjoint(with other: ObjectIDSet) -> Bool { intersection(other).isEmpty }

    /// Merges the entries of both sets (both sorted by name) with `merge` for entities in both.
    private func combine(
        _ other: ObjectIDSet, keepOnlyInSelf: Bool, keepOnlyInOther: Bool, _ merge: (RowIDRuns, RowIDRuns) -> RowIDRuns
    ) -> ObjectIDSet {
        var result = ObjectIDSet()
        func add(_ entry: Entry) {
            guard !entry.rows.isEmpty else { return }
            result.entries.append(entry)
            result.total += entry.rows.count
        }
        var i = 0, j = 0
        while i < entries.count || j < other.entries.count {
            if j == other.entries.count || (i < entries.count && entries[i].name < other.entries[j].name) {
                if keepOnlyInSelf { add(entries[i]) }
                i += 1
            } else if i == entries.count || other.entries[j].name < entries[i].name {
                if keepOnlyInOther { add(other.entries[j]) }
                j += 1
            } else {
                add(Entry(name: entries[i].name, rows: merge(entries[i].rows, other.entries[j].rows)))
                i += 1
                j += 1
            }
        }
        return result
    }

    // MARK: Collection

    /// A position in the set: entity, chunk and run in the entity's runs, row id.
    public struct Index: Comparable, Sendable {
        let entity: Int
        let chunk: Int
        let run: Int
        let row: Int64

        public static func < (lhs: Index, rhs: Index) -> Bool {
            (lhs.entity, lhs.chunk, lhs.run, lhs.row) < (rhs.entity, rhs.chunk, rhs.run, rhs.row)
        }
    }

    public var startIndex: Index {
        guard let first = entries.first else { return endIndex }
        return Index(entity: 0, chunk: 0, run: 0, row: first.rows.chunks[0][0].lower)
    }

    public var endIndex: Index { Index(entity: entries.count, chunk: 0, run: 0, row: 0) }

    public func index(after i: Index) -> Index {
        let chunks = entries[i.entity].rows.chunks
        let run = chunks[i.chunk][i.run]
        if i.row < run.upper { return Index(entity: i.entity, chunk: i.chunk, run: i.run, row: i.row + 1) }
        if i.run + 1 < chunks[i.chunk].count {
            return Index(entity: i.entity, chunk: i.chunk, run: i.run + 1, row: chunks[i.chunk][i.run + 1].lower)
        }
        if i.chunk + 1 < chunks.count {
            return Index(entity: i.entity, chunk: i.chunk + 1, run: 0, row: chunks[i.chunk + 1][0].lower)
        }
        if i.entity + 1 < entries.count {
            return Index(entity: i.entity + 1, chunk: 0, run: 0, row: entries[i.entity + 1].rows.chunks[0][0].lower)
        }
        return endIndex
    }

    public subscript(position: Index) -> ObjectID {
        precondition(position.entity < entries.count, "ObjectIDSet index out of range")
        return ObjectID(entity: entries[position.entity].name, rowID: position.row)
    }

    // MARK: Equality, description

    public static func == (lhs: ObjectIDSet, rhs: ObjectIDSet) -> Bool {
        guard lhs.total == rhs.total, lhs.entries.count == rhs.entries.count else { return false }
        for (a, b) in zip(lhs.entries, rhs.entries) where a.name != b.name || a.rows != b.rows { return false }
        return true
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(total)
        for entry in entries {
            hasher.combine(entry.name)
            entry.rows.hash(into: &hasher)
        }
    }

    public var description: String {
        let parts = entries.flatMap { entry in
            entry.rows.runs.map { $0.lower == $0.upper ? "\(entry.name)#\($0.lower)" : "\(entry.name)#\($0.lower)...\($0.upper)" }
        }
        return "[" + parts.joined(separator: ", ") + "]"
    }

    // MARK: Entities

    private enum Lookup {
        case found(Int)
        /// Where the entity would be inserted to keep the entries sorted.
        case missing(Int)
    }

    private func find(_ entity: String) -> Lookup {
        // Few entities: a linear scan with `==` (fast on identical strings), then the position.
        for e in entries.indices where entries[e].name == entity { return .found(e) }
        var low = 0, high = entries.count
        while low < high {
            let mid = (low + high) / 2
            if entries[mid].name < entity { low = mid + 1 } else { high = mid }
        }
        return .missing(low)
    }
}

/// Sorted, disjoint, non-adjacent runs of row ids (closed ranges), in chunks of a bounded number
/// of runs so that an insert or a split in the middle moves a bounded number of runs.
struct RowIDRuns: Sendable, Hashable {
    struct Run: Sendable, Hashable {
        var lower: Int64
        var upper: Int64
    }

    /// A chunk is split in two when it reaches this many runs.
    static let chunkLimit = 128

    /// Non-empty chunks; runs sorted, disjoint and non-adjacent across chunks too.
    private(set) var chunks: [[Run]] = []
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }
    var runCount: Int { chunks.reduce(0) { $0 + $1.count } }
    var runs: [Run] { chunks.flatMap { $0 } }

    /// The first run whose upper bound is at least `row`: (chunk, run), or nil when there is none.
    private func locate(_ row: Int64) -> (chunk: Int, run: Int)? {
        var low = 0, high = chunks.count
        while low < high {
            let mid = (low + high) / 2
            if chunks[mid][chunks[mid].count - 1].upper < row { low = mid + 1 } else { high = mid }
        }
        guard low < chunks.count else { return nil }
        let c = low
        var first = 0, last = chunks[c].count
        while first < last {
            let mid = (first + last) / 2
            if chunks[c][mid].upper < row { first = mid + 1 } else { last = mid }
        }
        return (c, first)
    }

    func contains(_ row: Int64) -> Bool {
        guard let (c, r) = locate(row) else { return false }
        return chunks[c][r].lower <= row
    }

    /// Adds `row`; false when it was there already.
    mutating func insert(_ row: Int64) -> Bool {
        guard let lastChunk = chunks.indices.last else {
            chunks = [[Run(lower: row, upper: row)]]
            count = 1
            return true
        }
        let lastRun = chunks[lastChunk].count - 1
        let last = chunks[lastChunk][lastRun]
        if row > last.upper {
            // The common case: ids handed out in increasing order.
            if row == last.upper + 1 {
                chunks[lastChunk][lastRun].upper = row
            } else if chunks[lastChunk].count < Self.chunkLimit {
                chunks[lastChunk].append(Run(lower: row, upper: row))
            } else {
                chunks.append([Run(lower: row, upper: row)])
            }
            count += 1
            return true
        }
        let (c, r) = locate(row)!
        let next = chunks[c][r]
        if next.lower <= row { return false }
        let previous: (chunk: Int, run: Int)? = r > 0 ? (c, r - 1) : c > 0 ? (c - 1, chunks[c - 1].count - 1) : nil
        let joinsPrevious = previous.map { chunks[$0.chunk][$0.run].upper == row - 1 } ?? false
        let joinsNext = next.lower == row + 1
        switch (joinsPrevious, joinsNext) {
        case (true, true):
            chunks[previous!.chunk][previous!.run].upper = next.upper
            removeRun(c, r)
        case (true, false):
            chunks[previous!.chunk][previous!.run].upper = row
        case (false, true):
            chunks[c][r].lower = row
        case (false, false):
            chunks[c].insert(Run(lower: row, upper: row), at: r)
            splitIfNeeded(c)
        }
        count += 1
        return true
    }

    /// Removes `row`; false when it was not there.
    mutating func remove(_ row: Int64) -> Bool {
        guard let (c, r) = locate(row) else { return false }
        let run = chunks[c][r]
        guard run.lower <= row else { return false }
        if run.lower == run.upper {
            removeRun(c, r)
        } else if row == run.lower {
            chunks[c][r].lower = row + 1
        } else if row == run.upper {
            chunks[c][r].upper = row - 1
        } else {
            chunks[c][r].upper = row - 1
            chunks[c].insert(Run(lower: row + 1, upper: run.upper), at: r + 1)
            splitIfNeeded(c)
        }
        count -= 1
        return true
    }

    private mutating func removeRun(_ c: Int, _ r: Int) {
        chunks[c].remove(at: r)
        if chunks[c].isEmpty { chunks.remove(at: c) }
    }

    private mutating func splitIfNeeded(_ c: Int) {
        guard chunks[c].count >= Self.chunkLimit * 2 else { return }
        let half = chunks[c].count / 2
        let upper = Array(chunks[c][half...])
        chunks[c].removeSubrange(half...)
        chunks.insert(upper, at: c + 1)
    }

    /// Appends a run that starts after every run held (merging it into the last one when they
    /// touch or overlap).
    private mutating func append(_ run: Run) {
        if let lastChunk = chunks.indices.last {
            let lastRun = chunks[lastChunk].count - 1
            let last = chunks[lastChunk][lastRun]
            if run.lower <= last.upper || run.lower - 1 == last.upper {
                if run.upper > last.upper {
                    chunks[lastChunk][lastRun].upper = run.upper
                    count += Int(run.upper - last.upper)
                }
                return
            }
            if chunks[lastChunk].count < Self.chunkLimit {
                chunks[lastChunk].append(run)
            } else {
                chunks.append([run])
            }
        } else {
            chunks = [[run]]
        }
        count += Int(run.upper - run.lower) + 1
    }

    static func union(_ a: RowIDRuns, _ b: RowIDRuns) -> RowIDRuns {
        var result = RowIDRuns()
        let x = a.runs, y = b.runs
        var i = 0, j = 0
        while i < x.count || j < y.count {
            if j == y.count || (i < x.count && x[i].lower <= y[j].lower) {
                result.append(x[i])
                i += 1
            } else {
                result.append(y[j])
                j += 1
            }
        }
        return result
    }

    static func intersection(_ a: RowIDRuns, _ b: RowIDRuns) -> RowIDRuns {
        var result = RowIDRuns()
        let x = a.runs, y = b.runs
        var i = 0, j = 0
        while i < x.count && j < y.count {
            let lower = max(x[i].lower, y[j].lower), upper = min(x[i].upper, y[j].upper)
            if lower <= upper { result.append(Run(lower: lower, upper: upper)) }
            if x[i].upper < y[j].upper { i += 1 } else { j += 1 }
        }
        return result
    }

    static func subtracting(_ a: RowIDRuns, _ b: RowIDRuns) -> RowIDRuns {
        var result = RowIDRuns()
        let y = b.runs
        var j = 0
        for run in a.runs {
            while j < y.count && y[j].upper < run.lower { j += 1 }
            // The part of `run` not covered yet starts at `lower` (nil: none left).
            var lower: Int64? = run.lower
            var k = j
            while let start = lower, k < y.count && y[k].lower <= run.upper {
                if y[k].lower > start { result.append(Run(lower: start, upper: y[k].lower - 1)) }
                lower = y[k].upper < run.upper ? y[k].upper + 1 : nil
                k += 1
            }
            if let start = lower { result.append(Run(lower: start, upper: run.upper)) }
        }
        return result
    }

    static func == (lhs: RowIDRuns, rhs: RowIDRuns) -> Bool {
        lhs.count == rhs.count && lhs.runs == rhs.runs
    }

    func hash(into hasher: inout Hasher) {
        for chunk in chunks {
            for run in chunk { hasher.combine(run) }
        }
    }
}
