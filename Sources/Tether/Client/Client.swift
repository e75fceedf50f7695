public import Foundation

/// The client: a schema, the strategies chosen in a ``Builder``, a store and a transport.
///
/// Build one with ``Builder``; it is immutable and `Sendable`, so share it across tasks.
///
/// ```swift
/// let client = try Client.Builder(schema: schema).build()
/// let result = try await client.import(data, as: "User")
/// let users = try await client.fetch(Query("User", sortedBy: [.ascending("login")]))
/// ```
public final class Client: Sendable {
    /// The schema with every entity's identity resolved.
    public let schema: Schema
    /// Where every attribute and relationship of every entity lives in JSON, resolved once by
    /// ``Builder/build()``: `client.mapping["Repository"]?.keyPath(for: "fullName")` is `full_name`
    /// under Rails naming.
    public let mapping: Mapping
    /// The naming strategy the mapping was resolved with; URL templates also read foreign keys and
    /// resource paths through it.
    public let naming: any NamingStrategy
    /// Reads identity values from JSON (`12345` and `"12345"` alike, by default); which attributes
    /// identify each entity is already resolved into ``schema``.
    public let identityStrategy: any IdentityStrategy
    /// The store every import, read and observation goes through, prepared with ``schema``. Use it
    /// directly for what the client does not wrap
    /// (`try await client.store.read { try $0.ids(query) }`).
    public let store: any Store
    /// The default transport, or nil when the builder set none: a request of an entity without a
    /// transport of its own then throws a ``RequestError`` (`.noTransport`).
    public let transport: (any Transport)?
    /// The transports set for single entities, by entity name; each wins over ``transport`` for
    /// its entity's requests (see ``transport(for:)``).
    public let entityTransports: [String: any Transport]
    /// What relative URL templates (`/users/:login`) are appended to; nil when every template is
    /// absolute (a relative one then throws a ``RequestError``, `.invalidURL`).
    public let baseURL: URL?
    /// How date attributes are read from JSON, and written in request bodies.
    public let dateDecoding: DateDecoding
    /// The converters of `.transformable(name)` attributes, by name (each checked by `build()`).
    public let transformers: [String: any AttributeTransformer]
    /// The options of every import, fetch and refresh given none (`options: nil`).
    public let importOptions: ImportOptions
    /// The extensions added with ``Builder/extending(with:)``, checked by `build()`, in the order
    /// added; look one up by type with ``extension(_:)``.
    public let extensions: [any ClientExtension]
    /// Request hooks, resource URLs and paging.
    public let remote: RemoteConfiguration
    /// Whether writes send at once or go through the ``outbox`` (``Builder/writes(_:)``).
    public let writeMode: WriteMode

    /// The mapping prepared for the import engine, once per client.
    let importPlans: ImportPlans
    /// The nested objects the last import remembered for the next (``RememberedObjects``).
    let importMemory = RememberedSlot()
    /// The refreshes of remote-backed observations, by source.
    let refreshes = RemoteRefreshes()
    /// The validators of the one-page lists this client fetched, by URL (the most recent ones).
    let listValidators: ListValidators
    /// The layouts of the typed models this client has read or written.
    let modelLayouts: ModelLayoutCache
    /// The states this client handed out as typed models: what a struct may have been read with.
    let modelReads: ModelReads
    /// Where ``ClientEvent``s go.
    let events: EventHandlers
    /// One flush of the outbox at a time.
    let flushGate = FlushGate()

    init(builder: Builder, schema: Schema, mapping: Mapping) {
        self.schema = schema
        self.mapping = mapping
        self.importPlans = EntityPlan.plans(for: mapping)
        self.naming = builder.naming
        self.identityStrategy = builder.identity
        self.store = builder.store
        self.transport = builder.transport
        self.entityTransports = builder.entityTransports
        self.baseURL = builder.baseURL
        self.dateDecoding = builder.dateDecoding
        self.transformers = builder.transformers
        self.importOptions = builder.importOptions
        self.extensions = builder.extensions
        self.remote = builder.remote
        self.writeMode = builder.writeMode
        self.listValidators = ListValidators(limit: builder.remote.listValidatorLimit)
        self.modelLayouts = builder.modelLayouts.copy()
        self.modelReads = ModelReads(capacity: builder.rememberedReadLimit)
        self.events = builder.eventHandlers
    }

