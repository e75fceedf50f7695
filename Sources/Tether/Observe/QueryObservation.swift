import Synchronization

/// Live results of a query: an `AsyncSequence` of ``ResultsSnapshot``s that starts with the
/// current result and yields a new snapshot, with its ``ResultsSnapshot/difference`` to the one
/// before, after each committed transaction that changes the result.
///
/// ```swift
/// let repositories = client.observe(Query("Repository", sortedBy: [.descending("stars")]), sectionedBy: "language")
/// for try await snapshot in repositories {
///     render(snapshot)                    // or apply snapshot.difference to a table view
/// }
/// ```
///
/// - A transaction that changes nothing the query reads (another entity, an attribute not in
///   `reading`, objects that neither match nor matched) yields nothing. Objects observed
///   `reading` some attributes hold the values of those (and of the query's condition, sort and
///   section key) only.
/// - A consumer slower than the commits gets the latest state, with one difference from the
///   snapshot it saw last; snapshots never queue up.
/// - ``change(where:sortedBy:)`` changes the condition and sort in place; every iterator then
///   yields the new result, with its difference to what it showed.
/// - Iteration ends (returns nil) when the consuming task is cancelled, and the observer's work
///   ends with it. A store read that fails ends it with the error.
///
/// Each iterator is one observer: two loops over the same observation each get every snapshot.
/// Differences are computed from the change sets of the store (objects touched and, for
/// updates, which properties), reading only the touched objects: the store's order of a query
/// must agree with ``Query/apply(to:)``, which the store conformance suite checks.
public final class QueryObservation: AsyncSequence, Sendable {
    public typealias Element = ResultsSnapshot

    let store: any Store
    let schema: Schema
    private let state: Mutex<State>
    let remote: Remote?

    /// The source of a remote-backed observation.
    struct Remote: Sendable {
        let source: RemoteSource
        let policy: RefreshPolicy
        let client: Client
        var refreshes: RemoteRefreshes { client.refreshes }
    }

    private struct State {
        var request: ObservedRequest
        var listeners: [ObjectIdentifier: WeakInbox] = [:]
    }

    struct WeakInbox {
        weak var inbox: ChangeInbox?
    }

    init(store: any Store, schema: Schema, request: ObservedRequest, remote: Remote? = nil) {
        self.store = store
        self.schema = schema
        self.state = Mutex(State(request: request))
        self.remote = remote
    }

    /// The state of the remote source, for a remote-backed observation.
    public var remoteState: RemoteState? { remote.map { $0.refreshes.state($0.source.key) } }

    /// Refreshes a remote-backed observation from its source now, or waits for the refresh under
    /// way (observers of the same source share it); every iterator then yields what changed.
    /// Throws what the refresh threw (the local results are kept); does nothing without a source.
    public func refresh() async throws {
        guard let remote else { return }
        try await startRefresh(remote, background: false).value
    }

    @discardableResult
    private func startRefresh(_ remote: Remote, background: Bool) -> Task<Void, any Error> {
        remote.refreshes.refresh(remote.source.key, background: background) { [self] in
            try await remote.source.refresh(remote.client, query)
        }
    }

    /// Starts a refresh when the policy says so; called as an observer starts.
    func refreshIfDue() {
        guard let remote, remote.refreshes.isDue(remote.source.key, remote.policy) else { return }
        startRefresh(remote, background: true)
    }

    /// The query observed now.
    public var query: Query { state.withLock { $0.request.query } }

    /// The section key, if any.
    public var sectionKey: String? { state.withLock { $0.request.sectionKey } }

    /// Changes the condition and the sort of the observed query (RSDataFetcher's
    /// `refreshRequestWithPredicate:andSortDescriptors:`); every iterator yields the new result
    /// with its difference to the last snapshot it yielded. A nil sort keeps the current one.
    public func change(where condition: Condition?, sortedBy sort: [Sort]? = nil) {
        change { query in
            query.condition = condition
            if let sort { query.sort = sort }
        }
    }

    /// Changes the observed query in place (its entity stays the same; limit and offset may change).
    public func change(_ body: (inout Query) -> Void) {
        let inboxes = state.withLock { state -> [ChangeInbox] in
            let entity = state.request.query.entity
            body(&state.request.query)
            state.request.query.entity = entity
            state.request.version += 1
            return state.listeners.values.compactMap(\.inbox)
        }
        for inbox in inboxes { inbox.postRequestChange() }
    }

    var request: ObservedRequest { state.withLock { $0.request } }

    private func listen(_ inbox: ChangeInbox) {
        state.withLock { state in
            state.listeners = state.listeners.filter { $0.value.inbox != nil }
            state.listeners[ObjectIdentifier(inbox)] = WeakInbox(inbox: inbox)
        }
    }

