public import Foundation

/// Protocol 6 of 6: how a server's documents are written: where the objects are in a response and what comes
/// with them (included objects of other entities, the next page, meta), how objects become a
/// request body, which media types are sent and accepted, and how an error body becomes field
/// errors. The sixth strategy beside naming, key mapping, identity, transport and store (Ember
/// Data's serializer, RestKit's descriptors).
///
/// ## Use one
/// ``PlainJSONFormat`` is the default: plain JSON objects, found as the builder's
/// ``ResponseShape``s say, DRF, Rails and GitHub error bodies. `TetherJSONAPI` ships
/// `JSONAPIFormat` (jsonapi.org):
/// ```swift
/// let client = try Client.Builder(schema: schema)
///     .documentFormat(PlainJSONFormat())            // the default, for every entity
///     .documentFormat(LegacyFormat(), for: "Log")   // one entity's own
///     .build()
/// ```
///
/// ## Write one
/// A format reads a response into plain objects of the mapping (``read(_:_:)``: each object
/// with the entity's keys, its relationships as nested objects or ids), and writes request
/// bodies from the members the client gives (``body(_:)``). Every other requirement has a
/// default: plain JSON's media types, relationship requests and error bodies.
/// ```swift
/// struct Enveloped: DocumentFormat {
///     func read(_ body: JSON, _ request: DocumentRequest) throws -> Document {
///         try PlainJSONFormat().read(body["payload"] ?? .null, request)
///     }
///     func body(_ write: DocumentWrite) throws -> JSON {
///         ["payload": try PlainJSONFormat().body(write)]
///     }
/// }
/// ```
/// Whatever a format reads, the client checks it: a document with no object carrying the
/// entity's identity is an ``ImportError``, and an object of the primary data holding its
/// identity and none of the entity's keys is reported (``ImportDiagnostic/Problem/unmappedObject``).
public protocol DocumentFormat: Sendable {
    /// The `Accept` header of every request of the format's entities (`application/json`).
    var accept: String { get }
    /// The `Content-Type` of request bodies (`application/json; charset=utf-8`).
    var contentType: String { get }
    /// The objects of a response body: the primary data of `request.entity`, in the mapping's
    /// keys, with included objects of any entity, the next page's link and meta. Throw an
    /// ``ImportError`` (with the JSON path) for a body that is not such a document.
    func read(_ body: JSON, _ request: DocumentRequest) throws -> Document
    /// The body of a write: a create, a save (whole or only the changes), or an add, remove or
    /// replace of a relationship's targets.
    func body(_ write: DocumentWrite) throws -> JSON
    /// Where and how an add, remove or replace of a relationship's targets is sent, given the
    /// relationship's URL (the one its list is fetched from) and, for one target, its identity
    /// as a path segment.
    func relationshipRequest(_ operation: DocumentOperation, relationshipURL: URL, target: String?) throws -> RelationshipRequest
    /// Where and how an add, remove or replace is sent, given every URL the client knows for the
    /// relationship: the registered one and the links the server gave and the store keeps
    /// (``RelationshipURLs``). The default sends to the server's related link when one is kept,
    /// else to the registered URL, through ``relationshipRequest(_:relationshipURL:target:)``.
    func relationshipRequest(_ operation: DocumentOperation, urls: RelationshipURLs, target: String?) throws -> RelationshipRequest
    /// The attributes of `entity` that keep the links the server gave for `relationship` (its
    /// related URL, its own URL), which relationship fetches and writes then use instead of the
    /// registered URL. None by default (``RelationshipLinkAttributes/none``).
    func relationshipLinks(_ relationship: RelationshipMapping, of entity: EntityMapping) -> RelationshipLinkAttributes
    /// The structured error of a response outside 200–299.
    func errorBody(status: Int, data: Data, contentType: String?) -> ErrorBody
}

