public import Foundation
public import Tether

/// JSON:API (jsonapi.org, v1.0/1.1) as a `DocumentFormat`: resource objects with `type`, `id`,
/// `attributes` and `relationships`, `included` resources, `links.next` pages, `errors[]`, and
/// `application/vnd.api+json` both ways.
///
/// Reading, a resource object becomes a plain object of the mapping: its `id` at the identity's
/// key, its attributes as they are (their member names are the mapping's keys, kebab-case with
/// ``KebabCaseNaming``), each relationship with `data` as the target's id (to-one, `null` for
/// none) or ids (to-many) under the relationship's key, and, when an attribute is mapped to a
/// key path under `links` (`links.self`, to keep the object's URL), its `links`. A relationship with links but no `data`
/// is not given: its stored targets stay. `included` resources are imported in the same
/// transaction, before the primary data; `links.next` is the next page; `meta` is on the
/// `FetchResult`. Attributes mapped under `meta` or `relationships.<name>` keep a resource's
/// meta and a relationship's links and meta; a relationship's kept `related` and `self` links
/// are where it is listed and written (``relationshipLinks(_:of:)``). Linkage whose type names
/// one of several entities goes to the relationship declared for that type
/// (``PolymorphicRelationship``).
///
/// Writing, a body is `{"data": {"type", "id", "attributes", "relationships"}}` with only the
/// members the client sends (the changed ones of a `PATCH`), `id` on saves and on creates of
/// objects that have one (client-generated ids); a relationship's add, remove and replace are
/// `POST`, `DELETE` and `PATCH` of `/<type>/<id>/relationships/<name>` (or the relationship's
/// kept `self` link) with a linkage body. What is mapped under `links`, `meta` and
/// `relationships` is never written.
///
/// Errors: each of `errors[]` is an `ErrorBody.Entry`; one with `source.pointer`
/// `/data/attributes/title` (or `/data/relationships/author`) gives its `detail` (else its
/// `title`) as a message of the field `title` (`author`); the others make the message.
///
/// ```swift
/// let client = try Client.Builder(schema: schema)
///     .jsonAPI(types: ["Person": "people"])   // TetherJSONAPI: naming, format, relationship URLs
///     .transport(URLSessionTransport())
///     .baseURL(URL(string: "https://blog.example.com/api")!)
///     .build()
/// ```
public struct JSONAPIFormat: DocumentFormat {
    /// Per entity, its JSON:API type when it is not the entity's resource path (the naming's
    /// plural, `articles`).
    public var types: [String: String]
    /// The relationships whose linkage may name resources of several types
    /// (``PolymorphicRelationship``).
    public var polymorphic: [PolymorphicRelationship]

    /// The JSON:API format, with these types instead of the resource paths, and these
    /// polymorphic relationships.
    public init(types: [String: String] = [:], polymorphic: [PolymorphicRelationship] = []) {
        self.types = types
        self.polymorphic = polymorphic
    }

    /// `application/vnd.api+json`.
    public var accept: String { Self.mediaType }
    /// `application/vnd.api+json` (a JSON:API server refuses it with parameters, `charset` included).
    public var contentType: String { Self.mediaType }

    /// The JSON:API media type.
    public static let mediaType = "application/vnd.api+json"

    /// The JSON:API type of an entity: ``types``' or its resource path.
    public func type(of entity: EntityMapping) -> String { types[entity.name] ?? entity.resourcePath }

    // MARK: Reading