    /// The extension of type `E` added with ``Builder/extending(with:)``.
    public func `extension`<E: ClientExtension>(_ type: E.Type) -> E? {
        extensions.lazy.compactMap { $0 as? E }.first
    }

    /// The transport for `entity`: its own if one was set, else the default.
    public func transport(for entity: String?) -> (any Transport)? {
        entity.flatMap { entityTransports[$0] } ?? transport
    }

    // MARK: Import

    /// Imports JSON bytes (an object or an array of objects) as `entity`, in one transaction.
    ///
    /// The objects are found as a fetch finds them in a response, by the entity's
    /// ``ResponseShape`` (``Builder/responseShape(_:for:)-(_,String?)``): a top-level array is the
    /// list itself; an object is read by the shape, so that an envelope
    /// (`{"object": "list", "data": [...]}` under `.keyPath("data")`, DRF's page under the
    /// default) gives its objects, and an object that is neither one of the entity's (it lacks
    /// the identity) nor a declared envelope is an ``ImportError``, never an import of nothing.
    @discardableResult
    public func `import`(_ data: Data, as entity: String, options: ImportOptions? = nil) async throws -> ImportResult {
        defer { (options ?? importOptions).progress?.finish() }
        // A top-level object is read by the response shape on the tape (an envelope's array is
        // imported from the bytes, as a bare array is); only a custom shape, whose closure takes
        // a tree, needs the tree.
        let shape = remote.responseShape(for: entity)
        let isObject = Self.isObject(data)
        guard data.count <= JSONTape.maximumSize, !(isObject && shape.isCustom) else {
            return try await self.import(JSON(parsing: data), as: entity, options: options)
        }
        // The entity's identity, for the shape's check that an object is the entity's (nil: the
        // bytes go to the importer as they come).
        let identity = isObject && mapping[entity] != nil ? identityKeyPaths(entity) : nil
        // The bytes are checked as they are read (as `JSON(parsing:)` would check them), a batch
        // at a time: a syntax error anywhere rolls the whole import back.
        let importer = try Importer(client: self, options: options ?? importOptions, remembering: true)
        return try await writeImport(entity, bytes: data.count, importer: importer, { writer in
            try data.withUnsafeBytes { raw in
                try importer.run(bytes: raw.bindMemory(to: UInt8.self), as: entity, in: writer, payload: identity.map { identity in
                    { body in
                        try shape.objects(in: body, entity: entity, identity: identity, list: true, what: "the payload imported as \(entity)") ?? body
                    }
                })
            }
        }, result: { $0 })
    }

    /// Imports a parsed JSON value (an object or an array of objects) as `entity`, in one
    /// transaction; an object is read by the entity's response shape, as
    /// ``import(_:as:options:)-(Data,_,_)`` says.
    @discardableResult
    public func `import`(_ json: JSON, as entity: String, options: ImportOptions? = nil) async throws -> ImportResult {
        defer { (options ?? importOptions).progress?.finish() }
        let json = try payload(json, as: entity)
        let importer = try Importer(client: self, options: options ?? importOptions, remembering: true)
        return try await writeImport(entity, importer: importer, { writer in
            try importer.run([(entity, json)], in: writer)
        }, result: { $0 })
    }

