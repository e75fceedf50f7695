import Tether

/// The tables a query reads and the SQL of each name it uses: an attribute of the entity is its
/// column; a path through to-one relationships (`AttributePath`, `"repository.owner.login"`) is
/// the column of the table its relationships lead to, joined with one `LEFT JOIN` per distinct
/// relationship prefix (`repository`, `repository.owner`), by `rowid` or by the foreign key's
/// index. To-one relationships join at most one row, so the query's rows are the entity's rows;
/// a row without a target on the way has NULL there, which the conditions read as unset.
struct QueryScope {
    /// The `FROM` clause's tables.
    let from: String
    /// Whether `from` joins other tables (then the entity's own columns are qualified).
    let isJoined: Bool
    /// The entity's table, quoted.
    let table: String
    private let expressions: [String: String]
    private let types: [String: AttributeType]

    init(_ paths: [String: AttributePath], _ info: Layout.EntityInfo, transaction: SQLiteTransaction) throws {
        table = info.table
        var from = info.table
        var aliases: [String: String] = [:]   // relationship prefix -> alias
        var expressions: [String: String] = [:]
        var types: [String: AttributeType] = [:]
        // Prefixes in a stable order, so that one query is always the same SQL (the statement cache).
        for name in paths.keys.sorted() {
            let path = paths[name]!
            types[name] = path.type
            guard path.isPath else { continue }
            var prefix = ""
            var alias = info.table
            for hop in path.hops {
                prefix += (prefix.isEmpty ? "" : ".") + hop.relationship
                if let known = aliases[prefix] {
                    alias = known
                    continue
                }
                let target = "\"_j\(aliases.count)\""
                let (link, sideA) = try transaction.relationship(hop.source, hop.relationship)
                let destination = try transaction.info(hop.destination).table
                switch link.storage {
                case .foreignKey(_, let column):
                    from += sideA
                        ? " LEFT JOIN \(destination) AS \(target) ON \(target).\"rowid\" = \(alias).\(column)"
                        : " LEFT JOIN \(destination) AS \(target) ON \(target).\(column) = \(alias).\"rowid\""
                case .joinTable(let joinTable, _):
                    let links = "\"_l\(aliases.count)\""
                    let (mine, theirs) = sideA ? ("\"a\"", "\"b\"") : ("\"b\"", "\"a\"")
                    from += " LEFT JOIN \(joinTable) AS \(links) ON \(links).\(mine) = \(alias).\"rowid\""
                        + " LEFT JOIN \(destination) AS \(target) ON \(target).\"rowid\" = \(links).\(theirs)"
                }
                aliases[prefix] = target
                alias = target
            }
            expressions[name] = "\(alias).\(quote(path.attribute))"
        }
        self.from = from
        self.isJoined = !aliases.isEmpty
        self.expressions = expressions
        self.types = types
    }

    /// The SQL of the value `name` names.
    func column(_ name: String) -> String {
        if let expression = expressions[name] { return expression }
        return isJoined ? "\(table).\(quote(name))" : quote(name)
    }

    /// The type of the attribute `name` reads.
    func type(_ name: String) -> AttributeType? { types[name] }

    /// The entity's own columns (names, `rowid` among them) as a select list.
    func select(_ columns: [String]) -> String {
        columns.map { isJoined ? "\(table).\(quote($0))" : quote($0) }.joined(separator: ", ")
    }
}
