import Foundation
import Tether

/// The file's record of its tables, kept as JSON in the `_tether_schema` table. It is the union of
/// every schema the file was opened with: entities, attributes and relationships that a later
/// schema dropped stay (retired), with their data, so that adding them back is safe.
struct StoredLayout: Codable, Sendable, Equatable {
    static let metadataTable = "_tether_schema"
    /// 1: join tables indexed on `b`; 2: on `(b, b_pos)` and `(a, a_pos)`, so that a new link's
    /// position is found without reading the target's other links; 3: each join table keyed by
    /// the sides it keeps in order (``JoinShape``), two B-trees per link unless both sides are
    /// ordered.
    static let currentFormat = 3

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

    /// A relationship and its inverse: one set of links. Side `a` always names a relationship.
    struct StoredLinkSet: Codable, Sendable, Equatable {
        var a: End
        var b: End
        /// "foreignKey" (a column named after `a.relationship` on `a`'s table, holding `b`'s rowid)
        /// or "joinTable" (a table with columns a, b, a_pos, b_pos).
        var storage: String
        var table: String
        var retired: Bool = false
    }

    var format: Int = StoredLayout.currentFormat
    var entities: [StoredEntity] = []
    var linkSets: [StoredLinkSet] = []
    /// The identifiers of the ``SchemaMigration``s applied to the file (or recorded as applied
    /// when it was created), oldest first; absent from records written before migration steps
    /// (none applied) and while there are none.
    var appliedMigrations: [String]?
}

/// How a join table (columns `a`, `b`, `a_pos`, `b_pos`) is keyed, from which of its sides keep
/// their links in order (format 3). Each link is an entry in two B-trees unless both sides are
/// ordered: one finds a side's links (in order, for an ordered side), the other the other side's
/// and makes each pair unique. A side that is not ordered keeps position 0.
enum JoinShape: Hashable {
    /// Neither side ordered: primary key `(a, b)`, index `(b, a)`.
    case unordered
    /// Side a ordered: primary key `(a, a_pos)`, unique index `(b, a)`.
    case aOrdered
    /// Side b ordered: primary key `(b, b_pos)`, unique index `(a, b)`.
    case bOrdered
    /// Both ordered: primary key `(a, b)`, indexes `(a, a_pos)` and `(b, b_pos)` (format 2's).
    case bothOrdered

    init(aOrdered: Bool, bOrdered: Bool) {
        switch (aOrdered, bOrdered) {
        case (false, false): self = .unordered
        case (true, false): self = .aOrdered
        case (false, true): self = .bOrdered
        case (true, true): self = .bothOrdered
        }
    }

    init(_ set: StoredLayout.StoredLinkSet) {
        self.init(aOrdered: set.a.kind == "orderedToMany", bOrdered: set.b.kind == "orderedToMany")
    }

    var aOrdered: Bool { self == .aOrdered || self == .bothOrdered }
    var bOrdered: Bool { self == .bOrdered || self == .bothOrdered }

    /// The statements that create the join table `table` in this shape.
    func create(_ table: String) -> [String] {
        [createTable(table)] + indexes(table)
    }

    /// The statements that rebuild the join table `table`, of any earlier shape or format, in
    /// this one: its links kept, an ordered side's positions renumbered from 0 in their order
    /// (ties, which no earlier format should hold, by the other side's row), an unordered side's
    /// set to 0.
    func rebuild(_ table: String) -> [String] {
        let scratch = "_tether_rebuild_" + table
        func position(_ ordered: Bool, _ own: String, _ other: String) -> String {
            ordered ? "row_number() OVER (PARTITION BY \"\(own)\" ORDER BY \"\(own)_pos\", \"\(other)\") - 1" : "0"
        }
        return [createTable(scratch),
                "INSERT INTO \(quote(scratch)) (\"a\", \"b\", \"a_pos\", \"b_pos\") SELECT \"a\", \"b\", \(position(aOrdered, "a", "b")), \(position(bOrdered, "b", "a")) FROM \(quote(table))",
                "DROP TABLE \(quote(table))",
                "ALTER TABLE \(quote(scratch)) RENAME TO \(quote(table))"]
            + indexes(table)
    }

