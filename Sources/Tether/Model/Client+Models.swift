public import Foundation

/// Typed models: the app's ``EntityModel`` structs in, the app's structs out, over the same
/// engine as the string API (each call below is one of the string calls with the names filled in
/// from the model).
///
/// **Depth rule.** Models returned by these calls have their relationships filled `depth` levels
/// deep (default 1): the returned models carry their related models, and those carry attributes
/// only (an optional to-one is nil, an array of models empty). Each level makes one batched
/// ``StoreReader/related(_:of:)`` call per relationship, never one per object, and a finite depth
/// keeps cycles (a user's repositories' owner) from recursing.
extension Client {
    // MARK: Import and read

    /// Imports JSON bytes (an object or an array of objects) as `type`'s entity, in one
    /// transaction, and returns the top-level models in payload order (a repeated object appears
    /// once, where it first appeared).
    @discardableResult
    public func `import`<M: EntityModel>(_ data: Data, as type: M.Type, depth: Int = 1, options: ImportOptions? = nil) async throws -> [M] {
        try await importReport(data, as: type, depth: depth, options: options).models
    }

    /// Imports a parsed JSON value as `type`'s entity and returns the top-level models in payload order.
    @discardableResult
    public func `import`<M: EntityModel>(_ json: JSON, as type: M.Type, depth: Int = 1, options: ImportOptions? = nil) async throws -> [M] {
        try await importReport(json, as: type, depth: depth, options: options).models
    }

    /// Imports JSON bytes as `type`'s entity, as ``import(_:as:depth:options:)-(Data,_,_,_)``
    /// does, and returns the models with the import's report: what was inserted, updated and
    /// left unchanged, and the ``ImportDiagnostic``s of what was skipped and why.
    ///
    /// ```swift
    /// let imported = try await client.importReport(data, as: Repository.self)
    /// for diagnostic in imported.report.diagnostics { print(diagnostic) }   // "$[3].stargazers_count (Repository.stars): …"
    /// ```
    public func importReport<M: EntityModel>(
        _ data: Data, as type: M.Type, depth: Int = 1, options: ImportOptions? = nil
    ) async throws -> ModelImport<M> {
        _ = try modelLayout(M.self)
        // The bytes go the string form's way (read as they are mapped), not through a JSON tree.
        let result = try await self.import(data, as: M.entityName, options: options)
        return ModelImport(models: try await models(Array(result.objects), as: M.self, depth: depth), report: result)
    }

    /// ``importReport(_:as:depth:options:)-(Data,_,_,_)`` of a parsed JSON value.
    public func importReport<M: EntityModel>(
        _ json: JSON, as type: M.Type, depth: Int = 1, options: ImportOptions? = nil
    ) async throws -> ModelImport<M> {
        _ = try modelLayout(M.self)
        let result = try await self.import(json, as: M.entityName, options: options)
        return ModelImport(models: try await models(Array(result.objects), as: M.self, depth: depth), report: result)
    }

    /// The models matching `predicate`, sorted and limited.
    public func fetch<M: EntityModel>(
        _ type: M.Type, where predicate: ModelPredicate<M>? = nil, sortedBy sort: [ModelSort<M>] = [],
        limit: Int? = nil, offset: Int = 0, depth: Int = 1
    ) async throws -> [M] {
        let query = try self.query(M.self, where: predicate, sortedBy: sort, limit: limit, offset: offset)
        let reader = modelReader
        return try await store.read { store in
            try reader.fetch(query, as: M.self, reader: store, depth: max(0, depth))
        }
    }

    /// The number of stored objects of `type`'s entity matching `predicate`.
    public func count<M: EntityModel>(_ type: M.Type, where predicate: ModelPredicate<M>? = nil) async throws -> Int {
        try await count(query(M.self, where: predicate, sortedBy: [], limit: nil, offset: 0))
    }

    /// The core query of a typed fetch: use it to observe or to mix with the string API.
    public func query<M: EntityModel>(
        _ type: M.Type, where predicate: ModelPredicate<M>? = nil, sortedBy sort: [ModelSort<M>] = [],
        limit: Int? = nil, offset: Int = 0
    ) throws -> Query {
        let layout = try modelLayout(M.self)
        return Query(M.entityName, where: try predicate?.build(layout), sortedBy: try sort.map { try $0.build(layout) },
                     limit: limit, offset: offset)
    }

