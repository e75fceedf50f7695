import Foundation

/// The remote side of a client: request hooks, resource URLs per entity and relationship, and
/// paging limits. Filled through the builder (``Client/Builder/requestHook(_:)``,
/// ``Client/Builder/resource(_:item:for:)-(_,_,String)``, ``Client/Builder/relationshipResource(_:for:of:)``).
public struct RemoteConfiguration: Sendable {
    /// Run in order on every request, before the transport.
    public var hooks: [any RequestHook] = []
    /// Per entity: the collection URL and, optionally, the URL of one object.
    public var resources: [String: ResourceRoute] = [:]
    /// Per entity, per relationship: the URL listing the related objects.
    public var relationshipResources: [String: [String: URLTemplate]] = [:]
    /// The most pages one fetch follows; more is a ``RequestError`` (a server looping on `next`).
    public var maxPages: Int = 1000
    /// Hosts besides the request's own that next-page links may lead to (same scheme only), in
    /// lower case. Empty by default: a link to another scheme, host or port is a ``RequestError``
    /// (`.untrustedLink`).
    public var pageHosts: Set<String> = []
    /// How ``Client/save(_:options:)`` sends an object: `PATCH` (the default) or `PUT`.
    public var saveMethod: HTTPMethod = .patch
    /// Per entity: a save method other than ``saveMethod``.
    public var saveMethods: [String: HTTPMethod] = [:]
    /// When requests are sent again by themselves (``RetryPolicy/default``: twice, idempotent only).
    public var retries: RetryPolicy = .default
    /// Per entity: attributes whose values are paths of several segments in URL templates.
    public var pathAttributes: [String: Set<String>] = [:]
    /// Where the objects are in responses (``ResponseShape/automatic`` by default).
    public var responseShape: ResponseShape = .automatic
    /// Per entity: a response shape other than ``responseShape``.
    public var responseShapes: [String: ResponseShape] = [:]

    /// How documents are read and written (``PlainJSONFormat`` by default).
    public var documentFormat: any DocumentFormat = PlainJSONFormat()
    /// Per entity: a document format other than ``documentFormat``.
    public var documentFormats: [String: any DocumentFormat] = [:]

    /// Per entity: the attributes and relationships the server sets and request bodies leave out.
    public var readOnly: [String: Set<String>] = [:]
    /// How lists are paged (``Pagination/automatic`` by default).
    public var pagination: Pagination = .automatic
    /// Per entity: a pagination other than ``pagination``.
    public var paginations: [String: Pagination] = [:]
    /// The most bytes an answer's body may have (after decompression), for every request that
    /// sets none (``TransportRequest/responseLimit``): 64 MiB by default.
    public var responseLimit: Int = TransportRequest.defaultResponseLimit
    /// The most time one exchange may take, for every request that sets none
    /// (``TransportRequest/deadline``): 5 minutes by default; nil for none.
    public var deadline: Duration? = .seconds(300)
    /// How many lists' validators (`ETag`, `Last-Modified`) the client remembers, the least
    /// recently fetched forgotten first: 1,000 by default.
    public var listValidatorLimit: Int = 1000

    /// The defaults: no hooks, no registered URLs, `PATCH` saves, two retries of idempotent
    /// requests, plain JSON documents, automatic response shapes and pagination, at most 1,000 pages, answers of at
    /// most 64 MiB, exchanges of at most 5 minutes, the validators of 1,000 lists.
    public init() {}

    /// The pagination of `entity`'s lists.
    public func pagination(for entity: String) -> Pagination {
        paginations[entity] ?? pagination
    }

    /// The document format of `entity`'s requests (the default one for nil).
    public func documentFormat(for entity: String?) -> any DocumentFormat {
        entity.flatMap { documentFormats[$0] } ?? documentFormat
    }

    /// The response shape of `entity`'s resources.
    public func responseShape(for entity: String) -> ResponseShape {
        if let shape = responseShapes[entity] { return shape }
        return responseShape
    }