    /// The primary data (`data`: one resource object, an array of them, or `null`), the
    /// `included` resources by entity, `links.next` and `meta`.
    public func read(_ body: JSON, _ request: DocumentRequest) throws -> Document {
        let entity = request.entity
        guard case .object(let top) = body else {
            throw ImportError(path: .root, entity: entity.name, message: "\(request.description): expected a JSON:API document (an object), found \(body.typeName)")
        }
        guard let data = top["data"] else {
            throw ImportError(path: .root, entity: entity.name,
                              message: "\(request.description): expected a JSON:API document with 'data', found the keys \(top.keys.sorted().joined(separator: ", "))")
        }
        let byType = Self.entitiesByType(request.mapping, self)
        let expected = type(of: entity)
        var reading = Reading(byType: byType, mapping: request.mapping, what: request.description,
                              polymorphic: polymorphic.isEmpty ? nil : PolymorphicIndex(polymorphic, mapping: request.mapping, format: self))
        var objects: [JSON] = []
        var isList = true
        switch data {
        case .array(let resources):
            objects.reserveCapacity(resources.count)
            for (i, resource) in resources.enumerated() {
                let path: [JSONPath.Component] = [.key("data"), .index(i)]
                objects.append(try flatten(resource, as: entity, expected: expected, at: path, &reading))
            }
        case .object:
            isList = false
            objects = [try flatten(data, as: entity, expected: expected, at: [.key("data")], &reading)]
        case .null:
            isList = request.operation == .list || request.operation == .relationship
        default:
            throw ImportError(path: JSONPath([.key("data")]), entity: entity.name,
                              message: "\(request.description): expected resource objects at 'data', found \(data.typeName)")
        }
        var included: [IncludedObjects] = []
        if case .array(let resources)? = top["included"] {
            var groups: [String: Int] = [:]
            for (i, resource) in resources.enumerated() {
                let path: [JSONPath.Component] = [.key("included"), .index(i)]
                guard let type = resource["type"]?.stringValue else {
                    throw ImportError(path: JSONPath(path), entity: entity.name, message: "\(request.description): an included resource has no 'type'")
                }
                guard let target = byType[type] else {
                    throw ImportError(path: JSONPath(path + [.key("type")]), entity: entity.name,
                                      message: "\(request.description): the included type '\(type)' is no entity's; known types: "
                                          + "\(byType.keys.sorted().joined(separator: ", ")) (name an entity's type with jsonAPI(types:))")
                }
                let flat = try flatten(resource, as: target, expected: type, at: path, &reading)
                if let index = groups[target.name] {
                    included[index].objects.append(flat)
                } else {
                    groups[target.name] = included.count
                    included.append(IncludedObjects(entity: target.name, objects: [flat]))
                }
            }
        }
        var next: String?
        switch top["links"]?["next"] {
        case .string(let link)?: next = link
        case .object(let link)?: next = link["href"]?.stringValue
        default: next = nil
        }
        return Document(objects: objects, isList: isList, included: included, next: next, meta: top["meta"], diagnostics: reading.diagnostics)
    }

    /// What reading a document needs beside the resource at hand, and what it found wrong.
    struct Reading {
        let byType: [String: EntityMapping]
        let mapping: Mapping
        let what: String
        let polymorphic: PolymorphicIndex?
        var diagnostics: [ImportDiagnostic] = []
        /// Per entity, whether attributes are mapped under `links`, `meta` and `relationships`.
        var kept: [String: KeptMembers] = [:]

        mutating func keptMembers(of entity: EntityMapping) -> KeptMembers {
            if let known = kept[entity.name] { return known }
            var found = KeptMembers()
            for attribute in entity.attributes {
                switch attribute.keyPath.components.first {
                case "links": found.links = true
                case "meta": found.meta = true
                case "relationships": found.relationships = true
                default: break
                }
            }
            kept[entity.name] = found
            return found
        }
    }

    /// Which members beside `attributes` an entity's attributes read.
    struct KeptMembers {
        var links = false
        var meta = false
        var relationships = false
    }

    /// Every entity by its type.
    static func entitiesByType(_ mapping: Mapping, _ format: JSONAPIFormat) -> [String: EntityMapping] {
        var byType: [String: EntityMapping] = [:]
        for entity in mapping.entities.values { byType[format.type(of: entity)] = entity }
        return byType
    }