    /// Imports a JSON file as `entity`, in one transaction, streaming it: the elements of a
    /// top-level array are read and imported ``ImportOptions/batchSize`` at a time, so memory
    /// stays bounded however large the file is. A file holding an object is read whole, by the
    /// entity's response shape (see ``import(_:as:options:)-(Data,_,_)``).
    @discardableResult
    public func `import`(contentsOf url: URL, as entity: String, options: ImportOptions? = nil) async throws -> ImportResult {
        defer { (options ?? importOptions).progress?.finish() }
        let importer = try Importer(client: self, options: options ?? importOptions, remembering: true)
        let stream = JSONStream(contentsOf: url)
        return try await writeImport(entity, importer: importer, { [self] writer in
            // Read where the store's transaction runs, off the cooperative pool.
            if try !Self.isObject(fileAt: url) { return try importer.run(stream, as: entity, in: writer) }
            let json = try payload(JSON(parsing: Data(contentsOf: url)), as: entity)
            return try importer.run([(entity, json)], in: writer)
        }, result: { $0 })
    }

    /// The objects an import of `json` as `entity` reads: a top-level array (or anything but an
    /// object) as it is; an object by the entity's response shape, as a list fetch reads a response (an envelope gives its
    /// objects; an object that is neither of the entity nor a declared envelope is an
    /// ``ImportError``).
    func payload(_ json: JSON, as entity: String) throws -> JSON {
        // Anything but an object (an array, null, a scalar) is the importer's to take or refuse.
        guard case .object = json, mapping[entity] != nil else { return json }
        return try objects(in: json, as: entity, request: "the payload imported as \(entity)")
    }