    /// The stored model with this identity (one value per identity attribute, converted as an
    /// import converts identities: `"12"` finds the object whose integer `id` is 12), or nil.
    public func model<M: EntityModel>(_ type: M.Type, identity: any Encodable & Sendable..., depth: Int = 1) async throws -> M? {
        _ = try modelLayout(M.self)
        var values: [Value] = []
        for value in identity {
            guard let stored = try ValueConversion.encode(any: value) else {
                throw ModelError(.noIdentity, entity: M.entityName, "an identity value of \(M.self) is nil")
            }
            values.append(stored)
        }
        let key = try identityKey(M.entityName, values)
        let reader = modelReader
        return try await store.read { store in
            guard let object = try store.objects(M.entityName, identities: [key])[key] else { return nil }
            return try reader.models(of: [object], as: M.self, reader: store, depth: max(0, depth))[object.id]
        }
    }

    /// The models of these objects, in the same order; ids that no longer exist are skipped.
    /// Use it to turn an ``ImportResult``'s or a ``ResultsSnapshot``'s objects into structs.
    public func models<M: EntityModel>(_ ids: [ObjectID], as type: M.Type, depth: Int = 1) async throws -> [M] {
        let reader = modelReader
        return try await store.read { store in
            let models = try reader.models(ids, as: M.self, reader: store, depth: max(0, depth))
            return ids.compactMap { models[$0] }
        }
    }

    /// The stored object a model stands for, found by its identity; nil when the model has no
    /// identity yet or nothing with it is stored.
    public func objectID<M: EntityModel>(of model: M) async throws -> ObjectID? {
        let layout = try modelLayout(M.self)
        guard let key = try identityKey(of: model, layout: layout) else { return nil }
        return try await store.read { try $0.objects(M.entityName, identities: [key])[key]?.id }
    }

    /// Whether two models stand for the same stored object: both have identity values and they
    /// are equal, as the store compares identities (strings by their bytes). Two copies of one
    /// struct read at different times, or a struct and the one a save returned, are the same
    /// whatever else differs; a model without identity values yet (an unsaved create) is the same
    /// as no other. The store is not read. Throws ``ModelError/Kind/noIdentity`` when the entity
    /// has no identity attribute at all.
    public func isSame<M: EntityModel>(_ first: M, _ second: M) throws -> Bool {
        let layout = try modelLayout(M.self)
        guard let a = try identityKey(of: first, layout: layout), let b = try identityKey(of: second, layout: layout) else { return false }
        return a == b
    }

    /// The model a to-one relationship of `model` leads to, read from the store.
    public func related<M: EntityModel, D: EntityModel>(
        _ keyPath: any KeyPath<M, D?> & Sendable, of model: M, depth: Int = 1
    ) async throws -> D? {
        let models: [D] = try await relatedModels(keyPath, of: model, depth: depth)
        return models.first
    }

    /// The models a to-many relationship of `model` leads to, read from the store (in the
    /// relationship's order when it is ordered).
    public func related<M: EntityModel, D: EntityModel>(
        _ keyPath: any KeyPath<M, [D]> & Sendable, of model: M, depth: Int = 1
    ) async throws -> [D] {
        try await relatedModels(keyPath, of: model, depth: depth)
    }

    private func relatedModels<M: EntityModel, D: EntityModel, V: Encodable & Sendable>(
        _ keyPath: any KeyPath<M, V> & Sendable, of model: M, depth: Int
    ) async throws -> [D] {
        let name = try modelLayout(M.self).requireName(of: keyPath, for: "related")
        let id = try await requireObjectID(of: model)
        let reader = modelReader
        return try await store.read { store in
            let targets = try store.related(name, of: id)
            let models = try reader.models(targets, as: D.self, reader: store, depth: max(0, depth))
            return targets.compactMap { models[$0] }
        }
    }

    // MARK: Server

