public import Foundation
public import Tether

/// RSAPI's configuration in one value: the routes, the development and production base URLs,
/// and the per-entity JSON id keys and property exceptions.
///
/// ```swift
/// let table = RouteTable(
///     development: URL(string: "http://localhost:8000")!,
///     production: URL(string: "https://api.example.com")!,
///     keys: ["User": EntityKeys(id: "user_id", properties: ["avatarSm": "avatar_sm"])]
/// ) {
///     Route("getUser", .get, "/api/users/:id", entity: "User")
///     Route("stats", .get, "/api/stats", kind: .data)
///     Route("sync", .get, "/api/sync", kind: .envelope)
/// }
/// let client = try Client.Builder(schema: schema)
///     .routes(table)
///     .environment(.development)
///     .transport(transport)
///     .build()
/// let result = try await client.call("getUser", parameters: ["id": 42])
/// ```
///
/// Registered with ``Tether/Client/Builder/routes(_:)`` and checked by
/// `Client.Builder.build()`: duplicate route names, malformed templates, unknown
/// entities and path variables that name no attribute of the route's entity are
/// `ConfigurationError`s.
///
/// **Path variables** name an attribute of the route's entity, written either as the model name
/// (`:avatarSm`) or as its JSON key under the client's mapping (`:avatar_sm`, `:user_id`), or as
/// the foreign key of a relationship (`:group_id`). Routes without an entity (data and envelope
/// routes may have none) accept any variable.
public struct RouteTable: ClientExtension, Sendable {
    /// The routes, in declaration order; names are unique (checked by `build()`).
    public var routes: [Route]
    /// The base URL of each environment; the builder's ``Tether/Client/Builder/environment(_:)``
    /// picks one (production by default) and makes it the client's `baseURL`.
    public var baseURLs: [Environment: URL]
    /// Per-entity JSON id key and property exceptions.
    public var keys: [String: EntityKeys]

    /// A table of `routes`, with a base URL per environment (any environment you name) and the
    /// per-entity key exceptions.
    public init(baseURLs: [Environment: URL] = [:], keys: [String: EntityKeys] = [:], routes: [Route]) {
        self.baseURLs = baseURLs
        self.keys = keys
        self.routes = routes
    }

    /// A table whose routes are declared one per line (`if` and `for` may choose or repeat them),
    /// with the base URLs of development and production and the per-entity key exceptions.
    public init(
        development: URL? = nil, production: URL? = nil, keys: [String: EntityKeys] = [:],
        @RouteTableBuilder routes: () -> [Route]
    ) {
        var urls: [Environment: URL] = [:]
        urls[.development] = development
        urls[.production] = production
        self.init(baseURLs: urls, keys: keys, routes: routes())
    }

    /// The route named `name`.
    public subscript(name: String) -> Route? { routes.first { $0.name == name } }

    /// A deployment of the API: development, production, or one you name.
    public struct Environment: Hashable, Sendable, CustomStringConvertible {
        /// The environment's name (`development`, `production`, or yours).
        public let name: String
        /// An environment of your own (`RouteTable.Environment("staging")`), given a base URL in
        /// ``RouteTable/init(baseURLs:keys:routes:)``.
        public init(_ name: String) { self.name = name }
        /// The development server (`http://localhost:8000`, say), selected with
        /// `.environment(.development)`.
        public static let development = Environment("development")
        /// The production server: the environment used unless the builder selects another.
        public static let production = Environment("production")
        public var description: String { name }
    }

    /// How one entity's JSON differs from the naming strategy: RSAPI's id key and property
    /// exceptions.
    public struct EntityKeys: Sendable, Hashable {
        /// The JSON key of the identity attribute (`user_id`), or nil for the naming strategy's.
        public var id: String?
        /// The identity attribute `id` applies to (default `id`).
        public var idAttribute: String
        /// Model name -> JSON key for the properties that do not follow the naming strategy
        /// (`["avatarSm": "avatar_sm"]`).
        public var properties: [String: String]

        /// The exceptions of one entity: the JSON key of its identity attribute, and the JSON key of
        /// each property that does not follow the naming strategy.
        public init(id: String? = nil, idAttribute: String = "id", properties: [String: String] = [:]) {
            self.id = id
            self.idAttribute = idAttribute
            self.properties = properties
        }
    }