    /// Whether JSON bytes hold a top-level object: their first byte past a UTF-8 byte order
    /// mark and white space is `{`. Anything else goes to the importer as it comes.
    static func isObject<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        var rest = bytes[...]
        if rest.starts(with: [0xEF, 0xBB, 0xBF]) { rest = rest.dropFirst(3) }
        return rest.first { !($0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09) } == UInt8(ascii: "{")
    }

    /// Whether a JSON file holds a top-level object; reads its first bytes.
    static func isObject(fileAt url: URL) throws -> Bool {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        var head = Data()
        while let chunk = try handle.read(upToCount: 4096), !chunk.isEmpty {
            head.append(chunk)
            let significant = head.drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 || $0 == 0xEF || $0 == 0xBB || $0 == 0xBF }
            if !significant.isEmpty { return isObject(head) }
        }
        return false
    }

    /// Runs an import's write transaction and reports it to the event handlers once it has
    /// committed (``ClientEvent/imported(_:)``) or failed (``ClientEvent/failure(_:)``).
    func writeImport<T: Sendable>(
        _ entity: String, bytes: Int? = nil, importer: Importer? = nil, _ body: @Sendable (any StoreWriter) throws -> T, result: (T) -> ImportResult
    ) async throws -> T {
        /// The transaction; what the import remembered is kept once it has committed.
        func write() async throws -> T {
            let value = try await store.write(body)
            importer?.keepRemembered()
            return value
        }
        guard events.isActive else { return try await write() }
        let start = ContinuousClock.now
        do {
            let value = try await write()
            events.emit(.imported(ImportEvent(entity: entity, result: result(value), duration: start.duration(to: .now), bytes: bytes)))
            return value
        } catch {
            events.emit(.failure(FailureEvent(operation: .import, entity: entity, error: error)))
            throw error
        }
    }

    /// How an import into a parent's relationship treats the objects already linked there.
    public enum ParentLink: Sendable, Hashable {
        /// The relationship is set to exactly the payload's objects, in payload order (the
        /// objects no longer listed are unlinked, or deleted with ``ImportOptions/deleteMissing``
        /// scoped `.related(relationship, of: parent)`).
        case replacing
        /// The payload's objects are added after those linked already.
        case adding
    }

    /// Imports JSON bytes as the objects of one parent's relationship (a user's repositories),
    /// without HTTP, in one transaction: the objects are imported as ``import(_:as:options:)-(Data,_,_)``
    /// imports them, then linked to `parent` through `relationship`, replacing what is linked or
    /// adding to it.
    ///
    /// ```swift
    /// try await client.import(data, as: "Repository", into: "repositories", of: user.id,
    ///                         options: ImportOptions(deleteMissing: .related("repositories", of: user.id)))
    /// ```
    @discardableResult
    public func `import`(
        _ data: Data, as entity: String, into relationship: String, of parent: ObjectID, _ link: ParentLink = .replacing,
        options: ImportOptions? = nil
    ) async throws -> ImportResult {
        defer { (options ?? importOptions).progress?.finish() }
        let toMany = try checkParent(relationship, of: parent, entity: entity)
        if Self.isObject(data) {
            return try await self.import(JSON(parsing: data), as: entity, into: relationship, of: parent, link, options: options)
        }
        let importer = try Importer(client: self, options: options ?? importOptions, remembering: true)
        return try await writeImport(entity, bytes: data.count, importer: importer, { writer in
            try Self.checkStored(parent, writer)
            let result = try data.withUnsafeBytes { raw in
                try importer.run(bytes: raw.bindMemory(to: UInt8.self), as: entity, in: writer)
            }
            try Self.link(result, into: relationship, of: parent, link, toMany: toMany, writer)
            return result
        }, result: { $0 })
    }

    /// Imports a parsed JSON value as the objects of one parent's relationship; see
    /// ``import(_:as:into:of:_:options:)-(Data,_,_,_,_,_)``.
    @discardableResult
    public func `import`(
        _ json: JSON, as entity: String, into relationship: String, of parent: ObjectID, _ link: ParentLink = .replacing,
        options: ImportOptions? = nil
    ) async throws -> ImportResult {
        defer { (options ?? importOptions).progress?.finish() }
        let toMany = try checkParent(relationship, of: parent, entity: entity)
        let json = try payload(json, as: entity)
        let importer = try Importer(client: self, options: options ?? importOptions, remembering: true)
        return try await writeImport(entity, importer: importer, { writer in
            try Self.checkStored(parent, writer)
            let result = try importer.run([(entity, json)], in: writer)
            try Self.link(result, into: relationship, of: parent, link, toMany: toMany, writer)
            return result
        }, result: { $0 })
    }

    /// Whether the relationship to import into is to-many; throws when it cannot hold `entity`.
    private func checkParent(_ relationship: String, of parent: ObjectID, entity: String) throws -> Bool {
        guard let declared = schema[parent.entity]?.relationship(named: relationship) else {
            throw ImportError(path: .root, entity: parent.entity, attribute: relationship,
                              message: "\(parent.entity) has no relationship '\(relationship)' to import into")
        }
        guard declared.destination == entity else {
            throw ImportError(path: .root, entity: entity, attribute: relationship,
                              message: "\(parent.entity).\(relationship) holds \(declared.destination) objects, not \(entity)")
        }
        return declared.isToMany
    }

    private static func checkStored(_ parent: ObjectID, _ writer: any StoreWriter) throws {
        guard try writer.object(parent) != nil else {
            throw StoreError(.objectNotFound, entity: parent.entity, "\(parent), the parent to import into, is not stored")
        }
    }

    private static func link(
        _ result: ImportResult, into relationship: String, of parent: ObjectID, _ link: ParentLink, toMany: Bool, _ writer: any StoreWriter
    ) throws {
        var targets = Array(result.objects)
        if !toMany {
            // A to-one relationship holds the last object of the payload; adding replaces too.
            if let last = targets.last {
                targets = [last]
            } else if link == .adding {
                targets = try writer.related(relationship, of: parent)
            }
        } else if link == .adding {
            let linked = try writer.related(relationship, of: parent)
            let known = Set(linked)
            targets = linked + targets.filter { !known.contains($0) }
        }
        try writer.setRelated(relationship, of: parent, to: targets)
    }

    /// Imports several payloads, each as its entity, in one transaction (a multi-entity envelope).
    @discardableResult
    public func `import`(_ payloads: [(entity: String, json: JSON)], options: ImportOptions? = nil) async throws -> ImportResult {
        defer { (options ?? importOptions).progress?.finish() }
        let importer = try Importer(client: self, options: options ?? importOptions, remembering: true)
        let payloads = payloads.map { ($0.entity, $0.json) }
        return try await writeImport(payloads.first?.0 ?? "", importer: importer, { writer in
            try importer.run(payloads, in: writer)
        }, result: { $0 })
    }

    // MARK: Reading

    /// The stored objects that match `query`, in its order (ties, and a query without sort, in
    /// order of insertion), within its limit and offset. Reads the last committed state; throws a
    /// ``StoreError`` for an unknown entity, attribute or relationship in the query.
    ///
    /// ```swift
    /// let open = try await client.fetch(Query("Issue", where: .equal("state", "open"), sortedBy: [.descending("createdAt")]))
    /// ```
    public func fetch(_ query: Query) async throws -> [Object] {
        try await store.read { try $0.fetch(query) }
    }

    /// The stored objects of `F`'s entity that match `condition`, in `sort` order, as typed
    /// objects (`user.login`); throws as ``fetch(_:)`` throws.
    public func fetch<F: ObjectFields>(_ type: TypedObject<F>.Type, where condition: Condition? = nil, sortedBy sort: [Sort] = []) async throws -> [TypedObject<F>] {
        try await fetch(Query(F.entityName, where: condition, sortedBy: sort)).compactMap(TypedObject<F>.init)
    }

    /// How many stored objects match `query`'s entity and condition (its limit and offset are
    /// ignored), counted by the store without reading them; throws as ``fetch(_:)`` throws.
    public func count(_ query: Query) async throws -> Int {
        try await store.read { try $0.count(query) }
    }

    /// The stored object with this id, or nil when it is not stored (deleted, or never inserted).
    public func object(_ id: ObjectID) async throws -> Object? {
        try await store.read { try $0.object(id) }
    }

    /// The stored object of `entity` with this identity (one value per identity attribute),
    /// read as an import reads identities: `.string("12")` finds the object whose int64 `id` is 12.
    /// A value that cannot be such an identity (`.string("x")` for an integer) throws a
    /// ``StoreError`` (`.typeMismatch`).
    public func object(_ entity: String, identity: Value...) async throws -> Object? {
        let key = try identityKey(entity, identity)
        return try await store.read { try $0.objects(entity, identities: [key])[key] }
    }

    /// The identity key of `values` for `entity`, each value converted as an import converts an
    /// identity (the ``IdentityStrategy``, then the date formats for a date).
    func identityKey(_ entity: String, _ values: [Value]) throws -> IdentityKey {
        guard let identity = mapping[entity]?.identity else {
            throw StoreError(.unknownEntity, entity: entity, "unknown entity '\(entity)'")
        }
        guard identity.count == values.count else {
            throw StoreError(.typeMismatch, entity: entity,
                             "\(entity) is identified by \(identity.count) value(s) (\(identity.map(\.name).joined(separator: ", "))), \(values.count) given")
        }
        let importer = try Importer(client: self, options: importOptions)
        return IdentityKey(try zip(identity, values).map { attribute, value in
            if attribute.type.accepts(value) { return value }
            let json: JSON? = switch value {
            case .string(let s): .string(s)
            case .int(let i): .int(i)
            case .double(let d): .double(d)
            case .bool(let b): .bool(b)
            default: nil
            }
            guard let json, let converted = importer.identityValue(json, for: attribute) else {
                throw StoreError(.typeMismatch, entity: entity, member: attribute.name,
                                 "\(value) cannot be the \(attribute.type) identity '\(attribute.name)' of \(entity)")
            }
            return converted
        })
    }

    /// The objects linked to `id` through `relationship`.
    public func related(_ relationship: String, of id: ObjectID) async throws -> [Object] {
        try await store.read { reader in try reader.objects(reader.related(relationship, of: id)) }
    }

    // MARK: Local changes

    /// Deletes an object locally, applying the schema's delete rules (cascade, deny, nullify).
    public func deleteLocally(_ id: ObjectID) async throws {
        let schema = self.schema
        try await store.write { writer in try DeleteRules.delete(id, schema: schema, in: writer) }
    }
}
