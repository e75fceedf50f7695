#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import Foundation
public import Tether

/// A transaction of a ``SQLiteStore``: the `StoreWriter` (or, in a read, the `StoreReader`) the
/// store hands to a body, with access to SQL. Not to be kept after the body returns.
///
/// ```swift
/// let names = try await store.readSQL { db in
///     try db.rows(#"SELECT "name" FROM "Repository" WHERE "stars" > ? ORDER BY "name""#, [.int(100)])
/// }
/// ```
public final class SQLiteTransaction: StoreWriter {
    let connection: Connection
    let layout: Layout
    /// False in a read: the writing methods throw.
    public let isWritable: Bool
    var changes = ChangeSet()
    private var finished = false
    /// Whether `_tether_records` has rows, once read (nil: not read in this transaction).
    private var remoteRecordsPresent: Bool?
    /// Rows this transaction has found or written: a link write need not read them again to
    /// check that they exist.
    var known = KnownRows()
    /// The links last read in a write from each join table (by ``related(_:of:)``, with their
    /// positions) and from each foreign-key column (by ``compare(_:)``, with the row), until they
    /// are written: the link batch that follows an import's read diffs against them instead of
    /// reading them again.
    var linkReads: [Layout.Storage: LinkRead] = [:]

    /// Forgets what ``known`` and ``linkReads`` remember: after a delete, or SQL of the caller's,
    /// which may have changed any row or link.
    private func forgetReads() {
        known.forget()
        linkReads = [:]
    }

    init(_ connection: Connection, _ layout: Layout, writable: Bool, version: StoreVersion? = nil) {
        self.connection = connection
        self.layout = layout
        self.isWritable = writable
        self.version = version
    }

    /// The committed state a write transaction began from: the write transactions this store
    /// committed, and the file's data version (which changes when another connection commits).
    public let version: StoreVersion?

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

    private func decodeObject(_ info: Layout.EntityInfo, _ row: Row) -> Object {
        var values: [String: Value] = [:]
        for (i, attribute) in info.entity.attributes.enumerated() {
            if let value = Codec.decode(row, i + 1, as: attribute.type) { values[attribute.name] = value }
        }
        return Object(id: ObjectID(entity: info.entity.name, rowID: row.int(0)), values: values)
    }

    /// Runs `sql` once per chunk of `items`; the SQL gets the placeholder count of the chunk,
    /// padded to a few fixed sizes (repeating the last item) so that statements are reused.
    func chunked<T>(_ items: [T], maximum: Int = 500, _ body: (_ chunk: [T]) throws -> Void) throws {
        guard !items.isEmpty else { return }
        let buckets = [1, 8, 64, maximum].filter { $0 <= maximum }
        var start = 0
        while start < items.count {
            let end = min(items.count, start + maximum)
            var chunk = Array(items[start..<end])
            let size = buckets.first { $0 >= chunk.count } ?? maximum
            while chunk.count < size { chunk.append(chunk[chunk.count - 1]) }
            try body(chunk)
            start = end
        }
    }

    func placeholders(_ count: Int) -> String {
        Array(repeating: "?", count: count).joined(separator: ", ")
    }

    // MARK: StoreReader

    /// The whole objects that `find` finds: one lookup mechanism for both.
    public func objects(_ entity: String, identities: [IdentityKey]) throws -> [IdentityKey: Object] {
        let info = try info(entity)
        let names = info.entity.attributes.map(\.name)
        var found: [IdentityKey: Object] = [:]
        for (key, row) in zip(identities, try find(entity, identities: identities, attributes: names)) {
            guard let row, found[key] == nil else { continue }
            var values: [String: Value] = [:]
            for (name, value) in zip(names, row.values) where value != nil { values[name] = value }
            found[key] = Object(id: row.id, values: values)
        }
        return found
    }

    /// Decodes the values of each object the identity lookup finds.
    public func find(_ entity: String, identities: [IdentityKey], attributes: [String]) throws -> [StoredRow?] {
        let info = try info(entity)
        let types = try AttributeType.types(of: attributes, in: info.types, entity: entity)
        var result = [StoredRow?](repeating: nil, count: identities.count)
        try lookUp(info, identities, columns: attributes) { position, row in
            var values: [Value?] = []
            values.reserveCapacity(types.count)
            for (i, type) in types.enumerated() { values.append(Codec.decode(row, 2 + i, as: type)) }
            result[position] = StoredRow(id: ObjectID(entity: entity, rowID: row.int(1)), values: values)
        }
        return result
    }

    /// Compares each given value with the column where SQLite keeps it (`Codec.matches(_:_:_:as:)`):
    /// no stored value is built, and only the attributes some row gives are read. A to-one
    /// relationship kept as a column of the entity's table is read in the same statement; the
    /// others with ``related(_:of:)``.
    public func compare(_ batch: LookupBatch) throws -> [StoredDifference?] {
        let entity = batch.entity
        let info = try info(entity)
        let types = try AttributeType.types(of: batch.attributes, in: info.types, entity: entity)
        let read = batch.attributes.indices.filter { a in batch.identities.indices.contains { batch.isGiven(row: $0, attribute: a) } }
        // Each relationship's column among those read (nil: read afterwards), and its destination.
        var linkColumns: [(column: Int?, destination: String)] = []
        var columns = read.map { batch.attributes[$0] }
        // The foreign-key columns read, by the place of their relationship among the batch's:
        // kept for the link batch that may follow (a write's).
        var columnReads: [(storage: Layout.Storage, relationship: Int)] = []
        for name in batch.relationships {
            let (link, sideA) = try relationship(entity, name)
            guard sideA ? link.aToOne : link.bToOne else {
                throw StoreError(.unsupported, entity: entity, member: name, "a lookup reads to-one relationships only; \(entity).\(name) is to-many")
            }
            if case .foreignKey = link.storage, sideA {
                if isWritable { columnReads.append((link.storage, linkColumns.count)) }
                linkColumns.append((2 + columns.count, link.bEntity))
                columns.append(name)
            } else {
                linkColumns.append((nil, sideA ? link.bEntity : link.aEntity))
            }
        }
        var result = [StoredDifference?](repeating: nil, count: batch.count)
        try lookUp(info, batch.identities, columns: columns) { position, row in
            var changed: [Int] = []
            for (column, a) in read.enumerated() where batch.isGiven(row: position, attribute: a) {
                if !batch.withValue(row: position, attribute: a, { Codec.matches(row, 2 + column, $0, as: types[a]) }) { changed.append(a) }
            }
            let targets = linkColumns.map { link in
                link.column.flatMap { row.isNull($0) ? nil : ObjectID(entity: link.destination, rowID: row.int($0)) }
            }
            result[position] = StoredDifference(id: ObjectID(entity: entity, rowID: row.int(1)), changed: changed, targets: targets)
        }
        if !columnReads.isEmpty {
            // The objects found, in the batch's order (the order a link batch of them comes in).
            let found = result.compactMap { $0 }
            let rows = found.map(\.id.rowID)
            for (storage, r) in columnReads {
                linkReads[storage] = LinkRead(sideA: true, rows: rows, links: .column(found.map { $0.targets[r]?.rowID }))
            }
        }
        for (r, link) in linkColumns.enumerated() where link.column == nil {
            try readTargets(ofRelationship: r, in: batch, into: &result)
        }
        return result
    }