    public func makeAsyncIterator() -> Iterator {
        let remote = self.remote
        let feed = ChangeFeed(store) { inbox in
            if let remote { remote.refreshes.detach(remote.source.key, ObjectIdentifier(inbox)) }
        }
        listen(feed.inbox)
        if let remote { remote.refreshes.attach(remote.source.key, feed.inbox) }
        return Iterator(observation: self, feed: feed)
    }

    /// One observer of a ``QueryObservation``.
    public struct Iterator: AsyncIteratorProtocol, Sendable {
        let observation: QueryObservation
        let feed: ChangeFeed
        private var current: Current?

        struct Current: Sendable {
            var objects: [Object]
            var sections: [ResultsSnapshot.Section]
            var version: Int
            var remote: RemoteState?
        }

        init(observation: QueryObservation, feed: ChangeFeed) {
            self.observation = observation
            self.feed = feed
        }

        public mutating func next() async throws -> ResultsSnapshot? {
            if Task.isCancelled { return nil }
            let observation = self.observation
            guard let current else {
                let request = observation.request
                let engine = try QueryEngine(request, schema: observation.schema)
                let objects = try await observation.store.read { try engine.load($0) }
                let sections = ResultsSnapshot.sections(of: objects, key: request.sectionKey)
                var difference = ResultsDifference()
                difference.insertedSections = Array(sections.indices)
                observation.refreshIfDue()
                let remote = observation.remoteState
                self.current = Current(objects: objects, sections: sections, version: request.version, remote: remote)
                return ResultsSnapshot(objects: objects, sections: sections, difference: difference, remote: remote)
            }
            var state = current
            while true {
                guard let pending = await feed.inbox.take() else { return nil }
                let request = observation.request
                let remote = observation.remoteState
                let engine = try QueryEngine(request, schema: observation.schema)
                let next: [Object]
                var touched: Set<ObjectID>?
                var replaced: Set<ObjectID> = []
                /// The difference, when the merge computed it from the touched objects alone.
                var merged: ResultsDifference?
                if request.version != state.version || remote != state.remote {
                    // The request changed, or the remote state did: a refresh that finished has
                    // committed its import, whose change set may still be on its way here. The
                    // result is read again (every object compared), so that the snapshot saying
                    // the refresh is done holds what it imported.
                    next = try await observation.store.read { try engine.load($0) }
                } else if let changes = pending.changes {
                    switch engine.relevance(of: changes, to: state.objects) {
                    case .none:
                        continue
                    case .reload:
                        next = try await observation.store.read { try engine.load($0) }
                    case .touched(let ids, let gone):
                        replaced = gone
                        switch try await engine.update(state.objects, touched: ids, in: observation.store) {
                        case .reloaded(let objects):
                            // A result read again whole may hold changes whose change sets are
                            // still on their way: every object is compared then.
                            next = objects
                            touched = nil
                        case .merged(let merge) where request.sectionKey == nil:
                            next = merge.objects
                            let added = merge.newOffsets.map { merge.objects[$0] }
                            merged = engine.difference(state.objects, merge, added: added, replaced: gone)
                        case .merged(let merge):
                            next = merge.objects
                            touched = ids
                        }
                    }
                } else {
                    continue
                }
                let sections = ResultsSnapshot.sections(of: next, key: request.sectionKey)
                let difference = merged ?? ResultsDifference.between(
                    old: state.objects, state.sections, new: next, sections,
                    touched: touched, replaced: replaced, properties: engine.displayed)
                let remoteChanged = remote != state.remote
                state = Current(objects: next, sections: sections, version: request.version, remote: remote)
                self.current = state
                if difference.isEmpty && !remoteChanged { continue }
                return ResultsSnapshot(objects: next, sections: sections, difference: difference, remote: remote)
            }
        }
    }
}

/// What an observation observes: a query, its section key and the attributes it reads.
struct ObservedRequest: Sendable {
    var query: Query
    var sectionKey: String?
    /// The attributes the observer reads (nil: all of them).
    var properties: Set<String>?
    /// Bumped by each change in place.
    var version = 0
}

/// The work of one step of a query observation, for one state of its request.
struct QueryEngine: Sendable {
    /// The query with the section key as its first sort key.
    let query: Query
    /// Attributes whose change can make an object enter, leave or move in the result.
    let membership: Set<String>
    /// Attributes whose change is an update of an object in the result.
    let displayed: Set<String>?
    /// Whether the result is a window (limit or offset): changes are then read by fetching it again.
    let isWindow: Bool
    /// What the query reads through relationships (``AttributePath``): its condition, sort keys
    /// and section key. A change of an object of an entity on the way is read by fetching the
    /// result again.
    let paths: ObservedPaths

