import Foundation
import Tether

/// The namespace's record of its tables, kept as JSON in its `_tether_schema` table: the union of
/// every schema the namespace was prepared with. Entities, attributes and relationships a later
/// schema dropped stay (retired), with their data, so that adding them back is safe.
struct StoredLayout: Codable, Sendable, Equatable {
    static let metadataTable = "_tether_schema"
    /// 1: every relationship in a join table; 2: a to-one relationship (unless its inverse is
    /// ordered) as a foreign-key column of its entity's table (`storage` "foreignKey"), as the
    /// SQLite store keeps it. A format-1 namespace is migrated to 2 when it is opened: its to-one
    /// links are copied from their join tables into the columns, and the join tables dropped.
    static let currentFormat = 2

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

    /// A relationship and its inverse: one set of links. Side `a` names a relationship.
    struct StoredLinkSet: Codable, Sendable, Equatable {
        var a: End
        var b: End
        /// The join table (`storage` "joinTable" or, in format 1, absent): columns `a`, `b`,
        /// `a_pos`, `b_pos` (a side that is not ordered keeps position 0); or, for "foreignKey",
        /// side a's entity, whose table has a column named after `a.relationship` holding side
        /// b's `rowid`.
        var table: String
        var retired: Bool = false
        /// "foreignKey" or "joinTable"; nil in format 1, where every link set is a join table.
        var storage: String?

        var isForeignKey: Bool { storage == "foreignKey" }
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
    /// Queries run before `ddl` that must find no row, else the migration is refused with the
    /// message (nothing changed): a to-one side that a format-1 join table links more than once,
    /// which one column cannot hold.
    var checks: [(sql: String, entity: String, member: String, message: String)] = []
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
        let upgrading = layout.format < 2
        layout.format = StoredLayout.currentFormat
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
                        if foreignKeyColumns(of: entity.name).contains(attribute.name) {
                            throw incompatible(entity.name, attribute.name, "\(entity.name).\(attribute.name) reuses the column of a retired to-one relationship")
                        }
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
                if layout.linkSets.contains(where: { !$0.isForeignKey && $0.table == entity.name }) {
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
        if upgrading { upgradeJoinTables() }
    }

    /// The foreign-key columns of `entity`'s table (live and retired).
    private func foreignKeyColumns(of entity: String) -> Set<String> {
        Set(layout.linkSets.filter { $0.isForeignKey && $0.a.entity == entity }.compactMap(\.a.relationship))
    }

    /// Whether `entity`'s table can take a foreign-key column `column`: no attribute (live or
    /// retired) or other foreign key has its name, it is not `rowid`, and PostgreSQL can name it.
    private func isFreeColumn(_ entity: String, _ column: String) -> Bool {
        guard column != "rowid", column.utf8.count <= 63 else { return false }
        let attributes = layout.entities.first { $0.name == entity }?.attributes.map(\.name) ?? []
        return !attributes.contains(column) && !foreignKeyColumns(of: entity).contains(column)
    }

    /// Where a relationship's links go (the SQLite store's rule): a to-one relationship whose
    /// inverse is not ordered is a column of its own entity's table; else a to-one inverse that
    /// is not the inverse of an ordered relationship is a column of the destination's table
    /// (so a one-to-one is a column of the side declared first); anything else is a join table.
    /// Returns true with side a first when side a holds the column, false with the sides swapped
    /// when side b does, nil for a join table. A column name that is taken keeps a join table.
    private func columnSide(_ a: StoredLayout.End, _ b: StoredLayout.End) -> Bool? {
        if a.kind == "toOne" && b.kind != "orderedToMany", let name = a.relationship, isFreeColumn(a.entity, name) { return true }
        if b.kind == "toOne" && a.kind != "orderedToMany", let name = b.relationship, isFreeColumn(b.entity, name) { return false }
        return nil
    }

    /// The statements that add the foreign-key column of `set` (side a holds it): `bigint`,
    /// referencing side b's `rowid` (a link never outlives its target: deleting the target
    /// clears it), and indexed, so that the other side finds its links.
    private func addColumn(_ set: StoredLayout.StoredLinkSet) -> [String] {
        let column = quote(set.a.relationship!)
        let own = table(set.a.entity)
        return ["ALTER TABLE \(own) ADD COLUMN \(column) bigint REFERENCES \(table(set.b.entity)) (\"rowid\") ON DELETE SET NULL",
                "CREATE INDEX ON \(own) (\(column))"]
    }

