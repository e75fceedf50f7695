import Tether

/// The tables a query reads and the SQL of each name it uses: an attribute of the entity is its
/// column; a path through to-one relationships (`AttributePath`, `"repository.owner.login"`) is
/// the column of the table its relationships lead to, joined per distinct relationship prefix
/// (`repository`, `repository.owner`: `PathJoins`): a relationship kept as a column is one
/// `LEFT JOIN` of the destination's table (by `rowid`, or by the column's index for the side of a
/// one-to-one that does not hold it); one kept in a join table is two, the join table by the row's
/// side (its primary key `(a, b)` or its index `(b, a)`), then the destination's table by
/// `rowid`. A to-one side has at most one link, so the query's rows stay the entity's rows; a row
/// without a target on the way reads NULL there, which the conditions read as unset, as the
/// in-memory store (which follows the links) and the SQLite store (which joins the same way) do.
///
/// The condition of an `any`/`all` (``Condition/any(_:_:)``) is read in a subquery of its own
/// scope, whose tables have aliases of their own (`_q0`, `_q0_j0`, ...: `PathJoins.SubqueryAliases`), correlated
/// with the row of the scope it is in.
struct QueryScope {
    /// The `FROM` clause's tables.
    let from: String
    /// Whether `from` joins other tables or the scope is a subquery's (then the entity's own
    /// columns are qualified by `own`).
    let isJoined: Bool
    /// The alias of the entity's own table (`_t`, or a subquery's).
    let own: String
    /// The entity.
    let entity: Entity
    /// The entity's table, qualified and quoted.
    let table: String
    /// The aliases given so far in the statement, shared with the scopes of its subqueries.
    let aliases: PathJoins.SubqueryAliases
    private let expressions: [String: String]
    private let types: [String: AttributeType]

    /// The scope of `info`'s rows reading `paths`; `alias` names the table in a subquery (its
    /// joins are then aliased after it), and `aliases` numbers the statement's subqueries.
    init(_ paths: [String: AttributePath], _ info: Layout.EntityInfo, transaction: PostgresTransaction,
         alias: String? = nil, aliases: PathJoins.SubqueryAliases = PathJoins.SubqueryAliases()) throws {
        entity = info.entity
        table = info.table
        self.aliases = aliases
        let joined = paths.values.contains(where: \.isPath) || alias != nil
        own = alias.map { "\"\($0)\"" } ?? "\"_t\""
        let prefix = alias ?? ""
        var from = joined ? "\(info.table) AS \(own)" : info.table
        var expressions: [String: String] = [:]
        var types: [String: AttributeType] = [:]
        for (name, path) in paths { types[name] = path.type }
        let plan = PathJoins(paths)
        var targets: [String] = []   // the alias of each join's destination
        for (index, join) in plan.joins.enumerated() {
            let source = join.parent.map { targets[$0] } ?? own
            let target = "\"\(prefix)_j\(index)\""
            let (link, sideA) = try transaction.relationship(join.hop.source, join.hop.relationship)
            let destination = try transaction.info(join.hop.destination).table
            switch link.storage {
            case .foreignKey(_, let column):
                // The source's column (side a), or the destination's column naming the source
                // (side b of a one-to-one), by its index.
                from += sideA
                    ? " LEFT JOIN \(destination) AS \(target) ON \(target).\"rowid\" = \(source).\(column)"
                    : " LEFT JOIN \(destination) AS \(target) ON \(target).\(column) = \(source).\"rowid\""
            case .joinTable(let joinTable):
                let links = "\"\(prefix)_l\(index)\""
                let (mine, theirs) = sideA ? ("\"a\"", "\"b\"") : ("\"b\"", "\"a\"")
                from += " LEFT JOIN \(joinTable) AS \(links) ON \(links).\(mine) = \(source).\"rowid\""
                    + " LEFT JOIN \(destination) AS \(target) ON \(target).\"rowid\" = \(links).\(theirs)"
            }
            targets.append(target)
        }
        for (name, join) in plan.targets { expressions[name] = "\(targets[join]).\(quote(paths[name]!.attribute))" }
        self.from = from
        self.isJoined = joined
        self.expressions = expressions
        self.types = types
    }

    /// The SQL of the value `name` names.
    func column(_ name: String) -> String {
        if let expression = expressions[name] { return expression }
        return isJoined ? "\(own).\(quote(name))" : quote(name)
    }

    /// The entity's `rowid`, always qualified (a subquery may read the same table), by the
    /// table's name when the scope does not alias it.
    var row: String { qualified("\"rowid\"") }

    /// A column (quoted) of the entity's own table, always qualified, as ``row``.
    func qualified(_ column: String) -> String {
        isJoined ? "\(own).\(column)" : "\(table).\(column)"
    }

    /// The type of the attribute `name` reads.
    func type(_ name: String) -> AttributeType? { types[name] }

    /// The entity's own columns (`rowid` among them) as a select list.
    func select(_ columns: [String]) -> String {
        columns.map { isJoined ? "\(own).\(quote($0))" : quote($0) }.joined(separator: ", ")
    }
}
