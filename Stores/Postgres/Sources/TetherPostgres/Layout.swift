import Foundation
import Tether

/// The namespace's record of its tables, kept as JSON in its `_tether_schema` table: the union of
/// every schema the namespace was prepared with. Entities, attributes and relationships a later
/// schema dropped stay (retired), with their data, so that adding them back is safe.
struct StoredLayout: Codable, Sendable, Equatable {
    static let metadataTable = "_tether_schema"
    static let currentFormat = 1

    struct StoredAttribute: Codable, Sendable, Equatable {
        var name: String
        var type: String
        var retired: Bool = false
    }

    struct StoredEntity: Codable, Sendable, Equatable {
        var name: String
        var identity: [String]
        var attributes: [StoredAttribute]
        var retired: Bool = false
    }

    /// One end of a link set: an entity and, unless the relationship has no inverse, the relationship.
    struct End: Codable, Sendable, Equatable {
        var entity: String
        var relationship: String?
        /// "toOne", "toMany" or "orderedToMany" (nil without a relationship).
        var kind: String?
    }

    /// A relationship and its inverse: one set of links, in a join table with columns `a`, `b`,
    /// `a_pos`, `b_pos` (a side that is not ordered keeps position 0). Side `a` names a relationship.
    struct StoredLinkSet: Codable, Sendable, Equatable {
        var a: End
        var b: End
        var table: String
        var retired: Bool = false
    }

    var format: Int = StoredLayout.currentFormat
    var entities: [StoredEntity] = []
    var linkSets: [StoredLinkSet] = []
}

extension Relationship.Kind {
    var storedName: String {
        switch self {
        case .toOne: "toOne"
        case .toMany: "toMany"
        case .orderedToMany: "orderedToMany"
        }
    }
}

/// The tables every namespace has besides the entities' and the join tables.
enum SystemTables {
    static let records = "_tether_records"
    static let changes = "_tether_changes"

    static func create(_ namespace: String) -> [String] {
        let ns = quote(namespace)
        return [
            "CREATE TABLE IF NOT EXISTS \(ns).\(quote(StoredLayout.metadataTable)) (\"key\" text PRIMARY KEY, \"value\" text NOT NULL)",
            "CREATE TABLE IF NOT EXISTS \(ns).\(quote(records)) (\"entity\" text NOT NULL, \"row\" bigint NOT NULL, \"record\" bytea NOT NULL, PRIMARY KEY (\"entity\", \"row\"))",
            "CREATE TABLE IF NOT EXISTS \(ns).\(quote(changes)) (\"id\" bigserial PRIMARY KEY, \"at\" timestamptz NOT NULL DEFAULT now(), \"payload\" text NOT NULL)",
        ]
    }
}

/// Turns a schema and the namespace's stored layout into the new stored layout and the DDL that
/// gets there, or a `StoreError(.incompatibleSchema)` naming what changed. Only additive changes
/// are made: new tables, new columns, new join tables.
struct MigrationPlanner {
    var layout: StoredLayout
    var ddl: [String] = []
    let schema: Schema
    let namespace: String

    init(stored: StoredLayout?, schema: Schema, namespace: String) {
        layout = stored ?? StoredLayout()
        self.schema = schema
        self.namespace = namespace
    }

    private func table(_ name: String) -> String { quote(namespace) + "." + quote(name) }

    private func incompatible(_ entity: String, _ member: String?, _ message: String) -> StoreError {
        StoreError(.incompatibleSchema, entity: entity, member: member,
                   "the schema is incompatible with the PostgreSQL namespace '\(namespace)': \(message); the namespace was left untouched")
    }

    /// PostgreSQL cuts identifiers at 63 bytes: longer names would collide, so they are refused.
    private func checkLength(_ name: String, _ entity: String, _ member: String?) throws(StoreError) {
        if name.utf8.count > 63 {
            throw StoreError(.unsupported, entity: entity, member: member,
                             "PostgresStore cannot name a table or column '\(name)': PostgreSQL identifiers are at most 63 bytes")
        }
    }

