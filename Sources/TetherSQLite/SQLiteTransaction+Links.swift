public import Tether

/// The import's link path: one relationship of many objects written in set operations.
extension SQLiteTransaction {
    /// Rows per multi-row `INSERT` or `DELETE` of links.
    static let linksPerStatement = 48

    /// Sets one relationship of every row's source, as ``setRelated(_:of:to:)`` for each row in
    /// order, in a fixed number of statements per few dozen links: the current links of all the
    /// sources are read at once, the difference is computed here, and the links that go and come
    /// are deleted and inserted a few dozen per statement. Links that stay are not rewritten (a
    /// position only when it changed), and the position a new link takes among its target's links
    /// comes from an index, so the cost of a link does not grow with the links its target has.
    ///
    /// A batch that names a source twice, or whose targets may each have one partner and are
    /// named by two rows, depends on the order of its rows: it is written row by row.
    public func setRelated(_ batch: LinkBatch) throws {
        try checkOpen(writing: true)
        guard !batch.isEmpty else { return }
        let (link, sideA) = try relationship(batch.entity, batch.relationship)
        let info = try info(batch.entity)
        let destination = sideA ? link.bEntity : link.aEntity
        let sourceToOne = sideA ? link.aToOne : link.bToOne
        let targetToOne = sideA ? link.bToOne : link.aToOne

        // The rows, checked: sources of the entity, targets of the destination (each once per
        // row, in order), at most one for a to-one relationship.
        var sources: [Int64] = []
        sources.reserveCapacity(batch.count)
        var targets: [Int64] = []
        var ends: [Int] = []
        ends.reserveCapacity(batch.count)
        var distinctSources = RowSet()
        var distinctTargets = RowSet()
        var targetList: [Int64] = []  // the distinct targets, in order
        var orderDependent = false
        for (row, source) in batch.sources.enumerated() {
            guard source.entity == batch.entity else {
                throw StoreError(.typeMismatch, entity: batch.entity, member: batch.relationship,
                                 "a link batch of \(batch.entity).\(batch.relationship) names \(source), an object of another entity")
            }
            if !distinctSources.insert(source.rowID) { orderDependent = true }
            let start = targets.count
            for target in batch.targets(row: row) {
                guard target.entity == destination else {
                    throw StoreError(.typeMismatch, entity: batch.entity, member: batch.relationship,
                                     "\(batch.entity).\(batch.relationship) links to \(destination), not \(target.entity)")
                }
                if !targets[start...].contains(target.rowID) {
                    targets.append(target.rowID)
                    if distinctTargets.insert(target.rowID) {
                        targetList.append(target.rowID)
                    } else if targetToOne {
                        orderDependent = true
                    }
                }
            }
            if sourceToOne && targets.count - start > 1 {
                throw StoreError(.typeMismatch, entity: batch.entity, member: batch.relationship, "\(batch.entity).\(batch.relationship) is to-one")
            }
            sources.append(source.rowID)
            ends.append(targets.count)
        }
        if orderDependent {
            for (row, source) in batch.sources.enumerated() {
                try setRelated(batch.relationship, of: source, to: Array(batch.targets(row: row)))
            }
            return
        }
        try requireStored(info, sources)  // each once: a source named twice was written row by row
        try requireStored(self.info(destination), targetList)

        // What is linked now (with positions, for a join table), and the difference.
        let joinTable: (name: String, shape: JoinShape)? = if case .joinTable(let table, let shape) = link.storage { (table, shape) } else { nil }
        // Whether the sources' side keeps its links in order (a kept link whose position changes
        // moves), and whether the targets' side does (a new link goes last among its target's).
        let ordered = joinTable.map { sideA ? $0.shape.aOrdered : $0.shape.bOrdered } ?? false
        let targetsOrdered = joinTable.map { sideA ? $0.shape.bOrdered : $0.shape.aOrdered } ?? false
        // What the import has just read (a join table with `related(_:of:)`, a foreign key with
        // `compare(_:)`), if unchanged since (taken out: this batch writes these links).
        let old: JoinLinks
        if let read = linkReads.removeValue(forKey: link.storage), read.sideA == sideA, let links = read.links(of: sources) {
            old = links
        } else {
            old = try links(link, sideA: sideA, of: sources)
        }
        let otherName = otherSide(of: batch.entity, batch.relationship)
        var removals: [(source: Int64, target: Int64)] = []
        var additions: [(source: Int64, target: Int64, position: Int64)] = []
        // Kept links whose position among the source's changes: deleted and inserted again
        // (batched like the others), keeping their place among the target's links.
        var moves: [(source: Int64, target: Int64, position: Int64, otherPosition: Int64)] = []
        // Where a join table keyed by an ordered side finds each removed or moved link: that
        // side's row and the link's position there (known from the read), one seek fewer than
        // by its pair.
        let keyedBy: (sideA: Bool, keyed: Bool) = switch joinTable?.shape {
        case .aOrdered?: (true, true)
        case .bOrdered?: (false, true)
        default: (true, false)
        }
        var keyed: [(row: Int64, position: Int64)] = []
        func key(_ source: Int64, _ target: Int64, _ position: Int64, _ otherPosition: Int64) -> (row: Int64, position: Int64) {
            keyedBy.sideA == sideA ? (source, position) : (target, otherPosition)
        }
        var changedSources: [Int64] = []
        // The targets whose links change, each recorded in the change set once, in order.
        var touched: [Int64] = []
        var touchedSet = RowSet()
        // Sources of a join table that keep none of their links: all of them deleted at once, by
        // the source's row (one seek for a source's links, not one per link).
        var cleared: [Int64] = []
        for (row, source) in sources.enumerated() {
            let new = targets[(row == 0 ? 0 : ends[row - 1])..<ends[row]]
            let before = old[source]
            if before.count == new.count && zip(before, new).allSatisfy({ $0.target == $1 }) { continue }
            changedSources.append(source)
            // A few links each (the usual case) are searched in place; more are hashed.
            let hashed = before.count > 16 || new.count > 16
            var kept: [Int64: (position: Int64, otherPosition: Int64)] = [:]
            var stays = Set<Int64>()
            if hashed {
                for (target, position, otherPosition) in before { kept[target] = (position, otherPosition) }
                stays = Set(new)
            }
            let goes = { (target: Int64) in !(hashed ? stays.contains(target) : new.contains(target)) }
            let allGo = joinTable != nil && before.count > 1 && before.allSatisfy { goes($0.target) }
            if allGo { cleared.append(source) }
            for (target, position, otherPosition) in before where goes(target) {
                if !allGo {
                    if keyedBy.keyed { keyed.append(key(source, target, position, otherPosition)) } else { removals.append((source, target)) }
                }
                if touchedSet.insert(target) { touched.append(target) }
            }
            for (index, target) in new.enumerated() {
                let found = hashed ? kept[target] : before.first { $0.target == target }.map { ($0.position, $0.otherPosition) }
                if let (position, otherPosition) = found {
                    if ordered && position != Int64(index) {
                        moves.append((source, target, Int64(index), otherPosition))
                        if keyedBy.keyed { keyed.append(key(source, target, position, otherPosition)) }
                    }
                    if targetToOne, touchedSet.insert(target) { touched.append(target) }
                } else {
                    additions.append((source, target, ordered ? Int64(index) : 0))
                    if touchedSet.insert(target) { touched.append(target) }
                }
            }
        }
        guard !changedSources.isEmpty else { return }
        changes.recordUpdate(of: changedSources.map { ObjectID(entity: batch.entity, rowID: $0) }, properties: [batch.relationship])
        changes.recordUpdate(of: touched.map { ObjectID(entity: destination, rowID: $0) }, properties: [otherName])

        // A target that may have one partner leaves the one it had (which is no source here: two
        // rows naming one such target were written row by row above).
        if targetToOne && !additions.isEmpty {
            for (target, partners) in try linked(link, sideA: !sideA, of: additions.map(\.target)) {
                for partner in partners where !distinctSources.contains(partner) {
                    removals.append((partner, target))
                    markUpdated(ObjectID(entity: batch.entity, rowID: partner), batch.relationship)
                }
            }
        }

        switch link.storage {
        case .joinTable(let table, let shape):
            try deleteLinks(table, sideA, of: cleared)
            try deleteLinks(table, shape, sideA, removals + (keyedBy.keyed ? [] : moves.map { ($0.source, $0.target) }))
            try deleteLinks(table, keyedBy.sideA, keyed)
            // New links go last among an ordered target's links: after the largest position it
            // has, which the table's key or index finds without reading the others.
            var next = targetsOrdered ? try lastPositions(table, sideA, of: additions.map(\.target)) : [:]
            // A moved link was deleted above and goes back at its place among its target's links
            // (which may have been the last): the read did not see it, and a new link goes after it.
            if targetsOrdered {
                for move in moves { next[move.target] = max(next[move.target] ?? move.otherPosition, move.otherPosition) }
            }
            var rows: [(own: Int64, other: Int64, ownPosition: Int64, otherPosition: Int64)] = []
            rows.reserveCapacity(additions.count + moves.count)
            for (source, target, position) in additions {
                var position2: Int64 = 0
                if targetsOrdered {
                    position2 = next[target].map { $0 + 1 } ?? 0
                    next[target] = position2
                }
                rows.append((source, target, position, position2))
            }
            for move in moves { rows.append((move.source, move.target, move.position, move.otherPosition)) }
            try insertLinks(table, sideA, rows)
        case .foreignKey(let table, let column):
            if sideA {
                // The column is the source's own: one row update per source whose target changed.
                let unlink = try connection.prepared("UPDATE \(table) SET \(column) = NULL WHERE \"rowid\" = ? AND \(column) = ?")
                for (partner, target) in removals where !distinctSources.contains(partner) {
                    try unlink.bind(1, partner)
                    try unlink.bind(2, target)
                    try unlink.execute("unlinking \(batch.entity).\(batch.relationship)")
                }
                let changed = Set(changedSources)
                let rows = sources.indices.filter { changed.contains(sources[$0]) }
                try setColumn(table, column, of: rows.count, "linking \(batch.entity).\(batch.relationship)") { statement, slot, index in
                    let row = rows[index]
                    let start = row == 0 ? 0 : ends[row - 1]
                    try statement.bind(Int32(slot * 2 + 1), sources[row])
                    if start < ends[row] { try statement.bind(Int32(slot * 2 + 2), targets[start]) }
                }
            } else {
                // The column is on the targets' table: a target's row names its one source.
                let unlink = try connection.prepared("UPDATE \(table) SET \(column) = NULL WHERE \"rowid\" = ? AND \(column) = ?")
                for (source, target) in removals {
                    try unlink.bind(1, target)
                    try unlink.bind(2, source)
                    try unlink.execute("unlinking \(batch.entity).\(batch.relationship)")
                }
                try setColumn(table, column, of: additions.count, "linking \(batch.entity).\(batch.relationship)") { statement, slot, index in
                    try statement.bind(Int32(slot * 2 + 1), additions[index].target)
                    try statement.bind(Int32(slot * 2 + 2), additions[index].source)
                }
            }
        }
    }