    /// GETs a list (every page) from a URL template and imports it in one transaction; returns
    /// the listed models in the list's order. `"/users/octocat/repos"`, or a template whose
    /// variables `source` fills: `client.fetch(Issue.self, from: "/repos/:fullName/issues", for: repository)`.
    public func fetch<M: EntityModel>(
        _ type: M.Type, from template: URLTemplate, options: ImportOptions? = nil, depth: Int = 1
    ) async throws -> [M] {
        _ = try modelLayout(M.self)
        let result = try await fetchObjects(M.entityName, from: template, options: options)
        return try await models(result.objects.map(\.id), as: M.self, depth: depth)
    }

    /// GETs a list from a URL template whose variables `source`'s properties fill.
    public func fetch<M: EntityModel, S: EntityModel>(
        _ type: M.Type, from template: URLTemplate, for source: S, options: ImportOptions? = nil, depth: Int = 1
    ) async throws -> [M] {
        _ = try modelLayout(M.self)
        let id = try await requireObjectID(of: source)
        let result = try await fetchObjects(M.entityName, from: template, for: id, options: options)
        return try await models(result.objects.map(\.id), as: M.self, depth: depth)
    }

    /// GETs one object from a URL template, imports it (find-or-create by identity, then update)
    /// and returns the stored model: `client.fetchModel(User.self, from: "/user")`. See
    /// ``fetchObject(_:from:for:)``.
    public func fetchModel<M: EntityModel>(_ type: M.Type, from template: URLTemplate, depth: Int = 1) async throws -> M {
        _ = try modelLayout(M.self)
        let object = try await fetchObject(M.entityName, from: template)
        return try await requireModel(object.id, as: M.self, depth: depth)
    }

    /// GETs one object from a URL template whose variables `source`'s properties fill
    /// (`/repos/:fullName` for a stored repository), imports it and returns the stored model.
    public func fetchModel<M: EntityModel, S: EntityModel>(
        _ type: M.Type, from template: URLTemplate, for source: S, depth: Int = 1
    ) async throws -> M {
        _ = try modelLayout(M.self)
        let object = try await fetchObject(M.entityName, from: template, for: try await requireObjectID(of: source))
        return try await requireModel(object.id, as: M.self, depth: depth)
    }

    /// GETs one object from a URL template filled with plain values (a login typed by the user,
    /// an id from a deep link; each escaped as one path segment), imports it and returns the
    /// stored model: `client.fetchModel(User.self, at: "/users/:login", values: ["login": .string("octocat")])`.
    public func fetchModel<M: EntityModel>(
        _ type: M.Type, at template: URLTemplate, values: [String: Value], depth: Int = 1
    ) async throws -> M {
        _ = try modelLayout(M.self)
        let object = try await fetchObject(M.entityName, at: template, values: values)
        return try await requireModel(object.id, as: M.self, depth: depth)
    }

    /// GETs the list of a to-many relationship of `model` (from the relationship's URL, or
    /// `template`), imports it and sets the relationship to exactly that list, in one
    /// transaction (see ``fetchRelationship(_:of:from:options:)``).
    public func fetch<M: EntityModel, D: EntityModel>(
        _ keyPath: any KeyPath<M, [D]> & Sendable, of model: M, from template: URLTemplate? = nil,
        options: ImportOptions? = nil, depth: Int = 1
    ) async throws -> [D] {
        let name = try modelLayout(M.self).requireName(of: keyPath, for: "fetch(_:of:)")
        let id = try await requireObjectID(of: model)
        let result = try await fetchRelationship(name, of: id, from: template, options: options)
        return try await models(result.objects.map(\.id), as: D.self, depth: depth)
    }

    /// POSTs a new object made from `model` to its collection URL and imports the answer; returns
    /// the stored model (with the identity the server assigned). An identity property that is nil
    /// is not sent; neither is a read-only one. Related models (an optional model, an array of
    /// models) must be stored already: they are linked, and URL templates can follow them
    /// (`/repos/:repository.fullName/issues`). Nothing is stored unless the server accepts it.
    @discardableResult
    public func create<M: EntityModel>(_ model: M, options: ExportOptions = ExportOptions(), depth: Int = 1) async throws -> M {
        let layout = try modelLayout(M.self)
        let encoded = try EncodedModel(model, layout: layout)
        let related = try await relatedIDs(of: encoded, layout: layout)
        let object = try await create(M.entityName, values: encoded.values, related: related, options: options)
        return try await requireModel(object.id, as: M.self, depth: depth)
    }