    /// The identity lookup under ``find(_:identities:attributes:)`` and ``compare(_:)``: calls
    /// `found` with the position in `identities` and the row (column 1 the rowid, then `columns`)
    /// of each stored object. Up to 500 keys go in one statement with their positions bound beside
    /// them (`WITH k(p, ...) AS (VALUES (0, ?), (1, ?), ...) SELECT k.p, ... FROM k CROSS JOIN
    /// table ON ...`), so each found row comes back with the position it answers: one index probe
    /// per key, and no hashing of keys in Swift. A key that cannot match (wrong arity or type) is
    /// bound as NULL.
    private func lookUp(_ info: Layout.EntityInfo, _ identities: [IdentityKey], columns: [String],
                        _ found: (_ position: Int, _ row: Row) throws -> Void) throws {
        let identity = info.identity
        guard !identity.isEmpty, !identities.isEmpty else { return }
        let maximum = max(1, 500 / identity.count)
        var rows: [Int64] = []
        rows.reserveCapacity(identities.count)
        // A few statement sizes, so that statements are reused; unused rows are bound NULL. The
        // text is built only when the connection has not prepared it yet.
        func sql(_ size: Int) -> String {
            let selected = (["k.\"p\"", "t.\"rowid\""] + columns.map { "t." + quote($0) }).joined(separator: ", ")
            let join = identity.indices.map { "t.\(quote(identity[$0].name)) = k.\"c\($0)\"" }.joined(separator: " AND ")
            let keyColumns = (["\"p\""] + identity.indices.map { "\"c\($0)\"" }).joined(separator: ", ")
            let keyRow = Array(repeating: "?", count: identity.count).joined(separator: ", ")
            let rows = (0..<size).map { "(\($0), \(keyRow))" }.joined(separator: ", ")
            return "WITH k(\(keyColumns)) AS (VALUES \(rows)) SELECT \(selected) FROM k CROSS JOIN \(info.table) AS t ON \(join)"
        }
        var start = 0
        while start < identities.count {
            let count = min(maximum, identities.count - start)
            let size = [1, 8, 32, 64, 128, 256, maximum].first { $0 >= count && $0 <= maximum } ?? maximum
            let statement = try connection.prepared(.lookUp(table: info.table, columns: columns, size: size)) { sql(size) }
            // The keys in ascending order, so that the index is probed in order (neighbouring
            // probes touch the same pages); row `i` of `k` holds the key at `order[i]`. Any order
            // gives the same answers.
            var order = Array(start..<(start + count))
            if identity.count == 1, let integers = integerKeys(identities, start..<(start + count)) {
                order = integers.sorted { $0.key < $1.key }.map(\.position)
            } else if identity.count == 1 {
                order.sort { a, b in
                    switch (identities[a].single, identities[b].single) {
                    case (.int(let x)?, .int(let y)?): x < y
                    case (let x?, let y?): Value.compare(x, y) == .orderedAscending
                    case (nil, _?): true
                    default: false
                    }
                }
            }
            var parameter: Int32 = 1
            for i in 0..<size {
                let key = i < count ? identities[order[i]] : nil
                if identity.count == 1, let value = key?.single, identity[0].type.accepts(value) {
                    try statement.bind(parameter, value, as: identity[0].type)
                } else if let values = key?.values, values.count == identity.count,
                    zip(identity, values).allSatisfy({ $0.type.accepts($1) }) {
                    for (i, value) in values.enumerated() { try statement.bind(parameter + Int32(i), value, as: identity[i].type) }
                } else {
                    for i in 0..<identity.count { try statement.bindNull(parameter + Int32(i)) }
                }
                parameter += Int32(identity.count)
            }
            try statement.query("looking up \(info.entity.name) by identity") { row in
                rows.append(row.int(1))
                try found(order[Int(row.int(0))], row)
            }
            start += count
        }
        known.insert(rows, table: info.table)
    }

    /// The keys at `positions` with their positions, when each is one integer (nil otherwise):
    /// integers sort without copying a value per comparison.
    private func integerKeys(_ identities: [IdentityKey], _ positions: Range<Int>) -> [(key: Int64, position: Int)]? {
        var keys: [(key: Int64, position: Int)] = []
        keys.reserveCapacity(positions.count)
        for position in positions {
            guard case .int(let key)? = identities[position].single else { return nil }
            keys.append((key, position))
        }
        return keys
    }

    public func object(_ id: ObjectID) throws -> Object? {
        let info = try info(id.entity)
        return try connection.query("SELECT \(info.selectColumns) FROM \(info.table) WHERE \"rowid\" = ?", [.int(id.rowID)],
                                    context: "reading \(id)") { decodeObject(info, $0) }.first
    }

    /// Throws ``StoreError/Kind/objectNotFound`` (naming the first missing one) unless every row
    /// is an object of `info`'s entity: one read per 500 rows, of the rows this transaction has not
    /// already found or written (``KnownRows``).
    func requireStored(_ info: Layout.EntityInfo, _ rows: [Int64]) throws {
        let unknown = known.unknown(rows, table: info.table)
        guard !unknown.isEmpty else { return }
        var found = Set<Int64>(minimumCapacity: unknown.count)
        try chunked(unknown) { chunk in
            try connection.run("SELECT \"rowid\" FROM \(info.table) WHERE \"rowid\" IN (\(placeholders(chunk.count)))",
                               chunk.map { .int($0) }, context: "reading") { found.insert($0.int(0)) }
        }
        if let missing = unknown.first(where: { !found.contains($0) }) {
            throw StoreError(.objectNotFound, entity: info.entity.name, "no object \(ObjectID(entity: info.entity.name, rowID: missing))")
        }
        known.insert(unknown, table: info.table)
    }

    func exists(_ info: Layout.EntityInfo, _ rowID: Int64) throws -> Bool {
        try !connection.query("SELECT 1 FROM \(info.table) WHERE \"rowid\" = ?", [.int(rowID)], context: "reading") { _ in true }.isEmpty
    }

    /// The names `query` uses, resolved and checked (`QueryCheck`: attributes and paths through
    /// to-one relationships, no sort by a collection).
    func checkQuery(_ query: Query, _ info: Layout.EntityInfo) throws -> [String: AttributePath] {
        try QueryCheck.check(query) { layout.entities[$0]?.entity }
    }

    /// Queries on decimal or transformable attributes (an entity's own, or at the end of a path)
    /// are evaluated in Swift (SQLite cannot order them as Tether does); everything else is
    /// translated to SQL.
    func needsSwift(_ paths: [String: AttributePath]) -> Bool {
        paths.values.contains { path in
            switch path.type {
            case .decimal, .transformable: true
            default: false
            }
        }
    }

    /// `needsSwift` for a query: its own names, or those of the conditions of its `any`/`all`
    /// (then the query is evaluated in Swift, each `any`/`all` by a query of its destination).
    func needsSwift(_ query: Query, _ paths: [String: AttributePath]) throws -> Bool {
        if needsSwift(paths) { return true }
        guard let condition = query.condition, let entity = layout.entities[query.entity]?.entity else { return false }
        return try Quantifiers.inner(condition, of: entity, entities: { layout.entities[$0]?.entity }, need: needsSwift)
    }

    /// The answers to the top-level `any`/`all` of `query`'s condition for `objects`.
    private func quantifiedAnswers(_ query: Query, _ info: Layout.EntityInfo, _ objects: [Object]) throws
        -> (ObjectID, String, Bool, Condition) -> Bool {
        try Quantifiers.answers(
            query.condition, of: info.entity, rows: objects.map(\.id.rowID), entities: { layout.entities[$0]?.entity },
            links: { relationship, rows in
                let (link, sideA) = try self.relationship(info.entity.name, relationship)
                return try linked(link, sideA: sideA, of: rows)
            },
            matching: { entity, condition in Set(try ids(Query(entity, where: condition)).map(\.rowID)) })
    }