    init(_ request: ObservedRequest, schema: Schema) throws {
        var query = request.query
        guard let entity = schema[query.entity] else {
            throw StoreError(.unknownEntity, entity: query.entity, "cannot observe unknown entity '\(query.entity)'")
        }
        let known = Set(entity.attributes.map(\.name))
        if let unknown = (request.properties ?? []).subtracting(known).sorted().first {
            throw StoreError(.unknownAttribute, entity: query.entity, member: unknown,
                             "cannot observe \(query.entity) reading '\(unknown)': it has no such attribute")
        }
        if let key = request.sectionKey, query.sort.first?.attribute != key {
            query.sort.insert(.ascending(key), at: 0)
        }
        // The condition's and sort keys' names (the section key's among them), as stores resolve them.
        let resolved = try QueryCheck.check(query) { schema[$0] }
        self.query = query
        self.paths = try ObservedPaths(resolved, sectionKey: request.sectionKey, condition: query.condition, entity: entity, schema: schema)
        var membership = query.condition?.attributes ?? []
        membership.formUnion(query.sort.map(\.attribute))
        // A path's value changes with the links of its first relationship.
        membership.formUnion(paths.firstRelationships)
        self.membership = membership
        self.displayed = request.properties.map { $0.union(membership) }
        self.isWindow = query.limit != nil || query.offset != 0
    }

    func load(_ reader: any StoreReader) throws -> [Object] {
        let objects = project(try reader.fetch(query))
        return try paths.withSectionValues(objects, reader: reader)
    }

    /// Objects with the values the observer reads only (all of them when it did not say), so that
    /// a snapshot never holds a value that may be stale.
    func project(_ objects: [Object]) -> [Object] {
        guard let displayed else { return objects }
        return objects.map { Object(id: $0.id, values: $0.values.filter { displayed.contains($0.key) }) }
    }

    enum Relevance {
        case none
        /// An object on the way of a path changed: the result is read again.
        case reload
        /// Objects to read again; `gone` were deleted (a new object may have their id since).
        case touched(Set<ObjectID>, gone: Set<ObjectID>)
    }

    /// The objects of the change that may change the result.
    func relevance(of changes: ChangeSet, to current: [Object]) -> Relevance {
        if paths.areTouched(by: changes) { return .reload }
        let entity = query.entity
        var touched = Set<ObjectID>()
        var gone = Set<ObjectID>()
        func ids(_ set: ObjectIDSet) -> [ObjectID] {
            set.rowIDRanges(of: entity).flatMap { range in range.lazy.map { ObjectID(entity: entity, rowID: $0) } }
        }
        for id in ids(changes.inserted) { touched.insert(id) }
        for id in ids(changes.deleted) {
            touched.insert(id)
            gone.insert(id)
        }
        let updated = ids(changes.updated)
        if !updated.isEmpty {
            var members: Set<ObjectID>?
            var recorded = ObjectIDSet()
            for update in changes.propertyUpdates {
                let mine = ids(update.objects)
                guard !mine.isEmpty else { continue }
                recorded.formUnion(update.objects)
                if !update.properties.isDisjoint(with: membership) {
                    touched.formUnion(mine)
                } else if displayed.map({ !update.properties.isDisjoint(with: $0) }) ?? true {
                    if members == nil { members = Set(current.map(\.id)) }
                    for id in mine where members!.contains(id) { touched.insert(id) }
                }
            }
            for id in updated where !recorded.contains(id) { touched.insert(id) }
        }
        return touched.isEmpty ? .none : .touched(touched, gone: gone)
    }

    /// The result after the objects `touched` changed: the others keep their places, the touched
    /// ones are read again and placed by the query's order. A window, or more touched objects
    /// than are worth reading one by one, is fetched again instead.
    func update(_ current: [Object], touched: Set<ObjectID>, in store: any Store) async throws -> Update {
        if isWindow || paths.readsPaths || touched.count > max(256, current.count / 8) {
            return .reloaded(try await store.read { try load($0) })
        }
        let query = self.query
        let ids = Array(touched)
        let fresh = try await store.read { reader in try ids.compactMap { try reader.object($0) } }
        var added = project(fresh.filter { query.condition?.matches($0.values) ?? true })
        added.sort(by: ordered)
        return .merged(merge(current, touched: touched, added: added))
    }

    enum Update {
        /// The whole result read again.
        case reloaded([Object])
        /// The touched objects read again and placed.
        case merged(Merge)
    }

