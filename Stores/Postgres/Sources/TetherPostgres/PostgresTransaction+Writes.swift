import Foundation
import PostgresNIO
public import Tether

extension PostgresTransaction {
    private func checkValues(_ values: [String: Value], _ info: Layout.EntityInfo) throws {
        for (name, value) in values {
            guard let type = info.types[name] else {
                throw StoreError(.unknownAttribute, entity: info.entity.name, member: name, "\(info.entity.name) has no attribute '\(name)'")
            }
            try Codec.check(value, type, entity: info.entity.name, attribute: name)
        }
    }

    /// The name an object on the far side of `entity.relationship` knows the link by: the
    /// inverse's, or `Entity.relationship` for a relationship without one.
    func otherSide(of entity: String, _ relationship: String) -> String {
        layout.entities[entity]?.entity.relationship(named: relationship)?.inverse ?? "\(entity).\(relationship)"
    }

    public func insert(_ entity: String, values: [String: Value]) throws -> Object {
        try checkOpen(writing: true)
        let info = try info(entity)
        try checkValues(values, info)
        let names = info.entity.attributes.map(\.name).filter { values[$0] != nil }
        var sql = SQL("")
        let placeholders = names.map { sql.bind(Codec.encode(values[$0], as: info.types[$0]!)) }
        sql.text = names.isEmpty
            ? "INSERT INTO \(info.table) DEFAULT VALUES RETURNING \"rowid\""
            : "INSERT INTO \(info.table) (\(names.map(quote).joined(separator: ", "))) VALUES (\(placeholders.joined(separator: ", "))) ON CONFLICT DO NOTHING RETURNING \"rowid\""
        guard let row = try connection.query(sql, "inserting \(entity)", entity: entity).first, let rowID = Cells(row).int(0) else {
            let key = info.identity.map { values[$0.name].map(String.init(describing:)) ?? "nil" }.joined(separator: ", ")
            throw StoreError(.duplicateIdentity, entity: entity, "an object of \(entity) with identity (\(key)) exists")
        }
        let id = ObjectID(entity: entity, rowID: rowID)
        changes.inserted.insert(id)
        return Object(id: id, values: values)
    }

