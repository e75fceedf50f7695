import Tether

/// The tables a query reads and the SQL of each name it uses: an attribute of the entity is its
/// column; a path through to-one relationships (`AttributePath`, `"repository.owner.login"`) is
/// the column of the table its relationships lead to, joined with one `LEFT JOIN` per distinct
/// relationship prefix (`repository`, `repository.owner`: `PathJoins`), by `rowid` or by the foreign key's
/// index. To-one relationships join at most one row, so the query's rows are the entity's rows;
/// a row without a target on the way has NULL there, which the conditions read as unset.
///
/// The condition of an `any`/`all` (``Condition/any(_:_:)``) is read in a subquery of its own
/// scope, whose tables have aliases of their own (`_q0`, `_q0_j0`, ...: `PathJoins.SubqueryAliases`), correlated
/// with the row of the scope it is in.
struct QueryScope {
    /// The `FROM` clause's tables.
    let from: String
    /// Whether the entity's own columns are qualified (by `table`): `from` joins other tables, or
    /// the scope is a subquery's.
    let isJoined: Bool
    /// The entity's table as the query names it: its quoted name, or a subquery's alias.
    let table: String
    /// The entity.
    let entity: Entity
    /// The aliases given so far in the statement, shared with the scopes of its subqueries.
    let aliases: PathJoins.SubqueryAliases
    private let expressions: [String: String]
    private let types: [String: AttributeType]

    /// The scope of `info`'s rows reading `paths`; `alias` names the table in a subquery (its
    /// joins are then aliased after it), and `aliases` numbers the statement's subqueries.
    init(_ paths: [String: AttributePath], _ info: Layout.EntityInfo, transaction: SQLiteTransaction,
         alias: String? = nil, aliases: PathJoins.SubqueryAliases = PathJoins.SubqueryAliases()) throws {
        entity = info.entity
        self.aliases = aliases
        table = alias.map { "\"\($0)\"" } ?? info.table
        var from = alias.map { "\(info.table) AS \"\($0)\"" } ?? info.table
        let prefix = alias ?? ""
        var expressions: [String: String] = [:]
        var types: [String: AttributeType] = [:]
        for (name, path) in paths { types[name] = path.type }
        let plan = PathJoins(paths)
        var targets: [String] = []   // the alias of each join's destination
        for (index, join) in plan.joins.enumerated() {
            let source = join.parent.map { targets[$0] } ?? table
            let target = "\"\(prefix)_j\(index)\""
            let (link, sideA) = try transaction.relationship(join.hop.source, join.hop.relationship)
            let destination = try transaction.info(join.hop.destination).table
            switch link.storage {
            case .foreignKey(_, let column):
                from += sideA
                    ? " LEFT JOIN \(destination) AS \(target) ON \(target).\"rowid\" = \(source).\(column)"
                    : " LEFT JOIN \(destination) AS \(target) ON \(target).\(column) = \(source).\"rowid\""
            case .joinTable(let joinTable, _):
                let links = "\"\(prefix)_l\(index)\""
                let (mine, theirs) = sideA ? ("\"a\"", "\"b\"") : ("\"b\"", "\"a\"")
                from += " LEFT JOIN \(joinTable) AS \(links) ON \(links).\(mine) = \(source).\"rowid\""
                    + " LEFT JOIN \(destination) AS \(target) ON \(target).\"rowid\" = \(links).\(theirs)"
            }
            targets.append(target)
        }
        for (name, join) in plan.targets { expressions[name] = "\(targets[join]).\(quote(paths[name]!.attribute))" }
        self.from = from
        self.isJoined = !plan.joins.isEmpty || alias != nil
        self.expressions = expressions
        self.types = types
    }

    /// The SQL of the value `name` names.
    func column(_ name: String) -> String {
        if let expression = expressions[name] { return expression }
        return qualified(quote(name))
    }

    /// A column of the entity's own table (quoted), qualified when the scope joins.
    func qualified(_ column: String) -> String {
        isJoined ? "\(table).\(column)" : column
    }

    /// The type of the attribute `name` reads.
    func type(_ name: String) -> AttributeType? { types[name] }

    /// The entity's own columns (names, `rowid` among them) as a select list.
    func select(_ columns: [String]) -> String {
        columns.map { isJoined ? "\(table).\(quote($0))" : quote($0) }.joined(separator: ", ")
    }
}