    /// A resource object as a plain object of `entity`'s mapping.
    func flatten(_ resource: JSON, as entity: EntityMapping, expected: String, at path: [JSONPath.Component], _ reading: inout Reading) throws -> JSON {
        let (mapping, what) = (reading.mapping, reading.what)
        guard case .object(let members) = resource else {
            throw ImportError(path: JSONPath(path), entity: entity.name, message: "\(what): expected a resource object, found \(resource.typeName)")
        }
        if let type = members["type"]?.stringValue, type != expected {
            throw ImportError(path: JSONPath(path + [.key("type")]), entity: entity.name,
                              message: "\(what): expected a resource of type '\(expected)' (\(entity.name)), found '\(type)'")
        }
        var object: [String: JSON]
        switch members["attributes"] {
        case .object(let attributes)?: object = attributes
        case nil, .null?: object = [:]
        case let other?:
            throw ImportError(path: JSONPath(path + [.key("attributes")]), entity: entity.name,
                              message: "\(what): expected an object at 'attributes', found \(other.typeName)")
        }
        if let id = members["id"], entity.identity.count == 1, let key = entity.identity[0].keyPath.components.first {
            object[key] = id
        }
        if case .object(let relationships)? = members["relationships"] {
            let polymorphic = reading.polymorphic?.members[entity.name]
            for (name, relationship) in relationships {
                if let parts = polymorphic?[name] {
                    guard let data = relationship["data"] else { continue }  // links without data: not given
                    try flattenPolymorphic(data, member: name, parts: parts, entity: entity, into: &object,
                                           at: path + [.key("relationships"), .key(name), .key("data")], what: what, diagnostics: &reading.diagnostics)
                    continue
                }
                guard let data = relationship["data"],
                    let mapped = entity.relationships.first(where: { $0.keyPath.isSingleKey && $0.keyPath.components[0] == name })
                else { continue }  // links without data: not given; a relationship the model lacks: not read
                switch data {
                case .null:
                    object[name] = .null
                case .object:
                    object[name] = try linkageID(data, of: mapped, mapping: mapping, at: path + [.key("relationships"), .key(name), .key("data")],
                                                 entity: entity, what: what)
                case .array(let linkages):
                    var ids: [JSON] = []
                    ids.reserveCapacity(linkages.count)
                    for (i, linkage) in linkages.enumerated() {
                        ids.append(try linkageID(linkage, of: mapped, mapping: mapping,
                                                 at: path + [.key("relationships"), .key(name), .key("data"), .index(i)], entity: entity, what: what))
                    }
                    object[name] = .array(ids)
                default:
                    throw ImportError(path: JSONPath(path + [.key("relationships"), .key(name), .key("data")]), entity: entity.name,
                                      attribute: mapped.name, message: "\(what): expected resource linkage, found \(data.typeName)")
                }
            }
        }
        let kept = reading.keptMembers(of: entity)
        if kept.links, let links = members["links"], object["links"] == nil {
            object["links"] = links
        }
        if kept.meta, let meta = members["meta"], object["meta"] == nil {
            object["meta"] = meta
        }
        if kept.relationships, case .object(let relationships)? = members["relationships"], object["relationships"] == nil {
            object["relationships"] = Self.relationshipMembers(relationships)
        }
        return .object(object)
    }

    /// A resource's `relationships` as attributes mapped under it read them: each relationship's
    /// `links` and `meta`, a link object (`{"href": …}`) as its `href`.
    static func relationshipMembers(_ relationships: [String: JSON]) -> JSON {
        var kept: [String: JSON] = [:]
        for (name, relationship) in relationships {
            var member: [String: JSON] = [:]
            if case .object(let links)? = relationship["links"] {
                member["links"] = .object(links.mapValues { link in
                    if case .object(let object) = link, let href = object["href"] { return href }
                    return link
                })
            }
            if let meta = relationship["meta"] { member["meta"] = meta }
            kept[name] = .object(member)
        }
        return .object(kept)
    }

    /// The id of a resource identifier (`{"type": "people", "id": "9"}`) of the relationship's
    /// destination.
    func linkageID(_ linkage: JSON, of relationship: RelationshipMapping, mapping: Mapping, at path: [JSONPath.Component], entity: EntityMapping, what: String) throws -> JSON {
        guard let id = linkage["id"], id != .null else {
            throw ImportError(path: JSONPath(path), entity: entity.name, attribute: relationship.name,
                              message: "\(what): a resource identifier without 'id' (\(linkage))")
        }
        if let type = linkage["type"]?.stringValue, let destination = mapping[relationship.relationship.destination], type != self.type(of: destination) {
            throw ImportError(path: JSONPath(path + [.key("type")]), entity: entity.name, attribute: relationship.name,
                              message: "\(what): \(entity.name).\(relationship.name) links to \(destination.name) (type '\(self.type(of: destination))'), found type '\(type)'")
        }
        return id
    }

    // MARK: Writing