    private func allObjects(_ info: Layout.EntityInfo) throws -> [Object] {
        try connection.query("SELECT \(info.selectColumns) FROM \(info.table) ORDER BY \"rowid\"", [], context: "reading \(info.entity.name)") {
            decodeObject(info, $0)
        }
    }

    /// A query evaluated in Swift (`needsSwift`): every object of the entity, with the values of
    /// the paths the query names read beside them (one joined read).
    private func evaluateInSwift(_ query: Query, _ info: Layout.EntityInfo, _ paths: [String: AttributePath]) throws -> [Object] {
        let objects = try allObjects(info)
        let related = try quantifiedAnswers(query, info, objects)
        let named = paths.filter { $0.value.isPath }
        guard !named.isEmpty else { return query.apply(to: objects, related: related) }
        let scope = try QueryScope(named, info, transaction: self)
        let names = named.keys.sorted()
        var values: [Int64: [String: Value]] = [:]
        let sql = "SELECT \(scope.select(["rowid"])), " + names.map { scope.column($0) }.joined(separator: ", ") + " FROM \(scope.from)"
        try connection.run(sql, [], context: "reading \(info.entity.name)") { row in
            var rowValues: [String: Value] = [:]
            for (i, name) in names.enumerated() {
                if let value = Codec.decode(row, i + 1, as: named[name]!.type) { rowValues[name] = value }
            }
            values[row.int(0)] = rowValues
        }
        return query.apply(to: objects, pathValues: { values[$0.rowID] ?? [:] }, related: related)
    }

    public func fetch(_ query: Query) throws -> [Object] {
        let info = try info(query.entity)
        let paths = try checkQuery(query, info)
        if try needsSwift(query, paths) { return try evaluateInSwift(query, info, paths) }
        let (sql, arguments) = try select(["rowid"] + info.entity.attributes.map(\.name), query, info, paths)
        return try connection.query(sql, arguments, context: "fetching \(query.entity)") { decodeObject(info, $0) }
    }

    /// The ids `fetch` would find, read from the `rowid`s alone.
    public func ids(_ query: Query) throws -> [ObjectID] {
        let info = try info(query.entity)
        let paths = try checkQuery(query, info)
        if try needsSwift(query, paths) { return try evaluateInSwift(query, info, paths).map(\.id) }
        let (sql, arguments) = try select(["rowid"], query, info, paths)
        let entity = query.entity
        return try connection.query(sql, arguments, context: "fetching \(query.entity)") { ObjectID(entity: entity, rowID: $0.int(0)) }
    }

    /// The SQL and arguments that select `columns` (the entity's own: `rowid`, attributes,
    /// foreign keys) of the rows `query` finds, in its order and window (ties by `rowid`), for a
    /// query SQLite can evaluate (`needsSwift` false); paths are read through joins (`QueryScope`).
    func select(_ columns: [String], _ query: Query, _ info: Layout.EntityInfo, _ paths: [String: AttributePath]) throws -> (sql: String, arguments: [SQLValue]) {
        let scope = try QueryScope(paths, info, transaction: self)
        var arguments: [SQLValue] = []
        var sql = "SELECT \(scope.select(columns)) FROM \(scope.from)"
        if let condition = query.condition {
            sql += " WHERE " + (try translate(condition, scope, &arguments))
        }
        sql += " ORDER BY " + (query.sort.map { "\(scope.column($0.attribute)) \($0.ascending ? "ASC" : "DESC")" } + [scope.column("rowid") + " ASC"])
            .joined(separator: ", ")
        if query.limit != nil || query.offset > 0 {
            sql += " LIMIT ? OFFSET ?"
            arguments.append(.int(Int64(query.limit.map { max(0, $0) } ?? -1)))
            arguments.append(.int(Int64(max(0, query.offset))))
        }
        return (sql, arguments)
    }

    public func count(_ query: Query) throws -> Int {
        let info = try info(query.entity)
        let paths = try checkQuery(query, info)
        if try needsSwift(query, paths) {
            return try evaluateInSwift(Query(query.entity, where: query.condition), info, paths).count
        }
        let scope = try QueryScope(paths, info, transaction: self)
        var arguments: [SQLValue] = []
        var sql = "SELECT count(*) FROM \(scope.from)"
        if let condition = query.condition {
            sql += " WHERE " + (try translate(condition, scope, &arguments))
        }
        return try connection.query(sql, arguments, context: "counting \(query.entity)") { Int($0.int(0)) }.first ?? 0
    }

    /// SQL for a condition, two-valued like ``Condition/matches(_:)``: every comparison is false
    /// (not NULL) for an unset attribute, so `NOT` keeps its meaning. Names are read as `scope`
    /// says (a path through its joins).
    func translate(_ condition: Condition, _ scope: QueryScope, _ arguments: inout [SQLValue]) throws -> String {
        func compare(_ name: String, _ value: Value, _ op: String) -> String {
            guard let argument = Codec.comparisonArgument(scope.type(name)!, value) else { return "0" }
            arguments.append(argument)
            let column = scope.column(name)
            return "(\(column) \(op) ? AND \(column) IS NOT NULL)"
        }
        switch condition {
        case .equal(let n, let v): return compare(n, v, "=")
        case .notEqual(let n, let v): return compare(n, v, "<>")
        case .less(let n, let v): return compare(n, v, "<")
        case .lessOrEqual(let n, let v): return compare(n, v, "<=")
        case .greater(let n, let v): return compare(n, v, ">")
        case .greaterOrEqual(let n, let v): return compare(n, v, ">=")
        case .in(let n, let vs):
            let values = vs.compactMap { Codec.comparisonArgument(scope.type(n)!, $0) }
            guard !values.isEmpty else { return "0" }
            arguments.append(contentsOf: values)
            let column = scope.column(n)
            return "(\(column) IN (\(placeholders(values.count))) AND \(column) IS NOT NULL)"
        case .isNull(let n): return "(\(scope.column(n)) IS NULL)"
        case .isNotNull(let n): return "(\(scope.column(n)) IS NOT NULL)"
        case .hasPrefix(let n, let p):
            guard scope.type(n) == .string else { return "0" }
            let column = scope.column(n)
            guard !p.isEmpty else { return "(\(column) IS NOT NULL)" }
            // By UTF-8 bytes: on text, length() stops at a NUL and substr() counts characters. On
            // an empty blob substr() is NULL, hence the coalesce (NOT must stay two-valued).
            arguments.append(.int(Int64(p.utf8.count)))
            arguments.append(.blob(Data(p.utf8)))
            return "(\(column) IS NOT NULL AND coalesce(substr(CAST(\(column) AS BLOB), 1, ?), x'') = ?)"
        case .contains(let n, let p):
            guard scope.type(n) == .string else { return "0" }
            let column = scope.column(n)
            arguments.append(.text(p))
            return "(\(column) IS NOT NULL AND instr(\(column), ?) > 0)"
        case .includes(let n, let v):
            // The column holds the array's JSON text (`Codec`): an element equal to the value, as
            // `compare` compares (json_each gives each element as an SQL value).
            guard case .array(let element)? = scope.type(n), let (argument, jsonType) = Codec.elementArgument(element, v) else { return "0" }
            arguments.append(argument)
            let column = scope.column(n)
            let typed = jsonType.map { " AND \"type\" = '\($0)'" } ?? ""
            return "(\(column) IS NOT NULL AND EXISTS (SELECT 1 FROM json_each(\(column)) WHERE \"value\" = ?\(typed)))"
        case .any(let r, let c):
            return try quantify(r, c, every: false, scope, &arguments)
        case .all(let r, let c):
            return try quantify(r, c, every: true, scope, &arguments)
        case .and(let cs):
            guard !cs.isEmpty else { return "1" }
            return "(" + (try cs.map { try translate($0, scope, &arguments) }).joined(separator: " AND ") + ")"
        case .or(let cs):
            guard !cs.isEmpty else { return "0" }
            return "(" + (try cs.map { try translate($0, scope, &arguments) }).joined(separator: " OR ") + ")"
        case .not(let c):
            return "(NOT " + (try translate(c, scope, &arguments)) + ")"
        }
    }