    /// The result after a change: the untouched objects of `current` in their order, with the
    /// touched ones that match (`added`, sorted) placed among them.
    struct Merge {
        var objects: [Object] = []
        /// Position in `current` of each touched object that was there.
        var oldOffsets: [ObjectID: Int] = [:]
        /// Position in `objects` of each of `added`, in order.
        var newOffsets: [Int] = []
        /// Of each of `added`, how many untouched objects precede it.
        var newRanks: [Int] = []
    }

    /// Places each added object by binary search among the untouched ones (which keep their
    /// order): O(n) copying and O(k log n) comparisons for k touched objects, no hashing of the
    /// untouched ones.
    func merge(_ current: [Object], touched: Set<ObjectID>, added: [Object]) -> Merge {
        var merge = Merge()
        let rows = touched.map(\.rowID).sorted()
        func isTouched(_ id: ObjectID) -> Bool {
            var low = 0, high = rows.count
            while low < high {
                let mid = (low + high) / 2
                if rows[mid] < id.rowID { low = mid + 1 } else { high = mid }
            }
            return low < rows.count && rows[low] == id.rowID && touched.contains(id)
        }
        var kept: [Object] = []
        kept.reserveCapacity(current.count)
        for (offset, object) in current.enumerated() {
            if isTouched(object.id) { merge.oldOffsets[object.id] = offset } else { kept.append(object) }
        }
        merge.objects.reserveCapacity(kept.count + added.count)
        var start = 0
        for object in added {
            var low = start, high = kept.count
            while low < high {
                let mid = (low + high) / 2
                if ordered(kept[mid], object) { low = mid + 1 } else { high = mid }
            }
            merge.objects.append(contentsOf: kept[start..<low])
            merge.newRanks.append(low)
            merge.newOffsets.append(merge.objects.count)
            merge.objects.append(object)
            start = low
        }
        merge.objects.append(contentsOf: kept[start...])
        return merge
    }

    /// The difference of a merge without sections, from the touched objects alone: an untouched
    /// object neither moves nor changes (it keeps its order relative to the other untouched ones).
    func difference(_ current: [Object], _ merge: Merge, added: [Object], replaced: Set<ObjectID>) -> ResultsDifference {
        var difference = ResultsDifference()
        // Touched objects in both: where they were and are, counted in untouched objects before them.
        var stayers: [(old: Int, new: Int, oldRank: Int, newRank: Int)] = []
        var oldTouched = merge.oldOffsets.filter { !replaced.contains($0.key) }
        let sortedOld = merge.oldOffsets.values.sorted()
        func oldRank(_ offset: Int) -> Int {
            var low = 0, high = sortedOld.count
            while low < high {
                let mid = (low + high) / 2
                if sortedOld[mid] < offset { low = mid + 1 } else { high = mid }
            }
            return offset - low
        }
        for (index, object) in added.enumerated() {
            let new = merge.newOffsets[index]
            if let old = oldTouched.removeValue(forKey: object.id) {
                stayers.append((old, new, oldRank(old), merge.newRanks[index]))
            } else {
                difference.inserted.append(ResultIndex(item: new))
            }
        }
        for (_, old) in oldTouched { difference.deleted.append(ResultIndex(item: old)) }
        for (id, old) in merge.oldOffsets where replaced.contains(id) { difference.deleted.append(ResultIndex(item: old)) }
        // Among those in the same gap between untouched objects, the longest run in order stays.
        stayers.sort { $0.old < $1.old }
        let inGap = stayers.indices.filter { stayers[$0].oldRank == stayers[$0].newRank }
        let ordered = Set(ResultsDifference.longestIncreasingSubsequence(inGap.map { stayers[$0].new }).map { inGap[$0] })
        for (index, stayer) in stayers.enumerated() {
            if ordered.contains(index) {
                if !ResultsDifference.sameValues(current[stayer.old], merge.objects[stayer.new], displayed) {
                    difference.updated.append(ResultIndex(item: stayer.old))
                }
            } else {
                difference.moved.append(ResultsDifference.Move(from: ResultIndex(item: stayer.old), to: ResultIndex(item: stayer.new)))
            }
        }
        difference.deleted.sort()
        difference.inserted.sort()
        difference.updated.sort()
        return difference
    }

    /// The query's order: its sort keys, then row ids (as ``Query/apply(to:)`` orders).
    func ordered(_ a: Object, _ b: Object) -> Bool {
        if Sort.areInIncreasingOrder(a.values, b.values, by: query.sort) { return true }
        if Sort.areInIncreasingOrder(b.values, a.values, by: query.sort) { return false }
        return a.id.rowID < b.id.rowID
    }
}
