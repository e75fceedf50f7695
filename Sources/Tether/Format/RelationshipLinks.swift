public import Foundation

/// The attributes of an entity that keep the links a server gave for one of its relationships
/// (JSON:API's `relationships.tags.links.related` and `links.self`), as a
/// ``DocumentFormat`` finds them (``DocumentFormat/relationshipLinks(_:of:)``).
///
/// When an object holds such a link, ``RelationshipResource/list()`` (and
/// ``Client/fetchRelationship(_:of:from:options:)`` without a template) GETs its related link
/// instead of the registered URL, and add, remove and replace write to its own link. A stored
/// link is followed only on the base URL's scheme, host and port, or on a host of
/// ``Client/Builder/pageHosts(_:)`` (``RequestError/Kind/untrustedLink`` otherwise, and nothing
/// is sent), as every stored URL is.
public struct RelationshipLinkAttributes: Sendable, Hashable {
    /// The attribute holding the relationship's related URL (where its targets are listed).
    public var related: String?
    /// The attribute holding the relationship's own URL (where its linkage is read and written).
    public var relationship: String?

    /// Links kept in these attributes (by attribute name).
    public init(related: String? = nil, relationship: String? = nil) {
        self.related = related
        self.relationship = relationship
    }

    /// No attribute keeps the relationship's links: the registered URL is used.
    public static let none = RelationshipLinkAttributes()

    /// Whether no attribute keeps a link.
    public var isEmpty: Bool { related == nil && relationship == nil }
}

/// Every URL the client knows for a relationship of one object, given to
/// ``DocumentFormat/relationshipRequest(_:urls:target:)``: the registered one
/// (``Client/Builder/relationshipResource(_:for:of:)``) and the links the server gave, when the
/// store keeps them (``RelationshipLinkAttributes``), already checked as trusted.
public struct RelationshipURLs: Sendable, Hashable {
    /// The registered URL evaluated for the object (without paging parameters), or nil when none
    /// is registered.
    public var registered: URL?
    /// The server's related link (`relationships.tags.links.related`), when kept.
    public var related: URL?
    /// The server's link to the relationship itself (`relationships.tags.links.self`), when kept.
    public var relationship: URL?

    /// URLs with these values.
    public init(registered: URL?, related: URL? = nil, relationship: URL? = nil) {
        self.registered = registered
        self.related = related
        self.relationship = relationship
    }

    /// Where the relationship's targets are listed: the related link, else the registered URL.
    public var list: URL? { related ?? registered }
}

extension DocumentFormat {
    /// No attribute keeps a relationship's links.
    public func relationshipLinks(_ relationship: RelationshipMapping, of entity: EntityMapping) -> RelationshipLinkAttributes { .none }

    /// The related link when kept, else the registered URL, through
    /// ``relationshipRequest(_:relationshipURL:target:)``; a ``RequestError`` (`.noRoute`) when
    /// there is neither.
    public func relationshipRequest(_ operation: DocumentOperation, urls: RelationshipURLs, target: String?) throws -> RelationshipRequest {
        guard let url = urls.list else {
            throw RequestError(.noRoute, "no URL is registered for the relationship and the server gave none; use relationshipResource(_:for:of:)")
        }
        return try relationshipRequest(operation, relationshipURL: url, target: target)
    }
}

extension Client {
    /// The links of `relationship` of `id` that the store keeps (by the source entity's
    /// document format), each resolved against the base URL and checked as every stored URL is
    /// (`TemplateEvaluator.checkStoredURL`): a
    /// link elsewhere is a ``RequestError`` (`.untrustedLink`). Nil members where no link is kept.
    func storedRelationshipLinks(_ relationship: String, of id: ObjectID) async throws -> (related: URL?, relationship: URL?) {
        guard let entity = mapping[id.entity], let mapped = entity.relationship(relationship) else { return (nil, nil) }
        let attributes = documentFormat(for: id.entity).relationshipLinks(mapped, of: entity)
        if attributes.isEmpty { return (nil, nil) }
        let (baseURL, pageHosts) = (self.baseURL, remote.pageHosts)
        return try await store.read { reader in
            guard let object = try reader.object(id) else {
                throw RequestError(.objectNotFound, entity: id.entity, "\(id) is not in the store")
            }
            func link(_ attribute: String?) throws -> URL? {
                guard let attribute else { return nil }
                let text: String
                switch object.values[attribute] {
                case .string(let value)?: text = value
                case .url(let value)?: text = value.absoluteString
                default: return nil
                }
                guard !text.isEmpty else { return nil }
                return try Client.storedLink(text, attribute: attribute, entity: id.entity, baseURL: baseURL, pageHosts: pageHosts)
            }
            return (try link(attributes.related), try link(attributes.relationship))
        }
    }