    private func checkNames() throws(StoreError) {
        for entity in schema.entities {
            if entity.name.hasPrefix("_tether_") {
                throw StoreError(.unsupported, entity: entity.name, "PostgresStore cannot store an entity named '\(entity.name)' (the prefix _tether_ is reserved)")
            }
            try checkLength(entity.name, entity.name, nil)
            for attribute in entity.attributes {
                if attribute.name == "rowid" {
                    throw StoreError(.unsupported, entity: entity.name, member: attribute.name, "PostgresStore cannot store an attribute named 'rowid' (reserved)")
                }
                try checkLength(attribute.name, entity.name, attribute.name)
            }
            for relationship in entity.relationships {
                if relationship.inverse == relationship.name && relationship.destination == entity.name {
                    throw StoreError(.unsupported, entity: entity.name, member: relationship.name,
                                     "PostgresStore does not support \(entity.name).\(relationship.name), a relationship that is its own inverse")
                }
            }
        }
    }

    mutating func plan() throws(StoreError) {
        try checkNames()
        if layout.format > StoredLayout.currentFormat {
            throw StoreError(.incompatibleSchema, "the namespace '\(namespace)' uses format \(layout.format), newer than this version of Tether understands (\(StoredLayout.currentFormat))")
        }
        var present = Set<String>()
        for entity in schema.entities {
            present.insert(entity.name)
            if let index = layout.entities.firstIndex(where: { $0.name == entity.name }) {
                var stored = layout.entities[index]
                if stored.identity != entity.identity {
                    throw incompatible(entity.name, nil, "the identity of \(entity.name) changed from \(describe(stored.identity)) to \(describe(entity.identity))")
                }
                var attributesPresent = Set<String>()
                for attribute in entity.attributes {
                    attributesPresent.insert(attribute.name)
                    if let a = stored.attributes.firstIndex(where: { $0.name == attribute.name }) {
                        if stored.attributes[a].type != attribute.type.description {
                            throw incompatible(entity.name, attribute.name, "\(entity.name).\(attribute.name) changed type from \(stored.attributes[a].type) to \(attribute.type)")
                        }
                        stored.attributes[a].retired = false
                    } else {
                        stored.attributes.append(.init(name: attribute.name, type: attribute.type.description))
                        ddl.append("ALTER TABLE \(table(entity.name)) ADD COLUMN \(quote(attribute.name)) \(Codec.columnType(attribute.type))")
                    }
                }
                for a in stored.attributes.indices where !attributesPresent.contains(stored.attributes[a].name) {
                    stored.attributes[a].retired = true
                }
                stored.retired = false
                layout.entities[index] = stored
            } else {
                if layout.linkSets.contains(where: { $0.table == entity.name }) {
                    throw incompatible(entity.name, nil, "the table of entity \(entity.name) would collide with a join table")
                }
                layout.entities.append(.init(name: entity.name, identity: entity.identity,
                                             attributes: entity.attributes.map { .init(name: $0.name, type: $0.type.description) }))
                let columns = ["\"rowid\" bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"]
                    + entity.attributes.map { "\(quote($0.name)) \(Codec.columnType($0.type))" }
                ddl.append("CREATE TABLE \(table(entity.name)) (\(columns.joined(separator: ", ")))")
                if !entity.identity.isEmpty {
                    // The identity's unique index: what INSERT ... ON CONFLICT relies on when
                    // several instances import the same objects at once.
                    ddl.append("CREATE UNIQUE INDEX ON \(table(entity.name)) (\(entity.identity.map(quote).joined(separator: ", ")))")
                }
            }
        }
        for index in layout.entities.indices where !present.contains(layout.entities[index].name) {
            layout.entities[index].retired = true
        }

        // Relationships: each relationship and its inverse are one link set.
        var handled = Set<[String]>()
        var live = Set<Int>()
        for entity in schema.entities {
            for relationship in entity.relationships where !handled.contains([entity.name, relationship.name]) {
                let inverse = relationship.inverse.flatMap { schema[relationship.destination]?.relationship(named: $0) }
                handled.insert([entity.name, relationship.name])
                if let inverse { handled.insert([relationship.destination, inverse.name]) }
                let mine = find(entity.name, relationship.name)
                let theirs = inverse.flatMap { find(relationship.destination, $0.name) }
                switch (mine, theirs) {
                case (nil, nil):
                    live.insert(try create(entity, relationship, inverse))
                case (let found?, nil), (nil, let found?):
                    let (index, side) = found
                    let (ownEntity, own, otherRelationship) = mine != nil
                        ? (entity.name, relationship, inverse) : (relationship.destination, inverse!, Optional(relationship))
                    try check(index, side, ownEntity, own, otherRelationship)
                    live.insert(index)
                case (let m?, let t?):
                    guard m.0 == t.0 else {
                        throw incompatible(entity.name, relationship.name,
                                           "\(entity.name).\(relationship.name) and \(relationship.destination).\(inverse!.name) became inverses of each other but are stored separately")
                    }
                    try check(m.0, m.1, entity.name, relationship, inverse)
                    live.insert(m.0)
                }
            }
        }
        for index in layout.linkSets.indices {
            layout.linkSets[index].retired = !live.contains(index)
        }
    }