    /// Checks every template against the mapping; throws a ``ConfigurationError`` (`.invalidRoute`).
    func validate(schema: Schema, mapping: Mapping, naming: any NamingStrategy) throws(ConfigurationError) {
        let evaluator = TemplateEvaluator(mapping: mapping, naming: naming, dateDecoding: .default, transformers: [:])
        func check(_ template: URLTemplate, _ entity: String) throws(ConfigurationError) {
            do {
                try evaluator.validate(template, for: entity)
            } catch {
                throw ConfigurationError(.invalidRoute, entity: entity, member: error.member, error.message)
            }
        }
        for (entity, attributes) in pathAttributes.sorted(by: { $0.key < $1.key }) {
            for name in attributes.sorted() where schema[entity]?.attribute(named: name) == nil {
                throw ConfigurationError(.unknownProperty, entity: entity, member: name,
                                         "pathAttribute(\"\(name)\", of: \"\(entity)\") names no attribute of the schema")
            }
        }
        for entity in resources.keys.sorted() {
            guard schema[entity] != nil else {
                throw ConfigurationError(.unknownEntity, entity: entity, "a resource URL is set for unknown entity '\(entity)'")
            }
            let route = resources[entity]!
            try check(route.collection, entity)
            if let item = route.item { try check(item, entity) }
        }
        for (entity, properties) in readOnly.sorted(by: { $0.key < $1.key }) {
            guard let declared = schema[entity] else {
                throw ConfigurationError(.unknownEntity, entity: entity, "read-only properties are set for unknown entity '\(entity)'")
            }
            for name in properties.sorted() where declared.attribute(named: name) == nil && declared.relationship(named: name) == nil {
                throw ConfigurationError(.unknownProperty, entity: entity, member: name,
                                         "readOnly([\"\(name)\"], of: \"\(entity)\") names no attribute or relationship of the schema")
            }
        }
        for entity in paginations.keys.sorted() where schema[entity] == nil {
            throw ConfigurationError(.unknownEntity, entity: entity, "a pagination is set for unknown entity '\(entity)'")
        }
        for entity in documentFormats.keys.sorted() where schema[entity] == nil {
            throw ConfigurationError(.unknownEntity, entity: entity, "a document format is set for unknown entity '\(entity)'")
        }
        for entity in responseShapes.keys.sorted() where schema[entity] == nil {
            throw ConfigurationError(.unknownEntity, entity: entity, "a response shape is set for unknown entity '\(entity)'")
        }
        for entity in saveMethods.keys.sorted() where schema[entity] == nil {
            throw ConfigurationError(.unknownEntity, entity: entity, "a save method is set for unknown entity '\(entity)'")
        }
        for entity in relationshipResources.keys.sorted() {
            guard let declared = schema[entity] else {
                throw ConfigurationError(.unknownEntity, entity: entity, "a relationship URL is set for unknown entity '\(entity)'")
            }
            for (name, template) in relationshipResources[entity]!.sorted(by: { $0.key < $1.key }) {
                guard declared.relationship(named: name) != nil else {
                    throw ConfigurationError(.unknownProperty, entity: entity, member: name,
                                             "a relationship URL is set for \(entity).\(name), which is not a relationship")
                }
                try check(template, entity)
            }
        }
    }
}

/// Where the objects of an entity live on the server.
public struct ResourceRoute: Sendable, Hashable {
    /// The collection: `GET` lists, `POST` creates (`/repos/:repository.full_name/issues`).
    public var collection: URLTemplate
    /// One object: `GET` refreshes, `PATCH` saves, `DELETE` deletes. Nil means the collection
    /// URL followed by `/:<identity>` (`/repos/:repository.full_name/issues/:id`).
    public var item: URLTemplate?

    /// A route with this collection URL and, when given, this item URL.
    public init(collection: URLTemplate, item: URLTemplate? = nil) {
        self.collection = collection
        self.item = item
    }
}

