public import Foundation

extension Client {
    /// Composes a schema and the strategies into a ``Client``.
    ///
    /// Builders are values: every method returns a modified copy, so a test can start from a
    /// shared builder and swap the transport or the store.
    ///
    /// ```swift
    /// let client = try Client.Builder(schema: schema)
    ///     .naming(.rails)
    ///     .keyMapping(KeyOverrides(["Repository": ["repositoryDescription": "description"]]))
    ///     .transport(URLSessionTransport())
    ///     .baseURL(URL(string: "https://api.github.com")!)
    ///     .build()
    /// ```
    ///
    /// Defaults: verbatim naming, identity by the attribute `id` (or the entity's declared
    /// identity), an ``InMemoryStore``, ISO 8601 and Unix-timestamp dates, no transport.
    public struct Builder: Sendable {
        /// The entities of the client: the schema given to ``init(schema:)``, or the one derived
        /// from the models; `build()` resolves each entity's identity into it.
        public var schema: Schema
        /// How property names become JSON keys, foreign keys and resource paths
        /// (``VerbatimNaming`` by default: a property's name is its key).
        public var naming: any NamingStrategy = VerbatimNaming()
        /// Per-entity key overrides, asked in order before the naming strategy: for each property,
        /// the first mapping that answers wins. `init(models:)` puts the models' own keys first.
        public var keyMappings: [any KeyMapping] = []
        /// Which attributes identify each entity, and how identity values are read from JSON
        /// (``AttributeIdentity``: an entity's declared identity, else its attribute `id`).
        public var identity: any IdentityStrategy = AttributeIdentity()
        /// Where objects are kept (a new ``InMemoryStore`` by default); `build()` prepares it with
        /// the schema.
        public var store: any Store = InMemoryStore()
        /// The transport of every entity without one of its own; nil by default (no requests).
        public var transport: (any Transport)?
        /// Transports for single entities, by entity name, winning over ``transport``.
        public var entityTransports: [String: any Transport] = [:]
        /// What relative URL templates are appended to; nil by default.
        public var baseURL: URL?
        /// How date attributes are read and written (``DateDecoding/default``: ISO 8601 strings
        /// and Unix seconds).
        public var dateDecoding: DateDecoding = .default
        /// The converters of `.transformable(name)` attributes, by name.
        public var transformers: [String: any AttributeTransformer] = [:]
        /// The options of every import, fetch and refresh given none (``ImportOptions``' defaults
        /// unless set).
        public var importOptions: ImportOptions = ImportOptions()
        /// The extensions added with ``extending(with:)``, one per type, checked by `build()`.
        public var extensions: [any ClientExtension] = []
        /// Request hooks, resource URLs and paging (see Remote/RemoteConfiguration.swift).
        public var remote = RemoteConfiguration()
        /// Whether writes send at once or go through the outbox (``writes(_:)``;
        /// ``WriteMode/immediate`` by default).
        public var writeMode: WriteMode = .immediate
        /// The schema migrations, oldest first, that the store applies before preparing for the
        /// schema (``migrations(_:)``).
        public var migrations: [SchemaMigration] = []
        /// The layouts of the model types probed by ``init(models:entities:)``.
        /// How many rows of typed reads the client remembers, so that a typed save sends only
        /// what the app changed (``Client/Builder/rememberedReads(_:)``): 200,000 by default.
        public var rememberedReadLimit: Int = 200_000
        var modelLayouts = ModelLayoutCache()
        /// The handlers added with ``onEvent(_:)``.
        var eventHandlers = EventHandlers()
        /// Errors of typed registrations (a key path that names no property), thrown by `build()`.
        var deferredErrors: [ModelError] = []