    private func describe(_ identity: [String]) -> String {
        identity.isEmpty ? "none" : "(" + identity.joined(separator: ", ") + ")"
    }

    /// The link set and side (true for `a`) that stores `entity.relationship`.
    private func find(_ entity: String, _ relationship: String) -> (Int, Bool)? {
        for (i, set) in layout.linkSets.enumerated() {
            if set.a.entity == entity && set.a.relationship == relationship { return (i, true) }
            if set.b.entity == entity && set.b.relationship == relationship { return (i, false) }
        }
        return nil
    }

    /// Checks a stored link set against the schema's relationship (and inverse), attaching a new inverse.
    private mutating func check(_ index: Int, _ sideA: Bool, _ entity: String, _ relationship: Relationship, _ inverse: Relationship?) throws(StoreError) {
        var set = layout.linkSets[index]
        let own = sideA ? set.a : set.b
        let other = sideA ? set.b : set.a
        if own.kind != relationship.kind.storedName {
            throw incompatible(entity, relationship.name, "\(entity).\(relationship.name) changed from \(own.kind ?? "none") to \(relationship.kind.storedName)")
        }
        if other.entity != relationship.destination {
            throw incompatible(entity, relationship.name, "\(entity).\(relationship.name) changed destination from \(other.entity) to \(relationship.destination)")
        }
        switch (other.relationship, inverse) {
        case (nil, nil):
            break
        case (let old?, let new?) where old == new.name:
            if other.kind != new.kind.storedName {
                throw incompatible(other.entity, new.name, "\(other.entity).\(new.name) changed from \(other.kind ?? "none") to \(new.kind.storedName)")
            }
        case (nil, let new?):
            if find(other.entity, new.name) != nil {
                throw incompatible(other.entity, new.name, "\(other.entity).\(new.name) became the inverse of \(entity).\(relationship.name) but is stored separately")
            }
            let end = StoredLayout.End(entity: other.entity, relationship: new.name, kind: new.kind.storedName)
            if sideA { set.b = end } else { set.a = end }
        case (let old, let new):
            throw incompatible(entity, relationship.name, "the inverse of \(entity).\(relationship.name) changed from \(old ?? "none") to \(new?.name ?? "none")")
        }
        layout.linkSets[index] = set
    }

    private mutating func create(_ entity: Entity, _ relationship: Relationship, _ inverse: Relationship?) throws(StoreError) -> Int {
        let mine = StoredLayout.End(entity: entity.name, relationship: relationship.name, kind: relationship.kind.storedName)
        let theirs = StoredLayout.End(entity: relationship.destination, relationship: inverse?.name, kind: inverse?.kind.storedName)
        let name = entity.name + "." + relationship.name
        try checkLength(name, entity.name, relationship.name)
        if schema.entities.contains(where: { $0.name == name }) || layout.entities.contains(where: { $0.name == name })
            || layout.linkSets.contains(where: { $0.table == name }) {
            throw StoreError(.unsupported, entity: entity.name, member: relationship.name,
                             "the join table '\(name)' of \(entity.name).\(relationship.name) collides with another table")
        }
        // Foreign keys to both sides: no link outlives its objects, whatever runs concurrently.
        ddl.append("CREATE TABLE \(table(name)) (\"a\" bigint NOT NULL REFERENCES \(table(mine.entity)) (\"rowid\") ON DELETE CASCADE, "
                   + "\"b\" bigint NOT NULL REFERENCES \(table(theirs.entity)) (\"rowid\") ON DELETE CASCADE, "
                   + "\"a_pos\" bigint NOT NULL DEFAULT 0, \"b_pos\" bigint NOT NULL DEFAULT 0, PRIMARY KEY (\"a\", \"b\"))")
        ddl.append("CREATE INDEX ON \(table(name)) (\"b\", \"a\")")
        layout.linkSets.append(.init(a: mine, b: theirs, table: name))
        return layout.linkSets.count - 1
    }
}