    /// An `any` (`EXISTS`) or `all` (`NOT EXISTS … NOT`) over `relationship` of the scope's
    /// entity: a subquery of the destination's rows linked to the scope's row (by the foreign key
    /// or the join table's index), in a scope of its own where `inner`'s names are read.
    private func quantify(_ relationship: String, _ inner: Condition, every: Bool, _ scope: QueryScope,
                          _ arguments: inout [SQLValue]) throws -> String {
        let destination = try info(QueryCheck.destination(of: relationship, from: scope.entity) { layout.entities[$0]?.entity }.name)
        let (link, sideA) = try self.relationship(scope.entity.name, relationship)
        let alias = scope.aliases.next()
        let paths = try QueryCheck.check(inner, of: destination.entity) { layout.entities[$0]?.entity }
        let subscope = try QueryScope(paths, destination, transaction: self, alias: alias, aliases: scope.aliases)
        // The outer row's columns, always qualified: the subquery may read the same table.
        let outerRow = "\(scope.table).\"rowid\""
        let (from, correlation): (String, String)
        switch link.storage {
        case .foreignKey(_, let column):
            from = subscope.from
            correlation = sideA
                ? "\(subscope.table).\"rowid\" = \(scope.table).\(column)"
                : "\(subscope.table).\(column) = \(outerRow)"
        case .joinTable(let joinTable, _):
            let links = "\"\(alias)_l\""
            let (mine, theirs) = sideA ? ("\"a\"", "\"b\"") : ("\"b\"", "\"a\"")
            from = "\(joinTable) AS \(links), \(subscope.from)"
            correlation = "\(links).\(mine) = \(outerRow) AND \(subscope.table).\"rowid\" = \(links).\(theirs)"
        }
        let condition = try translate(inner, subscope, &arguments)
        return every
            ? "(NOT EXISTS (SELECT 1 FROM \(from) WHERE \(correlation) AND NOT \(condition)))"
            : "(EXISTS (SELECT 1 FROM \(from) WHERE \(correlation) AND \(condition)))"
    }

    func relationship(_ entity: String, _ name: String) throws -> (Layout.LinkInfo, Bool) {
        _ = try info(entity)
        guard let (index, sideA) = layout.relationships[entity]?[name] else {
            throw StoreError(.unknownRelationship, entity: entity, member: name, "\(entity) has no relationship '\(name)'")
        }
        return (layout.links[index], sideA)
    }

    /// The rows linked to each of `rows` through `link`, from side a (or b), in order, for the
    /// rows that have links.
    func linked(_ link: Layout.LinkInfo, sideA: Bool, of rows: [Int64]) throws -> [Int64: [Int64]] {
        var result: [Int64: [Int64]] = [:]
        try links(link, sideA: sideA, of: rows).forEach { row, links in
            result[row] = links.map(\.target)
        }
        return result
    }

    /// The links of each of `rows` through `link`, from side a (or b), in order, with their
    /// positions (0 for a foreign key's).
    func links(_ link: Layout.LinkInfo, sideA: Bool, of rows: [Int64]) throws -> JoinLinks {
        switch link.storage {
        case .joinTable(let table, let shape):
            return try joinLinks(table, shape, sideA: sideA, of: rows)
        case .foreignKey(let table, let column):
            var links = JoinLinks(minimumCapacity: rows.count)
            try chunked(rows) { chunk in
                // By the column's index, which holds each value's rows in order.
                let sql = sideA
                    ? "SELECT \"rowid\", \(column) FROM \(table) WHERE \"rowid\" IN (\(placeholders(chunk.count))) AND \(column) IS NOT NULL"
                    : "SELECT \(column), \"rowid\" FROM \(table) WHERE \(column) IN (\(placeholders(chunk.count))) ORDER BY \(column), \"rowid\""
                try connection.run(sql, chunk.map { .int($0) }, context: "reading relationships") { row in
                    links.append(row.int(0), (row.int(1), 0, 0))
                }
            }
            links.finish()
            return links
        }
    }

    public func related(_ relationship: String, of ids: [ObjectID]) throws -> [ObjectID: [ObjectID]] {
        guard let first = ids.first else { return [:] }
        // Usually the objects of one entity, read as they are; grouped by entity otherwise.
        var byEntity: [(entity: String, rows: [Int64])] = []
        if ids.allSatisfy({ $0.entity == first.entity }) {
            byEntity = [(first.entity, ids.map(\.rowID))]
        } else {
            var index: [String: Int] = [:]
            for id in ids {
                if let known = index[id.entity] {
                    byEntity[known].rows.append(id.rowID)
                } else {
                    index[id.entity] = byEntity.count
                    byEntity.append((id.entity, [id.rowID]))
                }
            }
        }
        var result: [ObjectID: [ObjectID]] = [:]
        result.reserveCapacity(ids.count)
        for (entity, rows) in byEntity {
            let (link, sideA) = try self.relationship(entity, relationship)
            let other = sideA ? link.bEntity : link.aEntity
            try readKeeping(link, sideA: sideA, of: rows).forEach { row, linked in
                result[ObjectID(entity: entity, rowID: row)] = linked.map { ObjectID(entity: other, rowID: $0.target) }
            }
        }
        return result
    }

    /// The links of `rows` through `link`, read with their positions (a row named twice is read
    /// once) for ``related(_:of:)`` and ``links(_:of:)``; a write keeps a join table's for the
    /// link batch that may follow.
    private func readKeeping(_ link: Layout.LinkInfo, sideA: Bool, of rows: [Int64]) throws -> JoinLinks {
        let links = try links(link, sideA: sideA, of: rows)
        if isWritable, case .joinTable = link.storage {
            linkReads[link.storage] = LinkRead(sideA: sideA, rows: rows, links: .joinTable(links))
        }
        return links
    }

    public func links(_ relationship: String, of sources: [ObjectID]) throws -> LinkBatch {
        let entity = try LinkBatch.entity(of: sources, relationship)
        var batch = LinkBatch(entity: entity, relationship: relationship)
        guard !sources.isEmpty else { return batch }
        let (link, sideA) = try self.relationship(entity, relationship)
        let other = sideA ? link.bEntity : link.aEntity
        let rows = sources.map(\.rowID)
        let links = try readKeeping(link, sideA: sideA, of: rows)
        batch.reserveCapacity(rows: rows.count, targets: links.count)
        for (source, row) in zip(sources, rows) {
            batch.append(source, to: links[row].lazy.map { ObjectID(entity: other, rowID: $0.target) })
        }
        return batch
    }