    /// Inserts the batch's rows with one multi-row `INSERT ... ON CONFLICT DO NOTHING` per chunk,
    /// on row ids taken from the table's sequence beforehand (so that each row's id is known
    /// whatever the order PostgreSQL inserts them in), sorted by identity so that concurrent
    /// imports take the identity index's locks in the same order. A row whose identity is
    /// stored already (by this transaction's snapshot) is refused with `duplicateIdentity` and
    /// none of the batch's rows stay; one stored by a concurrent transaction fails to serialise,
    /// and the store runs the whole transaction again.
    public func insert(_ batch: InsertBatch) throws -> [ObjectID] {
        try checkOpen(writing: true)
        let entity = batch.entity
        let info = try info(entity)
        guard batch.count > 0 else { return [] }
        let types = try batch.attributes.map { name in
            guard let type = info.types[name] else {
                throw StoreError(.unknownAttribute, entity: entity, member: name, "\(entity) has no attribute '\(name)'")
            }
            return type
        }
        guard Set(batch.attributes).count == batch.attributes.count else {
            throw StoreError(.unsupported, entity: entity, "an insert batch of \(entity) names an attribute twice")
        }
        // A to-one relationship kept as a column of this table (whose inverse is not to-one:
        // a one-to-one's other side must lose its partner first) is written with the rows; the
        // others are linked after the insert.
        var inRow: [(relationship: Int, column: String, destination: String)] = []
        var afterRow: [Int] = []
        for (r, name) in batch.relationships.enumerated() {
            let (link, sideA) = try relationship(entity, name)
            if sideA, !link.bToOne, case .foreignKey(_, let column) = link.storage, !inRow.contains(where: { $0.column == column }) {
                inRow.append((r, column, link.bEntity))
            } else {
                afterRow.append(r)
            }
        }
        let identity = try info.entity.identity.map { name in
            guard let position = batch.attributes.firstIndex(of: name) else {
                throw StoreError(.missingIdentity, entity: entity, member: name,
                                 "an insert batch of \(entity) gives no values of its identity attribute '\(name)'")
            }
            return position
        }
        var seen = Set<IdentityKey>(minimumCapacity: identity.isEmpty ? 0 : batch.count)
        for row in 0..<batch.count {
            try batch.checkIdentity(row: row, positions: identity)
            for (a, type) in types.enumerated() {
                if let value = batch.value(row: row, attribute: a) { try Codec.check(value, type, entity: entity, attribute: batch.attributes[a]) }
            }
            if !identity.isEmpty {
                let key = IdentityKey(identity.map { batch.value(row: row, attribute: $0)! })
                guard seen.insert(key).inserted else {
                    throw StoreError(.duplicateIdentity, entity: entity, "an insert batch of \(entity) gives the identity \(key) twice")
                }
            }
        }
        // The targets written with the rows: of the destination, and stored (each once; a
        // target deleted meanwhile by another transaction fails the column's foreign key).
        var inRowTargets: [[Int64]] = []
        for (r, _, destination) in inRow {
            var wanted = Set<Int64>()
            for row in 0..<batch.count {
                guard let target = batch.target(row: row, relationship: r) else { continue }
                guard target.entity == destination else {
                    throw StoreError(.typeMismatch, entity: entity, member: batch.relationships[r],
                                     "\(entity).\(batch.relationships[r]) links to \(destination), not \(target.entity)")
                }
                wanted.insert(target.rowID)
            }
            let targets = wanted.sorted()
            if !targets.isEmpty {
                let found = try existing(try self.info(destination), targets)
                if let missing = targets.first(where: { !found.contains($0) }) {
                    throw StoreError(.objectNotFound, entity: destination, "no object \(ObjectID(entity: destination, rowID: missing))")
                }
            }
            inRowTargets.append(targets)
        }
        // Row ids, in ascending order, one per row, in one statement: the sequence is named once
        // (the subquery, kept apart by OFFSET 0, is not evaluated per row).
        var allocate = SQL("")
        allocate.text = "SELECT nextval(s.\"id\") FROM (SELECT pg_get_serial_sequence(\(allocate.bind(.text(info.table))), 'rowid')::regclass AS \"id\" OFFSET 0) AS s, "
            + "generate_series(1, \(allocate.bind(.int(Int64(batch.count)))))"
        let rowIDs = try connection.query(allocate, "allocating row ids of \(entity)", entity: entity).compactMap { Cells($0).int(0) }.sorted()
        guard rowIDs.count == batch.count else {
            throw StoreError(.storage, entity: entity, "allocating \(batch.count) row ids of \(entity) returned \(rowIDs.count)")
        }
        var inserted = Set<Int64>(minimumCapacity: batch.count)
        let columns = (["\"rowid\""] + batch.attributes.map(quote) + inRow.map { $0.column }).joined(separator: ", ")
        let order = identity.isEmpty ? "1" : identity.map { String($0 + 2) }.joined(separator: ", ")
        try chunked(Array(0..<batch.count)) { rows in
            var sql = SQL("")
            var arrays = [sql.bind(Parameter.ints(rows.map { rowIDs[$0] })) + "::bigint[]"]
            for (a, type) in types.enumerated() {
                let values = rows.map { Codec.encode(batch.value(row: $0, attribute: a), as: type) }
                arrays.append(sql.bind(.array(Codec.elementType(type), values)) + "::" + Codec.arrayCast(type))
            }
            for (r, _, _) in inRow {
                let targets = rows.map { row -> Parameter? in batch.target(row: row, relationship: r).map { Parameter.int($0.rowID) } }
                arrays.append(sql.bind(.array(.int8, targets)) + "::bigint[]")
            }
            sql.text = "INSERT INTO \(info.table) (\(columns)) SELECT * FROM unnest(\(arrays.joined(separator: ", "))) ORDER BY \(order) ON CONFLICT DO NOTHING RETURNING \"rowid\""
            for row in try connection.query(sql, "inserting \(rows.count) objects of \(entity)", entity: entity) {
                if let id = Cells(row).int(0) { inserted.insert(id) }
            }
        }
        if inserted.count != batch.count {
            // Identities stored before this transaction began: none of the batch's rows stay.
            let refused = (0..<batch.count).first { !inserted.contains(rowIDs[$0]) }!
            var undo = SQL("")
            undo.text = "DELETE FROM \(info.table) WHERE \"rowid\" = ANY(\(undo.bind(Parameter.ints(inserted))))"
            try connection.query(undo, "removing the rows of a refused insert batch of \(entity)", entity: entity)
            let key = IdentityKey(identity.map { batch.value(row: refused, attribute: $0)! })
            throw StoreError(.duplicateIdentity, entity: entity, "an object of \(entity) with identity \(key) exists")
        }
        let ids = rowIDs.map { ObjectID(entity: entity, rowID: $0) }
        changes.inserted.formUnion(ObjectIDSet(ids))
        for (k, (r, _, destination)) in inRow.enumerated() {
            changes.recordUpdate(of: inRowTargets[k].map { ObjectID(entity: destination, rowID: $0) },
                                 properties: [otherSide(of: entity, batch.relationships[r])])
        }
        for r in afterRow {
            let name = batch.relationships[r]
            var links = LinkBatch(entity: entity, relationship: name)
            for (row, id) in ids.enumerated() {
                if let target = batch.target(row: row, relationship: r) { links.append(id, to: CollectionOfOne(target)) }
            }
            if !links.isEmpty { try setRelated(links, newSources: true) }
        }
        return ids
    }

