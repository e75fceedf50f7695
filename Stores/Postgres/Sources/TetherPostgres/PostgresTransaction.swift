import Foundation
import PostgresNIO
public import Tether

/// A transaction of a ``PostgresStore``: the `StoreWriter` (or, in a read, the `StoreReader`) the
/// store hands to a body, with access to SQL in the store's namespace. Not to be kept after the
/// body returns.
///
/// Every batched method is a handful of statements whatever the batch's size: find-by-identity
/// joins an array parameter (`unnest($1::bigint[])`) with the table, inserts are one multi-row
/// `INSERT ... ON CONFLICT DO NOTHING` on the identity's unique index (a to-one relationship kept
/// as a column written with the rows), updates one `UPDATE ... FROM unnest(...)` of the changed
/// columns, and link writes one `UPDATE ... FROM unnest(...)` of the foreign-key columns that
/// change, or one `DELETE` and one `INSERT` of the join table's links that changed.
public final class PostgresTransaction: StoreWriter, @unchecked Sendable {
    let connection: Connection
    let layout: Layout
    /// False in a read: the writing methods throw.
    public let isWritable: Bool
    var changes = ChangeSet()
    private var finished = false
    /// The most values one statement binds in an array (larger batches are split).
    static let chunk = 20_000

    init(_ connection: Connection, _ layout: Layout, writable: Bool) {
        self.connection = connection
        self.layout = layout
        self.isWritable = writable
    }

    func finish() { finished = true }

    func checkOpen(writing: Bool = false) throws {
        if finished { throw StoreError(.unsupported, "a store transaction was used after its body returned") }
        if writing && !isWritable { throw StoreError(.unsupported, "cannot write in a read transaction") }
    }

    func info(_ entity: String) throws -> Layout.EntityInfo {
        try checkOpen()
        guard let info = layout.entities[entity] else {
            throw StoreError(.unknownEntity, entity: entity, "unknown entity '\(entity)'")
        }
        return info
    }

    func decodeObject(_ info: Layout.EntityInfo, _ cells: Cells) -> Object {
        var values: [String: Value] = [:]
        values.reserveCapacity(info.entity.attributes.count)
        for (i, attribute) in info.entity.attributes.enumerated() {
            if let value = Codec.decode(cells, i + 1, as: attribute.type) { values[attribute.name] = value }
        }
        return Object(id: ObjectID(entity: info.entity.name, rowID: cells.int(0) ?? 0), values: values)
    }

    func chunked<T>(_ items: [T], _ body: (ArraySlice<T>) throws -> Void) rethrows {
        var start = 0
        while start < items.count {
            let end = min(items.count, start + Self.chunk)
            try body(items[start..<end])
            start = end
        }
    }

    // MARK: StoreReader

    public func objects(_ entity: String, identities: [IdentityKey]) throws -> [IdentityKey: Object] {
        let info = try info(entity)
        var result: [IdentityKey: Object] = [:]
        try lookUp(info, identities, columns: info.selectColumns) { position, cells in
            result[identities[position]] = decodeObject(info, cells)
        }
        return result
    }

    public func find(_ entity: String, identities: [IdentityKey], attributes: [String]) throws -> [StoredRow?] {
        let info = try info(entity)
        let types = try attributes.map { name in
            guard let type = info.types[name] else {
                throw StoreError(.unknownAttribute, entity: entity, member: name, "\(entity) has no attribute '\(name)'")
            }
            return type
        }
        var rows = [StoredRow?](repeating: nil, count: identities.count)
        let columns = (["\"rowid\""] + attributes.map(quote)).joined(separator: ", ")
        try lookUp(info, identities, columns: columns) { position, cells in
            rows[position] = StoredRow(id: ObjectID(entity: entity, rowID: cells.int(0) ?? 0),
                                       values: types.enumerated().map { Codec.decode(cells, $0.offset + 1, as: $0.element) })
        }
        return rows
    }

