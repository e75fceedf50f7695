/// A position in observed results: a section and an item in it. A query observed without a
/// section key has one section, 0.
///
/// On Apple platforms, `IndexPath(item: index.item, section: index.section)` is the index path a
/// table or collection view wants.
public struct ResultIndex: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The section, from 0.
    public var section: Int
    /// The position within the section, from 0.
    public var item: Int

    /// The position of item `item` of section `section`.
    public init(section: Int, item: Int) {
        self.section = section
        self.item = item
    }

    /// The position `item` of the one section of results observed without a section key.
    public init(item: Int) { self.init(section: 0, item: item) }

    public static func < (lhs: ResultIndex, rhs: ResultIndex) -> Bool {
        (lhs.section, lhs.item) < (rhs.section, rhs.item)
    }

    public var description: String { "[\(section), \(item)]" }
}

/// One state of observed results: the objects in order, grouped in sections, and how they differ
/// from the state delivered before (``difference``).
///
/// Snapshots are values: keep one, hand it to another actor, compare two.
public struct ResultsSnapshot: Sendable, Hashable {
    /// A run of consecutive objects with the same section key value.
    public struct Section: Sendable, Hashable {
        /// The value of the section key shared by the section's objects (nil when unset, and for
        /// the single section of results observed without a section key).
        public var key: Value?
        /// The positions of the section's objects in ``ResultsSnapshot/objects``.
        public var range: Range<Int>
        /// The number of objects in the section.
        public var count: Int { range.count }
    }

    /// Every object, in order (section by section).
    public let objects: [Object]
    /// The sections. Results without a section key have exactly one section (also when empty);
    /// sectioned results have one per section key value that has objects.
    public let sections: [Section]
    /// The change from the snapshot delivered before this one; for the first snapshot, every
    /// section and object inserted.
    public let difference: ResultsDifference
    /// For a remote-backed observation, the state of its source when the snapshot was taken
    /// (loading, last refreshed, last error); nil otherwise. A snapshot whose difference is empty
    /// tells of a change of this state.
    public let remote: RemoteState?

    /// A snapshot of these objects and sections (the sections' ranges must cover `objects` in
    /// order), with its difference from the one before. Observations make snapshots; build one to
    /// test code that shows them.
    public init(objects: [Object], sections: [Section], difference: ResultsDifference, remote: RemoteState? = nil) {
        self.objects = objects
        self.sections = sections
        self.difference = difference
        self.remote = remote
    }

    /// The number of objects, in every section.
    public var count: Int { objects.count }
    /// True when no object matches.
    public var isEmpty: Bool { objects.isEmpty }

    /// The object at a position.
    public subscript(index: ResultIndex) -> Object { objects[sections[index.section].range.lowerBound + index.item] }

    /// The objects of one section.
    public func objects(inSection section: Int) -> ArraySlice<Object> { objects[sections[section].range] }

    /// The ids of every object, section by section (what ``ResultsDifference/applied(to:from:)`` takes).
    public var sectionedIDs: [[ObjectID]] { sections.map { objects[$0.range].map(\.id) } }

    /// The position of the object at `offset` in ``objects``.
    public func index(ofOffset offset: Int) -> ResultIndex {
        var low = 0, high = sections.count - 1
        while low < high {
            let mid = (low + high + 1) / 2
            if sections[mid].range.lowerBound <= offset { low = mid } else { high = mid - 1 }
        }
        return ResultIndex(section: low, item: offset - sections[low].range.lowerBound)
    }

    /// Groups objects (already in section order) into sections by the value of `key`.
    static func sections(of objects: [Object], key: String?) -> [Section] {
        guard let key else { return [Section(key: nil, range: 0..<objects.count)] }
        var sections: [Section] = []
        var start = 0
        for offset in objects.indices where offset > 0 && objects[offset].values[key] != objects[start].values[key] {
            sections.append(Section(key: objects[start].values[key], range: start..<offset))
            start = offset
        }
        if !objects.isEmpty { sections.append(Section(key: objects[start].values[key], range: start..<objects.count)) }
        return sections
    }
}