    /// Writes what the app changed in `model` (its attributes, and its non-nil to-one
    /// relationships) into its stored object and sends it with the entity's save method (a
    /// `PATCH` of what changed, see ``save(_:options:)``). A property set to nil clears the
    /// attribute.
    ///
    /// **A struct is compared with what it was read with, not with the store.** The client
    /// remembers the values it handed out as models; a property whose value differs from the
    /// store's but is one this client read for it is the struct's age (the store has since moved
    /// on, another client's change brought by a refresh), so it is neither written nor sent, and
    /// the store's newer value stays. Only what the app changed is sent. (To set a property back
    /// to a value an earlier read had, over a newer one, use
    /// ``updateLocally(_:setting:clearing:relating:)`` and ``save(_:options:)``.) A save that
    /// succeeds makes the model it returns the app's copy. Relationships are never
    /// cleared by a save, and to-many relationships are not written: a model read at depth 0 has
    /// empty arrays that say nothing about the server; change them with
    /// ``relationship(_:of:)->ModelRelationship<M,D>``.
    @discardableResult
    public func save<M: EntityModel>(_ model: M, options: ExportOptions = ExportOptions(), depth: Int = 1) async throws -> M {
        let id = try await writeLocally(model)
        let object = try await save(id, options: options)
        modelReads.forget(id)
        return try await requireModel(object.id, as: M.self, depth: depth)
    }

    /// Saves `model` over the server's version named by `conflict` (a ``ConflictError`` of an
    /// earlier save): the local changes win.
    @discardableResult
    public func save<M: EntityModel>(
        _ model: M, overriding conflict: ConflictError, options: ExportOptions = ExportOptions(), depth: Int = 1
    ) async throws -> M {
        let id = try await writeLocally(model)
        let object = try await save(id, overriding: conflict, options: options)
        modelReads.forget(id)
        return try await requireModel(object.id, as: M.self, depth: depth)
    }

    /// Writes `model` into its stored object without sending anything (see
    /// ``updateLocally(_:setting:clearing:relating:)``); returns the object's id.
    @discardableResult
    public func updateLocally<M: EntityModel>(_ model: M) async throws -> ObjectID {
        try await writeLocally(model)
    }

    /// DELETEs `model`'s object on the server, then locally (with its delete rules); returns
    /// the HTTP status (see ``delete(_:)-(ObjectID)``).
    @discardableResult
    public func delete<M: EntityModel>(_ model: M) async throws -> Int {
        try await delete(try await requireObjectID(of: model))
    }

    /// GETs `model`'s object from its item URL, merges the answer and returns the stored model.
    public func refresh<M: EntityModel>(_ model: M, depth: Int = 1) async throws -> M {
        let object = try await refresh(try await requireObjectID(of: model))
        return try await requireModel(object.id, as: M.self, depth: depth)
    }

    /// The remote operations of a to-many relationship of `model`: list, add, remove.
    public func relationship<M: EntityModel, D: EntityModel>(
        _ keyPath: any KeyPath<M, [D]> & Sendable, of model: M
    ) -> ModelRelationship<M, D> {
        ModelRelationship(client: self, source: model, name: { try $0.requireName(of: keyPath, for: "relationship") })
    }

    // MARK: Observation

    /// Live results of a typed query: the models at once, then again after each committed
    /// transaction that changes the result, with the difference for a table view. See
    /// ``observe(_:sectionedBy:reading:)``.
    public func observe<M: EntityModel>(
        _ type: M.Type, where predicate: ModelPredicate<M>? = nil, sortedBy sort: [ModelSort<M>] = [], depth: Int = 1
    ) throws -> ModelObservation<M> {
        ModelObservation(client: self, observation: observe(try query(M.self, where: predicate, sortedBy: sort)), depth: depth)
    }

    // MARK: Helpers

    var modelReader: ModelReader { ModelReader(schema: schema, layouts: modelLayouts, reads: modelReads) }

    func modelLayout<M: EntityModel>(_ type: M.Type) throws(ModelError) -> ModelLayout<M> {
        try modelLayouts.layout(of: M.self, in: schema)
    }