    /// Format 1 kept every relationship in a join table: each live link set that format 2 keeps
    /// as a column gets it, its links copied, and its join table dropped (in the migration's
    /// transaction: all of it or nothing). A to-one side linked more than once (which the store
    /// never wrote) would lose links: the migration is refused instead (`checks`). Retired link
    /// sets stay join tables (with their links), as do the others.
    private mutating func upgradeJoinTables() {
        for index in layout.linkSets.indices where layout.linkSets[index].storage == nil {
            var set = layout.linkSets[index]
            set.storage = "joinTable"
            if !set.retired, let aHolds = columnSide(set.a, set.b) {
                let joinTable = set.table
                let name = quote(joinTable)
                // The column's side as a (its links' `a` column), the other as b.
                let (own, other) = aHolds ? ("\"a\"", "\"b\"") : ("\"b\"", "\"a\"")
                if !aHolds { (set.a, set.b) = (set.b, set.a) }
                set.storage = "foreignKey"
                set.table = set.a.entity
                let relationship = set.a.relationship!
                checks.append((
                    sql: "SELECT 1 FROM \(table(joinTable)) GROUP BY \(own) HAVING count(*) > 1 LIMIT 1",
                    entity: set.a.entity, member: relationship,
                    message: "the namespace '\(namespace)' cannot be migrated to format \(StoredLayout.currentFormat): an object of \(set.a.entity) has more than one link in its to-one relationship '\(relationship)' (join table \(name)); the namespace was left untouched"))
                // The join table seen from the column's side.
                let add = addColumn(set)
                ddl.append(add[0])
                ddl.append("UPDATE \(table(set.a.entity)) AS t SET \(quote(relationship)) = j.\(other) FROM \(table(joinTable)) AS j WHERE t.\"rowid\" = j.\(own)")
                ddl.append(contentsOf: add.dropFirst())
                ddl.append("DROP TABLE \(table(joinTable))")
            }
            layout.linkSets[index] = set
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
            if set.isForeignKey && new.isOrdered {
                throw incompatible(other.entity, new.name, "\(other.entity).\(new.name) is an ordered inverse of \(entity).\(relationship.name), which is stored as a column without order")
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
        if let aHolds = columnSide(mine, theirs) {
            let set = aHolds
                ? StoredLayout.StoredLinkSet(a: mine, b: theirs, table: entity.name, storage: "foreignKey")
                : StoredLayout.StoredLinkSet(a: theirs, b: mine, table: relationship.destination, storage: "foreignKey")
            ddl.append(contentsOf: addColumn(set))
            layout.linkSets.append(set)
            return layout.linkSets.count - 1
        }
        let name = entity.name + "." + relationship.name
        try checkLength(name, entity.name, relationship.name)
        if schema.entities.contains(where: { $0.name == name }) || layout.entities.contains(where: { $0.name == name })
            || layout.linkSets.contains(where: { !$0.isForeignKey && $0.table == name }) {
            throw StoreError(.unsupported, entity: entity.name, member: relationship.name,
                             "the join table '\(name)' of \(entity.name).\(relationship.name) collides with another table")
        }
        // Foreign keys to both sides: no link outlives its objects, whatever runs concurrently.
        ddl.append("CREATE TABLE \(table(name)) (\"a\" bigint NOT NULL REFERENCES \(table(mine.entity)) (\"rowid\") ON DELETE CASCADE, "
                   + "\"b\" bigint NOT NULL REFERENCES \(table(theirs.entity)) (\"rowid\") ON DELETE CASCADE, "
                   + "\"a_pos\" bigint NOT NULL DEFAULT 0, \"b_pos\" bigint NOT NULL DEFAULT 0, PRIMARY KEY (\"a\", \"b\"))")
        ddl.append("CREATE INDEX ON \(table(name)) (\"b\", \"a\")")
        layout.linkSets.append(.init(a: mine, b: theirs, table: name, storage: "joinTable"))
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

    /// Where a link set's links are.
    enum Storage: Sendable {
        /// A join table (qualified, quoted) with columns `a`, `b`, `a_pos`, `b_pos`.
        case joinTable(String)
        /// A column (quoted) of side a's table (qualified, quoted) holding side b's `rowid`.
        case foreignKey(table: String, column: String)
    }

    struct LinkInfo: Sendable {
        let aEntity: String
        let bEntity: String
        let aToOne: Bool
        let bToOne: Bool
        let aOrdered: Bool
        let bOrdered: Bool
        let storage: Storage
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
    /// entity -> retired link sets that touch it: (storage, entity is side a, entity is side b)
    let retired: [String: [(Storage, Bool, Bool)]]

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
        var retired: [String: [(Storage, Bool, Bool)]] = [:]
        for set in stored.linkSets {
            let storage: Storage = set.isForeignKey
                ? .foreignKey(table: qualified(set.table), column: quote(set.a.relationship!))
                : .joinTable(qualified(set.table))
            if set.retired {
                retired[set.a.entity, default: []].append((storage, true, set.a.entity == set.b.entity))
                if set.b.entity != set.a.entity { retired[set.b.entity, default: []].append((storage, false, true)) }
                continue
            }
            let index = links.count
            links.append(LinkInfo(aEntity: set.a.entity, bEntity: set.b.entity,
                                  aToOne: set.a.kind == "toOne", bToOne: set.b.kind == "toOne",
                                  aOrdered: set.a.kind == "orderedToMany", bOrdered: set.b.kind == "orderedToMany",
                                  storage: storage, aName: set.a.relationship!, bName: set.b.relationship))
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