extension TemplateEvaluator {
    init(mapping: Mapping, naming: any NamingStrategy, dateDecoding: DateDecoding, transformers: [String: any AttributeTransformer]) {
        self.mapping = mapping
        self.naming = naming
        self.dateDecoding = dateDecoding
        self.transformers = transformers
    }
}

extension Client.Builder {
    /// Adds a request hook (authentication, default headers); hooks run in the order added.
    public func requestHook(_ hook: some RequestHook) -> Self {
        var copy = self
        copy.remote.hooks.append(hook)
        return copy
    }

    /// Registers the collection URL of an entity (and optionally the URL of one object), used by
    /// ``Client/refresh(_:)``, ``Client/create(_:options:)``, ``Client/save(_:options:)`` and
    /// ``Client/delete(_:)-(ObjectID)``. Checked against the mapping by `build()`.
    ///
    /// ```swift
    /// builder.resource("/repos/:repository.full_name/issues", item: "/repos/:repository.full_name/issues/:number", for: "Issue")
    /// ```
    /// Without a registration, an entity's collection is `/<resource path>` from the naming strategy.
    public func resource(_ collection: URLTemplate, item: URLTemplate? = nil, for entity: String) -> Self {
        var copy = self
        copy.remote.resources[entity] = ResourceRoute(collection: collection, item: item)
        return copy
    }

    /// Registers the URL listing the objects of a relationship (`/users/:login/repos` for
    /// `User.repositories`), evaluated against the source object. It drives
    /// ``Client/relationship(_:of:)->RelationshipResource``: `list()`, `add(_:)` (POST) and
    /// `remove(_:)` (DELETE `…/:id`).
    public func relationshipResource(_ template: URLTemplate, for relationship: String, of entity: String) -> Self {
        var copy = self
        copy.remote.relationshipResources[entity, default: [:]][relationship] = template
        return copy
    }

    /// Lets next-page links lead to these hosts too (with the request's scheme), for an API that
    /// pages through another host of its own (`api.example.com` → `cdn.example.com`). Every
    /// request hook runs for those requests too, so name only hosts you trust with the credentials.
    public func pageHosts(_ hosts: Set<String>) -> Self {
        var copy = self
        copy.remote.pageHosts.formUnion(hosts.map { $0.lowercased() })
        return copy
    }

    /// How ``Client/save(_:options:)`` sends objects: `.patch` (the default) or `.put` (an
    /// AeroGear-style server, say), for every entity, or only for `entity`.
    public func saveMethod(_ method: HTTPMethod, for entity: String? = nil) -> Self {
        var copy = self
        if let entity { copy.remote.saveMethods[entity] = method } else { copy.remote.saveMethod = method }
        return copy
    }

    /// When the client sends a request again by itself (``RetryPolicy``; `.none` for never).
    public func retries(_ policy: RetryPolicy) -> Self {
        var copy = self
        copy.remote.retries = policy
        return copy
    }

    /// Declares that the values of `attribute` are paths of several segments in URL templates:
    /// GitHub's `full_name` (`octocat/Hello-World`) in `/repos/:repository.full_name/issues`
    /// becomes `/repos/octocat/Hello-World/issues`. Each segment is still escaped, and an empty,
    /// `.` or `..` segment is refused. Other attributes stay one escaped segment.
    public func pathAttribute(_ attribute: String, of entity: String) -> Self {
        var copy = self
        copy.remote.pathAttributes[entity, default: []].insert(attribute)
        return copy
    }

    /// Where the objects are in the responses of `entity`'s resources, or of every entity's (see
    /// ``ResponseShape``): `.keyPath("resources")` for `{"resources": [...]}`.
    public func responseShape(_ shape: ResponseShape, for entity: String? = nil) -> Self {
        var copy = self
        if let entity { copy.remote.responseShapes[entity] = shape } else { copy.remote.responseShape = shape }
        return copy
    }

    /// The most pages one fetch follows (default 1,000).
    public func maxPages(_ count: Int) -> Self {
        var copy = self
        copy.remote.maxPages = max(1, count)
        return copy
    }
}
