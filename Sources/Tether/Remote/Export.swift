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
    public var relationships: Relationships
    /// Leave out the identity attributes (servers usually assign them).
    public var omitIdentity: Bool

    public init(includeNulls: Bool = false, relationships: Relationships = .owned, omitIdentity: Bool = false) {
        self.includeNulls = includeNulls
        self.relationships = relationships
        self.omitIdentity = omitIdentity
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
    /// The JSON body of a stored object, by the mapping in reverse: each set attribute at its key
    /// path (nested ones included), dates by the client's ``DateDecoding``, relationships as
    /// foreign keys (`owner_id`, `label_ids`) holding the related objects' identities.
    public func export(_ id: ObjectID, options: ExportOptions = ExportOptions()) async throws -> JSON {
        try await store.read { [self] reader in
            guard let object = try reader.object(id) else {
                throw RequestError(.objectNotFound, entity: id.entity, "\(id) is not in the store")
            }
            return try exportJSON(entity: object.entity, values: object.values, id: id, related: [:], options: options, reader: reader)
        }
    }

    func exportJSON(
        entity: String, values: [String: Value], id: ObjectID?, related: [String: [ObjectID]], options: ExportOptions,
        reader: any StoreReader
    ) throws -> JSON {
        guard let mapping = mapping[entity] else {
            throw RequestError(.unknownEntity, entity: entity, "unknown entity '\(entity)'")
        }
        let identityNames = Set(mapping.identity.map(\.name))
        var members: [String: JSON] = [:]
        for attribute in mapping.attributes {
            if options.omitIdentity && identityNames.contains(attribute.name) { continue }
            if let value = values[attribute.name] {
                JSONExport.set(JSONExport.json(value, attribute.attribute, dateDecoding: dateDecoding, transformers: transformers),
                               at: attribute.keyPath, in: &members)
            } else if options.includeNulls && !identityNames.contains(attribute.name) {
                JSONExport.set(.null, at: attribute.keyPath, in: &members)
            }
        }
        for relationship in mapping.relationships {
            let r = relationship.relationship
            switch options.relationships {
            case .none: continue
            case .all: break
            case .owned:
                if r.isToMany, let inverse = r.inverse,
                    schema[r.destination]?.relationship(named: inverse)?.isToMany == false
                { continue }
            }
            guard let destination = self.mapping[r.destination], destination.identity.count == 1 else { continue }
            let identity = destination.identity[0]
            let targets: [ObjectID]
            if let known = related[r.name] {
                targets = known
            } else if let id {
                targets = try reader.related(r.name, of: id)
            } else {
                continue
            }
            let ids: [JSON] = try targets.compactMap { target in
                guard let value = try reader.object(target)?.values[identity.name] else { return nil }
                return JSONExport.json(value, identity.attribute, dateDecoding: dateDecoding, transformers: transformers)
            }
            if r.isToMany {
                members[relationship.foreignKey] = .array(ids)
            } else if let first = ids.first {
                members[relationship.foreignKey] = first
            } else if options.includeNulls {
                members[relationship.foreignKey] = .null
            }
        }
        return .object(members)
    }
}
