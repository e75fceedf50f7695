public import Tether

/// Typed remote operations for key-path mappings: fetch from a URL, create and save.
///
/// Each routes through the core operation of the same name on the mapping's entity (the models
/// become values with ``KeyPathMapping/values(of:)``, objects become models as `client.models(_:as:depth:)`
/// makes them), so URLs, request hooks, document formats, read-only properties, change tracking
/// and the outbox behave exactly as they do for `create(_:values:)` and `save(_:)`. Relationships
/// are read into models but not written from them: link objects with `relationship(_:of:)` or
/// `create(_:values:related:)`.
extension Client {
    /// GETs the list at `template` (every page), imports it as `mapping`'s entity and returns
    /// its models in the order of the list (`client.fetchObjects(_:from:for:options:)`).
    public func fetch<Model>(
        _ mapping: KeyPathMapping<Model>, from template: URLTemplate, for source: ObjectID? = nil,
        options: ImportOptions? = nil, depth: Int = 1
    ) async throws -> [Model] {
        try checkKeyPathEntity(mapping)
        let result = try await fetchObjects(mapping.entityName, from: template, for: source, options: options)
        return try await models(result.objects.map(\.id), as: mapping, depth: depth)
    }

    /// GETs one object at `template`, imports it as `mapping`'s entity and returns its model
    /// (`client.fetchObject(_:from:for:)`).
    public func fetchModel<Model>(
        _ mapping: KeyPathMapping<Model>, from template: URLTemplate, for source: ObjectID? = nil, depth: Int = 1
    ) async throws -> Model {
        try checkKeyPathEntity(mapping)
        let object = try await fetchObject(mapping.entityName, from: template, for: source)
        return try await requireKeyPathModel(object.id, mapping, depth: depth)
    }

    /// POSTs a new object with `model`'s mapped values (``KeyPathMapping/values(of:)``: an
    /// identity still at the default instance's value is left out) and returns the model of what
    /// the server answered (`client.create(_:values:related:options:)`).
    @discardableResult
    public func create<Model>(
        _ model: Model, as mapping: KeyPathMapping<Model>, options: ExportOptions = ExportOptions(), depth: Int = 1
    ) async throws -> Model {
        try checkKeyPathEntity(mapping)
        let object = try await create(mapping.entityName, values: mapping.values(of: model), options: options)
        return try await requireKeyPathModel(object.id, mapping, depth: depth)
    }

    /// Writes `model`'s mapped attributes into the stored object with its identity (a mapped
    /// attribute the model leaves unset is cleared), then saves it (`client.save(_:options:)`:
    /// a `PATCH` sends only what changed) and returns the model of the answer. A model whose
    /// identity names no stored object is a ``KeyPathMappingError`` (`.notStored`); nothing is sent.
    @discardableResult
    public func save<Model>(
        _ model: Model, as mapping: KeyPathMapping<Model>, options: ExportOptions = ExportOptions(), depth: Int = 1
    ) async throws -> Model {
        try checkKeyPathEntity(mapping)
        guard let identity = schema[mapping.entityName]?.identity, !identity.isEmpty else {
            throw KeyPathMappingError(.notStored, entity: mapping.entityName, member: nil,
                                      "\(mapping.entityName) has no identity: a model cannot name the object to save; nothing was sent")
        }
        let values = mapping.values(of: model)
        var key: [Value] = []
        for name in identity {
            guard let value = values[name] else {
                throw KeyPathMappingError(.notStored, entity: mapping.entityName, member: name,
                                          "the model's \(mapping.entityName).\(name) is not set: it names no stored object; nothing was sent")
            }
            key.append(value)
        }
        let identityKey = IdentityKey(key)
        let entityName = mapping.entityName
        guard let stored = try await store.read({ try $0.objects(entityName, identities: [identityKey])[identityKey] }) else {
            throw KeyPathMappingError(.notStored, entity: mapping.entityName, member: nil,
                                      "no stored \(mapping.entityName) has the model's identity (\(key.map(\.description).joined(separator: ", "))); nothing was sent")
        }
        let names = Set(mapping.attributeNames).subtracting(identity)
        let setting = values.filter { names.contains($0.key) && stored.values[$0.key] != $0.value }
        let clearing = names.filter { values[$0] == nil && stored.values[$0] != nil }
        if !setting.isEmpty || !clearing.isEmpty {
            try await updateLocally(stored.id, setting: setting, clearing: clearing)
        }
        let saved = try await save(stored.id, options: options)
        return try await requireKeyPathModel(saved.id, mapping, depth: depth)
    }

    private func requireKeyPathModel<Model>(_ id: ObjectID, _ mapping: KeyPathMapping<Model>, depth: Int) async throws -> Model {
        guard let model = try await models([id], as: mapping, depth: depth).first else {
            throw KeyPathMappingError(.notStored, entity: mapping.entityName, member: nil, "\(id) was deleted before its model was read")
        }
        return model
    }

    private func checkKeyPathEntity<Model>(_ mapping: KeyPathMapping<Model>) throws(KeyPathMappingError) {
        guard schema[mapping.entityName] != nil else {
            throw KeyPathMappingError(
                .unknownEntity, entity: mapping.entityName, member: nil,
                "the client's schema has no entity '\(mapping.entityName)'; build it with Client.Builder(models:)")
        }
    }
}