    private func identityKey<M: EntityModel>(of model: M, layout: ModelLayout<M>) throws -> IdentityKey? {
        let encoded = try EncodedModel(model, layout: layout)
        guard let identity = schema[M.entityName]?.identity, !identity.isEmpty else {
            throw ModelError(.noIdentity, entity: M.entityName, "\(M.entityName) has no identity attribute: its models cannot be found by value")
        }
        var values: [Value] = []
        for name in identity {
            guard let value = encoded.values[name] else { return nil }
            values.append(value)
        }
        return IdentityKey(values)
    }

    func requireObjectID<M: EntityModel>(of model: M) async throws -> ObjectID {
        let layout = try modelLayout(M.self)
        guard let key = try identityKey(of: model, layout: layout) else {
            throw ModelError(.noIdentity, entity: M.entityName, "this \(M.self) has no identity yet: create it first")
        }
        guard let id = try await store.read({ try $0.objects(M.entityName, identities: [key])[key]?.id }) else {
            throw ModelError(.notStored, entity: M.entityName, "no \(M.entityName) with identity \(key) is stored")
        }
        return id
    }

    private func requireModel<M: EntityModel>(_ id: ObjectID, as type: M.Type, depth: Int) async throws -> M {
        guard let model = try await models([id], as: M.self, depth: depth).first else {
            throw RequestError(.objectNotFound, entity: M.entityName, "\(id) vanished after the request")
        }
        return model
    }

    /// The ids of the stored objects `encoded`'s related models stand for, by relationship.
    private func relatedIDs<M: EntityModel>(of encoded: EncodedModel, layout: ModelLayout<M>, toMany: Bool = true) async throws -> [String: [ObjectID]] {
        var related: [String: [ObjectID]] = [:]
        for (name, target) in encoded.toOne { related[name] = [try await requireObjectID(ofAny: target)] }
        if toMany {
            for (name, targets) in encoded.toMany where !targets.isEmpty {
                var ids: [ObjectID] = []
                for target in targets { ids.append(try await requireObjectID(ofAny: target)) }
                related[name] = ids
            }
        }
        return related
    }

    private func requireObjectID(ofAny model: any EntityModel) async throws -> ObjectID {
        func find<D: EntityModel>(_ model: D) async throws -> ObjectID { try await requireObjectID(of: model) }
        return try await find(model)
    }

    /// Writes what the app changed in `model` into its stored object: each attribute whose value
    /// differs from the store's (and each non-nil to-one relationship whose target does), except
    /// a value this client handed out for it in a typed read (``ModelReads``): that is what a
    /// stale struct was read with, and the store's newer value (another client's change, brought
    /// by a refresh) stays, and is not sent back over.
    private func writeLocally<M: EntityModel>(_ model: M) async throws -> ObjectID {
        let layout = try modelLayout(M.self)
        let id = try await requireObjectID(of: model)
        let encoded = try EncodedModel(model, layout: layout)
        let identity = Set(schema[M.entityName]?.identity ?? [])
        let related = try await relatedIDs(of: encoded, layout: layout, toMany: false)
        let reads = modelReads.states(of: id)
        let written = try await store.write { [self] writer -> Set<String> in
            guard let stored = try writer.object(id)?.values else {
                throw RequestError(.objectNotFound, entity: id.entity, "\(id) is not in the store")
            }
            func changed(_ name: String, _ value: Value?) -> Bool {
                guard !identity.contains(name), stored[name] != value else { return false }
                // A value read before and since replaced in the store: the struct's age.
                return !reads.contains { $0.value(of: name) == .some(value) }
            }
            let values = encoded.values.filter { changed($0.key, $0.value) }
            let cleared = encoded.nulls.filter { name in
                layout[member: name].map { !$0.isRelationship } == true && changed(name, nil)
            }
            // A to-one target read before and since replaced in the store: the same.
            var relating = related
            for (name, targets) in related {
                guard let target = targets.first, try writer.related(name, of: id).first != target else { continue }
                if reads.contains(where: { $0.leads(name, to: target) }) { relating[name] = nil }
            }
            try updateLocally(id, setting: values, clearing: cleared, relating: relating, in: writer)
            return Set(values.keys).union(cleared).union(relating.keys)
        }
        modelReads.forget(written, of: id)
        return id
    }
}

