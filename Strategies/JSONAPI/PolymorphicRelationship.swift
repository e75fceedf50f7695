import Tether

/// A JSON:API relationship whose linkage names resources of several types (a comment's
/// `commentable`, an article or a tag), held by one relationship of the entity per type.
///
/// A store links a relationship to objects of one entity, so a polymorphic relationship is
/// declared as the entity's relationships it may land in, one per destination type, and the
/// JSON:API member they share:
///
/// ```swift
/// struct Note: EntityModel {
///     var id: Int64
///     var body: String?
///     var commentedArticle: Article?     // "commentable" when its type is "articles"
///     var commentedTag: Tag?             // "commentable" when its type is "tags"
/// }
///
/// let client = try Client.Builder(models: [Note.self, Article.self, Tag.self])
///     .jsonAPI(polymorphic: [PolymorphicRelationship("commentable", of: "Note", as: ["commentedArticle", "commentedTag"])])
///     .build()
/// ```
///
/// Reading, the linkage of `commentable` goes to the relationship whose destination has its
/// `type`: `{"type": "tags", "id": "2"}` links `commentedTag` and unlinks `commentedArticle`
/// (a to-one polymorphic relationship has one target); `null` unlinks both; to-many linkage is
/// split by type, each relationship set to exactly its share. Linkage of a type none of the
/// relationships has is an `ImportDiagnostic` (`invalidRelationship`, `valueSkipped`) naming
/// the type: the relationship is left as it is stored, never set to the rest.
///
/// Writing, the relationships are sent as the one member: the target of whichever is set (two
/// set at once is a `RequestError`, `.unsupported`), `null` when none. A minimal `PATCH` of a
/// to-many polymorphic relationship that changed only some of its relationships is refused
/// (`.unsupported`, nothing sent): sending only their targets would unlink the others on the
/// server; send the whole object (`saveMethod(.put)`) or change them all.
///
/// Each of the relationships is listed, added to, removed from and replaced through the
/// shared member's URLs (`/notes/:id/commentable`, `/notes/:id/relationships/commentable`);
/// a list answered with another type than the relationship's destination is an `ImportError`,
/// and a replace of one relationship of a to-many member is refused (`.unsupported`: the server
/// would unlink the other types' objects).
public struct PolymorphicRelationship: Sendable, Hashable {
    /// The member of `relationships` as the server writes it (`commentable`).
    public var name: String
    /// The entity whose resources carry it.
    public var entity: String
    /// The entity's relationships that hold it, one per destination type.
    public var relationships: [String]

    /// The member `name` of `entity`'s resources, held by `relationships` (of `entity`, each to
    /// an entity of another JSON:API type).
    public init(_ name: String, of entity: String, as relationships: [String]) {
        self.name = name
        self.entity = entity
        self.relationships = relationships
    }
}

/// The polymorphic relationships of a format, resolved against a mapping: by entity, by member
/// name, the relationships and their destination types.
struct PolymorphicIndex {
    struct Part {
        let relationship: RelationshipMapping
        let type: String
    }

    /// Entity → member → parts.
    private(set) var members: [String: [String: [Part]]] = [:]
    /// Entity → relationship name → member.
    private(set) var memberOf: [String: [String: String]] = [:]

    init(_ declarations: [PolymorphicRelationship], mapping: Mapping, format: JSONAPIFormat) {
        for declaration in declarations {
            guard let entity = mapping[declaration.entity] else { continue }
            var parts: [Part] = []
            for name in declaration.relationships {
                guard let relationship = entity.relationship(name), let destination = mapping[relationship.relationship.destination] else { continue }
                parts.append(Part(relationship: relationship, type: format.type(of: destination)))
                memberOf[entity.name, default: [:]][name] = declaration.name
            }
            members[entity.name, default: [:]][declaration.name] = parts
        }
    }

    var isEmpty: Bool { members.isEmpty }

    func parts(_ member: String, of entity: String) -> [Part]? { members[entity]?[member] }

    func member(of relationship: String, in entity: String) -> String? { memberOf[entity]?[relationship] }
}

extension JSONAPIFormat {
    /// The linkage `data` of a polymorphic member, as values of its relationships' keys in
    /// `object`; a type none of them has leaves them all not given, with a diagnostic.
    func flattenPolymorphic(
        _ data: JSON, member: String, parts: [PolymorphicIndex.Part], entity: EntityMapping, into object: inout [String: JSON],
        at path: [JSONPath.Component], what: String, diagnostics: inout [ImportDiagnostic]
    ) throws {
        let declared = parts.map { "'\($0.type)' (\($0.relationship.name))" }.joined(separator: ", ")
        func unknown(_ type: String?, at path: [JSONPath.Component]) {
            diagnostics.append(ImportDiagnostic(
                path: JSONPath(path), entity: entity.name, attribute: member, problem: .invalidRelationship, action: .valueSkipped,
                message: "\(what): \(entity.name).\(member) links to type '\(type ?? "(none)")', which is none of the types declared for it "
                    + "(\(declared)); the relationship was not read and its stored targets stay"))
        }
        func part(_ linkage: JSON, at path: [JSONPath.Component]) throws -> (Int, JSON)? {
            guard let id = linkage["id"], id != .null else {
                throw ImportError(path: JSONPath(path), entity: entity.name, attribute: member, message: "\(what): a resource identifier without 'id' (\(linkage))")
            }
            let type = linkage["type"]?.stringValue
            guard let index = parts.firstIndex(where: { $0.type == type }) else {
                unknown(type, at: path + [.key("type")])
                return nil
            }
            return (index, id)
        }
        switch data {
        case .null:
            for part in parts { object[part.relationship.keyPath.components[0]] = .null }
        case .object:
            guard let found = try part(data, at: path) else { return }
            for (i, part) in parts.enumerated() { object[part.relationship.keyPath.components[0]] = i == found.0 ? found.1 : .null }
        case .array(let linkages):
            var shares = [[JSON]](repeating: [], count: parts.count)
            var complete = true
            for (i, linkage) in linkages.enumerated() {
                if let found = try part(linkage, at: path + [.index(i)]) { shares[found.0].append(found.1) } else { complete = false }
            }
            guard complete else { return }
            for (i, part) in parts.enumerated() { object[part.relationship.keyPath.components[0]] = .array(shares[i]) }
        default:
            throw ImportError(path: JSONPath(path), entity: entity.name, attribute: member, message: "\(what): expected resource linkage, found \(data.typeName)")
        }
    }