    /// `{"data": {"type", "id", "attributes", "relationships"}}` for a create or a save;
    /// `{"data": [linkage]}` (or one linkage, or `null`, for a to-one) for a relationship's add,
    /// remove or replace.
    public func body(_ write: DocumentWrite) throws -> JSON {
        switch write.operation {
        case .add, .remove, .replace:
            guard let relationship = write.relationship else {
                throw RequestError(.unsupported, entity: write.entity.name, "a relationship's \(write.operation) without its relationship")
            }
            if write.operation == .replace, relationship.relationship.isToMany, let shared = polymorphicMember(of: relationship, in: write.mapping) {
                throw RequestError(.unsupported, member: relationship.name,
                    "\(relationship.name) holds the '\(shared)' objects of one type of a to-many polymorphic relationship: replacing them "
                        + "would replace the whole '\(shared)' on the server, unlinking the objects of the other types; add and remove them; nothing was sent")
            }
            let type = self.type(of: write.entity)
            let linkages = write.targets.map { JSON.object(["type": .string(type), "id": Self.idString($0)]) }
            if relationship.relationship.isToMany { return ["data": .array(linkages)] }
            return ["data": write.operation == .remove ? .null : linkages.first ?? .null]
        default:
            let index = polymorphic.isEmpty ? nil : PolymorphicIndex(polymorphic, mapping: write.mapping, format: self)
            var resource: [String: JSON] = ["type": .string(type(of: write.entity))]
            if let identity = write.identity { resource["id"] = Self.idString(identity) }
            var attributes: [String: JSON] = [:]
            var relationships: [String: JSON] = [:]
            for member in write.members where !member.isIdentity {
                if let relationship = member.relationship {
                    if index?.member(of: relationship.name, in: write.entity.name) != nil { continue }  // joined below
                    guard let destination = write.mapping[relationship.relationship.destination] else { continue }
                    let type = self.type(of: destination)
                    func linkage(_ id: JSON) -> JSON { id == .null ? .null : ["type": .string(type), "id": Self.idString(id)] }
                    let data: JSON
                    switch member.value {
                    case .array(let ids): data = .array(ids.map(linkage))
                    default: data = linkage(member.value)
                    }
                    relationships[relationship.keyPath.description] = ["data": data]
                } else {
                    let keyPath = write.entity.attribute(member.name)?.keyPath ?? member.keyPath
                    // What the server gave beside the attributes (links, meta) is not written back.
                    if Self.isKeptFromServer(keyPath) { continue }
                    Self.set(member.value, at: keyPath.components[...], in: &attributes)
                }
            }
            if let index {
                for (name, linkage) in try polymorphicLinkage(write, index: index) { relationships[name] = ["data": linkage] }
            }
            if !attributes.isEmpty { resource["attributes"] = .object(attributes) }
            if !relationships.isEmpty { resource["relationships"] = .object(relationships) }
            return ["data": .object(resource)]
        }
    }

    /// Whether an attribute's key path reads what a resource carries beside its attributes:
    /// `links.*`, `relationships.*` (names no attribute may have) or `meta.*`.
    static func isKeptFromServer(_ keyPath: JSONKeyPath) -> Bool {
        guard keyPath.components.count > 1 else { return false }
        return ["links", "relationships", "meta"].contains(keyPath.components[0])
    }

    /// JSON:API ids are strings: `3` is written `"3"`.
    static func idString(_ id: JSON) -> JSON {
        switch id {
        case .int(let i): .string(String(i))
        case .double(let d): .string(d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(d))
        default: id
        }
    }

    static func set(_ value: JSON, at keys: ArraySlice<String>, in object: inout [String: JSON]) {
        guard let first = keys.first else { return }
        if keys.count == 1 {
            object[first] = value
            return
        }
        var nested = object[first]?.objectValue ?? [:]
        set(value, at: keys.dropFirst(), in: &nested)
        object[first] = .object(nested)
    }

    /// The relationship's own URL: `/articles/3/relationships/tags` for the related URL
    /// `/articles/3/tags` (a URL already holding `/relationships/` is kept). Add is `POST`,
    /// remove `DELETE` and replace `PATCH`, each with a linkage body; the answer is not the target.
    public func relationshipRequest(_ operation: DocumentOperation, relationshipURL: URL, target: String?) throws -> RelationshipRequest {
        RelationshipRequest(method: try Self.method(of: operation), url: Self.relationshipSelf(relationshipURL), hasBody: true, answerIsTarget: false)
    }

    /// The relationship's own link when the store keeps it (`relationships.<name>.links.self`),
    /// else the own URL of the registered related URL (never guessed from a related link the
    /// server gave, whose layout is the server's); each with a linkage body.
    public func relationshipRequest(_ operation: DocumentOperation, urls: RelationshipURLs, target: String?) throws -> RelationshipRequest {
        let method = try Self.method(of: operation)
        if let own = urls.relationship { return RelationshipRequest(method: method, url: own, hasBody: true, answerIsTarget: false) }
        guard let registered = urls.registered else {
            throw RequestError(.noRoute, "JSON:API writes a relationship's linkage to its own URL: the object keeps no 'links.self' of the relationship "
                                   + "and no URL is registered for it (relationshipResource(_:for:of:)); nothing was sent")
        }
        return RelationshipRequest(method: method, url: Self.relationshipSelf(registered), hasBody: true, answerIsTarget: false)
    }

