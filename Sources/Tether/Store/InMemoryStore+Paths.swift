extension InMemoryStore {
    /// Reads the values a query names for a row of its entity: an attribute by position, a path
    /// (``AttributePath``) by following the to-one links of its relationships to the row whose
    /// attribute it reads. Made once per query, from the transaction's state.
    struct PathReader {
        private enum Lookup {
            case own(position: Int)
            case path(sides: [LinkSide], table: Table, position: Int)
        }

        /// An `any`/`all` relationship: its side from this entity, and how to read the names of
        /// the conditions on its destination.
        private final class Quantified: Sendable {
            let side: LinkSide
            let reader: PathReader
            init(side: LinkSide, reader: PathReader) {
                self.side = side
                self.reader = reader
            }
        }

        private let table: Table
        private let lookups: [String: Lookup]
        private let quantified: [String: Quantified]

        /// A reader of the names `paths` (resolved on the table's entity) and of the relationships
        /// `condition`'s `any`/`all` follow (their conditions resolved on the destinations).
        init(_ paths: [String: AttributePath], condition: Condition?, of info: EntityInfo, in transaction: Transaction) throws {
            let state = transaction.state
            table = state.tables[info.table]
            let entity = info.entity
            // Each relationship once, reading the names of all its conditions.
            var inner: [String: Condition] = [:]
            for (relationship, condition) in condition?.quantified ?? [] {
                inner[relationship] = inner[relationship].map { .and([$0, condition]) } ?? condition
            }
            var quantified: [String: Quantified] = [:]
            for (relationship, condition) in inner {
                let slot = try transaction.relationship(entity.name, relationship)
                let destination = try transaction.info(slot.destination)
                let paths = try QueryCheck.check(condition, of: destination.entity) { state.entities[$0]?.entity }
                quantified[relationship] = Quantified(
                    side: slot.forward ? state.links[slot.index].forward : state.links[slot.index].backward,
                    reader: try PathReader(paths, condition: condition, of: destination, in: transaction))
            }
            self.quantified = quantified
            var lookups: [String: Lookup] = [:]
            for (name, path) in paths {
                guard path.isPath else {
                    if let position = table.positions[name] { lookups[name] = .own(position: position) }
                    continue
                }
                var sides: [LinkSide] = []
                for hop in path.hops {
                    let slot = try transaction.relationship(hop.source, hop.relationship)
                    sides.append(slot.forward ? state.links[slot.index].forward : state.links[slot.index].backward)
                }
                let target = state.tables[try transaction.info(path.hops[path.hops.count - 1].destination).table]
                if let position = target.positions[path.attribute] {
                    lookups[name] = .path(sides: sides, table: target, position: position)
                }
            }
            self.lookups = lookups
        }

        /// The value `name` has for `row` (nil: unset, or no target on the way).
        func value(_ name: String, _ row: Int64) -> Value? {
            switch lookups[name] {
            case .own(let position)?:
                return table.value(row, position)
            case .path(let sides, let target, let position)?:
                var current = row
                for side in sides {
                    guard let next = side.target(current) else { return nil }
                    current = next
                }
                return target.value(current, position)
            case nil:
                return nil
            }
        }

        func matches(_ condition: Condition, _ row: Int64) -> Bool {
            condition.matches(value: { value($0, row) }, related: { relationship, every, inner in
                guard let quantified = quantified[relationship] else { return every }
                let targets = quantified.side.targets(row)
                return every
                    ? targets.allSatisfy { quantified.reader.matches(inner, $0) }
                    : targets.contains { quantified.reader.matches(inner, $0) }
            })
        }

        /// Whether a sort key of `query` is a path (its values are not among an object's).
        func sortsByPath(_ query: Query) -> Bool {
            query.sort.contains { if case .path? = lookups[$0.attribute] { true } else { false } }
        }

        /// The values of the paths among `names` for `row`, by name.
        func values(of row: Int64, _ names: [String]) -> [String: Value] {
            var values: [String: Value] = [:]
            for name in names {
                if case .path? = lookups[name], let value = value(name, row) { values[name] = value }
            }
            return values
        }
    }
}