    private func createTable(_ table: String) -> String {
        let key = switch self {
        case .unordered, .bothOrdered: "\"a\", \"b\""
        case .aOrdered: "\"a\", \"a_pos\""
        case .bOrdered: "\"b\", \"b_pos\""
        }
        return "CREATE TABLE \(quote(table)) (\"a\" INTEGER NOT NULL, \"b\" INTEGER NOT NULL, \"a_pos\" INTEGER NOT NULL, \"b_pos\" INTEGER NOT NULL, PRIMARY KEY (\(key))) WITHOUT ROWID"
    }

    func indexes(_ table: String) -> [String] {
        let index = quote("_tether_join_" + table)
        return switch self {
        case .unordered: ["CREATE INDEX \(index) ON \(quote(table)) (\"b\", \"a\")"]
        case .aOrdered: ["CREATE UNIQUE INDEX \(index) ON \(quote(table)) (\"b\", \"a\")"]
        case .bOrdered: ["CREATE UNIQUE INDEX \(index) ON \(quote(table)) (\"a\", \"b\")"]
        case .bothOrdered: ["CREATE INDEX \(index) ON \(quote(table)) (\"b\", \"b_pos\")",
                            "CREATE INDEX \(quote("_tether_join_a_" + table)) ON \(quote(table)) (\"a\", \"a_pos\")"]
        }
    }
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

/// Turns a schema and the file's stored layout into the new stored layout and the DDL that gets
/// there, or a `StoreError(.incompatibleSchema)` naming what changed.
struct MigrationPlanner {
    var layout: StoredLayout
    var ddl: [String] = []
    let schema: Schema

    init(stored: StoredLayout?, schema: Schema) {
        layout = stored ?? StoredLayout()
        self.schema = schema
    }

    private func incompatible(_ entity: String, _ member: String?, _ message: String) -> StoreError {
        StoreError(.incompatibleSchema, entity: entity, member: member,
                   "the schema is incompatible with the database file: \(message); the file was left untouched")
    }

    /// Names SQLite compares case-insensitively; Tether keeps them distinct, so collisions are refused.
    private func checkNames() throws(StoreError) {
        var tables: [String: String] = [StoredLayout.metadataTable.lowercased(): StoredLayout.metadataTable]
        for entity in schema.entities {
            if entity.name.lowercased().hasPrefix("sqlite_") {
                throw StoreError(.unsupported, entity: entity.name, "SQLiteStore cannot store an entity named '\(entity.name)' (reserved by SQLite)")
            }
            if let other = tables.updateValue(entity.name, forKey: entity.name.lowercased()) {
                throw StoreError(.unsupported, entity: entity.name, "SQLiteStore cannot store entities '\(other)' and '\(entity.name)': SQLite table names ignore case")
            }
            var columns: [String: String] = ["rowid": "rowid"]
            for name in entity.attributes.map(\.name) + entity.relationships.map(\.name) {
                if let other = columns.updateValue(name, forKey: name.lowercased()) {
                    throw StoreError(.unsupported, entity: entity.name, member: name,
                                     "SQLiteStore cannot store \(entity.name).\(name) next to \(entity.name).\(other): SQLite column names ignore case ('rowid' is reserved)")
                }
            }
            for relationship in entity.relationships where relationship.inverse == relationship.name && relationship.destination == entity.name {
                throw StoreError(.unsupported, entity: entity.name, member: relationship.name,
                                 "SQLiteStore does not support \(entity.name).\(relationship.name), a relationship that is its own inverse")
            }
        }
    }