/// How one snapshot of observed results differs from the one before, in the terms of a table or
/// collection view's batch updates: deletions, moves' sources and updates at the **old**
/// positions, insertions and moves' destinations at the **new** ones.
///
/// ```swift
/// // UIKit
/// tableView.performBatchUpdates {
///     tableView.deleteSections(IndexSet(change.deletedSections), with: .automatic)
///     tableView.insertSections(IndexSet(change.insertedSections), with: .automatic)
///     tableView.deleteRows(at: change.deleted.map(\.indexPath), with: .automatic)
///     tableView.insertRows(at: change.inserted.map(\.indexPath), with: .automatic)
///     for move in change.moved { tableView.moveRow(at: move.from.indexPath, to: move.to.indexPath) }
///     tableView.reloadRows(at: change.updated.map(\.indexPath), with: .none)
/// }
/// ```
/// (with `extension ResultIndex { var indexPath: IndexPath { IndexPath(row: item, section: section) } }`).
///
/// The objects of an inserted section are not listed in ``inserted``, nor those of a deleted
/// section in ``deleted``: they come and go with their section. An object that moves into an
/// inserted section (or out of a deleted one) is listed as deleted from (or inserted at) its
/// surviving side. A moved object may also have changed values: show it as it is at its new
/// position.
public struct ResultsDifference: Sendable, Hashable, CustomStringConvertible {
    /// A move of one object.
    public struct Move: Sendable, Hashable {
        /// The object's position in the old snapshot.
        public var from: ResultIndex
        /// The object's position in the new snapshot.
        public var to: ResultIndex
        /// A move from `from` (old position) to `to` (new position).
        public init(from: ResultIndex, to: ResultIndex) {
            self.from = from
            self.to = to
        }
    }

    /// Old positions of the sections that are gone, ascending.
    public var deletedSections: [Int] = []
    /// New positions of the sections that are new, ascending.
    public var insertedSections: [Int] = []
    /// Old positions of the objects that are gone, ascending.
    public var deleted: [ResultIndex] = []
    /// New positions of the objects that are new, ascending.
    public var inserted: [ResultIndex] = []
    /// Objects that changed place, ordered by their old position.
    public var moved: [Move] = []
    /// Old positions of objects that stayed in place but changed values, ascending.
    public var updated: [ResultIndex] = []

    /// An empty difference: nothing changed.
    public init() {}

    /// True when nothing changed: no section or object inserted, deleted, moved or updated.
    public var isEmpty: Bool {
        deletedSections.isEmpty && insertedSections.isEmpty && deleted.isEmpty && inserted.isEmpty && moved.isEmpty && updated.isEmpty
    }

    public var description: String {
        var parts: [String] = []
        if !deletedSections.isEmpty { parts.append("deleted sections \(deletedSections)") }
        if !insertedSections.isEmpty { parts.append("inserted sections \(insertedSections)") }
        if !deleted.isEmpty { parts.append("deleted \(deleted)") }
        if !inserted.isEmpty { parts.append("inserted \(inserted)") }
        if !moved.isEmpty { parts.append("moved " + moved.map { "\($0.from)→\($0.to)" }.joined(separator: ", ")) }
        if !updated.isEmpty { parts.append("updated \(updated)") }
        return parts.isEmpty ? "no change" : parts.joined(separator: "; ")
    }

    /// Applies the difference as a table view applies batch updates, to `previous` (the sections
    /// of the snapshot before, of any element type): removes the deleted and moved objects and
    /// the deleted sections, then inserts the new sections (their elements taken from `next`) and
    /// the inserted and moved objects (taken from `next` at their new positions). The result
    /// equals `next`'s sections when the difference is right; a model kept beside the snapshots
    /// can be updated so.
    public func applied<T>(to previous: [[T]], from next: [[T]]) -> [[T]] {
        var sections = previous.map { $0.map(Optional.some) }
        var removals = deleted + moved.map(\.from)
        removals.sort(by: >)
        for index in removals { sections[index.section].remove(at: index.item) }
        for section in deletedSections.sorted(by: >) { sections.remove(at: section) }
        for section in insertedSections.sorted() { sections.insert(next[section].map(Optional.some), at: section) }
        var insertions = inserted + moved.map(\.to)
        insertions.sort()
        for index in insertions { sections[index.section].insert(next[index.section][index.item], at: index.item) }
        return sections.map { $0.compactMap { $0 } }
    }

    // MARK: Computing a difference

