import Foundation

// Typed live results with everything the string form has: remote sources, sections keyed by a
// property or a key path through to-one relationships, and changes of the condition and sort of
// a running observation.

extension Client {
    /// Live results of a typed query backed by a resource of the server, as
    /// ``observe(_:sectionedBy:reading:from:refresh:)`` observes a core query: the stored models
    /// at once, then, as `refresh` says, a refresh from `source` in the background, and the models
    /// again when its import commits, each state with the source's ``RemoteState``.
    ///
    /// ```swift
    /// let issues = try client.observe(Issue.self, sortedBy: [.descending(\.number)],
    ///                                 from: try .relationship(\.issues, of: repository), refresh: .ifOlderThan(.seconds(60)))
    /// ```
    public func observe<M: EntityModel>(
        _ type: M.Type, where predicate: ModelPredicate<M>? = nil, sortedBy sort: [ModelSort<M>] = [], depth: Int = 1,
        from source: RemoteSource, refresh policy: RefreshPolicy = .always
    ) throws -> ModelObservation<M> {
        ModelObservation(client: self, observation: observe(try query(M.self, where: predicate, sortedBy: sort), from: source, refresh: policy),
                         depth: depth)
    }

    /// Live results of a typed query in sections: consecutive models with the same value of
    /// `section`, a property (`\.state`) or a property reached through optional to-one
    /// relationships (`\.group?.title`). The results are sorted by it first (ascending) unless
    /// the first sort key is it; each state's ``ModelResults/sections`` holds the models of each
    /// section. With `source`, the results are remote-backed as in
    /// ``observe(_:where:sortedBy:depth:from:refresh:)``.
    ///
    /// ```swift
    /// for try await results in try client.observe(Item.self, sortedBy: [.ascending(\.name)], sectionedBy: \.group?.title) {
    ///     for section in results.sections { print(section.key ?? "none", section.models.map(\.name)) }
    /// }
    /// ```
    public func observe<M: EntityModel, K: Encodable & Sendable>(
        _ type: M.Type, where predicate: ModelPredicate<M>? = nil, sortedBy sort: [ModelSort<M>] = [],
        sectionedBy section: any KeyPath<M, K> & Sendable, depth: Int = 1,
        from source: RemoteSource? = nil, refresh policy: RefreshPolicy = .always
    ) throws -> ModelObservation<M> {
        let key = try modelLayout(M.self).requireAttributeName(of: section, for: "sectionedBy")
        let query = try query(M.self, where: predicate, sortedBy: sort)
        let observation = source.map { observe(query, sectionedBy: key, from: $0, refresh: policy) } ?? observe(query, sectionedBy: key)
        return ModelObservation(client: self, observation: observation, depth: depth)
    }
}

extension ModelObservation {
    /// Changes the condition and the sort of the running observation, typed (RSDataFetcher's
    /// `refreshRequestWithPredicate:andSortDescriptors:`); every iterator yields the new result
    /// with its difference to the last state it yielded. A nil sort keeps the current one; the
    /// section key stays first. Throws a ``ModelError`` for a key path that names no attribute,
    /// and changes nothing then.
    public func change(where predicate: ModelPredicate<Model>?, sortedBy sort: [ModelSort<Model>]? = nil) throws {
        let layout = try client.modelLayout(Model.self)
        let condition = try predicate?.build(layout)
        let keys = try sort?.map { try $0.build(layout) }
        observation.change(where: condition, sortedBy: keys)
    }

    /// Refreshes a remote-backed observation from its source now (see
    /// ``QueryObservation/refresh()``); does nothing without a source.
    public func refresh() async throws { try await observation.refresh() }

    /// The state of the remote source, for a remote-backed observation; nil otherwise.
    public var remoteState: RemoteState? { observation.remoteState }
}

/// The models of one section of a sectioned typed observation
/// (``Client/observe(_:where:sortedBy:sectionedBy:depth:from:refresh:)``).
public struct ModelSection<Model: EntityModel>: Sendable {
    /// The value of the section key its models share (nil when unset, and for the one section of
    /// results observed without a section key).
    public let key: Value?
    /// The section's models, in order.
    public let models: ArraySlice<Model>
    /// Where its models are among ``ModelResults/models``.
    public let range: Range<Int>
}

extension ModelResults {
    /// The models by section (one section when the observation has no section key).
    public var sections: [ModelSection<Model>] {
        snapshot.sections.map { ModelSection(key: $0.key, models: models[$0.range], range: $0.range) }
    }

    /// For a remote-backed observation, the state of its source at this state (loading, last
    /// refreshed, last error); nil otherwise.
    public var remoteState: RemoteState? { snapshot.remote }
}

extension RemoteSource {
    /// The list at `template`, whose variables are read from `owner` (a stored model: its
    /// object is found by identity at each refresh), every page of it, imported as the observed
    /// query's entity; see ``objects(at:for:deletingMissing:)-(_,ObjectID?,_)``.
    public static func objects<Owner: EntityModel>(at template: URLTemplate, for owner: Owner, deletingMissing: Bool = true) throws -> RemoteSource {
        let key = try ModelSourceKey(owner)
        return RemoteSource(key: "GET \(template.template) for \(key)", byQuery: { client, query in
            let id = try await client.requireObjectID(of: owner)
            _ = try await client.fetchObjects(query.entity, from: template, for: id,
                                              options: options(client, query, deletingMissing: deletingMissing))
        })
    }

    /// The models of `owner`'s to-many relationship (`\.issues`), set to exactly what the server
    /// lists at `template` (or the relationship's resource); see
    /// ``relationship(_:of:from:)-(String,ObjectID,_)``.
    public static func relationship<Owner: EntityModel, Target: EntityModel>(
        _ keyPath: any KeyPath<Owner, [Target]> & Sendable, of owner: Owner, from template: URLTemplate? = nil
    ) throws -> RemoteSource {
        let name = try ModelLayoutCache().layout(of: Owner.self).requireName(of: keyPath, for: "RemoteSource.relationship")
        let key = try ModelSourceKey(owner)
        return RemoteSource(key: "\(key).\(name)" + (template.map { " from \($0.template)" } ?? ""), byQuery: { client, _ in
            let id = try await client.requireObjectID(of: owner)
            var options = client.importOptions
            options.deleteMissing = .related(name, of: id)
            options.progress = nil
            _ = try await client.fetchRelationship(name, of: id, from: template, options: options)
        })
    }
}

/// The entity and identity of a model, as a source's key names its owner.
private struct ModelSourceKey: CustomStringConvertible {
    let description: String

    init<M: EntityModel>(_ model: M) throws {
        let layout = try ModelLayoutCache().layout(of: M.self)
        let encoded = try EncodedModel(model, layout: layout)
        let entity = try layout.entity(layouts: ModelLayoutCache())
        // Without a declared identity, `id` (as the client's identity strategy has it by default).
        let identity = entity.identity.isEmpty && entity.attribute(named: "id") != nil ? ["id"] : entity.identity
        let values = identity.compactMap { encoded.values[$0] }
        guard !identity.isEmpty, values.count == identity.count else {
            throw ModelError(.noIdentity, entity: M.entityName, "this \(M.self) has no identity: a remote source needs a stored owner")
        }
        description = "\(M.entityName)(" + values.map(\.description).joined(separator: ", ") + ")"
    }
}
