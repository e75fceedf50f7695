import Foundation
import Tether

/// Applies the steps of declared ``SchemaMigration``s to the file and to its stored layout, inside
/// the transaction of `prepare(for:migrations:)`, before the additive plan (``MigrationPlanner``).
/// Each step runs its SQL at once; any error rolls the whole transaction back.
struct MigrationRunner {
    let connection: Connection
    let schema: Schema
    var layout: StoredLayout
    /// Entities (by their current name) whose identity index was dropped by a step and is
    /// created, after a check for duplicates, once the additive part has run (``finish(_:)``).
    private(set) var reindex: [String] = []

    init(connection: Connection, layout: StoredLayout, schema: Schema) {
        self.connection = connection
        self.layout = layout
        self.schema = schema
    }

    /// Applies the steps of `migration` in order.
    mutating func apply(_ migration: SchemaMigration) throws {
        for step in migration.steps {
            try apply(step, of: migration.id)
        }
    }

    private func failure(_ step: MigrationStep, _ migration: String, _ message: String,
                         kind: StoreError.Kind = .incompatibleSchema, member: String? = nil) -> StoreError {
        StoreError(kind, entity: step.entity, member: member ?? step.member,
                   "schema migration '\(migration)' cannot apply \(step): \(message); the file was left untouched")
    }

    private func exec(_ sql: String) throws {
        try connection.exec(sql, "migrating the schema (\(sql))")
    }

    private func entityIndex(_ name: String, _ step: MigrationStep, _ migration: String) throws -> Int {
        guard let index = layout.entities.firstIndex(where: { $0.name == name }) else {
            throw failure(step, migration, "the file has no entity \(name)")
        }
        return index
    }

    /// The names a column of `entity`'s table already has (attributes, retired or not, and
    /// foreign keys), lowercased as SQLite compares them.
    private func columns(of entity: String) -> Set<String> {
        let attributes = layout.entities.first { $0.name == entity }?.attributes.map(\.name) ?? []
        let keys = layout.linkSets.filter { $0.storage == "foreignKey" && $0.table == entity }.compactMap(\.a.relationship)
        return Set((attributes + keys + ["rowid"]).map { $0.lowercased() })
    }

    /// The members (attributes and relationships, retired or not) `entity` has in the file.
    private func members(of entity: String) -> Set<String> {
        var names = Set(layout.entities.first { $0.name == entity }?.attributes.map(\.name) ?? [])
        for set in layout.linkSets {
            if set.a.entity == entity, let name = set.a.relationship { names.insert(name) }
            if set.b.entity == entity, let name = set.b.relationship { names.insert(name) }
        }
        return Set(names.map { $0.lowercased() })
    }

