/// Live values of one object: an `AsyncSequence` that starts with the object as it is stored,
/// yields it again after each committed transaction that changed what the observer reads, and
/// yields nil, then ends, when the object is deleted (at once when it is not stored).
///
/// ```swift
/// for try await repository in client.observe(repositoryID) {
///     guard let repository else { break }    // deleted
///     show(repository)
/// }
/// ```
/// Iteration ends when the consuming task is cancelled.
public struct ObjectObservation: AsyncSequence, Sendable {
    public typealias Element = Object?

    let store: any Store
    let id: ObjectID
    /// The attributes the observer reads (nil: all of them).
    let properties: Set<String>?
    /// The attributes watched: `properties`, or all of the entity's.
    let watched: Set<String>

    public func makeAsyncIterator() -> Iterator {
        Iterator(observation: self, feed: ChangeFeed(store))
    }

    /// Iterates an ``ObjectObservation``: the object at once, then after each change that concerns
    /// what the observer reads; nil once the object is deleted, then the end. Each iterator has its
    /// own subscription to the store's changes.
    public struct Iterator: AsyncIteratorProtocol, Sendable {
        let observation: ObjectObservation
        let feed: ChangeFeed
        private var last: Object??  // nil: nothing yielded yet; .some(nil): deleted, ended

        init(observation: ObjectObservation, feed: ChangeFeed) {
            self.observation = observation
            self.feed = feed
        }

        public mutating func next() async throws -> Object?? {
            if Task.isCancelled { return nil }
            let id = observation.id
            switch last {
            case nil:
                let object = try await observation.store.read { try $0.object(id) }
                last = .some(object)
                return .some(object)
            case .some(nil):
                return nil
            case .some(let shown?):
                while true {
                    guard let pending = await feed.inbox.take() else { return nil }
                    guard let changes = pending.changes, changes.mayHaveChanged(id, properties: observation.watched) else { continue }
                    let object = try await observation.store.read { try $0.object(id) }
                    if let object, ResultsDifference.sameValues(shown, object, observation.properties) { continue }
                    last = .some(object)
                    return .some(object)
                }
            }
        }
    }
}

/// Live contents of one object's relationship: an `AsyncSequence` of ``ResultsSnapshot``s (one
/// section, in the relationship's order) that starts with the objects linked now and yields a
/// new snapshot, with its difference, after each committed transaction that links or unlinks
/// objects, or changes what the observer reads of a linked one. When the owner is deleted it
/// yields an empty snapshot and ends. Iteration ends when the consuming task is cancelled.
///
/// ```swift
/// for try await snapshot in client.observe("repositories", of: userID) {
///     print(snapshot.objects.compactMap { $0["name", as: String.self] })
/// }
/// ```
public struct RelationshipObservation: AsyncSequence, Sendable {
    public typealias Element = ResultsSnapshot

    let store: any Store
    let owner: ObjectID
    let relationship: String
    let properties: Set<String>?
    /// The attributes of linked objects watched: `properties`, or all of the destination's.
    let watched: Set<String>

    public func makeAsyncIterator() -> Iterator {
        Iterator(observation: self, feed: ChangeFeed(store))
    }

    /// Iterates a ``RelationshipObservation``: the linked objects at once, then a snapshot after
    /// each change that links, unlinks or changes what the observer reads of a linked object. Each
    /// iterator has its own subscription to the store's changes.
    public struct Iterator: AsyncIteratorProtocol, Sendable {
        let observation: RelationshipObservation
        let feed: ChangeFeed
        private var current: [Object]?
        private var ended = false

        init(observation: RelationshipObservation, feed: ChangeFeed) {
            self.observation = observation
            self.feed = feed
        }

        private func load() async throws -> [Object]? {
            let owner = observation.owner, relationship = observation.relationship
            return try await observation.store.read { reader -> [Object]? in
                guard try reader.object(owner) != nil else { return nil }
                return try reader.objects(reader.related(relationship, of: owner))
            }
        }

        public mutating func next() async throws -> ResultsSnapshot? {
            if Task.isCancelled || ended { return nil }
            guard let current else {
                let objects = try await load() ?? []
                self.current = objects
                var difference = ResultsDifference()
                difference.insertedSections = [0]
                return ResultsSnapshot(objects: objects, sections: ResultsSnapshot.sections(of: objects, key: nil), difference: difference)
            }
            let owner = observation.owner
            while true {
                guard let pending = await feed.inbox.take() else { return nil }
                guard let changes = pending.changes else { continue }
                let ownerChanged = changes.mayHaveChanged(owner, properties: [observation.relationship])
                let members = current.filter { object in
                    changes.mayHaveChanged(object.id, properties: observation.watched)
                }
                guard ownerChanged || !members.isEmpty else { continue }
                let loaded = try await load()
                if loaded == nil { ended = true }
                let next = loaded ?? []
                let sections = ResultsSnapshot.sections(of: next, key: nil)
                let difference = ResultsDifference.between(
                    old: current, ResultsSnapshot.sections(of: current, key: nil), new: next, sections,
                    touched: Set(members.map(\.id)), properties: observation.properties)
                self.current = next
                if difference.isEmpty && !ended { continue }
                return ResultsSnapshot(objects: next, sections: sections, difference: difference)
            }
        }
    }
}