    /// A link the store keeps as a URL: an absolute one as it is, on the base URL's origin or a
    /// page host only; a relative one resolved against the base URL.
    static func storedLink(_ text: String, attribute: String, entity: String, baseURL: URL?, pageHosts: Set<String>) throws(RequestError) -> URL {
        let template = URLTemplate(":" + attribute)
        if URLTemplate.isAbsolute(text) {
            guard let url = URL(string: text) else {
                throw RequestError(.invalidURL, entity: entity, member: attribute, "\(entity).\(attribute) holds '\(text)', which is not a URL; nothing was sent")
            }
            try TemplateEvaluator.checkStoredURL(url, template: template, values: [JSONKeyPath(components: [attribute]): text], entity: entity,
                                                 baseURL: baseURL, pageHosts: pageHosts)
            return url
        }
        guard let baseURL, let url = URL(string: text, relativeTo: baseURL)?.absoluteURL else {
            throw RequestError(.invalidURL, entity: entity, member: attribute,
                               "\(entity).\(attribute) holds the relative link '\(text)', which cannot be resolved\(baseURL == nil ? " without a base URL" : ""); nothing was sent")
        }
        // A relative link can still lead elsewhere (`//other.example/x`, scheme-relative): it must
        // stay on the base URL's origin or a page host, as an absolute one must.
        let (base, target) = (Client.origin(baseURL), Client.origin(url))
        let trusted = base.scheme == target.scheme && (base.host == target.host && base.port == target.port || pageHosts.contains(target.host))
        guard trusted else {
            throw RequestError(
                .untrustedLink, entity: entity, member: attribute,
                "\(entity).\(attribute) holds the link '\(text)', which leads to \(target.scheme)://\(target.host)\(target.port.map { ":\($0)" } ?? ""), "
                    + "not to the base URL's scheme, host and port (or a host of the builder's pageHosts(_:)); nothing was sent")
        }
        return url
    }

    /// The URL a relationship's targets are listed from: the server's related link when the
    /// store keeps one (and no template is given), else the template or the registered URL.
    func relationshipListURL(_ relationship: String, of id: ObjectID, template: URLTemplate?) async throws -> (Relationship, URL) {
        guard let declared = schema[id.entity]?.relationship(named: relationship) else {
            throw RequestError(.unknownRelationship, entity: id.entity, member: relationship, "\(id.entity) has no relationship '\(relationship)'")
        }
        if template == nil, let related = try await storedRelationshipLinks(relationship, of: id).related { return (declared, related) }
        let (_, route) = try relationshipRoute(relationship, of: id.entity, template: template)
        return (declared, try await url(route, for: id))
    }

    /// Every URL known for a relationship of `source`, for an add, remove or replace.
    func relationshipURLs(_ relationship: String, of source: ObjectID) async throws -> (Relationship, RelationshipURLs) {
        guard let declared = schema[source.entity]?.relationship(named: relationship) else {
            throw RequestError(.unknownRelationship, entity: source.entity, member: relationship, "\(source.entity) has no relationship '\(relationship)'")
        }
        let links = try await storedRelationshipLinks(relationship, of: source)
        var registered: URL?
        if let route = remote.relationshipResources[source.entity]?[relationship] {
            do {
                registered = writeURL(try await url(route, for: source), entity: declared.destination)
            } catch where links.related != nil || links.relationship != nil {
                registered = nil  // the server's links stand in for a template the object cannot fill
            }
        } else if links.related == nil && links.relationship == nil {
            _ = try relationshipRoute(relationship, of: source.entity, template: nil)  // throws .noRoute
        }
        return (declared, RelationshipURLs(registered: registered, related: links.related, relationship: links.relationship))
    }
}
