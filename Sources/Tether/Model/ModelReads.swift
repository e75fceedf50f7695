import Foundation
import Synchronization

/// The attribute values (and to-one targets) this client handed out as typed models: what a
/// struct may have been read with.
///
/// A struct is a copy: read, kept by the app, changed, saved. Meanwhile the store may have moved
/// on (a list refresh brought another client's change). Its properties then hold two kinds of
/// values that differ from the store: those the app set, and those it was read with that the
/// store has since replaced. A typed save (``Client/save(_:options:depth:)``) must write and send
/// only the first kind: a property whose value differs from the store's and is one this client
/// handed out for it is the struct's age, not the app's change, and the store's newer value
/// stays (and is not sent over the other client's).
///
/// A typed save that succeeds forgets the object's states: the model it returns is the app's
/// copy from then on (and an earlier value the app sets again is its change, not staleness).
///
/// Cheap to record, since every typed read records: a read hands over its rows as one ``Batch``
/// (the values it decoded, in one flat array), kept as it is; nothing is done per object until a
/// save asks for one object's states, and then the batches are searched, newest first (by
/// binary search when a batch's objects came in row order, as a table read gives them, else by an
/// index the batch builds at its first search). A read of the same objects with the same values
/// as a kept batch (a list polled while nothing changed) keeps that batch instead of adding one.
///
/// Bounded: the batches of the last ``capacity`` rows read (the oldest batch forgotten first,
/// the newest always kept), and at most ``statesPerObject`` distinct states of an object. A struct
/// read longer ago is compared with the store, as a struct the app made itself.
final class ModelReads: Sendable {
    /// The rows of one typed read: each row's values (by position among `names`, or by name) and,
    /// when the read followed them, its to-one targets.
    ///
    /// Its values never change; what ``ModelReads`` keeps on it (`ids`, `sequence`, the search
    /// index) is only touched under the lock of the ``ModelReads`` that holds it.
    final class Batch: @unchecked Sendable {
        enum Values {
            /// `names.count` values a row, one row after the other.
            case rows(names: [String], values: [Value?])
            /// Every set attribute of each object (absent: unset).
            case objects([[String: Value]])
        }

        let values: Values
        /// The targets of the to-one relationships the read followed, a dictionary a row (empty:
        /// the read followed none).
        let toOne: [[String: ObjectID?]]
        let count: Int

        /// The objects of the rows, in row order.
        fileprivate var ids: [ObjectID] = []
        /// When the batch was read (or last read again): later reads have higher numbers.
        fileprivate var sequence = 0
        /// Whether `ids` are of one entity, in ascending row order (searched by binary search).
        fileprivate var ordered = false
        /// The hash of `ids` (the key of ``Memory/byObjects``).
        fileprivate var key = 0
        /// The hash of the query that read the rows (the key of ``Memory/byQuery``), if known.
        fileprivate var query: Int?
        /// The rows by object, built at the first search of a batch that is not `ordered`.
        fileprivate var index: [ObjectID: Int]?

        init(_ values: Values, count: Int, toOne: [[String: ObjectID?]] = []) {
            precondition(toOne.isEmpty || toOne.count == count)
            self.values = values
            self.count = count
            self.toOne = toOne
        }

        /// The rows of a row read: row `i`'s values are `values[i * names.count ..< (i + 1) * names.count]`.
        convenience init(names: [String], values: [Value?], count: Int, toOne: [[String: ObjectID?]] = []) {
            precondition(values.count == names.count * count)
            self.init(.rows(names: names, values: values), count: count, toOne: toOne)
        }

        /// The row of `id`, if the batch has one.
        fileprivate func row(of id: ObjectID) -> Int? {
            if ordered {
                guard ids[0].entity == id.entity else { return nil }
                var low = 0, high = ids.count
                while low < high {
                    let middle = (low + high) / 2
                    if ids[middle].rowID < id.rowID { low = middle + 1 } else { high = middle }
                }
                return low < ids.count && ids[low].rowID == id.rowID ? low : nil
            }
            if index == nil { index = Dictionary(ids.enumerated().map { ($1, $0) }, uniquingKeysWith: { _, last in last }) }
            return index?[id]
        }

        /// Whether `other` holds what this batch holds, row for row.
        fileprivate func holdsTheSame(as other: Batch) -> Bool {
            guard count == other.count, toOne == other.toOne else { return false }
            switch (values, other.values) {
            case (.rows(let names, let a), .rows(let otherNames, let b)): return names == otherNames && a == b
            case (.objects(let a), .objects(let b)): return a == b
            default: return false
            }
        }

        /// Whether rows `a` of this batch and `b` of `other` say the same of every attribute and
        /// to-one target.
        fileprivate func same(_ a: Int, as b: Int, of other: Batch) -> Bool {
            let targetsA = toOne.isEmpty ? [:] : toOne[a], targetsB = other.toOne.isEmpty ? [:] : other.toOne[b]
            guard targetsA == targetsB else { return false }
            switch (values, other.values) {
            case (.rows(let names, let valuesA), .rows(let otherNames, let valuesB)):
                guard names == otherNames else { return false }
                let width = names.count
                for i in 0..<width where valuesA[a * width + i] != valuesB[b * width + i] { return false }
                return true
            case (.objects(let objectsA), .objects(let objectsB)):
                return objectsA[a] == objectsB[b]
            default:
                return false
            }
        }
    }