    private func tableExists(_ name: String) throws -> Bool {
        try !connection.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(name)]) { _ in true }.isEmpty
    }

    /// Refuses a step on `entity` while Tether's own records (the outbox's unsent changes, pending
    /// references) name it: they would be left naming what the step re-keys or holding values of
    /// the old type. `outbox`: the outbox's entries (a rename rewrites them instead); `pending`: the pending
    /// references (which name objects by entity and identity values).
    private func checkBookkeeping(_ entity: String, _ step: MigrationStep, _ migration: String, outbox: Bool = true, pending: Bool = true) throws {
        for mentions in TetherBookkeeping.mentions where layout.entities.contains(where: { $0.name == mentions.entity })
            && (mentions.entity == TetherBookkeeping.outboxEntity ? outbox : pending) {
            let key = entity + "\u{1F}"
            let conditions = mentions.names.map { "\(quote($0)) = ?" } + mentions.keys.map { "substr(\(quote($0)), 1, ?) = ?" }
            let arguments = mentions.names.map { _ in SQLValue.text(entity) }
                + mentions.keys.flatMap { _ in [SQLValue.int(Int64(key.unicodeScalars.count)), .text(key)] }
            guard !conditions.isEmpty, try tableExists(mentions.entity) else { continue }
            let count = try connection.query("SELECT count(*) FROM \(quote(mentions.entity)) WHERE \(conditions.joined(separator: " OR "))",
                                             arguments) { $0.int(0) }.first ?? 0
            if count > 0 {
                let what = mentions.entity.hasPrefix("_TetherOutbox") ? "unsent changes in the outbox" : "pending references"
                throw failure(step, migration, "\(count) of Tether's \(what) (\(mentions.entity)) name \(entity); let them be sent or resolved with the previous release, or ship the step once they are gone")
            }
        }
    }

    /// Applies `rename` to Tether's own records: the outbox's entries (what they change, their
    /// keys, the local values they keep), so that they are sent under the new names, and the
    /// pending references, so that a later import links them under the new names.
    private func rewriteBookkeeping(_ rename: TetherBookkeeping.Rename) throws {
        try rewrite(TetherBookkeeping.outboxEntity, TetherBookkeeping.outboxNamingAttributes) { values in
            try TetherBookkeeping.outboxEntry(values, renaming: rename)
        }
        for (entity, attributes) in TetherBookkeeping.pendingNamingAttributes {
            try rewrite(entity, attributes) { values in try TetherBookkeeping.pendingRecord(of: entity, values, renaming: rename) }
        }
    }

    /// Updates each row of Tether's entity `table` with what `change` makes of its `attributes`
    /// (those the file has; `row` and `sourceRow` are integers, the others text).
    private func rewrite(_ table: String, _ attributes: [String], _ change: ([String: Value]) throws -> [String: Value]) throws {
        guard let stored = layout.entities.first(where: { $0.name == table }), try tableExists(table) else { return }
        let columns = attributes.filter { name in stored.attributes.contains { $0.name == name } }
        guard !columns.isEmpty else { return }
        let rows = try connection.query("SELECT \"rowid\", \(columns.map(quote).joined(separator: ", ")) FROM \(quote(table))", [],
                                        context: "reading \(table) to rename") { row -> (Int64, [String: Value]) in
            var values: [String: Value] = [:]
            for (i, name) in columns.enumerated() {
                values[name] = Codec.decode(row, i + 1, as: name == "row" || name == "sourceRow" ? .int64 : .string)
            }
            return (row.int(0), values)
        }
        for (row, values) in rows {
            let changed = try change(values).sorted { $0.key < $1.key }
            guard !changed.isEmpty else { continue }
            try connection.run("UPDATE \(quote(table)) SET \(changed.map { "\(quote($0.key)) = ?" }.joined(separator: ", ")) WHERE \"rowid\" = ?",
                               changed.map { Codec.encode($0.value, as: .string) } + [.int(row)], context: "renaming in \(table)")
        }
    }

    private func dropIdentityIndex(_ entity: String) throws {
        try exec("DROP INDEX IF EXISTS \(quote("_tether_identity_" + entity))")
    }

    private func createIdentityIndex(_ entity: String, _ identity: [String]) throws {
        try exec("CREATE UNIQUE INDEX \(quote("_tether_identity_" + entity)) ON \(quote(entity)) (\(identity.map(quote).joined(separator: ", ")))")
    }

    private func renameForeignKeyIndex(table old: String, column oldColumn: String, to new: String, column newColumn: String) throws {
        try exec("DROP INDEX IF EXISTS \(quote("_tether_fk_" + old + "." + oldColumn))")
        try exec("CREATE INDEX \(quote("_tether_fk_" + new + "." + newColumn)) ON \(quote(new)) (\(quote(newColumn)))")
    }

    /// Renames join table `index` to `name` (when no table has that name), with its indexes.
    private mutating func renameJoinTable(_ index: Int, to name: String) throws {
        let set = layout.linkSets[index]
        let taken = layout.entities.map { $0.name.lowercased() } + layout.linkSets.map { $0.table.lowercased() }
        guard !taken.contains(name.lowercased()), try !tableExists(name) else { return }
        try exec("ALTER TABLE \(quote(set.table)) RENAME TO \(quote(name))")
        try exec("DROP INDEX IF EXISTS \(quote("_tether_join_" + set.table))")
        try exec("DROP INDEX IF EXISTS \(quote("_tether_join_a_" + set.table))")
        for statement in JoinShape(set).indexes(name) { try exec(statement) }
        layout.linkSets[index].table = name
    }

    private mutating func apply(_ step: MigrationStep, of migration: String) throws {
        switch step {
        case .renameEntity(let from, let to):
            try renameEntity(from, to, step, migration)
        case .renameAttribute(let entity, let from, let to):
            try renameAttribute(entity, from, to, step, migration)
        case .renameRelationship(let entity, let from, let to):
            try renameRelationship(entity, from, to, step, migration)
        case .changeType(let entity, let attribute, let type, let conversion):
            try changeType(entity, attribute, type, conversion, step, migration)
        case .changeIdentity(let entity, let identity):
            try changeIdentity(entity, identity, step, migration)
        }
    }

    private mutating func renameEntity(_ from: String, _ to: String, _ step: MigrationStep, _ migration: String) throws {
        let index = try entityIndex(from, step, migration)
        guard from != to else { return }
        let lower = to.lowercased()
        let tableTaken = try from.lowercased() != lower && tableExists(to)
        if tableTaken || to.isEmpty || lower.hasPrefix("sqlite_") || lower.hasPrefix("_tether")
            || layout.entities.contains(where: { $0.name != from && $0.name.lowercased() == lower })
            || layout.linkSets.contains(where: { $0.table.lowercased() == lower }) {
            throw failure(step, migration, "the file already has a table named like \(to) (or the name is reserved)")
        }
        try rewriteBookkeeping(.entity(from: from, to: to))
        try exec("ALTER TABLE \(quote(from)) RENAME TO \(quote(to))")
        let identity = layout.entities[index].identity
        if !identity.isEmpty && !reindex.contains(from) {
            try dropIdentityIndex(from)
            try createIdentityIndex(to, identity)
        }
        reindex = reindex.map { $0 == from ? to : $0 }
        layout.entities[index].name = to
        for i in layout.linkSets.indices {
            var set = layout.linkSets[i]
            if set.a.entity == from { set.a.entity = to }
            if set.b.entity == from { set.b.entity = to }
            if set.storage == "foreignKey" && set.table == from, let column = set.a.relationship {
                try renameForeignKeyIndex(table: from, column: column, to: to, column: column)
                set.table = to
            }
            layout.linkSets[i] = set
            if set.storage == "joinTable" && set.table.hasPrefix(from + ".") {
                try renameJoinTable(i, to: to + set.table.dropFirst(from.count))
            }
        }
        if try tableExists(Layout.remoteRecordsTable) {
            try connection.run("UPDATE \(quote(Layout.remoteRecordsTable)) SET \"entity\" = ? WHERE \"entity\" = ?",
                               [.text(to), .text(from)], context: "renaming the remote records of \(from)")
        }
    }

    private mutating func renameAttribute(_ entity: String, _ from: String, _ to: String, _ step: MigrationStep, _ migration: String) throws {
        let index = try entityIndex(entity, step, migration)
        guard let a = layout.entities[index].attributes.firstIndex(where: { $0.name == from }) else {
            throw failure(step, migration, "the file has no attribute \(entity).\(from)")
        }
        guard from != to else { return }
        if to.isEmpty || (from.lowercased() != to.lowercased() && (columns(of: entity).contains(to.lowercased()) || members(of: entity).contains(to.lowercased()))) {
            throw failure(step, migration, "\(entity) already has a member or column named like \(to)")
        }
        // Pending references name objects by identity values, never by attribute.
        try rewriteBookkeeping(.property(entity: entity, from: from, to: to))
        try exec("ALTER TABLE \(quote(entity)) RENAME COLUMN \(quote(from)) TO \(quote(to))")
        layout.entities[index].attributes[a].name = to
        layout.entities[index].identity = layout.entities[index].identity.map { $0 == from ? to : $0 }
        try renameInRemoteRecords(entity, from, to)
    }

    /// Renames property `from` of `entity` in the remote records of its objects, which keep what
    /// the server last confirmed by property name.
    private func renameInRemoteRecords(_ entity: String, _ from: String, _ to: String) throws {
        guard try tableExists(Layout.remoteRecordsTable) else { return }
        let records = try connection.query("SELECT \"row\", \"record\" FROM \(quote(Layout.remoteRecordsTable)) WHERE \"entity\" = ?",
                                           [.text(entity)], context: "reading the remote records of \(entity)") { ($0.int(0), $0.blob(1)) }
        for (row, record) in records {
            guard let renamed = try TetherBookkeeping.remoteRecord(record, of: entity, renaming: from, to: to) else { continue }
            try connection.run("UPDATE \(quote(Layout.remoteRecordsTable)) SET \"record\" = ? WHERE \"entity\" = ? AND \"row\" = ?",
                               [.blob(renamed), .text(entity), .int(row)], context: "renaming \(entity).\(from) in its remote records")
        }
    }

    private mutating func renameRelationship(_ entity: String, _ from: String, _ to: String, _ step: MigrationStep, _ migration: String) throws {
        _ = try entityIndex(entity, step, migration)
        guard let i = layout.linkSets.firstIndex(where: { ($0.a.entity == entity && $0.a.relationship == from) || ($0.b.entity == entity && $0.b.relationship == from) }) else {
            throw failure(step, migration, "the file has no relationship \(entity).\(from)")
        }
        guard from != to else { return }
        if to.isEmpty || (from.lowercased() != to.lowercased() && (columns(of: entity).contains(to.lowercased()) || members(of: entity).contains(to.lowercased()))) {
            throw failure(step, migration, "\(entity) already has a member or column named like \(to)")
        }
        try rewriteBookkeeping(.property(entity: entity, from: from, to: to))
        var set = layout.linkSets[i]
        let sideA = set.a.entity == entity && set.a.relationship == from
        if sideA {
            set.a.relationship = to
            if set.storage == "foreignKey" {
                try exec("ALTER TABLE \(quote(set.table)) RENAME COLUMN \(quote(from)) TO \(quote(to))")
                try renameForeignKeyIndex(table: set.table, column: from, to: set.table, column: to)
            }
        } else {
            set.b.relationship = to
        }
        layout.linkSets[i] = set
        if set.storage == "joinTable" && set.table == entity + "." + from {
            try renameJoinTable(i, to: entity + "." + to)
        }
        try renameInRemoteRecords(entity, from, to)
    }

    private mutating func changeType(_ entity: String, _ attribute: String, _ type: AttributeType, _ conversion: MigrationConversion,
                                     _ step: MigrationStep, _ migration: String) throws {
        let index = try entityIndex(entity, step, migration)
        guard let a = layout.entities[index].attributes.firstIndex(where: { $0.name == attribute }) else {
            throw failure(step, migration, "the file has no attribute \(entity).\(attribute)")
        }
        let stored = layout.entities[index].attributes[a].type
        guard let old = AttributeType(storedName: stored) else {
            throw failure(step, migration, "the stored type of \(entity).\(attribute), \(stored), is unknown to this version of Tether")
        }
        guard old != type else { return }
        let identity = layout.entities[index].identity
        // The outbox keeps local values of the old type; pending references, identity values.
        try checkBookkeeping(entity, step, migration, pending: identity.contains(attribute))
        // Every value, converted, before anything is written.
        var converted: [(Int64, SQLValue)] = []
        var failures: [(row: Int64, value: String, reason: String)] = []
        try connection.run("SELECT \"rowid\", \(quote(attribute)) FROM \(quote(entity)) WHERE \(quote(attribute)) IS NOT NULL ORDER BY \"rowid\"", [],
                           context: "reading \(entity).\(attribute) to convert it") { row in
            let rowID = row.int(0)
            guard let value = Codec.decode(row, 1, as: old) else {
                failures.append((rowID, "\(row.value(1))", "the stored value is not a \(old)"))
                return
            }
            do {
                if let new = try conversion.convert(value, to: type) {
                    try type.check(new, entity: entity, attribute: attribute)
                    converted.append((rowID, Codec.encode(new, as: type)))
                } else {
                    converted.append((rowID, .null))
                }
            } catch let error as MigrationConversion.Failure {
                failures.append((rowID, "\(value)", error.reason))
            } catch let error as StoreError {
                if conversion.nullifies { converted.append((rowID, .null)) } else { failures.append((rowID, "\(value)", error.message)) }
            }
        }
        if !failures.isEmpty {
            let shown = try failures.prefix(5).map { failure in
                "\(try describeRow(entity, failure.row, identity)): \(failure.value) (\(failure.reason))"
            }
            let more = failures.count > shown.count ? "; and \(failures.count - shown.count) more" : ""
            throw failure(step, migration, "\(failures.count) value\(failures.count == 1 ? "" : "s") of \(entity).\(attribute) \(failures.count == 1 ? "does" : "do") not convert to \(type): \(shown.joined(separator: "; "))\(more) (use a custom conversion, or .nullifyingFailures to clear them)",
                          kind: .invalidValue, member: attribute)
        }
        if identity.contains(attribute) && !reindex.contains(entity) {
            try dropIdentityIndex(entity)
            reindex.append(entity)
        }
        let scratch = "_tether_convert"
        try exec("ALTER TABLE \(quote(entity)) ADD COLUMN \(quote(scratch)) \(Codec.columnType(type))")
        for (row, value) in converted {
            try connection.run("UPDATE \(quote(entity)) SET \(quote(scratch)) = ? WHERE \"rowid\" = ?", [value, .int(row)],
                               context: "converting \(entity).\(attribute)")
        }
        try exec("ALTER TABLE \(quote(entity)) DROP COLUMN \(quote(attribute))")
        try exec("ALTER TABLE \(quote(entity)) RENAME COLUMN \(quote(scratch)) TO \(quote(attribute))")
        layout.entities[index].attributes[a].type = type.description
    }

    /// `row 12 (id = 42)`: a row of `entity` and its identity values, for an error.
    private func describeRow(_ entity: String, _ row: Int64, _ identity: [String]) throws -> String {
        guard !identity.isEmpty else { return "row \(row)" }
        let values = try connection.query("SELECT \(identity.map(quote).joined(separator: ", ")) FROM \(quote(entity)) WHERE \"rowid\" = ?",
                                          [.int(row)]) { row in identity.indices.map { describe(row.value($0)) } }.first ?? []
        return "row \(row) (" + zip(identity, values).map { "\($0) = \($1)" }.joined(separator: ", ") + ")"
    }

    private func describe(_ value: SQLValue) -> String {
        switch value {
        case .null: "null"
        case .int(let v): String(v)
        case .double(let v): String(v)
        case .text(let v): "'\(v)'"
        case .blob(let v): "\(v.count) bytes"
        }
    }

    private mutating func changeIdentity(_ entity: String, _ identity: [String], _ step: MigrationStep, _ migration: String) throws {
        let index = try entityIndex(entity, step, migration)
        let stored = layout.entities[index]
        guard stored.identity != identity else { return }
        let declared = schema.entities.first { $0.name == entity }
        for name in identity where !stored.attributes.contains(where: { $0.name == name && !$0.retired }) && declared?.attribute(named: name) == nil {
            throw failure(step, migration, "\(entity) has no attribute \(name)", member: name)
        }
        try checkBookkeeping(entity, step, migration)
        if !reindex.contains(entity) {
            try dropIdentityIndex(entity)
            reindex.append(entity)
        }
        layout.entities[index].identity = identity
    }

    /// After the additive part: the identity index of each re-keyed entity, once no two of its
    /// objects share an identity (else a ``StoreError/Kind/duplicateIdentity`` error naming them).
    func finish(_ final: StoredLayout) throws {
        for name in reindex {
            guard let entity = final.entities.first(where: { $0.name == name }), !entity.identity.isEmpty else { continue }
            let columns = entity.identity.map(quote).joined(separator: ", ")
            let notNull = entity.identity.map { "\(quote($0)) IS NOT NULL" }.joined(separator: " AND ")
            var groups: [String] = []
            var total = 0
            try connection.run("SELECT \(columns), count(*), group_concat(\"rowid\", ', ') FROM \(quote(name)) WHERE \(notNull) GROUP BY \(columns) HAVING count(*) > 1", [],
                               context: "checking the new identity of \(name)") { row in
                total += 1
                guard groups.count < 5 else { return }
                let values = entity.identity.indices.map { "\(entity.identity[$0]) = \(describe(row.value($0)))" }
                groups.append("\(values.joined(separator: ", ")) (rows \(row.text(entity.identity.count + 1)))")
            }
            if total > 0 {
                let more = total > groups.count ? "; and \(total - groups.count) more" : ""
                throw StoreError(.duplicateIdentity, entity: name, member: entity.identity.first,
                                 "cannot change the identity of \(name) to (\(entity.identity.joined(separator: ", "))): \(total) identit\(total == 1 ? "y is" : "ies are") shared by several objects: \(groups.joined(separator: "; "))\(more); the file was left untouched")
            }
            try createIdentityIndex(name, entity.identity)
        }
    }
}

extension AttributeType {
    /// The type whose ``description`` the stored layout records (`"int64"`, `"array(string)"`,
    /// `"transformable(name)"`), or nil.
    init?(storedName name: String) {
        func inner(_ prefix: String) -> String? {
            guard name.hasPrefix(prefix + "("), name.hasSuffix(")") else { return nil }
            return String(name.dropFirst(prefix.count + 1).dropLast())
        }
        switch name {
        case "string": self = .string
        case "int16": self = .int16
        case "int32": self = .int32
        case "int64": self = .int64
        case "decimal": self = .decimal
        case "double": self = .double
        case "float": self = .float
        case "bool": self = .bool
        case "date": self = .date
        case "data": self = .data
        case "uuid": self = .uuid
        case "url": self = .url
        case "json": self = .json
        default:
            if let transformer = inner("transformable") {
                self = .transformable(transformer)
            } else if let element = inner("array").flatMap(AttributeType.init(storedName:)) {
                self = .array(element)
            } else if let element = inner("map").flatMap(AttributeType.init(storedName:)) {
                self = .map(element)
            } else {
                return nil
            }
        }
    }
}