        /// A builder for a schema written by hand, with the defaults above; nothing is checked
        /// before ``build()``.
        ///
        /// ```swift
        /// let schema = try Schema {
        ///     Entity("User") {
        ///         Attribute("id", .int64)
        ///         Attribute("login", .string)
        ///     }
        /// }
        /// let client = try Client.Builder(schema: schema).build()
        /// ```
        public init(schema: Schema) { self.schema = schema }

        /// A builder for typed models (``EntityModel``): the schema is derived from the models
        /// (plus any hand-declared `entities`), with what their descriptions say (JSON keys,
        /// foreign keys, read-only properties) added to the builder.
        ///
        /// ```swift
        /// let client = try Client.Builder(models: [User.self, Repository.self]).build()
        /// ```
        public init(models: [any EntityModel.Type], entities: [Entity] = []) throws {
            let layouts = ModelLayoutCache()
            self.init(schema: try Schema(models: models, entities: entities, layouts: layouts))
            modelLayouts = layouts
            for model in models {
                func describe<M: EntityModel>(_ type: M.Type) throws {
                    let layout = try layouts.layout(of: M.self)
                    let overrides = try layout.keyOverrides()
                    if !overrides.table.isEmpty || !overrides.foreignKeys.isEmpty || !overrides.fallbacks.isEmpty || !overrides.ignoringNull.isEmpty
                        || !overrides.dateFormats.isEmpty
                    {
                        keyMappings.append(overrides)
                    }
                    let readOnly = try layout.readOnlyNames()
                    if !readOnly.isEmpty { remote.readOnly[M.entityName, default: []].formUnion(readOnly) }
                }
                try describe(model)
            }
        }

        /// Sets how property names become JSON keys, foreign keys and resource paths: `.verbatim`
        /// (the default) or `.rails` from `TetherRails` (`createdAt` ↔ `created_at`). Key mappings
        /// still win for the properties they name.
        public func naming(_ naming: some NamingStrategy) -> Self { with { $0.naming = naming } }
        /// Adds a key mapping; mappings added earlier win over later ones.
        public func keyMapping(_ mapping: some KeyMapping) -> Self { with { $0.keyMappings.append(mapping) } }
        /// Sets which attributes identify each entity and how identity values are read:
        /// `.attribute("id")` by default, `.attribute("id", overrides: ["Issue": ["number"]])` for
        /// an entity identified otherwise. `build()` throws a ``ConfigurationError``
        /// (`.invalidIdentity`) for an identity that names no attribute.
        public func identity(_ identity: some IdentityStrategy) -> Self { with { $0.identity = identity } }
        /// Sets the store: an ``InMemoryStore`` by default, `SQLiteStore` (`TetherSQLite`) to keep
        /// objects in a file. `build()` prepares it with the schema and throws a
        /// ``ConfigurationError`` (`.store`) when its stored data cannot follow the schema.
        public func store(_ store: some Store) -> Self { with { $0.store = store } }
        /// Declares the schema migrations, oldest first: the steps that bring data stored by an
        /// earlier release to this schema (renames, type and identity changes). `build()` has the
        /// store apply those it has not applied yet, once per file, with the schema's additions, in
        /// one transaction; a store that does not apply steps refuses them (see Docs/Stores.md).
        public func migrations(_ migrations: [SchemaMigration]) -> Self { with { $0.migrations = migrations } }
        /// The default transport for every entity.
        public func transport(_ transport: some Transport) -> Self { with { $0.transport = transport } }
        /// A transport for one entity, overriding the default.
        public func transport(_ transport: some Transport, for entity: String) -> Self {
            with { $0.entityTransports[entity] = transport }
        }
        /// Sets what relative URL templates are appended to: `/users/:login` under
        /// `https://example.com/api` is `https://example.com/api/users/octocat` (the base's path is
        /// kept). Templates starting with `http://` or `https://` ignore it.
        public func baseURL(_ url: URL) -> Self { with { $0.baseURL = url } }
        /// Sets how date attributes are read from JSON (formats tried in order) and written in
        /// request bodies: `DateDecoding([.format("yyyy-MM-dd HH:mm"), .secondsSince1970])`. An
        /// attribute with formats of its own (``KeyMapping/dateDecoding(for:in:)``,
        /// ``ModelDescription/dateFormats(_:_:)``) uses those instead.
        public func dateDecoding(_ decoding: DateDecoding) -> Self { with { $0.dateDecoding = decoding } }
        /// Registers the transformer used by attributes of type `.transformable(name)`.
        public func transformer(_ transformer: some AttributeTransformer, named name: String) -> Self {
            with { $0.transformers[name] = transformer }
        }
        /// Sets the options of every import, fetch and refresh given none (`options: nil`). A call's
        /// own options replace these whole, not field by field.
        ///
        /// ```swift
        /// builder.importOptions(ImportOptions(policy: .fail, coercion: .strict))
        /// ```
        public func importOptions(_ options: ImportOptions) -> Self { with { $0.importOptions = options } }
        /// Adds an extension (a route table, say), validated at `build()` and reachable through
        /// ``Client/extension(_:)``. A second extension of the same type replaces the first.
        public func extending(with ext: some ClientExtension) -> Self {
            with { builder in
                builder.extensions.removeAll { type(of: $0) == type(of: ext) }
                builder.extensions.append(ext)
            }
        }