    /// Finds the stored rows of `identities` in one statement per chunk: the identities are bound
    /// as one array per identity attribute, each looked up in the table's unique index. Calls
    /// `found` with each identity's position and its row (`columns`, then the position). An
    /// identity of the wrong arity or of values the attributes cannot hold finds nothing.
    private func lookUp(_ info: Layout.EntityInfo, _ identities: [IdentityKey], columns: String,
                        _ found: (Int, Cells) throws -> Void) throws {
        let identity = info.identity
        guard !identity.isEmpty, !identities.isEmpty else { return }
        // The identities the attributes can hold, with their positions.
        var keys: [[Parameter?]] = Array(repeating: [], count: identity.count)
        var positions: [Int64] = []
        positions.reserveCapacity(identities.count)
        for (position, key) in identities.enumerated() {
            let values = key.values
            guard values.count == identity.count else { continue }
            var encoded: [Parameter] = []
            for (value, attribute) in zip(values, identity) {
                guard attribute.type.accepts(value), let parameter = Codec.encode(value, as: attribute.type) else { break }
                encoded.append(parameter)
            }
            guard encoded.count == identity.count else { continue }
            for (k, parameter) in encoded.enumerated() { keys[k].append(parameter) }
            positions.append(Int64(position))
        }
        guard !positions.isEmpty else { return }
        let selected = columns.split(separator: ",").map { "t." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")
        var start = 0
        while start < positions.count {
            let end = min(positions.count, start + Self.chunk)
            var sql = SQL("")
            let arrays = identity.enumerated().map { k, attribute in
                sql.bind(.array(Codec.elementType(attribute.type), Array(keys[k][start..<end]))) + "::" + Codec.arrayCast(attribute.type)
            }
            let ordinals = sql.bind(Parameter.ints(positions[start..<end])) + "::bigint[]"
            let names = identity.indices.map { "k\($0)" }
            let join = identity.enumerated().map { k, attribute in "t.\(quote(attribute.name)) = v.k\(k)" }.joined(separator: " AND ")
            // Each key probes the identity's unique index (a lateral subquery, kept apart by
            // OFFSET 0, so that PostgreSQL does not hash the whole table instead: its statistics
            // do not know that the table grew during the import).
            sql.text = "SELECT \(selected), v.ord FROM unnest(\(arrays.joined(separator: ", ")), \(ordinals)) AS v(\(names.joined(separator: ", ")), ord) "
                + "CROSS JOIN LATERAL (SELECT * FROM \(info.table) AS t WHERE \(join) OFFSET 0) AS t"
            let rows = try connection.query(sql, "finding \(info.entity.name) by identity", entity: info.entity.name)
            for row in rows {
                let cells = Cells(row)
                try found(Int(cells.int(cells.count - 1) ?? 0), cells)
            }
            start = end
        }
    }

    public func object(_ id: ObjectID) throws -> Object? {
        guard let info = layout.entities[id.entity] else {
            try checkOpen()
            return nil
        }
        try checkOpen()
        var sql = SQL("")
        sql.text = "SELECT \(info.selectColumns) FROM \(info.table) WHERE \"rowid\" = \(sql.bind(.int(id.rowID)))"
        return try connection.query(sql, "reading \(id)", entity: id.entity).first.map { decodeObject(info, Cells($0)) }
    }

    /// How ``existing(_:_:lock:)`` locks the rows it finds.
    enum RowLock {
        /// Not at all.
        case unlocked
        /// `FOR UPDATE`, in `rowid` order: rows the transaction goes on to change (a foreign-key
        /// column), locked in a stable order so that concurrent writers do not deadlock.
        case forUpdate
        /// Touched (locked in `rowid` order and given a new version of the same values): rows the
        /// transaction only reads but whose links it changes (a to-one side kept elsewhere), so
        /// that a concurrent transaction that links them too fails to serialise and is retried,
        /// rather than both linking a to-one side twice.
        case touch
    }

    /// The rows among `rows` that are stored in `info`'s table.
    func existing(_ info: Layout.EntityInfo, _ rows: [Int64], lock: RowLock = .unlocked) throws -> Set<Int64> {
        var found = Set<Int64>()
        try chunked(rows) { chunk in
            var sql = SQL("")
            let array = sql.bind(Parameter.ints(chunk))
            switch lock {
            case .unlocked:
                sql.text = "SELECT \"rowid\" FROM \(info.table) WHERE \"rowid\" = ANY(\(array))"
            case .forUpdate:
                sql.text = "SELECT \"rowid\" FROM \(info.table) WHERE \"rowid\" = ANY(\(array)) ORDER BY \"rowid\" FOR UPDATE"
            case .touch:
                sql.text = "UPDATE \(info.table) SET \"rowid\" = t.\"rowid\" FROM (SELECT \"rowid\" FROM \(info.table) WHERE \"rowid\" = ANY(\(array)) ORDER BY \"rowid\" FOR UPDATE) t WHERE \(info.table).\"rowid\" = t.\"rowid\" RETURNING t.\"rowid\""
            }
            for row in try connection.query(sql, "checking objects of \(info.entity.name)", entity: info.entity.name) {
                if let id = Cells(row).int(0) { found.insert(id) }
            }
        }
        return found
    }

    /// The names `query` uses, resolved and checked as every store checks them (`QueryCheck`:
    /// attributes and paths through to-one relationships, no sort by a collection).
    func checkQuery(_ query: Query, _ info: Layout.EntityInfo) throws -> [String: AttributePath] {
        try QueryCheck.check(query) { layout.entities[$0]?.entity }
    }

    /// Queries on decimal or transformable attributes (the entity's own, or at the end of a
    /// path) are evaluated in Swift (PostgreSQL cannot order them as Tether does), and so are
    /// conditions on arrays, maps and JSON values (kept as JSON text); everything else is
    /// translated to SQL.
    func needsSwift(_ paths: [String: AttributePath]) -> Bool {
        paths.values.contains { path in
            switch path.type {
            case .decimal, .transformable, .array, .map, .json: true
            default: false
            }
        }
    }

    /// `needsSwift` for a query: its own names, or those of the conditions of its `any`/`all`
    /// (then the query is evaluated in Swift, each `any`/`all` by a query of its destination).
    func needsSwift(_ query: Query, _ paths: [String: AttributePath]) throws -> Bool {
        if needsSwift(paths) { return true }
        guard let condition = query.condition, let entity = layout.entities[query.entity]?.entity else { return false }
        return try Quantifiers.inner(condition, of: entity, entities: { self.layout.entities[$0]?.entity }, need: needsSwift)
    }

    /// A query evaluated in Swift (`needsSwift`): the ids of the objects it finds, in its order
    /// and window, from one read of the values it names (the entity's own attributes it uses, and
    /// its paths through joins) for every object of the entity, so that no other column is read
    /// or decoded (a JSON collection costs a parse per row).
    private func evaluateInSwift(_ query: Query, _ info: Layout.EntityInfo, _ paths: [String: AttributePath]) throws -> [ObjectID] {
        let scope = try QueryScope(paths, info, transaction: self)
        let names = paths.keys.sorted()
        let sql = SQL("SELECT \(scope.select(["rowid"]))" + names.map { ", " + scope.column($0) }.joined() + " FROM \(scope.from)")
        let entity = info.entity.name
        var objects: [Object] = []
        for row in try connection.query(sql, "reading \(entity)", entity: entity) {
            let cells = Cells(row)
            var values: [String: Value] = [:]
            for (i, name) in names.enumerated() {
                if let value = Codec.decode(cells, i + 1, as: paths[name]!.type) { values[name] = value }
            }
            objects.append(Object(id: ObjectID(entity: entity, rowID: cells.int(0) ?? 0), values: values))
        }
        // Ties by row id, as in SQL.
        objects.sort { $0.id.rowID < $1.id.rowID }
        let related = try Quantifiers.answers(
            query.condition, of: info.entity, rows: objects.map(\.id.rowID), entities: { self.layout.entities[$0]?.entity },
            links: { relationship, rows in
                let (link, sideA) = try self.relationship(entity, relationship)
                return try self.readLinks(link, sideA: sideA, of: rows).mapValues { $0.map(\.target) }
            },
            matching: { entity, condition in Set(try self.ids(Query(entity, where: condition)).map(\.rowID)) })
        return query.apply(to: objects, related: related).map(\.id)
    }

    /// The objects of `ids` (of `info`'s entity), in that order.
    private func objects(_ info: Layout.EntityInfo, inOrder ids: [ObjectID]) throws -> [Object] {
        var byRow: [Int64: Object] = [:]
        byRow.reserveCapacity(ids.count)
        try chunked(ids.map(\.rowID)) { chunk in
            var sql = SQL("")
            sql.text = "SELECT \(info.selectColumns) FROM \(info.table) WHERE \"rowid\" = ANY(\(sql.bind(Parameter.ints(chunk))))"
            for row in try connection.query(sql, "reading \(info.entity.name)", entity: info.entity.name) {
                let object = decodeObject(info, Cells(row))
                byRow[object.id.rowID] = object
            }
        }
        return ids.compactMap { byRow[$0.rowID] }
    }

    public func fetch(_ query: Query) throws -> [Object] {
        let info = try info(query.entity)
        let paths = try checkQuery(query, info)
        if try needsSwift(query, paths) { return try objects(info, inOrder: try evaluateInSwift(query, info, paths)) }
        let sql = try select(["rowid"] + info.entity.attributes.map(\.name), query, info, paths)
        return try connection.query(sql, "fetching \(query.entity)", entity: query.entity).map { decodeObject(info, Cells($0)) }
    }

    public func ids(_ query: Query) throws -> [ObjectID] {
        let info = try info(query.entity)
        let paths = try checkQuery(query, info)
        if try needsSwift(query, paths) { return try evaluateInSwift(query, info, paths) }
        let entity = query.entity
        return try connection.query(try select(["rowid"], query, info, paths), "fetching \(query.entity)", entity: entity)
            .map { ObjectID(entity: entity, rowID: Cells($0).int(0) ?? 0) }
    }

    /// The statement that selects `columns` (the entity's own) of the rows `query` finds, in its
    /// order and window (ties by `rowid`; unset values first when ascending, last when
    /// descending); paths are read through joins (`QueryScope`).
    func select(_ columns: [String], _ query: Query, _ info: Layout.EntityInfo, _ paths: [String: AttributePath]) throws -> SQL {
        let scope = try QueryScope(paths, info, transaction: self)
        var sql = SQL("")
        var text = "SELECT \(scope.select(columns)) FROM \(scope.from)"
        if let condition = query.condition {
            text += " WHERE " + (try translate(condition, scope, &sql))
        }
        text += " ORDER BY " + (query.sort.map { "\(scope.column($0.attribute)) \($0.ascending ? "ASC NULLS FIRST" : "DESC NULLS LAST")" }
            + [scope.column("rowid") + " ASC"]).joined(separator: ", ")
        if let limit = query.limit { text += " LIMIT \(sql.bind(.int(Int64(max(0, limit)))))" }
        if query.offset > 0 { text += " OFFSET \(sql.bind(.int(Int64(query.offset))))" }
        sql.text = text
        return sql
    }

    public func count(_ query: Query) throws -> Int {
        let info = try info(query.entity)
        let paths = try checkQuery(query, info)
        if try needsSwift(query, paths) {
            return try evaluateInSwift(Query(query.entity, where: query.condition), info, paths).count
        }
        let scope = try QueryScope(paths, info, transaction: self)
        var sql = SQL("")
        var text = "SELECT count(*) FROM \(scope.from)"
        if let condition = query.condition { text += " WHERE " + (try translate(condition, scope, &sql)) }
        sql.text = text
        return try connection.query(sql, "counting \(query.entity)", entity: query.entity).first.flatMap { Cells($0).int(0) }.map(Int.init) ?? 0
    }

    /// SQL for a condition, two-valued like ``Condition/matches(_:)``: every comparison is false
    /// (not NULL) for an unset attribute, so `NOT` keeps its meaning. An integer column compared
    /// with a double (or a double column with an integer) is compared exactly, as Tether compares
    /// them, by turning the operand into one of the column's kind. Names are read as `scope` says
    /// (a path through its joins).
    func translate(_ condition: Condition, _ scope: QueryScope, _ sql: inout SQL) throws -> String {
        switch condition {
        case .equal(let n, let v): return compare(n, v, .equal, scope, &sql)
        case .notEqual(let n, let v): return compare(n, v, .notEqual, scope, &sql)
        case .less(let n, let v): return compare(n, v, .less, scope, &sql)
        case .lessOrEqual(let n, let v): return compare(n, v, .lessOrEqual, scope, &sql)
        case .greater(let n, let v): return compare(n, v, .greater, scope, &sql)
        case .greaterOrEqual(let n, let v): return compare(n, v, .greaterOrEqual, scope, &sql)
        case .in(let n, let vs):
            let type = scope.type(n)!
            let column = scope.column(n)
            var elements: [Parameter] = []
            for value in vs {
                switch Comparison.operand(type, value) {
                case .value(let parameter)?: elements.append(parameter)
                case .integerColumn(let d)?:
                    if d.rounded(.towardZero) == d, let i = Int64(exactly: d) { elements.append(.int(i)) }
                case .doubleColumn(let i)?:
                    if let d = Double(exactly: i) { elements.append(.double(d)) }
                case nil: break
                }
            }
            guard !elements.isEmpty else { return "false" }
            return "(\(column) = ANY(\(sql.bind(.array(Codec.elementType(type), elements)))) AND \(column) IS NOT NULL)"
        case .includes:
            // On an array attribute the query is evaluated in Swift (needsSwift); on any other
            // attribute no value includes anything, as in Condition.matches.
            return "false"
        case .isNull(let n): return "(\(scope.column(n)) IS NULL)"
        case .isNotNull(let n): return "(\(scope.column(n)) IS NOT NULL)"
        case .hasPrefix(let n, let p):
            guard scope.type(n) == .string else { return "false" }
            let column = scope.column(n)
            guard !p.isEmpty else { return "(\(column) IS NOT NULL)" }
            let bytes = Array(p.utf8)
            return "(\(column) IS NOT NULL AND substring(\(column) FROM 1 FOR \(bytes.count)) = \(sql.bind(.bytes(bytes))))"
        case .contains(let n, let p):
            guard scope.type(n) == .string else { return "false" }
            let column = scope.column(n)
            return "(\(column) IS NOT NULL AND position(\(sql.bind(.bytes(Array(p.utf8)))) IN \(column)) > 0)"
        case .any(let r, let c):
            return try quantify(r, c, every: false, scope, &sql)
        case .all(let r, let c):
            return try quantify(r, c, every: true, scope, &sql)
        case .and(let cs):
            guard !cs.isEmpty else { return "true" }
            return "(" + (try cs.map { try translate($0, scope, &sql) }).joined(separator: " AND ") + ")"
        case .or(let cs):
            guard !cs.isEmpty else { return "false" }
            return "(" + (try cs.map { try translate($0, scope, &sql) }).joined(separator: " OR ") + ")"
        case .not(let c):
            return "(NOT " + (try translate(c, scope, &sql)) + ")"
        }
    }

    /// An `any` (`EXISTS`) or `all` (`NOT EXISTS … NOT`) over `relationship` of the scope's
    /// entity: a subquery of the destination's rows linked to the scope's row (by the foreign-key
    /// column, or by the join table's primary key `(a, b)` or its index `(b, a)`), in a scope of
    /// its own where `inner`'s names are read.
    private func quantify(_ relationship: String, _ inner: Condition, every: Bool, _ scope: QueryScope,
                          _ sql: inout SQL) throws -> String {
        let entities: (String) -> Entity? = { self.layout.entities[$0]?.entity }
        let destination = try info(QueryCheck.destination(of: relationship, from: scope.entity, entities: entities).name)
        let (link, sideA) = try self.relationship(scope.entity.name, relationship)
        let alias = scope.aliases.next()
        let subscope = try QueryScope(QueryCheck.check(inner, of: destination.entity, entities: entities), destination,
                                      transaction: self, alias: alias, aliases: scope.aliases)
        let from: String
        let correlation: String
        switch link.storage {
        case .foreignKey(_, let column):
            from = subscope.from
            correlation = sideA
                ? "\(subscope.row) = \(scope.qualified(column))"
                : "\(subscope.qualified(column)) = \(scope.row)"
        case .joinTable(let joinTable):
            let links = "\"\(alias)_l\""
            let (mine, theirs) = sideA ? ("\"a\"", "\"b\"") : ("\"b\"", "\"a\"")
            from = "\(joinTable) AS \(links), \(subscope.from)"
            correlation = "\(links).\(mine) = \(scope.row) AND \(subscope.row) = \(links).\(theirs)"
        }
        let condition = try translate(inner, subscope, &sql)
        return every
            ? "(NOT EXISTS (SELECT 1 FROM \(from) WHERE \(correlation) AND NOT \(condition)))"
            : "(EXISTS (SELECT 1 FROM \(from) WHERE \(correlation) AND \(condition)))"
    }

    private func compare(_ name: String, _ value: Value, _ op: Comparison.Operator, _ scope: QueryScope, _ sql: inout SQL) -> String {
        let column = scope.column(name)
        let set = "(\(column) IS NOT NULL)"
        switch Comparison.operand(scope.type(name)!, value) {
        case nil:
            return "false"
        case .value(let parameter)?:
            return "(\(column) \(op.sql) \(sql.bind(parameter)) AND \(column) IS NOT NULL)"
        case .integerColumn(let d)?:
            // An integer column against a double: exactly, as Value.compare does.
            switch Comparison.integerOperand(d, op) {
            case .always: return set
            case .never: return "false"
            case .compare(let op, let i): return "(\(column) \(op.sql) \(sql.bind(.int(i))) AND \(column) IS NOT NULL)"
            }
        case .doubleColumn(let i)?:
            switch Comparison.doubleOperand(i, op) {
            case .always: return set
            case .never: return "false"
            case .compare(let op, let d): return "(\(column) \(op.sql) \(sql.bind(.double(d))) AND \(column) IS NOT NULL)"
            }
        }
    }

    // MARK: Relationships

    func relationship(_ entity: String, _ name: String) throws -> (Layout.LinkInfo, Bool) {
        _ = try info(entity)
        guard let (index, sideA) = layout.relationships[entity]?[name] else {
            throw StoreError(.unknownRelationship, entity: entity, member: name, "\(entity) has no relationship '\(name)'")
        }
        return (layout.links[index], sideA)
    }

    /// The links of each of `rows` from side a (or b): (row, target, target's position on its
    /// own side), in order (by position on an ordered side, else by target). A foreign-key
    /// column's links have position 0: neither of its sides is ordered.
    func readLinks(_ link: Layout.LinkInfo, sideA: Bool, of rows: [Int64]) throws -> [Int64: [(target: Int64, otherPosition: Int64)]] {
        var result: [Int64: [(target: Int64, otherPosition: Int64)]] = [:]
        try chunked(rows) { chunk in
            var sql = SQL("")
            let array = sql.bind(Parameter.ints(chunk))
            switch link.storage {
            case .joinTable(let table):
                let (own, other) = sideA ? ("a", "b") : ("b", "a")
                sql.text = "SELECT \"\(own)\", \"\(other)\", \"\(other)_pos\" FROM \(table) WHERE \"\(own)\" = ANY(\(array)) "
                    + "ORDER BY \"\(own)\", \"\(own)_pos\", \"\(other)\""
            case .foreignKey(let table, let column):
                // Side a: the rows' own column; side b: the rows whose column names them (its index).
                sql.text = sideA
                    ? "SELECT \"rowid\", \(column), 0::bigint FROM \(table) WHERE \"rowid\" = ANY(\(array)) AND \(column) IS NOT NULL"
                    : "SELECT \(column), \"rowid\", 0::bigint FROM \(table) WHERE \(column) = ANY(\(array)) ORDER BY \(column), \"rowid\""
            }
            for row in try connection.query(sql, "reading links") {
                let cells = Cells(row)
                result[cells.int(0)!, default: []].append((cells.int(1)!, cells.int(2)!))
            }
        }
        return result
    }

    public func related(_ relationship: String, of ids: [ObjectID]) throws -> [ObjectID: [ObjectID]] {
        try checkOpen()
        var result: [ObjectID: [ObjectID]] = [:]
        var byEntity: [String: [Int64]] = [:]
        for id in ids { byEntity[id.entity, default: []].append(id.rowID) }
        for (entity, rows) in byEntity {
            let (link, sideA) = try self.relationship(entity, relationship)
            let destination = sideA ? link.bEntity : link.aEntity
            for (row, targets) in try readLinks(link, sideA: sideA, of: Array(Set(rows))) {
                result[ObjectID(entity: entity, rowID: row)] = targets.map { ObjectID(entity: destination, rowID: $0.target) }
            }
        }
        return result
    }

    public func remoteRecord(of id: ObjectID) throws -> Data? {
        try checkOpen()
        var sql = SQL("")
        sql.text = "SELECT \"record\" FROM \(layout.table(SystemTables.records)) WHERE \"entity\" = \(sql.bind(.text(id.entity))) AND \"row\" = \(sql.bind(.int(id.rowID)))"
        return try connection.query(sql, "reading the remote record of \(id)", entity: id.entity).first.flatMap { Cells($0).bytes(0) }.map { Data($0) }
    }

    // MARK: SQL

    /// Rows of an SQL query with bound arguments, each column by name (integers, doubles,
    /// booleans, bytes as data, anything else as its text). Tables are in the store's namespace:
    /// name them qualified (``PostgresStore/namespace``) or rely on the `search_path` the store sets.
    public func rows(_ sql: String, _ arguments: [Value] = []) throws -> [[String: Value]] {
        try checkOpen()
        let rows = try connection.query(SQL(sql, arguments.map(Codec.plain)), "running SQL of the app")
        return rows.map { row in
            let cells = Cells(row)
            var values: [String: Value] = [:]
            for i in 0..<cells.count { if let value = cells.value(i) { values[cells.name(i)] = value } }
            return values
        }
    }
}

/// Comparisons of a column with an operand of a kind it can hold or compare with.
enum Comparison {
    enum Operator {
        case equal, notEqual, less, lessOrEqual, greater, greaterOrEqual
        var sql: String {
            switch self {
            case .equal: "="
            case .notEqual: "<>"
            case .less: "<"
            case .lessOrEqual: "<="
            case .greater: ">"
            case .greaterOrEqual: ">="
            }
        }
    }