/// The resolved layout the transactions use.
struct Layout: Sendable {
    struct EntityInfo: Sendable {
        let entity: Entity
        /// The qualified, quoted table.
        let table: String
        let types: [String: AttributeType]
        /// `"rowid", "a", "b", ...` in attribute order.
        let selectColumns: String
        let identity: [Attribute]
    }

    struct LinkInfo: Sendable {
        let aEntity: String
        let bEntity: String
        let aToOne: Bool
        let bToOne: Bool
        let aOrdered: Bool
        let bOrdered: Bool
        /// The qualified, quoted join table.
        let table: String
        /// The relationship of side a, and of side b (nil without an inverse).
        let aName: String
        let bName: String?
    }

    let namespace: String
    let entities: [String: EntityInfo]
    let links: [LinkInfo]
    /// entity -> relationship -> (link index, true when the relationship is side a)
    let relationships: [String: [String: (Int, Bool)]]
    /// entity -> live link sets where the entity is side b without a relationship (no inverse)
    let unnamedIncoming: [String: [Int]]
    /// entity -> retired join tables that touch it: (table, entity is side a, entity is side b)
    let retired: [String: [(String, Bool, Bool)]]

    /// The qualified, quoted name of a table of the namespace.
    func table(_ name: String) -> String { quote(namespace) + "." + quote(name) }

    init(_ stored: StoredLayout, schema: Schema, namespace: String) {
        self.namespace = namespace
        func qualified(_ name: String) -> String { quote(namespace) + "." + quote(name) }
        var entities: [String: EntityInfo] = [:]
        for entity in schema.entities {
            entities[entity.name] = EntityInfo(
                entity: entity, table: qualified(entity.name),
                types: Dictionary(uniqueKeysWithValues: entity.attributes.map { ($0.name, $0.type) }),
                selectColumns: (["\"rowid\""] + entity.attributes.map { quote($0.name) }).joined(separator: ", "),
                identity: entity.identity.compactMap { entity.attribute(named: $0) })
        }
        var links: [LinkInfo] = []
        var relationships: [String: [String: (Int, Bool)]] = [:]
        var unnamed: [String: [Int]] = [:]
        var retired: [String: [(String, Bool, Bool)]] = [:]
        for set in stored.linkSets {
            let table = qualified(set.table)
            if set.retired {
                retired[set.a.entity, default: []].append((table, true, set.a.entity == set.b.entity))
                if set.b.entity != set.a.entity { retired[set.b.entity, default: []].append((table, false, true)) }
                continue
            }
            let index = links.count
            links.append(LinkInfo(aEntity: set.a.entity, bEntity: set.b.entity,
                                  aToOne: set.a.kind == "toOne", bToOne: set.b.kind == "toOne",
                                  aOrdered: set.a.kind == "orderedToMany", bOrdered: set.b.kind == "orderedToMany",
                                  table: table, aName: set.a.relationship!, bName: set.b.relationship))
            relationships[set.a.entity, default: [:]][set.a.relationship!] = (index, true)
            if let name = set.b.relationship {
                relationships[set.b.entity, default: [:]][name] = (index, false)
            } else {
                unnamed[set.b.entity, default: []].append(index)
            }
        }
        self.entities = entities
        self.links = links
        self.relationships = relationships
        self.unnamedIncoming = unnamed
        self.retired = retired
    }
}