    /// The links of `rows` in a join table, from side a (or b), with their positions: in order
    /// for an ordered side, by the other side's row otherwise (the order of the table's key or
    /// index either way).
    func joinLinks(_ table: String, _ shape: JoinShape, sideA: Bool, of rows: [Int64]) throws -> JoinLinks {
        let (own, other, ownPosition, otherPosition) = joinColumns(sideA: sideA)
        let order = (sideA ? shape.aOrdered : shape.bOrdered) ? ownPosition : other
        var links = JoinLinks(minimumCapacity: rows.count)
        try chunked(rows) { chunk in
            try connection.run("SELECT \(own), \(other), \(ownPosition), \(otherPosition) FROM \(table) WHERE \(own) IN (\(placeholders(chunk.count))) ORDER BY \(own), \(order)",
                               chunk.map { .int($0) }, context: "reading relationships") { row in
                links.append(row.int(0), (row.int(1), row.int(2), row.int(3)))
            }
        }
        links.finish()
        return links
    }

    /// The largest position each of `targets` (rows of the join table's other side, which is
    /// ordered) has among its links (absent: it has none), a few dozen targets per statement, each
    /// found by the table's key or its (target, position) index without reading the target's
    /// other links.
    private func lastPositions(_ table: String, _ sideA: Bool, of targets: [Int64]) throws -> [Int64: Int64] {
        let (_, other, _, otherPosition) = joinColumns(sideA: sideA)
        var distinct = Set<Int64>(minimumCapacity: targets.count)
        let rows = targets.filter { distinct.insert($0).inserted }
        var found: [Int64: Int64] = [:]
        try inStatements(of: rows.count, { .lastPositions(table: table, sideA: sideA, size: $0) }, "reading link positions", { size in
            "SELECT \"column1\", (SELECT max(\(otherPosition)) FROM \(table) WHERE \(other) = \"column1\") FROM (VALUES "
                + Array(repeating: "(?)", count: size).joined(separator: ", ") + ")"
        }, bind: { statement, slot, index in
            try statement.bind(Int32(slot + 1), rows[index])
        }, row: { row in
            if !row.isNull(0) && !row.isNull(1) { found[row.int(0)] = row.int(1) }
        })
        return found
    }

