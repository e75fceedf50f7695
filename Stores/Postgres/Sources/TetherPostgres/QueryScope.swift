import Tether

/// The tables a query reads and the SQL of each name it uses: an attribute of the entity is its
/// column; a path through to-one relationships (`AttributePath`, `"repository.owner.login"`) is
/// the column of the table its relationships lead to, joined with two `LEFT JOIN`s per distinct
/// relationship prefix (`repository`, `repository.owner`): the relationship's join table by the
/// row's side (its primary key `(a, b)` or its index `(b, a)`), then the destination's table by
/// `rowid`. A to-one side has at most one link, so the query's rows stay the entity's rows; a row
/// without a target on the way reads NULL there, which the conditions read as unset, as the
/// in-memory store (which follows the links) and the SQLite store (which joins the same way) do.
struct QueryScope {
    /// The `FROM` clause's tables.
    let from: String
    /// Whether `from` joins other tables (then the entity's own columns are qualified by `_t`).
    let isJoined: Bool
    private let expressions: [String: String]
    private let types: [String: AttributeType]

    /// The alias of the entity's own table when the query joins others.
    static let own = "\"_t\""

    init(_ paths: [String: AttributePath], _ info: Layout.EntityInfo, transaction: PostgresTransaction) throws {
        let joined = paths.values.contains(where: \.isPath)
        var from = joined ? "\(info.table) AS \(Self.own)" : info.table
        var aliases: [String: String] = [:]   // relationship prefix -> alias of its destination
        var expressions: [String: String] = [:]
        var types: [String: AttributeType] = [:]
        // Prefixes in a stable order, so that one query is always the same SQL.
        for name in paths.keys.sorted() {
            let path = paths[name]!
            types[name] = path.type
            guard path.isPath else { continue }
            var prefix = ""
            var alias = Self.own
            for hop in path.hops {
                prefix += (prefix.isEmpty ? "" : ".") + hop.relationship
                if let known = aliases[prefix] {
                    alias = known
                    continue
                }
                let target = "\"_j\(aliases.count)\""
                let links = "\"_l\(aliases.count)\""
                let (link, sideA) = try transaction.relationship(hop.source, hop.relationship)
                let destination = try transaction.info(hop.destination).table
                let (mine, theirs) = sideA ? ("\"a\"", "\"b\"") : ("\"b\"", "\"a\"")
                from += " LEFT JOIN \(link.table) AS \(links) ON \(links).\(mine) = \(alias).\"rowid\""
                    + " LEFT JOIN \(destination) AS \(target) ON \(target).\"rowid\" = \(links).\(theirs)"
                aliases[prefix] = target
                alias = target
            }
            expressions[name] = "\(alias).\(quote(path.attribute))"
        }
        self.from = from
        self.isJoined = joined
        self.expressions = expressions
        self.types = types
    }

    /// The SQL of the value `name` names.
    func column(_ name: String) -> String {
        if let expression = expressions[name] { return expression }
        return isJoined ? "\(Self.own).\(quote(name))" : quote(name)
    }

    /// The type of the attribute `name` reads.
    func type(_ name: String) -> AttributeType? { types[name] }

    /// The entity's own columns (`rowid` among them) as a select list.
    func select(_ columns: [String]) -> String {
        columns.map { isJoined ? "\(Self.own).\(quote($0))" : quote($0) }.joined(separator: ", ")
    }
}