extension DocumentFormat {
    /// `application/json`.
    public var accept: String { "application/json" }
    /// `application/json; charset=utf-8`.
    public var contentType: String { "application/json; charset=utf-8" }
    /// Plain JSON's: a flat body of the members (``PlainJSONFormat/body(_:)``).
    public func body(_ write: DocumentWrite) throws -> JSON { try PlainJSONFormat().body(write) }
    /// Plain JSON's: add POSTs to the relationship's URL, remove DELETEs `<URL>/<target>`.
    public func relationshipRequest(_ operation: DocumentOperation, relationshipURL: URL, target: String?) throws -> RelationshipRequest {
        try PlainJSONFormat().relationshipRequest(operation, relationshipURL: relationshipURL, target: target)
    }
    /// Plain JSON's: DRF, Rails and GitHub error bodies (``ErrorBody/init(data:contentType:)``).
    public func errorBody(status: Int, data: Data, contentType: String?) -> ErrorBody {
        ErrorBody(data: data, contentType: contentType)
    }
}

/// What the client asks of a document: which kind of request it answers, for which entity.
public struct DocumentOperation: Sendable, Hashable, CustomStringConvertible {
    /// The operation's name, as its static member is spelled (`list`).
    public let name: String
    /// An operation named `name`; the client uses the static members.
    public init(_ name: String) { self.name = name }
    /// A list (a fetch of objects, every page).
    public static let list = DocumentOperation("list")
    /// One object (a fetch of one, a refresh).
    public static let item = DocumentOperation("item")
    /// A create (`POST` to the collection) and its answer.
    public static let create = DocumentOperation("create")
    /// A save (`PATCH` or `PUT` to the object) and its answer.
    public static let save = DocumentOperation("save")
    /// The list of a relationship's targets (``RelationshipResource/list()``).
    public static let relationship = DocumentOperation("relationship")
    /// Adding a target to a relationship (``RelationshipResource/add(_:options:)``).
    public static let add = DocumentOperation("add")
    /// Removing a target from a relationship (``RelationshipResource/remove(_:)``).
    public static let remove = DocumentOperation("remove")
    /// Replacing a relationship's targets (``RelationshipResource/replace(with:)``).
    public static let replace = DocumentOperation("replace")
    /// The operation's name.
    public var description: String { name }
}

/// A response to read: the entity asked for, the operation, and the client's configuration a
/// format may follow (the entity's ``ResponseShape``).
public struct DocumentRequest: Sendable {
    /// The mapping of the entity the request asks for.
    public let entity: EntityMapping
    /// Every entity's mapping, for included objects of other entities.
    public let mapping: Mapping
    /// What kind of request the document answers.
    public let operation: DocumentOperation
    /// The response shape configured for the entity (``Client/Builder/responseShape(_:for:)-(_,String?)``).
    public let responseShape: ResponseShape
    /// The request, for messages: `page 2 of GET https://…/articles`.
    public let description: String

    /// A request with these parts (the client makes them; tests of a format make their own).
    public init(entity: EntityMapping, mapping: Mapping, operation: DocumentOperation, responseShape: ResponseShape = .automatic, description: String) {
        self.entity = entity
        self.mapping = mapping
        self.operation = operation
        self.responseShape = responseShape
        self.description = description
    }

    /// Per identity attribute of the entity, the key paths its value is read from (its own, then
    /// its fallbacks).
    public var identityKeyPaths: [[JSONKeyPath]] { entity.identity.map { [$0.keyPath] + $0.fallbackKeyPaths } }
}

/// A response read by a ``DocumentFormat``: plain objects of the mapping, ready to import.
public struct Document: Sendable {
    /// The objects of the requested entity (the primary data), each with the mapping's keys.
    public var objects: [JSON]
    /// Whether the objects came as a list, not as one object.
    public var isList: Bool
    /// Objects of any entity the document carries beside the primary data (JSON:API's
    /// `included`, a side-loaded array), imported in the same transaction.
    public var included: [IncludedObjects]
    /// The next page's URL as the document gives it (absolute or relative), or nil.
    public var next: String?
    /// The document's meta information, if any (JSON:API's top-level `meta`).
    public var meta: JSON?
    /// What the format could not read and left out (a linkage whose `type` the schema does not
    /// declare for its relationship), with the document's JSON path. The client adds them to
    /// the import's ``ImportResult/diagnostics``; under ``ImportOptions/Policy/fail`` the first
    /// one is the error and nothing is written.
    public var diagnostics: [ImportDiagnostic]