    /// One state of one object as a typed read decoded it: a row of a batch, less the
    /// properties the app has written since (`hidden`).
    struct State: Sendable {
        let batch: Batch
        let row: Int
        var hidden: Set<String> = []

        /// The value read for `name` (`.some(nil)`: read as unset), or nil when the read did
        /// not hold it.
        func value(of name: String) -> Value?? {
            guard !hidden.contains(name) else { return nil }
            switch batch.values {
            case .rows(let names, let values):
                guard let index = names.firstIndex(of: name) else { return nil }
                return .some(values[row * names.count + index])
            case .objects(let objects):
                return .some(objects[row][name])
            }
        }

        /// Whether the read found the to-one relationship `name` leading to `target`.
        func leads(_ name: String, to target: ObjectID) -> Bool {
            guard !hidden.contains(name), !batch.toOne.isEmpty else { return false }
            if case .some(.some(let read)) = batch.toOne[row][name] { return read == target }
            return false
        }
    }

    private struct Memory {
        /// The kept batches, oldest first (`head` onwards).
        var batches: [Batch] = []
        var head = 0
        /// The rows of the kept batches.
        var rows = 0
        /// The last sequence number given.
        var sequence = 0
        /// The newest kept batch of each list of objects read, by a hash of the list.
        var byObjects: [Int: Batch] = [:]
        /// The newest kept batch of each query read row by row, by a hash of the query.
        var byQuery: [Int: Batch] = [:]
        /// Objects whose states up to a sequence number are forgotten (saved since).
        var forgotten: [ObjectID: Int] = [:]
        /// Properties of objects whose values up to a sequence number are forgotten (written since).
        var hidden: [ObjectID: [(upTo: Int, names: Set<String>)]] = [:]
        /// The sequence number when something was last forgotten.
        var lastForgotten = -1

        var live: ArraySlice<Batch> { batches[head...] }

        /// The first sequence number still kept.
        var oldest: Int { head < batches.count ? batches[head].sequence : sequence + 1 }
    }

    let capacity: Int
    let statesPerObject: Int
    private let memory = Mutex(Memory())

    /// Keeps the batches of the last `capacity` rows read (at least one batch).
    init(capacity: Int = 200_000, statesPerObject: Int = 8) {
        self.capacity = max(1, capacity)
        self.statesPerObject = max(1, statesPerObject)
    }

    /// Remembers what a typed read handed out: `ids[i]` was read as row `i` of `batch`; `query`
    /// (a hash of what was read) lets the next read of it compare its rows as they come
    /// (``RowRecorder``).
    func record(_ ids: [ObjectID], _ batch: Batch, query: Int? = nil) {
        precondition(ids.count == batch.count)
        guard let first = ids.first else { return }
        var hasher = Hasher()
        hasher.combine(first.entity)
        hasher.combine(ids.count)
        var ordered = true, previous = Int64.min
        for id in ids {
            hasher.combine(id.rowID)
            if ordered, id.rowID <= previous || id.entity != first.entity { ordered = false }
            previous = id.rowID
        }
        let key = hasher.finalize()
        batch.ids = ids
        batch.ordered = ordered
        batch.key = key
        memory.withLock { memory in
            memory.sequence += 1
            // The same objects read again with the same values: the kept batch stands for this
            // read too, unless some of its states were forgotten since.
            if let kept = memory.byObjects[key], kept.ids == ids, kept.holdsTheSame(as: batch),
               memory.lastForgotten < kept.sequence || !ids.contains(where: { memory.forgotten[$0] != nil || memory.hidden[$0] != nil }) {
                if let position = memory.live.lastIndex(where: { $0 === kept }) {
                    memory.batches.remove(at: position)
                    memory.batches.append(kept)
                }
                kept.sequence = memory.sequence
                if let query { memory.byQuery[query] = kept }
                return
            }
            batch.sequence = memory.sequence
            memory.batches.append(batch)
            memory.rows += batch.count
            memory.byObjects[key] = batch
            if let query {
                batch.query = query
                memory.byQuery[query] = batch
            }
            while memory.rows > capacity, memory.batches.count - memory.head > 1 {
                let dropped = memory.batches[memory.head]
                memory.rows -= dropped.count
                memory.head += 1
                if memory.byObjects[dropped.key] === dropped { memory.byObjects[dropped.key] = nil }
                if let query = dropped.query, memory.byQuery[query] === dropped { memory.byQuery[query] = nil }
            }
            if memory.head > 64, memory.head * 2 > memory.batches.count {
                memory.batches.removeFirst(memory.head)
                memory.head = 0
            }
            Self.prune(&memory)
        }
    }

