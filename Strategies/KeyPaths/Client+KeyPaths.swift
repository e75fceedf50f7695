public import Foundation
public import Tether

/// Typed imports and fetches: the app's structs in, the app's structs out.
///
/// **Depth rule.** Models returned by these calls have their relationships filled `depth` levels
/// deep (default 1): the returned models carry their related models, and those related models
/// carry attributes only (their own relationships keep the default instance's values). Each
/// level makes one batched `StoreReader.related(_:of:)` call per relationship, never one
/// per object, and a finite depth means cycles (a user's repositories' owner) never recurse.
extension Client {
    /// Imports JSON bytes (an object or an array of objects) as `mapping`'s entity, in one
    /// transaction, and returns the top-level models in payload order (a repeated object appears
    /// once, where it first appeared).
    public func `import`<Model>(
        _ data: Data, as mapping: KeyPathMapping<Model>, depth: Int = 1, options: ImportOptions? = nil
    ) async throws -> [Model] {
        try await self.import(JSON(parsing: data), as: mapping, depth: depth, options: options)
    }

    /// Imports a parsed JSON value as `mapping`'s entity and returns the top-level models in
    /// payload order.
    public func `import`<Model>(
        _ json: JSON, as mapping: KeyPathMapping<Model>, depth: Int = 1, options: ImportOptions? = nil
    ) async throws -> [Model] {
        try checkEntity(mapping)
        let result = try await self.import(json, as: mapping.entityName, options: options)
        return try await models(Array(result.objects), as: mapping, depth: depth)
    }

    /// The models of `mapping`'s entity matching `predicate`, sorted and limited.
    public func fetch<Model>(
        _ mapping: KeyPathMapping<Model>, where predicate: KeyPathPredicate<Model>? = nil,
        sortedBy sort: [KeyPathSort<Model>] = [], limit: Int? = nil, offset: Int = 0, depth: Int = 1
    ) async throws -> [Model] {
        try checkEntity(mapping)
        let query = Query(
            mapping.entityName, where: try predicate.map(mapping.condition), sortedBy: try mapping.sort(sort),
            limit: limit, offset: offset)
        let depth = max(0, depth)
        return try await store.read { reader in
            let objects = try reader.fetch(query)
            let ids = objects.map(\.id)
            let models = try mapping.materialize(ids, reader: reader, depth: depth)
            return ids.compactMap { models[$0] }
        }
    }

    /// The model of the stored object of `mapping`'s entity with this identity (one value per
    /// identity attribute), or nil.
    public func model<Model>(_ mapping: KeyPathMapping<Model>, identity: any KeyPathValue..., depth: Int = 1) async throws -> Model? {
        try checkEntity(mapping)
        let key = IdentityKey(identity.compactMap(\.storedValue))
        let depth = max(0, depth)
        return try await store.read { reader in
            guard let object = try reader.objects(mapping.entityName, identities: [key])[key] else { return nil }
            return try mapping.materialize([object.id], reader: reader, depth: depth)[object.id]
        }
    }

    /// The models of these objects, in the same order; ids that no longer exist are skipped.
    /// Use it to turn an `ImportResult`'s `objects` into structs.
    public func models<Model>(_ ids: [ObjectID], as mapping: KeyPathMapping<Model>, depth: Int = 1) async throws -> [Model] {
        try checkEntity(mapping)
        let depth = max(0, depth)
        return try await store.read { reader in
            let models = try mapping.materialize(ids, reader: reader, depth: depth)
            return ids.compactMap { models[$0] }
        }
    }

    private func checkEntity<Model>(_ mapping: KeyPathMapping<Model>) throws(KeyPathMappingError) {
        guard schema[mapping.entityName] != nil else {
            throw KeyPathMappingError(
                .unknownEntity, entity: mapping.entityName, member: nil,
                "the client's schema has no entity '\(mapping.entityName)'; build it with Client.Builder(models:)")
        }
    }
}