    private func checkValues(_ values: [String: Value], _ info: Layout.EntityInfo) throws {
        for name in values.keys.sorted() {
            guard let type = info.types[name] else {
                throw StoreError(.unknownAttribute, entity: info.entity.name, member: name, "\(info.entity.name) has no attribute '\(name)'")
            }
            try type.check(values[name]!, entity: info.entity.name, attribute: name)
        }
    }

    private func duplicate(_ info: Layout.EntityInfo, _ values: [String: Value]) -> StoreError {
        let key = IdentityKey(info.identity.map { values[$0.name] ?? .string("") })
        return StoreError(.duplicateIdentity, entity: info.entity.name, "an object of \(info.entity.name) with identity \(key) exists")
    }

    private func isUniqueViolation() -> Bool {
        connection.extendedErrorCode == 2067 /* SQLITE_CONSTRAINT_UNIQUE */ || connection.extendedErrorCode == 1555 /* PRIMARYKEY */
    }

    func markUpdated(_ id: ObjectID, _ property: String) {
        changes.recordUpdate(of: id, property: property)
    }

    /// The name an object on the far side of `entity.relationship` knows the link by: the
    /// inverse's, or `Entity.relationship` for a relationship without one.
    func otherSide(of entity: String, _ relationship: String) -> String {
        layout.entities[entity]?.entity.relationship(named: relationship)?.inverse ?? "\(entity).\(relationship)"
    }

    @discardableResult
    public func insert(_ entity: String, values: [String: Value]) throws -> Object {
        try checkOpen(writing: true)
        let info = try info(entity)
        try checkValues(values, info)
        let arguments = info.entity.attributes.map { attribute in
            values[attribute.name].map { Codec.encode($0, as: attribute.type) } ?? .null
        }
        do {
            try connection.run(info.insertSQL, arguments, context: "inserting into \(entity)")
        } catch {
            if isUniqueViolation() { throw duplicate(info, values) }
            throw error
        }
        let id = ObjectID(entity: entity, rowID: connection.lastInsertRowID)
        changes.inserted.insert(id)
        known.insert(CollectionOfOne(id.rowID), table: info.table)
        return Object(id: id, values: values)
    }

    /// Inserts the rows with one prepared statement. A to-one relationship kept as a column of this
    /// entity's table (the usual to-one side of a one-to-many) is written with the row, its targets
    /// checked once for the whole batch; others are set after each row, as ``setRelated(_:of:to:)``.
    public func insert(_ batch: InsertBatch) throws -> [ObjectID] {
        try checkOpen(writing: true)
        let info = try info(batch.entity)
        let entity = batch.entity
        guard batch.count > 0 else { return [] }
        let types = try AttributeType.types(of: batch.attributes, in: info.types, entity: entity)
        guard Set(batch.attributes).count == batch.attributes.count else {
            throw StoreError(.unsupported, entity: entity, "an insert batch of \(entity) names an attribute twice")
        }
        // An import never stores an object without its identity.
        let identity = try info.identity.map { attribute in
            guard let position = batch.attributes.firstIndex(of: attribute.name) else {
                throw StoreError(.missingIdentity, entity: entity, member: attribute.name,
                                 "an insert batch of \(entity) gives no values of its identity attribute '\(attribute.name)'")
            }
            return position
        }
        var columns = batch.attributes.map(quote)
        var inRow: [(relationship: Int, destination: String)] = []
        var afterRow: [Int] = []
        for (r, name) in batch.relationships.enumerated() {
            let (link, sideA) = try relationship(entity, name)
            if sideA, !link.bToOne, case .foreignKey(let table, let column) = link.storage, table == info.table,
                !columns.contains(column) {
                inRow.append((r, link.bEntity))
                columns.append(column)
            } else {
                afterRow.append(r)
            }
        }
        // The targets written with the rows: the right entity, and stored.
        for (r, destination) in inRow {
            var wanted = Set<Int64>()
            for row in 0..<batch.count {
                guard let target = batch.target(row: row, relationship: r) else { continue }
                guard target.entity == destination else {
                    throw StoreError(.typeMismatch, entity: entity, member: batch.relationships[r],
                                     "\(entity).\(batch.relationships[r]) links to \(destination), not \(target.entity)")
                }
                wanted.insert(target.rowID)
            }
            try requireStored(self.info(destination), Array(wanted))
        }
        // Row ids are assigned here, after the largest the table ever had (as AUTOINCREMENT
        // would), so that several rows go in one statement: far less work per row for SQLite.
        let first = try nextRowID(info, count: batch.count)
        let columnList = (["\"rowid\""] + columns).joined(separator: ", ")
        let width = columns.count + 1
        let rowTuple = "(" + placeholders(width) + ")"
        func statement(rows: Int) throws -> Statement {
            try connection.prepared("INSERT OR FAIL INTO \(info.table) (\(columnList)) VALUES "
                                    + Array(repeating: rowTuple, count: rows).joined(separator: ", "))
        }
        let widest = max(1, min(Self.rowsPerInsert, connection.variableLimit / width))
        func bind(_ statement: Statement, row: Int, slot: Int) throws {
            try batch.checkIdentity(row: row, positions: identity)
            let offset = Int32(slot * width)
            try statement.bind(offset + 1, first + Int64(row))
            try bindValues(statement, types, entity, batch.attributes, offset: offset + 2) { batch.value(row: row, attribute: $0) }
            for (k, (r, _)) in inRow.enumerated() {
                let index = offset + Int32(types.count + k + 2)
                if let target = batch.target(row: row, relationship: r) {
                    try statement.bind(index, target.rowID)
                } else {
                    try statement.bindNull(index)
                }
            }
        }
        var ids: [ObjectID] = []
        ids.reserveCapacity(batch.count)
        func inserted(_ row: Int) throws {
            let id = ObjectID(entity: entity, rowID: first + Int64(row))
            changes.inserted.insert(id)
            ids.append(id)
            for (r, destination) in inRow {
                if let target = batch.target(row: row, relationship: r) {
                    markUpdated(ObjectID(entity: destination, rowID: target.rowID), otherSide(of: entity, batch.relationships[r]))
                }
            }
            for r in afterRow {
                if let target = batch.target(row: row, relationship: r) { try setRelated(batch.relationships[r], of: id, to: [target]) }
            }
        }
        // Statements of `widest` rows, then of 8, then of one. `OR FAIL` keeps the rows before a
        // failing one instead of undoing the statement, so SQLite needs no statement journal (with
        // one, each statement copied every index page it touched: slower than a row at a time).
        var start = 0
        for size in Set([widest, min(widest, 8), 1]).sorted(by: >) {
            let statement = try statement(rows: size)
            while batch.count - start >= size {
                for slot in 0..<size { try bind(statement, row: start + slot, slot: slot) }
                var duplicateInside = false
                try statement.execute("inserting into \(entity)") { error in
                    guard isUniqueViolation() else { throw error }
                    duplicateInside = true
                }
                if duplicateInside {
                    let kept = try connection.query("SELECT count(*) FROM \(info.table) WHERE \"rowid\" BETWEEN ? AND ?",
                                                    [.int(first + Int64(start)), .int(first + Int64(start + size - 1))]) { Int($0.int(0)) }.first ?? 0
                    for row in start..<(start + kept) { try inserted(row) }
                    throw duplicate(info, batch.values(row: start + kept))
                }
                for row in start..<(start + size) { try inserted(row) }
                start += size
            }
        }
        known.insert(first..<(first + Int64(batch.count)), table: info.table)
        return ids
    }