/// The remote operations of one to-many relationship of one model
/// (``Client/relationship(_:of:)->ModelRelationship<M,D>``).
public struct ModelRelationship<Model: EntityModel, Destination: EntityModel>: Sendable {
    let client: Client
    let source: Model
    let name: @Sendable (ModelLayout<Model>) throws -> String

    private func resource() async throws -> RelationshipResource {
        let name = try self.name(try client.modelLayout(Model.self))
        return client.relationship(name, of: try await client.requireObjectID(of: source))
    }

    /// GETs every page of the relationship's URL, imports the models and sets the relationship
    /// to exactly them; returns them in the list's order.
    @discardableResult
    public func list(depth: Int = 1) async throws -> [Destination] {
        let result = try await resource().list()
        return try await client.models(result.objects.map(\.id), as: Destination.self, depth: depth)
    }

    /// POSTs `target` to the relationship's URL, merges the answer (it gets the identity the
    /// server assigns when it had none) and links it; returns the stored model.
    @discardableResult
    public func add(_ target: Destination, options: ExportOptions = ExportOptions(), depth: Int = 1) async throws -> Destination {
        let resource = try await resource()
        let targetID: ObjectID
        if let stored = try await client.objectID(of: target) {
            targetID = stored
        } else {
            let layout = try client.modelLayout(Destination.self)
            let encoded = try EncodedModel(target, layout: layout)
            targetID = try await client.insertLocally(Destination.entityName, values: encoded.values).id
        }
        let object = try await resource.add(targetID, options: options)
        guard let model = try await client.models([object.id], as: Destination.self, depth: depth).first else {
            throw RequestError(.objectNotFound, entity: Destination.entityName, "\(object.id) vanished after the request")
        }
        return model
    }

    /// DELETEs the link on the server and unlinks `target` locally; returns how many objects
    /// were deleted locally (0 when only the link went).
    @discardableResult
    public func remove(_ target: Destination) async throws -> Int {
        try await resource().remove(try await client.requireObjectID(of: target))
    }
}

/// Live results of a typed query (``Client/observe(_:where:sortedBy:depth:)``): an
/// `AsyncSequence` of ``ModelResults``, the first at once.
public struct ModelObservation<Model: EntityModel>: AsyncSequence, Sendable {
    public typealias Element = ModelResults<Model>
    let client: Client
    /// The core observation underneath (its query can be changed while observed).
    public let observation: QueryObservation
    let depth: Int

    public func makeAsyncIterator() -> Iterator { Iterator(client: client, base: observation.makeAsyncIterator(), depth: depth) }

    /// One observer of a ``ModelObservation``: made by `for try await`, it follows the store's
    /// changes from then on. `next()` returns the models at once, then the next state after each
    /// committed change to the results (changes it has not read yet are merged into one), and
    /// nil once the task is cancelled.
    public struct Iterator: AsyncIteratorProtocol, Sendable {
        let client: Client
        var base: QueryObservation.Iterator
        let depth: Int
        /// The state this iterator yielded last (at depth 0, whose models the next state reuses).
        var last: ModelResults<Model>?

        init(client: Client, base: QueryObservation.Iterator, depth: Int) {
            self.client = client
            self.base = base
            self.depth = depth
        }

        public mutating func next() async throws -> ModelResults<Model>? {
            guard let snapshot = try await base.next() else { return nil }
            let layout = try client.modelLayout(Model.self)
            func flat(_ object: Object) throws -> Model {
                try Model(from: ObjectDecoder(object: object, layout: layout, related: [:], depth: 0))
            }
            let models: [Model]
            if depth == 0 {
                // A model is its object's values: the objects the difference leaves untouched
                // keep the models of the last state, and only the others are decoded.
                let reused = last.flatMap { Self.untouched(from: $0, to: snapshot) } ?? []
                let lastModels = last?.models ?? []
                var decoded: [Object] = []
                var built: [Model] = []
                built.reserveCapacity(snapshot.objects.count)
                var position = 0
                while position < snapshot.objects.count {
                    // A run of models reused in order is copied at once.
                    if !reused.isEmpty, reused[position] >= 0 {
                        let start = reused[position]
                        var end = position + 1
                        while end < reused.count, reused[end] == start + (end - position) { end += 1 }
                        built.append(contentsOf: lastModels[start..<(start + end - position)])
                        position = end
                        continue
                    }
                    decoded.append(snapshot.objects[position])
                    built.append(try flat(snapshot.objects[position]))
                    position += 1
                }
                models = built
                client.modelReads.record(decoded)
                last = ModelResults(models: models, snapshot: snapshot)
            } else {
                let reader = client.modelReader, ids = snapshot.objects.map(\.id), depth = self.depth
                let read = try await client.store.read { try reader.models(ids, as: Model.self, reader: $0, depth: depth) }
                // An object deleted since the snapshot keeps its place, with the snapshot's values
                // (its next state comes with the change that deleted it).
                models = try snapshot.objects.map { try read[$0.id] ?? flat($0) }
            }
            return ModelResults(models: models, snapshot: snapshot)
        }