    /// Deletes links of a join table, a few dozen per statement.
    private func deleteLinks(_ table: String, _ shape: JoinShape, _ sideA: Bool, _ pairs: [(source: Int64, target: Int64)]) throws {
        // `IN (SELECT … FROM (VALUES …))`: SQLite looks each pair up by the key or unique index
        // that holds the pairs, whose columns come in its order (`IN (VALUES …)` would scan the
        // table). An unused pair is bound NULL and matches nothing.
        let (first, second) = shape == .aOrdered ? ("\"b\"", "\"a\"") : ("\"a\"", "\"b\"")
        let sourceFirst = sideA == (shape != .aOrdered)
        try inStatements(of: pairs.count, { .deleteLinks(table: table, shape: shape, size: $0) }, "unlinking", { size in
            "DELETE FROM \(table) WHERE (\(first), \(second)) IN (SELECT \"column1\", \"column2\" FROM (VALUES "
                + Array(repeating: "(?, ?)", count: size).joined(separator: ", ") + "))"
        }) { statement, slot, index in
            let pair = sourceFirst ? (pairs[index].source, pairs[index].target) : (pairs[index].target, pairs[index].source)
            try statement.bind(Int32(slot * 2 + 1), pair.0)
            try statement.bind(Int32(slot * 2 + 2), pair.1)
        }
    }