    /// The id keys and property exceptions as a core key mapping; ``Tether/Client/Builder/routes(_:)``
    /// adds it to the builder. Unknown entities or properties are reported at `build()`.
    public var keyMapping: KeyOverrides {
        var table: [String: [String: JSONKeyPath]] = [:]
        for (entity, keys) in self.keys {
            var entry: [String: JSONKeyPath] = [:]
            for (property, key) in keys.properties { entry[property] = JSONKeyPath(components: [key]) }
            if let id = keys.id { entry[keys.idAttribute] = JSONKeyPath(components: [id]) }
            table[entity] = entry
        }
        return KeyOverrides(table)
    }

    public func validate(for client: Client) throws {
        var names = Set<String>()
        for route in routes {
            guard !route.name.isEmpty else {
                throw ConfigurationError(.invalidRoute, entity: route.entity, "a route has an empty name")
            }
            guard names.insert(route.name).inserted else {
                throw ConfigurationError(.invalidRoute, entity: route.entity, member: route.name, "the route '\(route.name)' is declared twice")
            }
            let template: PathTemplate
            do {
                template = try PathTemplate(route.path)
            } catch {
                throw ConfigurationError(
                    .invalidRoute, entity: route.entity, member: route.name,
                    "route '\(route.name)': invalid path template '\(route.path)': \(error.message)")
            }
            guard let entityName = route.entity else {
                if route.kind == .objects {
                    throw ConfigurationError(
                        .invalidRoute, member: route.name, "route '\(route.name)' imports objects but names no entity")
                }
                continue
            }
            guard let entity = client.mapping[entityName] else {
                throw ConfigurationError(
                    .unknownEntity, entity: entityName, member: route.name,
                    "route '\(route.name)' names entity '\(entityName)', which is not in the schema")
            }
            for variable in template.variables where Self.attribute(named: variable, in: entity) == nil {
                throw ConfigurationError(
                    .unknownProperty, entity: entityName, member: variable,
                    "route '\(route.name)': the path variable ':\(variable)' names no attribute of \(entityName) (by model name, JSON key or foreign key)")
            }
        }
        if client.baseURL == nil {
            throw ConfigurationError(
                .invalidURL, "the route table has no base URL for the selected environment and the builder sets none")
        }
    }

    /// The attribute or foreign-keyed relationship a path variable names.
    static func attribute(named variable: String, in entity: EntityMapping) -> String? {
        if entity.attribute(variable) != nil { return variable }
        if let property = entity.property(forKeyPath: JSONKeyPath(components: [variable])), entity.attribute(property) != nil {
            return property
        }
        if let relationship = entity.relationships.first(where: { $0.foreignKey == variable && !$0.relationship.isToMany }) {
            return relationship.name
        }
        return nil
    }
}

/// The selected ``RouteTable/Environment``, set with ``Tether/Client/Builder/environment(_:)``.
public struct RouteEnvironment: ClientExtension, Sendable {
    /// The environment whose base URL the client uses.
    public let environment: RouteTable.Environment

    /// A selection of `environment`; ``Tether/Client/Builder/environment(_:)`` registers it.
    public init(_ environment: RouteTable.Environment) { self.environment = environment }

    public func validate(for client: Client) throws {
        guard let table = client.extension(RouteTable.self) else {
            throw ConfigurationError(.invalidURL, "the environment '\(environment)' is selected but no route table is registered")
        }
        if table.baseURLs[environment] == nil {
            throw ConfigurationError(.invalidURL, "the route table has no base URL for the environment '\(environment)'")
        }
    }
}

extension Client.Builder {
    /// Registers a route table: its routes (checked at `build()`), its id keys and property
    /// exceptions (as a key mapping) and the base URL of the selected environment (production
    /// unless ``environment(_:)`` says otherwise). Register one table per builder.
    public func routes(_ table: RouteTable) -> Self {
        var builder = extending(with: table)
        if !table.keys.isEmpty { builder = builder.keyMapping(table.keyMapping) }
        let environment = extensions.lazy.compactMap { $0 as? RouteEnvironment }.first?.environment ?? .production
        if let url = table.baseURLs[environment] { builder = builder.baseURL(url) }
        return builder
    }

    /// Selects the environment whose base URL the route table's calls (and the client's
    /// `baseURL`) use. Order does not matter: before or after ``routes(_:)``.
    public func environment(_ environment: RouteTable.Environment) -> Self {
        var builder = extending(with: RouteEnvironment(environment))
        if let table = extensions.lazy.compactMap({ $0 as? RouteTable }).first, let url = table.baseURLs[environment] {
            builder = builder.baseURL(url)
        }
        return builder
    }
}