    /// The difference from `old` to `new` (objects and sections). Objects in both are compared by
    /// `properties` (nil: all values), but only those in `touched` (nil: all of them); objects in
    /// `replaced` are listed as deleted and inserted, not as moved or updated.
    static func between(
        old: [Object], _ oldSections: [ResultsSnapshot.Section], new: [Object], _ newSections: [ResultsSnapshot.Section],
        touched: Set<ObjectID>?, replaced: Set<ObjectID> = [], properties: Set<String>?
    ) -> ResultsDifference {
        var difference = ResultsDifference()

        // Sections: matched by key; those that survive in a different order count as replaced.
        var newSectionByKey: [Value?: Int] = [:]
        for (index, section) in newSections.enumerated() { newSectionByKey[section.key] = index }
        var oldToNewSection = [Int?](repeating: nil, count: oldSections.count)
        let matched = oldSections.indices.compactMap { old in newSectionByKey[oldSections[old].key].map { (old, $0) } }
        let inOrder = Set(longestIncreasingSubsequence(matched.map(\.1)).map { matched[$0].0 })
        for (old, new) in matched where inOrder.contains(old) { oldToNewSection[old] = new }
        var newSectionKept = [Bool](repeating: false, count: newSections.count)
        for case let new? in oldToNewSection { newSectionKept[new] = true }
        difference.deletedSections = oldSections.indices.filter { oldToNewSection[$0] == nil }
        difference.insertedSections = newSections.indices.filter { !newSectionKept[$0] }

        // Positions.
        var newOffset: [ObjectID: Int] = [:]
        newOffset.reserveCapacity(new.count)
        for (offset, object) in new.enumerated() { newOffset[object.id] = offset }
        var newSectionOf = [Int](repeating: 0, count: new.count)
        for (index, section) in newSections.enumerated() { for offset in section.range { newSectionOf[offset] = index } }
        func newIndex(_ offset: Int) -> ResultIndex {
            let section = newSectionOf[offset]
            return ResultIndex(section: section, item: offset - newSections[section].range.lowerBound)
        }

        var seen = [Bool](repeating: false, count: new.count)
        var common: [(old: ResultIndex, oldOffset: Int, newOffset: Int, movedSection: Bool)] = []
        for (sectionIndex, section) in oldSections.enumerated() {
            let oldKept = oldToNewSection[sectionIndex] != nil
            for offset in section.range {
                let id = old[offset].id
                let oldIndex = ResultIndex(section: sectionIndex, item: offset - section.range.lowerBound)
                guard let target = newOffset[id], !replaced.contains(id) else {
                    if oldKept { difference.deleted.append(oldIndex) }
                    continue
                }
                seen[target] = true
                let newKept = newSectionKept[newSectionOf[target]]
                switch (oldKept, newKept) {
                case (true, true):
                    common.append((oldIndex, offset, target, oldToNewSection[sectionIndex] != newSectionOf[target]))
                case (true, false): difference.deleted.append(oldIndex)
                case (false, true): difference.inserted.append(newIndex(target))
                case (false, false): break
                }
            }
        }
        for offset in new.indices where !seen[offset] && newSectionKept[newSectionOf[offset]] {
            difference.inserted.append(newIndex(offset))
        }

        // Moves: objects outside the longest run that kept its order, or that changed section.
        let stayers = common.indices.filter { !common[$0].movedSection }
        let stayed = Set(longestIncreasingSubsequence(stayers.map { common[$0].newOffset }).map { stayers[$0] })
        for (index, entry) in common.enumerated() {
            if !stayed.contains(index) {
                difference.moved.append(Move(from: entry.old, to: newIndex(entry.newOffset)))
                continue
            }
            let before = old[entry.oldOffset], after = new[entry.newOffset]
            if let touched, !touched.contains(before.id) { continue }
            if !sameValues(before, after, properties) { difference.updated.append(entry.old) }
        }
        difference.inserted.sort()
        return difference
    }

    static func sameValues(_ a: Object, _ b: Object, _ properties: Set<String>?) -> Bool {
        guard let properties else { return a.values == b.values }
        return properties.allSatisfy { a.values[$0] == b.values[$0] }
    }

    /// The positions in `sequence` of one of its longest strictly increasing subsequences.
    static func longestIncreasingSubsequence(_ sequence: [Int]) -> [Int] {
        guard !sequence.isEmpty else { return [] }
        var tails: [Int] = []  // positions: tails[k] ends the best subsequence of length k + 1
        var previous = [Int](repeating: -1, count: sequence.count)
        for (position, value) in sequence.enumerated() {
            var low = 0, high = tails.count
            while low < high {
                let mid = (low + high) / 2
                if sequence[tails[mid]] < value { low = mid + 1 } else { high = mid }
            }
            if low > 0 { previous[position] = tails[low - 1] }
            if low == tails.count { tails.append(position) } else { tails[low] = position }
        }
        var result: [Int] = []
        var position = tails.last!
        while position >= 0 {
            result.append(position)
            position = previous[position]
        }
        return result.reversed()
    }
}