    /// Rows per multi-row `INSERT` of a batch (fewer when the columns would exceed SQLite's
    /// parameter limit): most of the gain of one statement for many rows, in a short SQL text.
    static let rowsPerInsert = 48

    /// The first of `count` new row ids of `info`'s table: one more than the largest it ever had,
    /// which `sqlite_sequence` keeps for an AUTOINCREMENT table, so that an id is never reused.
    private func nextRowID(_ info: Layout.EntityInfo, count: Int) throws -> Int64 {
        let last = try connection.query(
            "SELECT max(coalesce((SELECT \"seq\" FROM \"sqlite_sequence\" WHERE \"name\" = ?), 0), coalesce((SELECT max(\"rowid\") FROM \(info.table)), 0))",
            [.text(info.entity.name)]) { $0.int(0) }.first ?? 0
        guard last <= Int64.max - Int64(count) else {
            throw StoreError(.storage, entity: info.entity.name, "the row ids of \(info.entity.name) are exhausted")
        }
        return last + 1
    }

    /// Binds one row of a batch, `value(a)` for attribute number `a` (nil: NULL), to parameters
    /// `offset` ... `offset + types.count - 1` of `statement`, checking each value against its attribute's type.
    @inline(__always)
    private func bindValues(_ statement: Statement, _ types: [AttributeType], _ entity: String, _ attributes: [String],
                            offset: Int32 = 1, _ value: (Int) -> Value?) throws {
        for (a, type) in types.enumerated() {
            guard let value = value(a) else {
                try statement.bindNull(Int32(a) + offset)
                continue
            }
            try type.check(value, entity: entity, attribute: attributes[a])
            try statement.bind(Int32(a) + offset, value, as: type)
        }
    }

    /// Runs one prepared `UPDATE` for the whole batch.
    public func update(_ batch: UpdateBatch) throws {
        try checkOpen(writing: true)
        let info = try info(batch.entity)
        let entity = batch.entity
        guard batch.count > 0 else { return }
        let types = try AttributeType.types(of: batch.attributes, in: info.types, entity: entity)
        guard Set(batch.attributes).count == batch.attributes.count else {
            throw StoreError(.unsupported, entity: entity, "an update batch of \(entity) names an attribute twice")
        }
        for id in batch.ids where id.entity != entity {
            throw StoreError(.typeMismatch, entity: entity, "an update batch of \(entity) cannot update \(id)")
        }
        guard !types.isEmpty else {
            for id in batch.ids {
                guard try exists(info, id.rowID) else { throw StoreError(.objectNotFound, entity: entity, "no object \(id)") }
            }
            changes.recordUpdate(of: batch.ids, properties: [])
            return
        }
        var changed: [ObjectID] = []
        changed.reserveCapacity(batch.count)
        defer { changes.recordUpdate(of: changed, properties: Set(batch.attributes)) }
        let assignments = batch.attributes.map { "\(quote($0)) = ?" }.joined(separator: ", ")
        let statement = try connection.prepared("UPDATE \(info.table) SET \(assignments) WHERE \"rowid\" = ?")
        for (row, id) in batch.ids.enumerated() {
            try bindValues(statement, types, entity, batch.attributes) { batch.value(row: row, attribute: $0) }
            try statement.bind(Int32(types.count + 1), id.rowID)
            try statement.execute("updating \(id)") { error in
                if isUniqueViolation() {
                    var merged = try object(id)?.values ?? [:]
                    for (a, name) in batch.attributes.enumerated() { merged[name] = batch.value(row: row, attribute: a) }
                    throw duplicate(info, merged)
                }
                throw error
            }
            if connection.changes == 0 { throw StoreError(.objectNotFound, entity: entity, "no object \(id)") }
            changed.append(id)
        }
    }

    public func update(_ id: ObjectID, setting values: [String: Value], clearing cleared: Set<String>) throws {
        try checkOpen(writing: true)
        let info = try info(id.entity)
        try checkValues(values, info)
        for name in cleared.sorted() where info.types[name] == nil {
            throw StoreError(.unknownAttribute, entity: id.entity, member: name, "\(id.entity) has no attribute '\(name)'")
        }
        let setNames = values.keys.sorted()
        let clearNames = cleared.subtracting(values.keys).sorted()
        if setNames.isEmpty && clearNames.isEmpty {
            guard try exists(info, id.rowID) else { throw StoreError(.objectNotFound, entity: id.entity, "no object \(id)") }
        } else {
            let assignments = setNames.map { "\(quote($0)) = ?" } + clearNames.map { "\(quote($0)) = NULL" }
            let arguments = setNames.map { Codec.encode(values[$0]!, as: info.types[$0]!) } + [.int(id.rowID)]
            do {
                try connection.run("UPDATE \(info.table) SET \(assignments.joined(separator: ", ")) WHERE \"rowid\" = ?", arguments,
                                   context: "updating \(id)")
            } catch {
                if isUniqueViolation() {
                    var merged = try object(id)?.values ?? [:]
                    for (name, value) in values { merged[name] = value }
                    throw duplicate(info, merged)
                }
                throw error
            }
            if connection.changes == 0 { throw StoreError(.objectNotFound, entity: id.entity, "no object \(id)") }
        }
        changes.recordUpdate(of: id, properties: Set(values.keys).union(cleared))
    }

    public func delete(_ id: ObjectID) throws {
        try checkOpen(writing: true)
        let info = try info(id.entity)
        guard try exists(info, id.rowID) else { throw StoreError(.objectNotFound, entity: id.entity, "no object \(id)") }
        for relationship in info.entity.relationships {
            try setRelated(relationship.name, of: id, to: [])
        }
        // Links from relationships without an inverse that point at this object.
        for index in layout.unnamedIncoming[id.entity] ?? [] {
            let link = layout.links[index]
            let name = layout.relationships[link.aEntity]?.first { $0.value.0 == index && $0.value.1 }?.key ?? ""
            for source in try linked(link, sideA: false, of: [id.rowID])[id.rowID] ?? [] {
                markUpdated(ObjectID(entity: link.aEntity, rowID: source), name)
            }
            try clear(link.storage, row: id.rowID, sideA: false)
        }
        // Links of relationships the schema no longer has.
        for (storage, isA, isB) in layout.retired[id.entity] ?? [] {
            if isA { try clear(storage, row: id.rowID, sideA: true) }
            if isB { try clear(storage, row: id.rowID, sideA: false) }
        }
        forgetReads()
        try connection.run("DELETE FROM \(info.table) WHERE \"rowid\" = ?", [.int(id.rowID)], context: "deleting \(id)")
        if try mayHaveRemoteRecords() {
            try connection.run("DELETE FROM \"_tether_records\" WHERE \"entity\" = ? AND \"row\" = ?", [.text(id.entity), .int(id.rowID)],
                               context: "deleting the remote record of \(id)")
        }
        changes.recordDeletion(of: id)
    }

    /// Whether the file may hold remote records: read once per transaction (a delete then skips
    /// the records table when it is empty, as it is for an app that never saves).
    private func mayHaveRemoteRecords() throws -> Bool {
        guard layout.hasRemoteRecords else { return false }
        if let known = remoteRecordsPresent { return known }
        let present = try !connection.query("SELECT 1 FROM \"_tether_records\" LIMIT 1", [], context: "reading remote records") { _ in true }.isEmpty
        remoteRecordsPresent = present
        return present
    }