        /// Adds a handler of the client's ``ClientEvent``s: requests, retries, imports and failures,
        /// without secrets. Handlers run synchronously after the work they report, in the order
        /// added; keep them short. See Docs/Observability.md for adapters to swift-log and
        /// swift-metrics.
        public func onEvent(_ handler: @escaping @Sendable (ClientEvent) -> Void) -> Self {
            with { $0.eventHandlers.handlers.append(handler) }
        }

        private func with(_ change: (inout Self) -> Void) -> Self {
            var copy = self
            change(&copy)
            return copy
        }

        /// Checks the configuration and builds the client. Throws a ``ConfigurationError`` naming
        /// the entity and property at fault.
        public func build() throws -> Client {
            if let error = deferredErrors.first { throw error }
            let resolved: Schema
            do {
                resolved = try schema.resolvingIdentities { identity.identityAttributes(for: $0) }
            } catch {
                throw ConfigurationError(.invalidIdentity, entity: error.entity, member: error.member, error.message)
            }
            for mapping in keyMappings { try mapping.validate(against: resolved) }
            for entity in resolved.entities {
                for attribute in entity.attributes {
                    if case .transformable(let name) = attribute.type, transformers[name] == nil {
                        throw ConfigurationError(
                            .missingTransformer, entity: entity.name, member: attribute.name,
                            "\(entity.name).\(attribute.name) uses transformer '\(name)', which is not registered")
                    }
                }
            }
            for entity in entityTransports.keys.sorted() where resolved[entity] == nil {
                throw ConfigurationError(.unknownEntity, entity: entity, "a transport is set for unknown entity '\(entity)'")
            }
            let mapping = try resolveMapping(resolved)
            try remote.validate(schema: resolved, mapping: mapping, naming: naming)
            do {
                // Tether's own entities (pending references, the outbox) go into the store beside the model's.
                try store.prepare(for: resolved.addingTetherEntities(), migrations: migrations)
            } catch let error as SchemaError {
                throw ConfigurationError(.invalidIdentity, entity: error.entity, member: error.member, error.message)
            } catch let error as StoreError {
                throw ConfigurationError(.store, entity: error.entity, member: error.member, error.message)
            }
            let client = Client(builder: self, schema: resolved, mapping: mapping)
            for ext in extensions { try ext.validate(for: client) }
            return client
        }

