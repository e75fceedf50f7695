import Foundation

/// How an object becomes a request body.
public struct ExportOptions: Sendable, Hashable {
    /// Which relationships are written, as foreign keys (`owner_id`, `label_ids`).
    public enum Relationships: Sendable, Hashable {
        /// To-one relationships, and to-many relationships whose inverse is not to-one
        /// (many-to-many, or without inverse). The to-many side of a one-to-many relationship
        /// (`User.repositories`) is left out: the server owns it through the other side.
        case owned
        /// Every relationship.
        case all
        /// None.
        case none
    }

    /// Write unset attributes (and empty to-one relationships) as `null`. Off by default:
    /// unset attributes are left out. Turn it on for a PATCH that clears values.
    public var includeNulls: Bool
    /// Which relationships are written, as foreign keys: ``Relationships/owned`` by default.
    public var relationships: Relationships
    /// Leave out the identity attributes (servers usually assign them).
    public var omitIdentity: Bool
    /// What ``Client/save(_:options:)`` sends.
    public var content: Content

    /// What a save sends.
    public enum Content: Sendable, Hashable {
        /// Only what changed since the server last confirmed the object, for a `PATCH`; the whole
        /// object for a `PUT`. The default.
        case automatic
        /// Only what was changed with ``Client/updateLocally(_:setting:clearing:relating:)`` since
        /// the server last confirmed the object (its answer to a fetch, refresh, create or save):
        /// each changed attribute and relationship once, `null` for a cleared one; nothing when
        /// nothing changed.
        case changes
        /// The whole object (every set attribute; with ``ExportOptions/includeNulls``, unset ones
        /// as `null`), as a `PUT` replaces it.
        case everything
    }

    /// Options that change only what is given; by default unset attributes are left out, the
    /// owned relationships are written, the identity is sent, and a save sends what
    /// ``Content/automatic`` says.
    ///
    /// ```swift
    /// try await client.save(issue.id, options: ExportOptions(includeNulls: true, content: .everything))
    /// ```
    public init(includeNulls: Bool = false, relationships: Relationships = .owned, omitIdentity: Bool = false, content: Content = .automatic) {
        self.includeNulls = includeNulls
        self.relationships = relationships
        self.omitIdentity = omitIdentity
        self.content = content
    }
}

/// One property of an object as a request body holds it.
struct BodyMember {
    /// Where it goes in the body: the attribute's key path, or the relationship's foreign key.
    var path: JSONKeyPath
    /// Its JSON, or nil when unset (an attribute without value, a to-one relationship without target).
    var json: JSON?
    var isIdentity: Bool
    /// The relationship's mapping, nil for an attribute.
    var relationship: RelationshipMapping? = nil

    /// The member as a document format is given it, holding `value`.
    func document(_ name: String, _ value: JSON) -> DocumentMember {
        DocumentMember(name: name, keyPath: path, value: value, relationship: relationship, isIdentity: isIdentity)
    }
}

enum JSONExport {
    /// The JSON of a stored value, the reverse of the import's conversion.
    static func json(_ value: Value, _ attribute: Attribute, dateDecoding: DateDecoding, transformers: [String: any AttributeTransformer]) -> JSON {
        if case .transformable(let name) = attribute.type, let transformer = transformers[name] {
            return transformer.json(from: value)
        }
        switch value {
        case .string(let s): return .string(s)
        case .int(let i): return .int(i)
        case .double(let d): return .double(d)
        case .decimal(let d): return .string("\(d)")
        case .bool(let b): return .bool(b)
        case .date(let d): return dateDecoding.json(from: d)
        case .data(let d): return .string(d.base64EncodedString())
        case .uuid(let u): return .string(u.uuidString)
        case .url(let u): return .string(u.absoluteString)
        case .array, .map, .json: return collectionJSON(value, attribute, dateDecoding: dateDecoding, transformers: transformers)
        }
    }

    /// The JSON of an array, map or JSON value: each element as an attribute of the element type
    /// is written (dates by the client's ``DateDecoding``), a JSON value as it is.
    static func collectionJSON(_ value: Value, _ attribute: Attribute, dateDecoding: DateDecoding, transformers: [String: any AttributeTransformer]) -> JSON {
        let element: Attribute
        switch attribute.type {
        case .array(let type), .map(let type): element = Attribute(attribute.name, type)
        default: element = Attribute(attribute.name, .string)  // not an array or map type: scalars as they are
        }
        switch value {
        case .array(let elements): return .array(elements.map { json($0, element, dateDecoding: dateDecoding, transformers: transformers) })
        case .map(let members): return .object(members.mapValues { json($0, element, dateDecoding: dateDecoding, transformers: transformers) })
        case .json(let json): return json
        default: return json(value, element, dateDecoding: dateDecoding, transformers: transformers)
        }
    }

    /// Sets `value` at `keyPath` in `object`, creating nested objects as needed.
    static func set(_ value: JSON, at keyPath: JSONKeyPath, in object: inout [String: JSON]) {
        let components = keyPath.components
        guard let first = components.first else { return }
        if components.count == 1 {
            object[first] = value
            return
        }
        var nested = object[first]?.objectValue ?? [:]
        set(value, at: JSONKeyPath(components: Array(components.dropFirst())), in: &nested)
        object[first] = .object(nested)
    }
}