    public func remoteRecord(of id: ObjectID) throws -> Data? {
        let info = try info(id.entity)
        guard try exists(info, id.rowID) else { throw StoreError(.objectNotFound, entity: id.entity, "no object \(id)") }
        guard layout.hasRemoteRecords else { return nil }
        return try connection.query("SELECT \"record\" FROM \"_tether_records\" WHERE \"entity\" = ? AND \"row\" = ?",
                                    [.text(id.entity), .int(id.rowID)], context: "reading the remote record of \(id)") { $0.blob(0) }.first
    }

    public func setRemoteRecord(_ record: Data?, of id: ObjectID) throws {
        try checkOpen(writing: true)
        let info = try info(id.entity)
        guard try exists(info, id.rowID) else { throw StoreError(.objectNotFound, entity: id.entity, "no object \(id)") }
        if let record {
            remoteRecordsPresent = true
            try connection.run("INSERT OR REPLACE INTO \"_tether_records\" (\"entity\", \"row\", \"record\") VALUES (?, ?, ?)",
                               [.text(id.entity), .int(id.rowID), .blob(record)], context: "writing the remote record of \(id)")
        } else {
            try connection.run("DELETE FROM \"_tether_records\" WHERE \"entity\" = ? AND \"row\" = ?", [.text(id.entity), .int(id.rowID)],
                               context: "deleting the remote record of \(id)")
        }
    }

    /// Removes every link of `row` on one side of a link set.
    private func clear(_ storage: Layout.Storage, row: Int64, sideA: Bool) throws {
        linkReads[storage] = nil
        switch storage {
        case .foreignKey(let table, let column):
            if !sideA {
                try connection.run("UPDATE \(table) SET \(column) = NULL WHERE \(column) = ?", [.int(row)], context: "unlinking")
            }
        case .joinTable(let table, _):
            try connection.run("DELETE FROM \(table) WHERE \(sideA ? "\"a\"" : "\"b\"") = ?", [.int(row)], context: "unlinking")
        }
    }

    private func link(_ link: Layout.LinkInfo, _ aRow: Int64, _ bRow: Int64, aPosition: Int64?, bPosition: Int64?) throws {
        linkReads[link.storage] = nil
        switch link.storage {
        case .foreignKey(let table, let column):
            try connection.run("UPDATE \(table) SET \(column) = ? WHERE \"rowid\" = ?", [.int(bRow), .int(aRow)], context: "linking")
        case .joinTable(let table, let shape):
            // An ordered side's position: the one given, or after the side's last link; an
            // unordered side's: 0.
            var arguments: [SQLValue] = [.int(aRow), .int(bRow)]
            func position(_ ordered: Bool, _ given: Int64?, _ side: String, _ row: Int64) -> String {
                guard ordered else { return "0" }
                if let given {
                    arguments.append(.int(given))
                    return "?"
                }
                arguments.append(.int(row))
                return "(SELECT ifnull(max(\"\(side)_pos\") + 1, 0) FROM \(table) WHERE \"\(side)\" = ?)"
            }
            let aPos = position(shape.aOrdered, aPosition, "a", aRow)
            let bPos = position(shape.bOrdered, bPosition, "b", bRow)
            try connection.run("INSERT INTO \(table) (\"a\", \"b\", \"a_pos\", \"b_pos\") VALUES (?, ?, \(aPos), \(bPos))",
                               arguments, context: "linking")
        }
    }

    private func unlink(_ link: Layout.LinkInfo, _ aRow: Int64, _ bRow: Int64) throws {
        linkReads[link.storage] = nil
        switch link.storage {
        case .foreignKey(let table, let column):
            try connection.run("UPDATE \(table) SET \(column) = NULL WHERE \"rowid\" = ? AND \(column) = ?", [.int(aRow), .int(bRow)], context: "unlinking")
        case .joinTable(let table, _):
            try connection.run("DELETE FROM \(table) WHERE \"a\" = ? AND \"b\" = ?", [.int(aRow), .int(bRow)], context: "unlinking")
        }
    }

    public func setRelated(_ relationship: String, of id: ObjectID, to targets: [ObjectID]) throws {
        try checkOpen(writing: true)
        let (link, sideA) = try self.relationship(id.entity, relationship)
        // What was read of these links is not what they will be (a reorder moves positions).
        linkReads[link.storage] = nil
        let info = try info(id.entity)
        try requireStored(info, [id.rowID])
        let destination = sideA ? link.bEntity : link.aEntity
        var unique: [Int64] = []
        var seen = Set<Int64>()
        for target in targets {
            guard target.entity == destination else {
                throw StoreError(.typeMismatch, entity: id.entity, member: relationship,
                                 "\(id.entity).\(relationship) links to \(destination), not \(target.entity)")
            }
            if seen.insert(target.rowID).inserted { unique.append(target.rowID) }
        }
        if !unique.isEmpty { try requireStored(self.info(destination), unique) }
        let sourceToOne = sideA ? link.aToOne : link.bToOne
        let targetToOne = sideA ? link.bToOne : link.aToOne
        if sourceToOne && unique.count > 1 {
            throw StoreError(.typeMismatch, entity: id.entity, member: relationship, "\(id.entity).\(relationship) is to-one")
        }
        func pair(_ source: Int64, _ target: Int64) -> (Int64, Int64) { sideA ? (source, target) : (target, source) }
        let old = try linked(link, sideA: sideA, of: [id.rowID])[id.rowID] ?? []
        if old == unique { return }
        let oldSet = Set(old)
        for target in old where !seen.contains(target) {
            let (a, b) = pair(id.rowID, target)
            try unlink(link, a, b)
            markUpdated(ObjectID(entity: destination, rowID: target), otherSide(of: id.entity, relationship))
        }
        if targetToOne && !unique.isEmpty {
            // Each target may have one partner: take it away from its previous one.
            for (target, previous) in try linked(link, sideA: !sideA, of: unique) {
                for source in previous where source != id.rowID {
                    let (a, b) = pair(source, target)
                    try unlink(link, a, b)
                    markUpdated(ObjectID(entity: id.entity, rowID: source), relationship)
                }
            }
        }
        if case .joinTable(let table, let shape) = link.storage, sideA ? shape.aOrdered : shape.bOrdered {
            // Kept links take their new positions before new links take theirs (the side's key
            // may hold its positions): each one that moves goes to -1 - index first, then all of
            // them to their index, so that no two links share a position in between.
            let (own, other, position) = sideA ? ("\"a\"", "\"b\"", "\"a_pos\"") : ("\"b\"", "\"a\"", "\"b_pos\"")
            for (index, target) in unique.enumerated() where oldSet.contains(target) {
                try connection.run("UPDATE \(table) SET \(position) = ? WHERE \(own) = ? AND \(other) = ? AND \(position) <> ?",
                                   [.int(-1 - Int64(index)), .int(id.rowID), .int(target), .int(Int64(index))], context: "ordering")
            }
            try connection.run("UPDATE \(table) SET \(position) = -1 - \(position) WHERE \(own) = ? AND \(position) < 0",
                               [.int(id.rowID)], context: "ordering")
        }
        for (position, target) in unique.enumerated() where !oldSet.contains(target) || targetToOne {
            if !oldSet.contains(target) {
                let (a, b) = pair(id.rowID, target)
                try self.link(link, a, b, aPosition: sideA ? Int64(position) : nil, bPosition: sideA ? nil : Int64(position))
            }
            markUpdated(ObjectID(entity: destination, rowID: target), otherSide(of: id.entity, relationship))
        }
        markUpdated(id, relationship)
    }