    mutating func plan() throws(StoreError) {
        try checkNames()
        if layout.format > StoredLayout.currentFormat {
            throw StoreError(.incompatibleSchema, "the database file uses format \(layout.format), newer than this version of Tether understands (\(StoredLayout.currentFormat))")
        }
        // Join tables keyed for the sides they order now: their shapes before the plan, and
        // whether the file's format predates shapes (every join table is then rebuilt).
        let upgrading = layout.format < 3
        let shapesBefore = layout.linkSets.map { JoinShape($0) }
        layout.format = StoredLayout.currentFormat
        // Entities and attributes.
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
                        try checkFreeColumn(entity.name, attribute.name)
                        stored.attributes.append(.init(name: attribute.name, type: attribute.type.description))
                        ddl.append("ALTER TABLE \(quote(entity.name)) ADD COLUMN \(quote(attribute.name)) \(Codec.columnType(attribute.type))")
                    }
                }
                for a in stored.attributes.indices where !attributesPresent.contains(stored.attributes[a].name) {
                    stored.attributes[a].retired = true
                }
                stored.retired = false
                layout.entities[index] = stored
            } else {
                if layout.entities.contains(where: { $0.name.lowercased() == entity.name.lowercased() }) {
                    throw incompatible(entity.name, nil, "the table of entity \(entity.name) would collide with a retired entity of another case")
                }
                layout.entities.append(.init(name: entity.name, identity: entity.identity,
                                             attributes: entity.attributes.map { .init(name: $0.name, type: $0.type.description) }))
                let columns = ["\"rowid\" INTEGER PRIMARY KEY AUTOINCREMENT"]
                    + entity.attributes.map { "\(quote($0.name)) \(Codec.columnType($0.type))" }
                ddl.append("CREATE TABLE \(quote(entity.name)) (\(columns.joined(separator: ", ")))")
                if !entity.identity.isEmpty {
                    ddl.append("CREATE UNIQUE INDEX \(quote("_tether_identity_" + entity.name)) ON \(quote(entity.name)) (\(entity.identity.map(quote).joined(separator: ", ")))")
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
                    // Declared from one side (which may be the inverse); the other side may be new.
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
        // A join table whose shape changed (an ordered inverse was attached) or that an older
        // format keyed otherwise is rebuilt in its shape, keeping its links and their order.
        for (index, set) in layout.linkSets.enumerated() where set.storage == "joinTable" && index < shapesBefore.count {
            if upgrading || shapesBefore[index] != JoinShape(set) {
                ddl.append(contentsOf: JoinShape(set).rebuild(set.table))
            }
        }
    }

    /// Whether `stored` differs from the planned layout only by the format upgrade (its new
    /// indexes): a read-only file then reads the same without them.
    func onlyUpgradesFormat(of stored: StoredLayout?) -> Bool {
        guard let stored, stored.format < layout.format else { return false }
        var same = layout
        same.format = stored.format
        return same == stored
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

    private func checkFreeColumn(_ entity: String, _ column: String) throws(StoreError) {
        let taken = (layout.entities.first { $0.name == entity }?.attributes.map(\.name) ?? [])
            + layout.linkSets.filter { $0.storage == "foreignKey" && $0.a.entity == entity }.compactMap(\.a.relationship)
        if taken.contains(where: { $0.lowercased() == column.lowercased() }) {
            throw incompatible(entity, column, "\(entity).\(column) reuses the column of a retired attribute or relationship of another kind")
        }
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
            if set.storage == "foreignKey" && new.isOrdered {
                throw incompatible(other.entity, new.name, "\(other.entity).\(new.name) is an ordered inverse of \(entity).\(relationship.name), which is stored as a foreign key without order")
            }
            try checkFreeColumn(other.entity, new.name)
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
        let set: StoredLayout.StoredLinkSet
        if !relationship.isToMany && !(inverse?.isOrdered ?? false) {
            set = .init(a: mine, b: theirs, storage: "foreignKey", table: entity.name)
        } else if let inverse, !inverse.isToMany, !relationship.isOrdered {
            set = .init(a: theirs, b: mine, storage: "foreignKey", table: relationship.destination)
        } else {
            set = .init(a: mine, b: theirs, storage: "joinTable", table: entity.name + "." + relationship.name)
        }
        if set.storage == "foreignKey" {
            let column = set.a.relationship!
            try checkFreeColumn(set.a.entity, column)
            ddl.append("ALTER TABLE \(quote(set.table)) ADD COLUMN \(quote(column)) INTEGER")
            ddl.append("CREATE INDEX \(quote("_tether_fk_" + set.table + "." + column)) ON \(quote(set.table)) (\(quote(column)))")
        } else {
            if schema.entities.contains(where: { $0.name.lowercased() == set.table.lowercased() })
                || layout.linkSets.contains(where: { $0.table.lowercased() == set.table.lowercased() }) {
                throw StoreError(.unsupported, entity: entity.name, member: relationship.name,
                                 "the join table '\(set.table)' of \(entity.name).\(relationship.name) collides with another table")
            }
            ddl.append(contentsOf: JoinShape(set).create(set.table))
        }
        layout.linkSets.append(set)
        return layout.linkSets.count - 1
    }
}

/// The resolved layout the transactions use.
struct Layout: Sendable {
    struct EntityInfo: Sendable {
        let entity: Entity
        let table: String
        let types: [String: AttributeType]
        /// `"rowid", "a", "b", ...` in attribute order.
        let selectColumns: String
        let insertSQL: String
        let identity: [Attribute]
    }

    enum Storage: Sendable, Hashable {
        /// A column (quoted) on side a's table (quoted) holding side b's rowid.
        case foreignKey(table: String, column: String)
        /// A table (quoted) with columns a, b, a_pos, b_pos, keyed as its shape says.
        case joinTable(String, JoinShape)
    }

    struct LinkInfo: Sendable {
        let aEntity: String
        let bEntity: String
        let aToOne: Bool
        let bToOne: Bool
        let storage: Storage
    }

    let entities: [String: EntityInfo]
    let links: [LinkInfo]
    /// entity -> relationship -> (link index, true when the relationship is side a)
    let relationships: [String: [String: (Int, Bool)]]
    /// entity -> live link sets where the entity is side b without a relationship (no inverse)
    let unnamedIncoming: [String: [Int]]
    /// entity -> retired link sets that touch it: (storage, entity is side a, entity is side b)
    let retired: [String: [(Storage, Bool, Bool)]]
    /// Whether the file has the table of remote records (a read-only file written by an older
    /// Tether may lack it: it then has no records).
    var hasRemoteRecords = true
    /// The table of remote records, one row per object that has one.
    static let remoteRecordsTable = "_tether_records"
    static let createRemoteRecords = "CREATE TABLE IF NOT EXISTS \"_tether_records\" (\"entity\" TEXT NOT NULL, \"row\" INTEGER NOT NULL, \"record\" BLOB NOT NULL, PRIMARY KEY (\"entity\", \"row\")) WITHOUT ROWID"

    init(_ stored: StoredLayout, schema: Schema) {
        var entities: [String: EntityInfo] = [:]
        for entity in schema.entities {
            let table = quote(entity.name)
            let names = entity.attributes.map { quote($0.name) }
            let insert = names.isEmpty
                ? "INSERT INTO \(table) DEFAULT VALUES"
                : "INSERT INTO \(table) (\(names.joined(separator: ", "))) VALUES (\(Array(repeating: "?", count: names.count).joined(separator: ", ")))"
            entities[entity.name] = EntityInfo(
                entity: entity, table: table,
                types: Dictionary(uniqueKeysWithValues: entity.attributes.map { ($0.name, $0.type) }),
                selectColumns: (["\"rowid\""] + names).joined(separator: ", "),
                insertSQL: insert,
                identity: entity.identity.compactMap { entity.attribute(named: $0) })
        }
        var links: [LinkInfo] = []
        var relationships: [String: [String: (Int, Bool)]] = [:]
        var unnamed: [String: [Int]] = [:]
        var retired: [String: [(Storage, Bool, Bool)]] = [:]
        for set in stored.linkSets {
            let storage: Storage = set.storage == "foreignKey"
                ? .foreignKey(table: quote(set.table), column: quote(set.a.relationship!))
                : .joinTable(quote(set.table), JoinShape(set))
            if set.retired {
                retired[set.a.entity, default: []].append((storage, true, set.a.entity == set.b.entity))
                if set.b.entity != set.a.entity { retired[set.b.entity, default: []].append((storage, false, true)) }
                continue
            }
            let index = links.count
            links.append(LinkInfo(aEntity: set.a.entity, bEntity: set.b.entity,
                                  aToOne: set.a.kind == "toOne", bToOne: set.b.kind == "toOne", storage: storage))
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