    /// The attributes mapped to `relationships.<member>.links.related` and `.links.self` (the
    /// member of a polymorphic relationship's part is the shared one).
    public func relationshipLinks(_ relationship: RelationshipMapping, of entity: EntityMapping) -> RelationshipLinkAttributes {
        guard entity.attributes.contains(where: { $0.keyPath.components.first == "relationships" }) else { return .none }
        var member = relationship.keyPath.description
        for declaration in polymorphic where declaration.entity == entity.name && declaration.relationships.contains(relationship.name) {
            member = declaration.name
        }
        func attribute(_ link: String) -> String? {
            entity.attributes.first { $0.keyPath.components == ["relationships", member, "links", link] }?.name
        }
        return RelationshipLinkAttributes(related: attribute("related"), relationship: attribute("self"))
    }

    static func method(of operation: DocumentOperation) throws -> HTTPMethod {
        let method: HTTPMethod
        switch operation {
        case .add: method = .post
        case .remove: method = .delete
        case .replace: method = .patch
        default: throw RequestError(.unsupported, "JSON:API has no relationship request for \(operation)")
        }
        return method
    }

    /// `…/articles/3/tags?x` → `…/articles/3/relationships/tags?x`.
    static func relationshipSelf(_ related: URL) -> URL {
        guard var components = URLComponents(url: related, resolvingAgainstBaseURL: true) else { return related }
        var segments = components.percentEncodedPath.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if segments.last == "" { segments.removeLast() }
        guard segments.count >= 2, !segments.contains("relationships") else { return related }
        segments.insert("relationships", at: segments.count - 1)
        components.percentEncodedPath = segments.joined(separator: "/")
        return components.url ?? related
    }

    // MARK: Errors

    /// `errors[]` as entries and field errors (by `source.pointer`); 406 and 415 explained.
    public func errorBody(status: Int, data: Data, contentType: String?) -> ErrorBody {
        var body = ErrorBody(data: data, contentType: contentType)
        guard case .array(let errors)? = body.json?["errors"] else {
            if body.message == nil, let explanation = Self.mediaTypeExplanation(status) { body.message = explanation }
            return body
        }
        var fieldErrors: [String: [String]] = [:]
        var general: [String] = []
        var entries: [ErrorBody.Entry] = []
        for error in errors {
            let detail = error["detail"]?.stringValue
            let title = error["title"]?.stringValue
            let pointer = error["source"]?["pointer"]?.stringValue
            let parameter = error["source"]?["parameter"]?.stringValue
            let field = pointer.flatMap(Self.field(ofPointer:)) ?? parameter
            let message = detail ?? title ?? error["code"]?.stringValue
            let statusText: String? = switch error["status"] {
            case .string(let text)?: text
            case .int(let number)?: String(number)
            default: nil
            }
            entries.append(ErrorBody.Entry(field: field, message: message, title: title, code: error["code"]?.stringValue,
                                           status: statusText, pointer: pointer, parameter: parameter))
            if let field, let message {
                fieldErrors[field, default: []].append(message)
            } else if let message {
                general.append(message)
            }
        }
        body.fieldErrors = fieldErrors
        body.entries = entries
        body.message = general.isEmpty ? (fieldErrors.isEmpty ? Self.mediaTypeExplanation(status) : nil) : general.joined(separator: "; ")
        if let explanation = Self.mediaTypeExplanation(status), let message = body.message, !message.contains("vnd.api+json") {
            body.message = "\(message) (\(explanation))"
        }
        return body
    }

    /// The field a pointer names: `/data/attributes/title` → `title`, `/data/relationships/author`
    /// → `author`, `/data/attributes/address/city` → `address.city`; `/data` → nil.
    static func field(ofPointer pointer: String) -> String? {
        let parts = pointer.split(separator: "/").map { $0.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~") }
        guard parts.count >= 3, parts[0] == "data", parts[1] == "attributes" || parts[1] == "relationships" else {
            return parts.count == 2 && parts[0] == "data" && parts[1] != "attributes" && parts[1] != "relationships" ? parts[1] : nil
        }
        return parts[2...].joined(separator: ".")
    }

    static func mediaTypeExplanation(_ status: Int) -> String? {
        switch status {
        case 406: "406 Not Acceptable: the server does not answer in \(mediaType), which the request asked for in Accept"
        case 415: "415 Unsupported Media Type: the server does not take the body as \(mediaType) (JSON:API servers refuse media type parameters)"
        default: nil
        }
    }
}

extension DocumentFormat where Self == JSONAPIFormat {
    /// JSON:API (``JSONAPIFormat``), every entity's type its resource path.
    public static var jsonAPI: JSONAPIFormat { JSONAPIFormat() }
}