    // MARK: SQL

    /// Rows of an SQL query with bound arguments; each row maps column names to values (INTEGER as
    /// `.int`, REAL as `.double`, TEXT as `.string`, BLOB as `.data`; NULL columns are absent).
    public func rows(_ sql: String, _ arguments: [Value] = []) throws -> [[String: Value]] {
        try checkOpen()
        forgetReads()
        return try connection.query(sql, arguments.map(Codec.plain), context: "running \(sql)") { row in
            var values: [String: Value] = [:]
            for i in 0..<row.count {
                if let value = Codec.value(row.value(i)) { values[row.name(i)] = value }
            }
            return values
        }
    }

    /// Objects of `entity` selected by SQL with bound arguments. The result needs a `rowid`
    /// column; columns named like attributes are decoded as those attributes, others are ignored.
    public func fetch(_ entity: String, sql: String, arguments: [Value] = []) throws -> [Object] {
        let info = try info(entity)
        forgetReads()
        return try connection.query(sql, arguments.map(Codec.plain), context: "running \(sql)") { row in
            var rowID: Int64?
            var values: [String: Value] = [:]
            for i in 0..<row.count {
                let name = row.name(i)
                if name == "rowid" {
                    rowID = row.int(i)
                } else if let type = info.types[name], let value = Codec.decode(row, i, as: type) {
                    values[name] = value
                }
            }
            guard let rowID else {
                throw StoreError(.unsupported, entity: entity, "the SQL of fetch(\(entity), sql:) must select the \"rowid\" column: \(sql)")
            }
            return Object(id: ObjectID(entity: entity, rowID: rowID), values: values)
        }
    }

    /// Runs one SQL statement with bound arguments in a write transaction. Changes made this way
    /// are not announced on ``SQLiteStore/changes()``.
    public func execute(_ sql: String, _ arguments: [Value] = []) throws {
        try checkOpen(writing: true)
        forgetReads()
        try connection.run(sql, arguments.map(Codec.plain), context: "running \(sql)")
    }
}

/// What ``SQLiteTransaction/linkReads`` keeps of one read: the side read from, the rows read in
/// the order they were named, and their links. Dropped when the transaction writes the links,
/// deletes a row or runs SQL of its caller's.
struct LinkRead {
    /// What was read of the rows' links.
    enum Links {
        /// A join table's, by row.
        case joinTable(JoinLinks)
        /// A foreign-key column's value of each row read, in order (nil: NULL): kept as read, with
        /// nothing built per row, since most lookups are followed by no write of the column.
        case column([Int64?])
    }

    var sideA: Bool
    var rows: [Int64]
    var links: Links

    /// The links of `sources` as they were read, when every one of them was read (nil
    /// otherwise).
    func links(of sources: [Int64]) -> JoinLinks? {
        guard let positions = positions(of: sources) else { return nil }
        switch links {
        case .joinTable(let links):
            return links
        case .column(let values):
            var links = JoinLinks(minimumCapacity: sources.count)
            for (source, position) in zip(sources, positions) {
                if let target = values[position] { links.append(source, (target, 0, 0)) }
            }
            links.finish()
            return links
        }
    }

    /// Where each of `sources` is among the rows read, or nil when one was not read: found in
    /// step when they come in the order read (a link batch of the rows read, or of some of them),
    /// by hashing otherwise.
    private func positions(of sources: [Int64]) -> [Int]? {
        var positions: [Int] = []
        positions.reserveCapacity(sources.count)
        var i = rows.startIndex
        for source in sources {
            while i < rows.endIndex && rows[i] != source { i += 1 }
            guard i < rows.endIndex else {
                var index: [Int64: Int] = [:]
                for (position, row) in rows.enumerated() where index[row] == nil { index[row] = position }
                var found: [Int] = []
                found.reserveCapacity(sources.count)
                for source in sources {
                    guard let position = index[source] else { return nil }
                    found.append(position)
                }
                return found
            }
            positions.append(i)
            i += 1
        }
        return positions
    }
}

/// The links of some rows of a join table's side, in order: each with its position among the
/// row's links and its position among the target's.
///
/// Flat: one array of links, each row's a run of it (a read returns a row's links together), so
/// that reading the links of 100,000 rows allocates no array per row.
struct JoinLinks {
    typealias Link = (target: Int64, position: Int64, otherPosition: Int64)
    private var all: [Link] = []
    /// Each row's run of `all`.
    private var runs: [Int64: Range<Int>] = [:]
    /// The row whose run is being appended, and where it starts.
    private var open: (row: Int64, start: Int)?
    /// Whether the open run's links are dropped: its row's links were read before.
    private var repeated = false

    init(minimumCapacity: Int = 0) {
        runs.reserveCapacity(minimumCapacity)
    }

    /// The number of links read.
    var count: Int { all.count }

    /// The links of `row`, in order (none when it has none or was not read).
    subscript(row: Int64) -> ArraySlice<Link> {
        runs[row].map { all[$0] } ?? []
    }

    /// Calls `body` with each row that has links and its links, in order (rows in no particular
    /// order).
    func forEach(_ body: (_ row: Int64, _ links: UnsafeBufferPointer<Link>) throws -> Void) rethrows {
        try all.withUnsafeBufferPointer { all in
            for (row, run) in runs { try body(row, UnsafeBufferPointer(rebasing: all[run])) }
        }
    }

    /// Appends a link of `row`. A row's links come together, in order; a row read again (a read
    /// that names it twice) keeps the links read first.
    mutating func append(_ row: Int64, _ link: Link) {
        if open?.row != row {
            close()
            repeated = runs[row] != nil
            open = (row, all.count)
        }
        if !repeated { all.append(link) }
    }

    /// Ends a read: the last row's links are in.
    mutating func finish() {
        close()
    }

    private mutating func close() {
        if let (row, start) = open, !repeated { runs[row] = start..<all.count }
        open = nil
    }
}

/// Rows a transaction has found or written and not deleted since, per table, so that a link write
/// does not read again what the import that names them has just looked up or inserted. Forgotten
/// all at once when the transaction deletes a row or runs SQL of its caller's (which may delete
/// any).
///
/// A table's rows are bits in pages of 4,096 rowids (rowids are mostly dense: a lookup of 100,000
/// rows touches a few dozen pages, not 100,000 hashed entries); past ``pageLimit`` pages a
/// table's are started again, so that a streamed import of millions, or of scattered rowids,
/// keeps a bounded set.
struct KnownRows {
    static let pageLimit = 512
    private var tables: [String: RowBits] = [:]

    mutating func insert<Rows: Collection<Int64>>(_ rows: Rows, table: String) {
        guard !rows.isEmpty else { return }
        var bits = tables.removeValue(forKey: table) ?? RowBits()
        var page = RowBits.Cursor()
        for row in rows where bits.insert(row, pageLimit: Self.pageLimit, &page) == .full {
            bits = RowBits()
            page = RowBits.Cursor()
            bits.insert(row, pageLimit: Self.pageLimit, &page)
        }
        tables[table] = bits
    }

    /// The rows not known to be stored, in order.
    func unknown(_ rows: [Int64], table: String) -> [Int64] {
        guard let bits = tables[table] else { return rows }
        var page = RowBits.Cursor()
        return rows.filter { !bits.contains($0, &page) }
    }

    mutating func forget() { tables.removeAll() }
}