    /// Deletes links of a join table keyed by an ordered side by that key (`a`, `a_pos` for side
    /// a), a few dozen per statement.
    private func deleteLinks(_ table: String, _ sideA: Bool, _ keys: [(row: Int64, position: Int64)]) throws {
        let (own, _, ownPosition, _) = joinColumns(sideA: sideA)
        try inStatements(of: keys.count, { .deleteKeyedLinks(table: table, sideA: sideA, size: $0) }, "unlinking", { size in
            "DELETE FROM \(table) WHERE (\(own), \(ownPosition)) IN (SELECT \"column1\", \"column2\" FROM (VALUES "
                + Array(repeating: "(?, ?)", count: size).joined(separator: ", ") + "))"
        }) { statement, slot, index in
            try statement.bind(Int32(slot * 2 + 1), keys[index].row)
            try statement.bind(Int32(slot * 2 + 2), keys[index].position)
        }
    }

    /// Deletes every link of `rows` (of side a, or b) of a join table, a few dozen rows per
    /// statement: each row's links are found by one seek of the key or index that starts with it.
    private func deleteLinks(_ table: String, _ sideA: Bool, of rows: [Int64]) throws {
        let (own, _, _, _) = joinColumns(sideA: sideA)
        try inStatements(of: rows.count, { .deleteRowLinks(table: table, sideA: sideA, size: $0) }, "unlinking", { size in
            "DELETE FROM \(table) WHERE \(own) IN (SELECT \"column1\" FROM (VALUES " + Array(repeating: "(?)", count: size).joined(separator: ", ") + "))"
        }) { statement, slot, index in
            try statement.bind(Int32(slot + 1), rows[index])
        }
    }

