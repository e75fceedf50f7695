extension Client {
    /// Live results of `query`: the current result at once, then a snapshot with its difference
    /// after each committed transaction that changes it. See ``QueryObservation``.
    ///
    /// - Parameters:
    ///   - query: the entity, condition, sort and window to observe; change it later with
    ///     ``QueryObservation/change(where:sortedBy:)`` or ``QueryObservation/change(_:)``.
    ///   - sectionKey: an attribute that groups the results in sections; the results are sorted
    ///     by it first (ascending) unless the query's first sort key is it.
    ///   - properties: the attributes the observer reads (nil: all of them). A change of any other
    ///     attribute of an object in the result yields nothing.
    ///
    /// An unknown entity or attribute is reported by the first `next()`.
    public func observe(_ query: Query, sectionedBy sectionKey: String? = nil, reading properties: Set<String>? = nil) -> QueryObservation {
        QueryObservation(store: store, schema: schema,
                         request: ObservedRequest(query: query, sectionKey: sectionKey, properties: properties))
    }

    /// Live results of `query` backed by a resource of the server (AFIncrementalStore's idea):
    /// the local result at once, then, as `refresh` says, a refresh from `source` in the
    /// background, and a snapshot when its import commits. Every snapshot carries the source's
    /// ``RemoteState`` (loading, last refreshed, last error); a change of it alone yields a
    /// snapshot with an empty difference. A failed refresh keeps the local results and says why
    /// in ``RemoteState/lastError``. A refresh deletes what the server no longer lists within the
    /// query's condition (see ``RemoteSource``), so the list ends equal to the server's.
    /// Observers of the same source share one request; ``QueryObservation/refresh()`` refreshes
    /// on demand.
    ///
    /// ```swift
    /// let repositories = client.observe(Query("Repository", sortedBy: [.descending("stars")]),
    ///                                   from: .objects(at: "/users/:login/repos", for: user.id), refresh: .ifOlderThan(.seconds(60)))
    /// ```
    public func observe(
        _ query: Query, sectionedBy sectionKey: String? = nil, reading properties: Set<String>? = nil,
        from source: RemoteSource, refresh policy: RefreshPolicy = .always
    ) -> QueryObservation {
        QueryObservation(store: store, schema: schema,
                         request: ObservedRequest(query: query, sectionKey: sectionKey, properties: properties),
                         remote: QueryObservation.Remote(source: source, policy: policy, client: self))
    }

    /// Live values of one object: the object at once (nil when it is not stored), again after each
    /// committed change of an attribute the observer reads (`properties`, nil: all of them), and
    /// nil, then the end, when it is deleted. See ``ObjectObservation``.
    public func observe(_ id: ObjectID, reading properties: Set<String>? = nil) -> ObjectObservation {
        let all = Set(schema[id.entity]?.attributes.map(\.name) ?? [])
        return ObjectObservation(store: store, id: id, properties: properties, watched: properties ?? all)
    }

    /// Live contents of one object's relationship, in its order: the linked objects at once, then
    /// a snapshot with its difference after each committed transaction that links, unlinks or
    /// changes (in `properties`, nil: all attributes) a linked object. See
    /// ``RelationshipObservation``.
    public func observe(_ relationship: String, of owner: ObjectID, reading properties: Set<String>? = nil) throws -> RelationshipObservation {
        guard let declared = schema[owner.entity]?.relationship(named: relationship) else {
            throw StoreError(.unknownRelationship, entity: owner.entity, member: relationship,
                             "cannot observe '\(relationship)': \(owner.entity) has no such relationship")
        }
        let all = Set(schema[declared.destination]?.attributes.map(\.name) ?? [])
        return RelationshipObservation(store: store, owner: owner, relationship: relationship, properties: properties,
                                       watched: properties ?? all)
    }
}