extension Client {
    /// The JSON of a stored value of `attribute`: dates by the attribute's own formats, else the
    /// client's ``DateDecoding``.
    func json(_ value: Value, of attribute: AttributeMapping) -> JSON {
        JSONExport.json(value, attribute.attribute, dateDecoding: attribute.dateDecoding ?? dateDecoding, transformers: transformers)
    }

    /// How a foreign key names an object with these values: its identity's value, or for a
    /// composite identity an object holding each identity attribute at its key path
    /// (`{"owner": "octocat", "name": "hello"}`), as imports read it. Nil when a value is unset.
    func referenceJSON(_ values: [String: Value], identity: [AttributeMapping]) -> JSON? {
        if identity.count == 1 { return values[identity[0].name].map { json($0, of: identity[0]) } }
        var object: [String: JSON] = [:]
        for attribute in identity {
            guard let value = values[attribute.name] else { return nil }
            JSONExport.set(json(value, of: attribute), at: attribute.keyPath, in: &object)
        }
        return .object(object)
    }

    /// The JSON body of a stored object, by the mapping in reverse: each set attribute at its key
    /// path (nested ones included), dates by the attribute's own formats
    /// (``KeyMapping/dateDecoding(for:in:)``) or the client's ``DateDecoding``, relationships as
    /// foreign keys (`owner_id`, `label_ids`) holding the related objects' identities.
    public func export(_ id: ObjectID, options: ExportOptions = ExportOptions()) async throws -> JSON {
        try await store.read { [self] reader in
            guard let object = try reader.object(id) else {
                throw RequestError(.objectNotFound, entity: id.entity, "\(id) is not in the store")
            }
            return try exportJSON(entity: object.entity, values: object.values, id: id, related: [:], options: options, reader: reader)
        }
    }

    /// The body of the whole object by the entity's document format (a create's, a `PUT`'s, an
    /// add's with `operation`), with the members ``wholeMembers(entity:values:id:related:options:reader:omitting:)`` gives.
    func exportJSON(
        entity: String, values: [String: Value], id: ObjectID?, related: [String: [ObjectID]], options: ExportOptions,
        reader: any StoreReader, omitting omitted: Set<String> = [], operation: DocumentOperation = .create,
        relationship: RelationshipMapping? = nil, targets: [JSON] = []
    ) throws -> JSON {
        let members = try wholeMembers(entity: entity, values: values, id: id, related: related, options: options, reader: reader, omitting: omitted)
        let identity = options.omitIdentity && operation == .create ? nil : identityJSON(of: entity, values: values)
        return try writeBody(operation, entity: entity, identity: identity, members: members, relationship: relationship, targets: targets)
    }

    /// Every member of the whole object a body holds: each set attribute and written
    /// relationship, and with ``ExportOptions/includeNulls`` the unset ones as `null`; none of
    /// `omitted`.
    func wholeMembers(
        entity: String, values: [String: Value], id: ObjectID?, related: [String: [ObjectID]], options: ExportOptions,
        reader: any StoreReader, omitting omitted: Set<String> = []
    ) throws -> [DocumentMember] {
        let members = try bodyMembers(entity: entity, values: values, id: id, related: related, options: options, reader: reader)
        var written: [DocumentMember] = []
        for (property, member) in members.sorted(by: { $0.key < $1.key }) where !omitted.contains(property) {
            if let json = member.json {
                written.append(member.document(property, json))
            } else if options.includeNulls && !member.isIdentity {
                written.append(member.document(property, .null))
            }
        }
        return written
    }

    /// The properties of an object a request body can hold, by attribute or relationship name
    /// (only those of `only`, when given): each attribute at its key path, each relationship that
    /// `options` writes as its foreign key, holding the related objects' identities.
    func bodyMembers(
        entity: String, values: [String: Value], id: ObjectID?, related: [String: [ObjectID]], options: ExportOptions,
        reader: any StoreReader, only: Set<String>? = nil
    ) throws -> [String: BodyMember] {
        guard let mapping = mapping[entity] else {
            throw RequestError(.unknownEntity, entity: entity, "unknown entity '\(entity)'")
        }
        let identityNames = Set(mapping.identity.map(\.name))
        var members: [String: BodyMember] = [:]
        for attribute in mapping.attributes where only?.contains(attribute.name) ?? true {
            let isIdentity = identityNames.contains(attribute.name)
            if options.omitIdentity && isIdentity { continue }
            let json = values[attribute.name].map { self.json($0, of: attribute) }
            members[attribute.name] = BodyMember(path: attribute.keyPath, json: json, isIdentity: isIdentity)
        }
        for relationship in mapping.relationships where only?.contains(relationship.name) ?? true {
            let r = relationship.relationship
            switch options.relationships {
            case .none: continue
            case .all: break
            case .owned:
                if r.isToMany, let inverse = r.inverse,
                    schema[r.destination]?.relationship(named: inverse)?.isToMany == false
                { continue }
            }
            guard let destination = self.mapping[r.destination], !destination.identity.isEmpty else { continue }
            let targets: [ObjectID]
            if let known = related[r.name] {
                targets = known
            } else if let id {
                targets = try reader.related(r.name, of: id)
            } else {
                continue
            }
            let ids: [JSON] = try targets.compactMap { target in
                guard let values = try reader.object(target)?.values else { return nil }
                return referenceJSON(values, identity: destination.identity)
            }
            let path = JSONKeyPath(components: [relationship.foreignKey])
            members[r.name] = BodyMember(path: path, json: r.isToMany ? .array(ids) : ids.first, isIdentity: false, relationship: relationship)
        }
        return members
    }
}