    /// Inserts links into a join table, a few dozen per statement.
    private func insertLinks(_ table: String, _ sideA: Bool,
                             _ rows: [(own: Int64, other: Int64, ownPosition: Int64, otherPosition: Int64)]) throws {
        let (own, other, ownPosition, otherPosition) = joinColumns(sideA: sideA)
        let columns = "(\(own), \(other), \(ownPosition), \(otherPosition))"
        // An unused row is bound NULL and left out by the WHERE clause.
        try inStatements(of: rows.count, { .insertLinks(table: table, sideA: sideA, size: $0) }, "linking", { size in
            "INSERT OR FAIL INTO \(table) \(columns) SELECT \"column1\", \"column2\", \"column3\", \"column4\" FROM (VALUES "
                + Array(repeating: "(?, ?, ?, ?)", count: size).joined(separator: ", ") + ") WHERE \"column1\" IS NOT NULL"
        }) { statement, slot, index in
            let base = Int32(slot * 4)
            try statement.bind(base + 1, rows[index].own)
            try statement.bind(base + 2, rows[index].other)
            try statement.bind(base + 3, rows[index].ownPosition)
            try statement.bind(base + 4, rows[index].otherPosition)
        }
    }

    /// Sets a foreign-key column of many rows, each to its own value, a few dozen rows per
    /// statement: `bind` binds a row's rowid to parameter `2 * slot + 1` and its value (or leaves
    /// it NULL) to `2 * slot + 2`.
    private func setColumn(_ table: String, _ column: String, of count: Int, _ context: String,
                           bind: (_ statement: Statement, _ slot: Int, _ index: Int) throws -> Void) throws {
        // `CASE` rather than `UPDATE … FROM` (SQLite 3.33) so that older system libraries run it
        // too; an unused row's rowid is NULL, which neither the `WHEN` nor the `IN` matches.
        try inStatements(of: count, { .setColumn(table: table, column: column, size: $0) }, context, { size in
            let cases = (0..<size).map { "WHEN ?\(2 * $0 + 1) THEN ?\(2 * $0 + 2)" }.joined(separator: " ")
            let rows = (0..<size).map { "?\(2 * $0 + 1)" }.joined(separator: ", ")
            return "UPDATE \(table) SET \(column) = CASE \"rowid\" \(cases) END WHERE \"rowid\" IN (\(rows))"
        }, bind: bind)
    }

    /// Runs statements of ``linksPerStatement`` rows while that many are left, then one of 8 or
    /// ``linksPerStatement`` rows for the rest (so that two texts are prepared, `sql(size)`, found
    /// by `key(size)`), binding row `index` at `slot` of its statement; the slots left over stay
    /// NULL (each statement's text must make a row of NULLs do nothing). `row` receives what the
    /// statements return.
    private func inStatements(of count: Int, _ key: (_ size: Int) -> StatementKey, _ context: String, _ sql: (_ size: Int) -> String,
                              bind: (_ statement: Statement, _ slot: Int, _ index: Int) throws -> Void,
                              row: (Row) throws -> Void = { _ in }) throws {
        var start = 0
        while start < count {
            let left = count - start
            let size = left > 8 ? Self.linksPerStatement : 8
            let statement = try connection.prepared(key(size)) { sql(size) }
            for slot in 0..<min(size, left) { try bind(statement, slot, start + slot) }
            try statement.query(context, row: row)
            start += min(size, left)
        }
    }
}

/// A join table's columns as one side of its relationship sees them, quoted: the side's own column
/// and position (`a`, `a_pos` for side a), then the other side's.
private func joinColumns(sideA: Bool) -> (own: String, other: String, ownPosition: String, otherPosition: String) {
    sideA ? ("\"a\"", "\"b\"", "\"a_pos\"", "\"b_pos\"") : ("\"b\"", "\"a\"", "\"b_pos\"", "\"a_pos\"")
}