    /// Remembers objects handed out as typed models, with the to-one targets the read followed
    /// (by object; none for an object missing from `toOne`).
    func record(_ objects: [Object], toOne: [ObjectID: [String: ObjectID?]] = [:]) {
        guard !objects.isEmpty else { return }
        let targets = toOne.isEmpty ? [] : objects.map { toOne[$0.id] ?? [:] }
        record(objects.map(\.id), Batch(.objects(objects.map(\.values)), count: objects.count, toOne: targets))
    }

    /// The newest kept batch a row read of `query` (a hash) recorded: what a new read of it is
    /// compared with as its rows come.
    func kept(query: Int) -> Batch? {
        memory.withLock { $0.byQuery[query] }
    }

    /// Remembers a row read that a ``RowRecorder`` took: its rows, or, when every row was the kept
    /// batch's, that batch again (no values were copied).
    func record(_ recorder: RowRecorder, query: Int) {
        if let kept = recorder.unchanged {
            record(kept.ids, Batch(kept.values, count: kept.count, toOne: kept.toOne), query: query)
        } else {
            record(recorder.ids, Batch(names: recorder.names, values: recorder.values, count: recorder.ids.count), query: query)
        }
    }

    /// Takes the rows of a read as they come: while they are the rows of the batch the last read
    /// of the same query kept (the same objects, in the same order, with the same values), it
    /// only compares them; from the first row that differs it copies them, so that reading a
    /// list again while nothing changed copies and allocates nothing.
    struct RowRecorder {
        let names: [String]
        private let candidate: Batch?
        private let candidateValues: [Value?]
        /// The rows that matched the candidate's first rows, while nothing differed.
        private var matched = 0
        private var copying = false
        private(set) var ids: [ObjectID] = []
        private(set) var values: [Value?] = []

        init(names: [String], candidate: Batch?) {
            self.names = names
            if let candidate, case .rows(let candidateNames, let values) = candidate.values, candidateNames == names, candidate.toOne.isEmpty {
                self.candidate = candidate
                self.candidateValues = values
            } else {
                self.candidate = nil
                self.candidateValues = []
                copying = true
            }
        }

        /// The candidate, when every row of the read was its row.
        var unchanged: Batch? {
            guard !copying, let candidate, matched == candidate.count else { return nil }
            return candidate
        }

        /// Takes the row of `id` (its values by position among `names`).
        mutating func add(_ id: ObjectID, _ row: ArraySlice<Value?>) {
            let width = names.count
            if !copying, let candidate {
                if matched < candidate.count, candidate.ids[matched] == id {
                    let base = matched * width
                    var same = true
                    for i in 0..<width where candidateValues[base + i] != row[row.startIndex + i] {
                        same = false
                        break
                    }
                    if same {
                        matched += 1
                        return
                    }
                }
                copying = true
                ids = Array(candidate.ids[..<matched])
                values = Array(candidateValues[..<(matched * width)])
            }
            ids.append(id)
            values.append(contentsOf: row)
        }
    }

    /// Drops what forgetting recorded about batches no longer kept, once it has grown.
    private static func prune(_ memory: inout Memory) {
        let oldest = memory.oldest
        if memory.forgotten.count > 1024 { memory.forgotten = memory.forgotten.filter { $0.value >= oldest } }
        if memory.hidden.count > 1024 {
            memory.hidden = memory.hidden.compactMapValues { entries in
                let kept = entries.filter { $0.upTo >= oldest }
                return kept.isEmpty ? nil : kept
            }
        }
    }

    /// The rows the kept batches hold (for tests of the bound).
    var keptRows: Int { memory.withLock { $0.rows } }

    /// The distinct states of `id` handed out (oldest first, at most ``statesPerObject``, the
    /// newest); empty when none is remembered.
    func states(of id: ObjectID) -> [State] {
        memory.withLock { memory in
            let forgotten = memory.forgotten[id] ?? -1
            let hidden = memory.hidden[id] ?? []
            var states: [State] = []
            for batch in memory.live.reversed() {
                guard batch.sequence > forgotten else { continue }
                guard let row = batch.row(of: id) else { continue }
                var names = Set<String>()
                for entry in hidden where entry.upTo >= batch.sequence { names.formUnion(entry.names) }
                let state = State(batch: batch, row: row, hidden: names)
                if states.contains(where: { $0.hidden == names && $0.batch.same($0.row, as: row, of: batch) }) { continue }
                states.append(state)
                if states.count == statesPerObject { break }
            }
            return states.reversed()
        }
    }

    /// Forgets every state of `id`: the app has saved it, and the model the save returns (read
    /// next) is what it now holds.
    func forget(_ id: ObjectID) {
        memory.withLock { memory in
            memory.forgotten[id] = memory.sequence
            memory.hidden[id] = nil
            memory.lastForgotten = memory.sequence
        }
    }

    /// Forgets the values read for `properties` of `id`: the app has just written them, so an
    /// earlier value of theirs is no longer another writer's newer one hidden by a stale copy.
    func forget(_ properties: Set<String>, of id: ObjectID) {
        guard !properties.isEmpty else { return }
        memory.withLock { memory in
            memory.hidden[id, default: []].append((upTo: memory.sequence, names: properties))
            memory.lastForgotten = memory.sequence
        }
    }
}