    public func update(_ id: ObjectID, setting values: [String: Value], clearing cleared: Set<String>) throws {
        try checkOpen(writing: true)
        let info = try info(id.entity)
        try checkValues(values, info)
        for name in cleared where info.types[name] == nil {
            throw StoreError(.unknownAttribute, entity: id.entity, member: name, "\(id.entity) has no attribute '\(name)'")
        }
        let names = Set(values.keys).union(cleared).sorted()
        let identityNames = Set(info.entity.identity)
        if !identityNames.isDisjoint(with: names) {
            try checkIdentityFree(id, info, values, cleared)
        }
        var sql = SQL("")
        let assignments = names.map { name in "\(quote(name)) = \(sql.bind(values[name].flatMap { Codec.encode($0, as: info.types[name]!) }))" }
        let set = assignments.isEmpty ? "\"rowid\" = \"rowid\"" : assignments.joined(separator: ", ")
        sql.text = "UPDATE \(info.table) SET \(set) WHERE \"rowid\" = \(sql.bind(.int(id.rowID))) RETURNING \"rowid\""
        guard !(try connection.query(sql, "updating \(id)", entity: id.entity)).isEmpty else {
            throw StoreError(.objectNotFound, entity: id.entity, "no object \(id)")
        }
        changes.recordUpdate(of: id, properties: Set(values.keys).union(cleared))
    }

    /// Throws `duplicateIdentity` when the identity `id` would have after the change is another
    /// object's (checked first, so that the transaction stays usable after the error).
    private func checkIdentityFree(_ id: ObjectID, _ info: Layout.EntityInfo, _ values: [String: Value], _ cleared: Set<String>) throws {
        guard let current = try object(id) else { throw StoreError(.objectNotFound, entity: id.entity, "no object \(id)") }
        var key: [Value] = []
        for attribute in info.identity {
            let value = values[attribute.name] ?? (cleared.contains(attribute.name) ? nil : current.values[attribute.name])
            guard let value else { return }   // an unset identity is unique
            key.append(value)
        }
        if let other = try objects(info.entity.name, identities: [IdentityKey(key)]).values.first, other.id != id {
            throw StoreError(.duplicateIdentity, entity: id.entity, "an object of \(id.entity) with identity \(IdentityKey(key)) exists")
        }
    }