    enum Operand {
        /// The operand bound as the column stores it.
        case value(Parameter)
        /// A double compared with an integer column.
        case integerColumn(Double)
        /// An integer compared with a double column.
        case doubleColumn(Int64)
    }

    /// How a column of `type` is compared with `value`, or nil when the comparison is always
    /// false (kinds that do not compare, as in `Condition.matches`, or NaN).
    static func operand(_ type: AttributeType, _ value: Value) -> Operand? {
        if case .double(let v) = value, v.isNaN { return nil }
        switch (type, value) {
        case (.int16, .double(let d)), (.int32, .double(let d)), (.int64, .double(let d)): return .integerColumn(d)
        case (.double, .int(let i)), (.float, .int(let i)): return .doubleColumn(i)
        case (.string, .string), (.int16, .int), (.int32, .int), (.int64, .int), (.double, .double), (.float, .double),
            (.bool, .bool), (.date, .date), (.data, .data), (.uuid, .uuid), (.url, .url):
            return Codec.plain(value).map(Operand.value)
        default:
            return nil
        }
    }

    enum Outcome {
        case always, never
        case compare(Operator, Int64)
    }

    /// `column op d` for an integer column, as an integer comparison (exact).
    static func integerOperand(_ d: Double, _ op: Operator) -> Outcome {
        if d >= 9223372036854775808.0 {   // above every integer
            switch op {
            case .less, .lessOrEqual, .notEqual: return .always
            default: return .never
            }
        }
        if d < -9223372036854775808.0 {   // below every integer
            switch op {
            case .greater, .greaterOrEqual, .notEqual: return .always
            default: return .never
            }
        }
        let whole = d.rounded(.down)
        let floor = Int64(whole)
        if whole == d { return .compare(op, floor) }
        // floor < d < floor + 1: no integer equals d.
        switch op {
        case .equal: return .never
        case .notEqual: return .always
        case .less, .lessOrEqual: return .compare(.lessOrEqual, floor)
        case .greater, .greaterOrEqual: return .compare(.greater, floor)
        }
    }

    enum DoubleOutcome {
        case always, never
        case compare(Operator, Double)
    }

    /// `column op i` for a double column, as a double comparison (exact).
    static func doubleOperand(_ i: Int64, _ op: Operator) -> DoubleOutcome {
        let d = Double(i)
        // Whether d is above i, exactly (d may be 2^63, beyond Int64).
        let above: Bool
        if d >= 9223372036854775808.0 { above = true } else {
            let back = Int64(d)
            if back == i { return .compare(op, d) }
            above = back > i
        }
        // No double lies strictly between i and d (d is the double nearest to i).
        switch op {
        case .equal: return .never
        case .notEqual: return .always
        case .less, .lessOrEqual: return above ? .compare(.less, d) : .compare(.lessOrEqual, d)
        case .greater, .greaterOrEqual: return above ? .compare(.greaterOrEqual, d) : .compare(.greater, d)
        }
    }
}