        private func resolveMapping(_ schema: Schema) throws(ConfigurationError) -> Mapping {
            var entities: [String: EntityMapping] = [:]
            for entity in schema.entities {
                func keyPath(_ name: String) -> JSONKeyPath {
                    for mapping in keyMappings {
                        if let path = mapping.keyPath(for: name, in: entity.name) { return path }
                    }
                    return JSONKeyPath(components: [naming.jsonKey(for: name, in: entity.name)])
                }
                func fallbacks(_ name: String) -> [JSONKeyPath] {
                    var paths = keyMappings.flatMap { $0.fallbackKeyPaths(for: name, in: entity.name) }
                    paths += naming.fallbackKeys(for: name, in: entity.name).map { JSONKeyPath(components: [$0]) }
                    var seen: Set<JSONKeyPath> = [keyPath(name)]
                    return paths.filter { seen.insert($0).inserted }
                }
                var attributes = entity.attributes.map { AttributeMapping(attribute: $0, keyPath: keyPath($0.name)) }
                var relationships = entity.relationships.map { relationship in
                    // The foreign key follows the relationship's JSON key: mapped to "labels",
                    // the model's `tags` travel as ids under "label_ids" (the naming's foreign key
                    // of the name the JSON key stands for), not "tag_ids".
                    var named = relationship
                    let path = keyPath(relationship.name)
                    if path.isSingleKey, let key = path.components.first, key != naming.jsonKey(for: relationship.name, in: entity.name) {
                        named.name = naming.modelName(for: key, in: entity.name)
                    }
                    var foreignKey = naming.foreignKey(for: named, in: entity.name)
                    for mapping in keyMappings {
                        if let key = mapping.foreignKey(for: relationship.name, in: entity.name) {
                            foreignKey = key
                            break
                        }
                    }
                    var mapping = RelationshipMapping(relationship: relationship, keyPath: path, foreignKey: foreignKey)
                    mapping.fallbackKeyPaths = fallbacks(relationship.name)
                    return mapping
                }
                for index in attributes.indices {
                    let name = attributes[index].name
                    attributes[index].fallbackKeyPaths = fallbacks(name)
                    attributes[index].ignoresNull = keyMappings.contains { $0.ignoresNull(for: name, in: entity.name) }
                    attributes[index].dateDecoding = keyMappings.lazy.compactMap { $0.dateDecoding(for: name, in: entity.name) }.first
                    if let decoding = attributes[index].dateDecoding {
                        try KeyOverrides.checkDateAttribute(entity.name, name, decoding, in: schema)
                    }
                }
                var seen: [JSONKeyPath: String] = [:]
                for (name, path) in attributes.map({ ($0.name, $0.keyPath) }) + relationships.map({ ($0.name, $0.keyPath) }) {
                    if let other = seen[path] {
                        throw ConfigurationError(
                            .conflictingKeys, entity: entity.name, member: name,
                            "\(entity.name).\(other) and \(entity.name).\(name) both map to the JSON key '\(path)'")
                    }
                    seen[path] = name
                }
                // A fallback never reads another property's own key (nor a foreign key).
                let primary = Set(seen.keys).union(relationships.map { JSONKeyPath(components: [$0.foreignKey]) })
                for index in attributes.indices { attributes[index].fallbackKeyPaths.removeAll { primary.contains($0) } }
                for index in relationships.indices { relationships[index].fallbackKeyPaths.removeAll { primary.contains($0) } }
                let identity = entity.identity.compactMap { name in attributes.first { $0.name == name } }
                entities[entity.name] = EntityMapping(
                    entity: entity, resourcePath: naming.resourcePath(for: entity.name),
                    attributes: attributes, relationships: relationships, identity: identity)
            }
            return Mapping(entities: entities)
        }
    }
}

/// Something a strategy module adds to the client (a route table, say): validated when the client
/// is built and reachable from the client afterwards with ``Client/extension(_:)``.
public protocol ClientExtension: Sendable {
    /// Throw (preferably a ``ConfigurationError``) when the extension does not fit the client.
    func validate(for client: Client) throws
}

extension ClientExtension {
    public func validate(for client: Client) throws {}
}