    /// The polymorphic member `relationship` holds a share of, if any.
    func polymorphicMember(of relationship: RelationshipMapping, in mapping: Mapping) -> String? {
        polymorphic.first { declaration in
            declaration.relationships.contains(relationship.name) && mapping[declaration.entity]?.relationship(relationship.name) == relationship
        }?.name
    }

    /// The members of a write that are relationships of a polymorphic member, joined into its
    /// linkage (by member name).
    func polymorphicLinkage(_ write: DocumentWrite, index: PolymorphicIndex) throws -> [String: JSON] {
        var given: [String: [(type: String, value: JSON, toMany: Bool)]] = [:]
        for member in write.members {
            guard let relationship = member.relationship, let name = index.member(of: relationship.name, in: write.entity.name),
                let destination = write.mapping[relationship.relationship.destination]
            else { continue }
            given[name, default: []].append((type(of: destination), member.value, relationship.relationship.isToMany))
        }
        var linkage: [String: JSON] = [:]
        for (name, values) in given {
            func identifier(_ id: JSON, _ type: String) -> JSON { ["type": .string(type), "id": Self.idString(id)] }
            if values.contains(where: { $0.toMany }) {
                let all = index.parts(name, of: write.entity.name)?.count ?? values.count
                if write.onlyChanges && values.count < all {
                    throw RequestError(.unsupported, entity: write.entity.name, member: name,
                        "\(write.entity.name).\(name) is a to-many polymorphic relationship held by \(all) relationships, and only "
                            + "\(values.count) changed: a PATCH of their targets alone would unlink the others on the server; "
                            + "save the whole object (saveMethod(.put)) or replace the relationship; nothing was sent")
                }
                var linkages: [JSON] = []
                for value in values { if case .array(let ids) = value.value { linkages += ids.map { identifier($0, value.type) } } }
                linkage[name] = .array(linkages)
            } else {
                let set = values.filter { $0.value != .null }
                if set.count > 1 {
                    throw RequestError(.unsupported, entity: write.entity.name, member: name,
                        "\(write.entity.name).\(name) is a to-one polymorphic relationship, and \(set.count) of its relationships are set "
                            + "(\(set.map { $0.type }.joined(separator: ", "))): it has one target; clear the others; nothing was sent")
                }
                linkage[name] = set.first.map { identifier($0.value, $0.type) } ?? .null
            }
        }
        return linkage
    }
}

/// Checks a format's polymorphic relationships against the client's mapping at `build()`.
struct PolymorphicRelationshipCheck: ClientExtension {
    let declarations: [PolymorphicRelationship]
    let format: JSONAPIFormat

    func validate(for client: Client) throws {
        for declaration in declarations {
            let what = "the polymorphic relationship '\(declaration.name)' of \(declaration.entity)"
            guard let entity = client.mapping[declaration.entity] else {
                throw ConfigurationError(.unknownEntity, entity: declaration.entity, "\(what) names an entity the schema does not have")
            }
            guard declaration.relationships.count >= 2 else {
                throw ConfigurationError(.schema, entity: entity.name, member: declaration.name, "\(what) is held by \(declaration.relationships.count) relationship(s); name one per type, two at least")
            }
            var types: [String: String] = [:]
            var toMany: Bool?
            for name in declaration.relationships {
                guard let relationship = entity.relationship(name), let destination = client.mapping[relationship.relationship.destination] else {
                    throw ConfigurationError(.unknownProperty, entity: entity.name, member: name, "\(what) names '\(name)', which is not a relationship of \(entity.name)")
                }
                if let other = types[format.type(of: destination)] {
                    throw ConfigurationError(.schema, entity: entity.name, member: name,
                                             "\(what): '\(name)' and '\(other)' both link to type '\(format.type(of: destination))'; each type is held by one relationship")
                }
                types[format.type(of: destination)] = name
                if let toMany, toMany != relationship.relationship.isToMany {
                    throw ConfigurationError(.schema, entity: entity.name, member: name, "\(what) mixes to-one and to-many relationships")
                }
                toMany = relationship.relationship.isToMany
                if !relationship.keyPath.isSingleKey {
                    throw ConfigurationError(.schema, entity: entity.name, member: name, "\(what): '\(name)' is mapped to the key path '\(relationship.keyPath)'; a JSON:API relationship is one member")
                }
            }
        }
    }
}