    /// Changes the batch's attributes of its objects with one `UPDATE ... FROM unnest(...)` per
    /// chunk, in row id order (a row named twice takes its last values).
    public func update(_ batch: UpdateBatch) throws {
        try checkOpen(writing: true)
        let entity = batch.entity
        let info = try info(entity)
        guard batch.count > 0 else { return }
        let types = try batch.attributes.map { name in
            guard let type = info.types[name] else {
                throw StoreError(.unknownAttribute, entity: entity, member: name, "\(entity) has no attribute '\(name)'")
            }
            return type
        }
        var last: [Int64: Int] = [:]
        for (row, id) in batch.ids.enumerated() {
            guard id.entity == entity else { throw StoreError(.objectNotFound, entity: id.entity, "no object \(id) of \(entity)") }
            for (a, type) in types.enumerated() {
                if let value = batch.value(row: row, attribute: a) { try Codec.check(value, type, entity: entity, attribute: batch.attributes[a]) }
            }
            last[id.rowID] = row
        }
        if !Set(info.entity.identity).isDisjoint(with: batch.attributes) {
            // An identity changes: row by row, each checked against the others.
            for (row, id) in batch.ids.enumerated() {
                var setting: [String: Value] = [:]
                var clearing = Set<String>()
                for (a, name) in batch.attributes.enumerated() {
                    if let value = batch.value(row: row, attribute: a) { setting[name] = value } else { clearing.insert(name) }
                }
                try update(id, setting: setting, clearing: clearing)
            }
            return
        }
        let rows = last.keys.sorted()
        var updated = 0
        try chunked(rows) { chunk in
            var sql = SQL("")
            var arrays = [sql.bind(Parameter.ints(chunk)) + "::bigint[]"]
            for (a, type) in types.enumerated() {
                let values = chunk.map { Codec.encode(batch.value(row: last[$0]!, attribute: a), as: type) }
                arrays.append(sql.bind(.array(Codec.elementType(type), values)) + "::" + Codec.arrayCast(type))
            }
            let names = batch.attributes.indices.map { "v\($0)" }
            let set = batch.attributes.enumerated().map { "\(quote($0.element)) = v.v\($0.offset)" }
            sql.text = "UPDATE \(info.table) AS t SET \(set.isEmpty ? "\"rowid\" = t.\"rowid\"" : set.joined(separator: ", ")) "
                + "FROM unnest(\(arrays.joined(separator: ", "))) AS v(id\(names.isEmpty ? "" : ", " + names.joined(separator: ", "))) "
                + "WHERE t.\"rowid\" = v.id RETURNING t.\"rowid\""
            updated += try connection.query(sql, "updating \(chunk.count) objects of \(entity)", entity: entity).count
        }
        if updated != rows.count {
            let found = try existing(info, rows)
            let missing = rows.first { !found.contains($0) }.map { ObjectID(entity: entity, rowID: $0) }
            throw StoreError(.objectNotFound, entity: entity, "no object \(missing.map(String.init(describing:)) ?? entity)")
        }
        changes.recordUpdate(of: batch.ids, properties: Set(batch.attributes))
    }

    public func delete(_ id: ObjectID) throws {
        try checkOpen(writing: true)
        let info = try info(id.entity)
        guard !(try existing(info, [id.rowID])).isEmpty else {
            throw StoreError(.objectNotFound, entity: id.entity, "no object \(id)")
        }
        for name in (layout.relationships[id.entity] ?? [:]).keys.sorted() {
            try setRelated(name, of: id, to: [])
        }
        // Links from relationships without an inverse that point at this object.
        for index in layout.unnamedIncoming[id.entity] ?? [] {
            let link = layout.links[index]
            var sql = SQL("")
            let row = sql.bind(.int(id.rowID))
            switch link.storage {
            case .joinTable(let table):
                sql.text = "DELETE FROM \(table) WHERE \"b\" = \(row) RETURNING \"a\""
            case .foreignKey(let table, let column):
                sql.text = "UPDATE \(table) SET \(column) = NULL WHERE \(column) = \(row) RETURNING \"rowid\""
            }
            let sources = try connection.query(sql, "unlinking \(id)", entity: id.entity).compactMap { Cells($0).int(0) }
            changes.recordUpdate(of: sources.map { ObjectID(entity: link.aEntity, rowID: $0) }, properties: [link.aName])
        }
        for (storage, isA, isB) in layout.retired[id.entity] ?? [] {
            var sql = SQL("")
            let row = sql.bind(.int(id.rowID))
            switch storage {
            case .joinTable(let table):
                let conditions = (isA ? ["\"a\" = \(row)"] : []) + (isB ? ["\"b\" = \(row)"] : [])
                sql.text = "DELETE FROM \(table) WHERE \(conditions.joined(separator: " OR "))"
            case .foreignKey(let table, let column):
                // The column of side a goes with its row; rows naming this one as side b lose it.
                guard isB else { continue }
                sql.text = "UPDATE \(table) SET \(column) = NULL WHERE \(column) = \(row)"
            }
            try connection.query(sql, "unlinking \(id) from a retired relationship", entity: id.entity)
        }
        var sql = SQL("")
        sql.text = "DELETE FROM \(info.table) WHERE \"rowid\" = \(sql.bind(.int(id.rowID)))"
        try connection.query(sql, "deleting \(id)", entity: id.entity)
        var records = SQL("")
        records.text = "DELETE FROM \(layout.table(SystemTables.records)) WHERE \"entity\" = \(records.bind(.text(id.entity))) AND \"row\" = \(records.bind(.int(id.rowID)))"
        try connection.query(records, "deleting the remote record of \(id)", entity: id.entity)
        changes.recordDeletion(of: id)
    }

    public func setRemoteRecord(_ record: Data?, of id: ObjectID) throws {
        try checkOpen(writing: true)
        let info = try info(id.entity)
        guard !(try existing(info, [id.rowID])).isEmpty else {
            throw StoreError(.objectNotFound, entity: id.entity, "no object \(id)")
        }
        var sql = SQL("")
        let entity = sql.bind(.text(id.entity))
        let row = sql.bind(.int(id.rowID))
        if let record {
            sql.text = "INSERT INTO \(layout.table(SystemTables.records)) (\"entity\", \"row\", \"record\") VALUES (\(entity), \(row), \(sql.bind(.bytes(Array(record))))) "
                + "ON CONFLICT (\"entity\", \"row\") DO UPDATE SET \"record\" = EXCLUDED.\"record\""
        } else {
            sql.text = "DELETE FROM \(layout.table(SystemTables.records)) WHERE \"entity\" = \(entity) AND \"row\" = \(row)"
        }
        try connection.query(sql, "writing the remote record of \(id)", entity: id.entity)
    }

    public func setRelated(_ relationship: String, of id: ObjectID, to targets: [ObjectID]) throws {
        var batch = LinkBatch(entity: id.entity, relationship: relationship)
        batch.append(id, to: targets)
        try setRelated(batch)
    }

    public func setRelated(_ batch: LinkBatch) throws {
        try setRelated(batch, newSources: false)
    }

    /// Writes a batch of links in a few statements whatever its size: the sources' and targets'
    /// existence (locking the rows of a to-one side in `rowid` order: the rows whose foreign-key
    /// column may change `FOR UPDATE`, and touching the others, so that concurrent writers of the
    /// same to-one side fail to serialise and are retried rather than link it twice), the
    /// sources' current links (and the targets' when a target has one partner at most), then,
    /// for a foreign-key column, one `UPDATE ... FROM unnest(...)` of the rows whose column
    /// changes, or, for a join table, one `DELETE` of the links that go and one `INSERT` of those
    /// that come. `newSources`: the sources were inserted by this transaction and have no links
    /// yet.
    func setRelated(_ batch: LinkBatch, newSources: Bool) throws {
        try checkOpen(writing: true)
        guard !batch.isEmpty else { return }
        let (link, sideA) = try relationship(batch.entity, batch.relationship)
        if let other = batch.sources.first(where: { $0.entity != batch.entity }) {
            throw StoreError(.typeMismatch, entity: batch.entity, member: batch.relationship,
                             "a link batch of \(batch.entity).\(batch.relationship) names \(other), an object of another entity")
        }
        var distinct = Set<Int64>(minimumCapacity: batch.count)
        guard batch.sources.allSatisfy({ distinct.insert($0.rowID).inserted }) else {
            // A source named twice: row by row, each row's effect seen by the next.
            for (row, source) in batch.sources.enumerated() {
                var one = LinkBatch(entity: batch.entity, relationship: batch.relationship)
                one.append(source, to: batch.targets(row: row))
                try setRelated(one, newSources: newSources)
            }
            return
        }
        let destination = sideA ? link.bEntity : link.aEntity
        let ownToOne = sideA ? link.aToOne : link.bToOne
        let backToOne = sideA ? link.bToOne : link.aToOne
        let ownOrdered = sideA ? link.aOrdered : link.bOrdered
        let backOrdered = sideA ? link.bOrdered : link.aOrdered
        let sourceInfo = try info(batch.entity)
        let destinationInfo = try info(destination)

        // The targets of each row, checked, each once, in order.
        var rows: [[Int64]] = []
        rows.reserveCapacity(batch.count)
        var allTargets = Set<Int64>()
        for (row, source) in batch.sources.enumerated() {
            var unique: [Int64] = []
            var seen = Set<Int64>()
            for target in batch.targets(row: row) {
                guard target.entity == destination else {
                    throw StoreError(.typeMismatch, entity: source.entity, member: batch.relationship,
                                     "\(source.entity).\(batch.relationship) links to \(destination), not \(target.entity)")
                }
                if seen.insert(target.rowID).inserted { unique.append(target.rowID) }
            }
            if ownToOne && unique.count > 1 {
                throw StoreError(.typeMismatch, entity: source.entity, member: batch.relationship, "\(source.entity).\(batch.relationship) is to-one")
            }
            allTargets.formUnion(unique)
            rows.append(unique)
        }
        // How each side's rows are locked: a join table's to-one side is touched; a column's own
        // rows (side a) are locked for the update that may follow, and the other side, when it
        // is to-one (a one-to-one), is touched.
        let sourceLock: RowLock
        let targetLock: RowLock
        switch link.storage {
        case .joinTable:
            sourceLock = ownToOne ? .touch : .unlocked
            targetLock = backToOne ? .touch : .unlocked
        case .foreignKey:
            sourceLock = sideA ? .forUpdate : (ownToOne ? .touch : .unlocked)
            targetLock = sideA ? (backToOne ? .touch : .unlocked) : .forUpdate
        }
        let sources = batch.sources.map(\.rowID)
        if !newSources {
            let found = try existing(sourceInfo, sources, lock: sourceLock)
            if let missing = sources.first(where: { !found.contains($0) }) {
                throw StoreError(.objectNotFound, entity: batch.entity, "no object \(ObjectID(entity: batch.entity, rowID: missing))")
            }
        }
        let targetList = allTargets.sorted()
        if !targetList.isEmpty {
            let found = try existing(destinationInfo, targetList, lock: targetLock)
            if let missing = targetList.first(where: { !found.contains($0) }) {
                throw StoreError(.objectNotFound, entity: destination, "no object \(ObjectID(entity: destination, rowID: missing))")
            }
        }

        // The current links: each source's (in order), and each target's partners when it has
        // one at most, or its last position when its side is ordered.
        var out: [Int64: [Int64]] = [:]
        var otherPosition: [Pair: Int64] = [:]
        if !newSources {
            for (source, links) in try readLinks(link, sideA: sideA, of: sources) {
                out[source] = links.map(\.target)
                for l in links { otherPosition[Pair(source, l.target)] = l.otherPosition }
            }
        }
        var back: [Int64: [Int64]] = [:]
        var lastPosition: [Int64: Int64] = [:]
        if backToOne && !targetList.isEmpty {
            for (target, links) in try readLinks(link, sideA: !sideA, of: targetList) {
                back[target] = links.map(\.target)
            }
        } else if backOrdered && !targetList.isEmpty, case .joinTable(let table) = link.storage {
            var sql = SQL("")
            let other = sideA ? "b" : "a"
            sql.text = "SELECT \"\(other)\", max(\"\(other)_pos\") FROM \(table) WHERE \"\(other)\" = ANY(\(sql.bind(Parameter.ints(targetList)))) GROUP BY \"\(other)\""
            for row in try connection.query(sql, "reading link positions", entity: destination) {
                let cells = Cells(row)
                lastPosition[cells.int(0)!] = cells.int(1)!
            }
        }

        // The batch's effect, row by row, as setRelated(_:of:to:) has it.
        var deleted = Set<Pair>()
        var added: [Pair: (own: Int64, other: Int64)] = [:]
        var changedSources: [Int64] = []
        var changedDestinations: [Int64] = []
        func remove(_ pair: Pair) {
            added[pair] = nil
            deleted.insert(pair)
        }
        func add(_ pair: Pair, own: Int64, other: Int64) {
            added[pair] = (own, other)
        }
        for (row, id) in sources.enumerated() {
            let targets = rows[row]
            let old = out[id] ?? []
            if old == targets { continue }
            let keep = Set(targets)
            let oldSet = Set(old)
            for target in old where !keep.contains(target) {
                remove(Pair(id, target))
                if backToOne { back[target] = [] }
                changedDestinations.append(target)
            }
            for target in targets where backToOne {
                for previous in back[target] ?? [] where previous != id {
                    remove(Pair(previous, target))
                    if let list = out[previous] { out[previous] = list.filter { $0 != target } }
                    changedSources.append(previous)
                }
                back[target] = [id]
            }
            for (position, target) in targets.enumerated() {
                let pair = Pair(id, target)
                if oldSet.contains(target) {
                    // Kept: rewritten only when its position on an ordered side moves.
                    if ownOrdered {
                        remove(pair)
                        add(pair, own: Int64(position), other: otherPosition[pair] ?? 0)
                    }
                } else {
                    var other: Int64 = 0
                    if backOrdered {
                        other = (lastPosition[target] ?? -1) + 1
                        lastPosition[target] = other
                    }
                    otherPosition[pair] = other
                    add(pair, own: ownOrdered ? Int64(position) : 0, other: other)
                    changedDestinations.append(target)
                }
            }
            out[id] = targets
            changedSources.append(id)
        }

        // Write the difference.
        func columns(_ pair: Pair) -> (a: Int64, b: Int64) { sideA ? (pair.source, pair.target) : (pair.target, pair.source) }
        switch link.storage {
        case .foreignKey(let table, let column):
            // Each side-a row whose column changes, and its new value: NULL where its link goes,
            // the target where one comes (a to-one row gains one link at most, having lost the
            // one it had), in `rowid` order, one statement per chunk.
            var values: [Int64: Int64?] = [:]
            for pair in deleted { values.updateValue(nil, forKey: columns(pair).a) }
            for pair in added.keys { values.updateValue(columns(pair).b, forKey: columns(pair).a) }
            let rows = values.keys.sorted()
            try chunked(rows) { chunk in
                var sql = SQL("")
                let ids = sql.bind(Parameter.ints(chunk))
                let targets = sql.bind(.array(.int8, chunk.map { row -> Parameter? in values[row]!.map { Parameter.int($0) } }))
                sql.text = "UPDATE \(table) AS t SET \(column) = v.b FROM unnest(\(ids)::bigint[], \(targets)::bigint[]) AS v(id, b) WHERE t.\"rowid\" = v.id"
                try connection.query(sql, "linking \(batch.entity).\(batch.relationship)", entity: batch.entity)
            }
        case .joinTable(let table):
            // Links that go, then links that come.
            let gone = deleted.sorted { columns($0) < columns($1) }
            try chunked(gone) { chunk in
                var sql = SQL("")
                let a = sql.bind(Parameter.ints(chunk.map { columns($0).a }))
                let b = sql.bind(Parameter.ints(chunk.map { columns($0).b }))
                sql.text = "DELETE FROM \(table) AS l USING unnest(\(a)::bigint[], \(b)::bigint[]) AS v(a, b) WHERE l.\"a\" = v.a AND l.\"b\" = v.b"
                try connection.query(sql, "unlinking \(batch.entity).\(batch.relationship)", entity: batch.entity)
            }
            let come = added.sorted { columns($0.key) < columns($1.key) }
            try chunked(come) { chunk in
                var sql = SQL("")
                let a = sql.bind(Parameter.ints(chunk.map { columns($0.key).a }))
                let b = sql.bind(Parameter.ints(chunk.map { columns($0.key).b }))
                let aPos = sql.bind(Parameter.ints(chunk.map { sideA ? $0.value.own : $0.value.other }))
                let bPos = sql.bind(Parameter.ints(chunk.map { sideA ? $0.value.other : $0.value.own }))
                sql.text = "INSERT INTO \(table) (\"a\", \"b\", \"a_pos\", \"b_pos\") SELECT * FROM unnest(\(a)::bigint[], \(b)::bigint[], \(aPos)::bigint[], \(bPos)::bigint[]) "
                    + "ON CONFLICT (\"a\", \"b\") DO UPDATE SET \"a_pos\" = EXCLUDED.\"a_pos\", \"b_pos\" = EXCLUDED.\"b_pos\""
                try connection.query(sql, "linking \(batch.entity).\(batch.relationship)", entity: batch.entity)
            }
        }
        changes.recordUpdate(of: changedSources.map { ObjectID(entity: batch.entity, rowID: $0) }, properties: [batch.relationship])
        changes.recordUpdate(of: changedDestinations.map { ObjectID(entity: destination, rowID: $0) },
                             properties: [otherSide(of: batch.entity, batch.relationship)])
    }

    /// Runs SQL of the app in the transaction, with bound arguments (`$1`...). Changes made so
    /// are not announced on `changes()`.
    public func execute(_ sql: String, _ arguments: [Value] = []) throws {
        try checkOpen(writing: true)
        try connection.query(SQL(sql, arguments.map(Codec.plain)), "running SQL of the app")
    }
}

/// A link from a source (the side the batch writes) to a target.
struct Pair: Hashable {
    let source: Int64
    let target: Int64
    init(_ source: Int64, _ target: Int64) {
        self.source = source
        self.target = target
    }
}