        /// For each position of `snapshot`, the position in `last` of the model that stands for
        /// its object unchanged, or -1 where the difference says the object is new, moved or
        /// updated (or in a section that is new): the objects left untouched keep their order, so
        /// they are the last state's objects minus those deleted, moved or in a deleted section,
        /// in order. Nil for the whole state when the untouched objects do not line up by id
        /// (then every model is decoded).
        static func untouched(from last: ModelResults<Model>, to snapshot: ResultsSnapshot) -> [Int]? {
            let change = snapshot.difference
            func flat(_ index: ResultIndex, _ sections: [ResultsSnapshot.Section]) -> Int? {
                sections.indices.contains(index.section) ? sections[index.section].range.lowerBound + index.item : nil
            }
            let old = last.snapshot.sections, new = snapshot.sections
            let before = last.snapshot.objects, after = snapshot.objects
            // Flags by position (old: gone or renewed; new: touched), not sets: a state of 10,000
            // objects with 100 changes hashes nothing.
            var gone = [Bool](repeating: false, count: before.count), renewed = gone
            var touched = [Bool](repeating: false, count: after.count)
            func mark(_ flags: inout [Bool], _ position: Int?) {
                if let position, flags.indices.contains(position) { flags[position] = true }
            }
            for section in change.deletedSections where old.indices.contains(section) {
                for position in old[section].range { mark(&gone, position) }
            }
            for section in change.insertedSections where new.indices.contains(section) {
                for position in new[section].range { mark(&touched, position) }
            }
            for index in change.deleted { mark(&gone, flat(index, old)) }
            for move in change.moved {
                mark(&gone, flat(move.from, old))
                mark(&touched, flat(move.to, new))
            }
            for index in change.inserted { mark(&touched, flat(index, new)) }
            // Updated in place: kept in order, decoded again.
            for index in change.updated { mark(&renewed, flat(index, old)) }
            var result = [Int](repeating: -1, count: after.count)
            var j = 0
            for position in after.indices where !touched[position] {
                while j < before.count && gone[j] { j += 1 }
                guard j < before.count, before[j].id == after[position].id else { return nil }
                if !renewed[j] { result[position] = j }
                j += 1
            }
            return result
        }
    }
}

/// One state of a ``ModelObservation``: the models, and the core snapshot with its sections and
/// its difference from the previous state.
public struct ModelResults<Model: EntityModel>: Sendable {
    /// The models in the result's order, one per object of the snapshot. With depth above 0,
    /// relationships are read after the snapshot; an object deleted meanwhile has its snapshot's
    /// values and no relationships here (and is gone in the next state).
    public let models: [Model]
    /// The core state the models were read from: the objects, their sections, and the remote
    /// state of a remote-backed observation.
    public let snapshot: ResultsSnapshot
    /// What changed since the previous state, by position in the results (the snapshot's
    /// ``ResultsSnapshot/difference``): apply it to a table or list view.
    public var difference: ResultsDifference { snapshot.difference }
}

/// What a typed import gave (``Client/importReport(_:as:depth:options:)-(Data,_,_,_)``): the
/// top-level models in payload order, and the import's report.
public struct ModelImport<Model: EntityModel>: Sendable {
    /// The top-level models, in payload order (a repeated object once, where it first appeared).
    public var models: [Model]
    /// What the import did: the objects inserted, updated and unchanged, those deleted, and the
    /// diagnostics of what it skipped.
    public var report: ImportResult

    /// A result with these values (for stubs in tests).
    public init(models: [Model], report: ImportResult) {
        self.models = models
        self.report = report
    }
}