    /// A document with these parts.
    public init(
        objects: [JSON], isList: Bool = true, included: [IncludedObjects] = [], next: String? = nil, meta: JSON? = nil,
        diagnostics: [ImportDiagnostic] = []
    ) {
        self.objects = objects
        self.isList = isList
        self.included = included
        self.next = next
        self.meta = meta
        self.diagnostics = diagnostics
    }
}

/// Objects of one entity a document carries beside its primary data.
public struct IncludedObjects: Sendable {
    /// Their entity.
    public var entity: String
    /// The objects, each with the mapping's keys.
    public var objects: [JSON]

    /// Objects of `entity`.
    public init(entity: String, objects: [JSON]) {
        self.entity = entity
        self.objects = objects
    }
}

/// A request body to write: what is sent, with the members the client chose (the changed ones
/// of a `PATCH`, every set one of a `PUT` or a create), each with its value.
public struct DocumentWrite: Sendable {
    /// `create`, `save`, `add`, `remove` or `replace`.
    public let operation: DocumentOperation
    /// The entity of the object written (of the targets, for a relationship's add, remove or replace).
    public let entity: EntityMapping
    /// Every entity's mapping.
    public let mapping: Mapping
    /// The object's identity, as its JSON, when it has one (a save's, whether or not it is a
    /// member; a create's only when the client chose it).
    public let identity: JSON?
    /// The members to write, sorted by name.
    public let members: [DocumentMember]
    /// For a save: whether only the changes are sent (a `PATCH`), or the whole object.
    public let onlyChanges: Bool
    /// For an add, remove or replace: the relationship, of its source's entity.
    public let relationship: RelationshipMapping?
    /// For an add, remove or replace: the targets' identities, as JSON.
    public let targets: [JSON]

    /// A write with these parts (the client makes them; tests of a format make their own).
    public init(
        operation: DocumentOperation, entity: EntityMapping, mapping: Mapping, identity: JSON?, members: [DocumentMember],
        onlyChanges: Bool = false, relationship: RelationshipMapping? = nil, targets: [JSON] = []
    ) {
        self.operation = operation
        self.entity = entity
        self.mapping = mapping
        self.identity = identity
        self.members = members
        self.onlyChanges = onlyChanges
        self.relationship = relationship
        self.targets = targets
    }
}

/// One attribute or relationship of a request body.
public struct DocumentMember: Sendable, Hashable {
    /// The attribute's or relationship's model name (`fullName`, `owner`).
    public let name: String
    /// Where a plain body puts it: the attribute's key path, the relationship's foreign key.
    public let keyPath: JSONKeyPath
    /// Its value: the attribute's JSON, the relationship's target identities (one, or an array
    /// for a to-many), `null` for a cleared one.
    public let value: JSON
    /// The relationship's mapping, nil for an attribute.
    public let relationship: RelationshipMapping?
    /// Whether it is an identity attribute.
    public let isIdentity: Bool

    /// A member with these parts.
    public init(name: String, keyPath: JSONKeyPath, value: JSON, relationship: RelationshipMapping? = nil, isIdentity: Bool = false) {
        self.name = name
        self.keyPath = keyPath
        self.value = value
        self.relationship = relationship
        self.isIdentity = isIdentity
    }
}

/// How a relationship's add, remove or replace is sent (``DocumentFormat/relationshipRequest(_:relationshipURL:target:)``).
public struct RelationshipRequest: Sendable, Hashable {
    /// The method: `POST`, `DELETE`, `PATCH`.
    public var method: HTTPMethod
    /// Where.
    public var url: URL
    /// Whether the request carries the format's body of the write (JSON:API's linkage); false
    /// for plain JSON's `DELETE <URL>/<target>`.
    public var hasBody: Bool
    /// Whether an answer with a body holds the target object (plain JSON's add answers with the
    /// object made), merged into it; false when it holds something else (JSON:API's linkage).
    public var answerIsTarget: Bool

    /// A request with these parts.
    public init(method: HTTPMethod, url: URL, hasBody: Bool, answerIsTarget: Bool) {
        self.method = method
        self.url = url
        self.hasBody = hasBody
        self.answerIsTarget = answerIsTarget
    }
}
