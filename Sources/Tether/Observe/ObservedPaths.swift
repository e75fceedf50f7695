/// What an observed query reads through relationships (``AttributePath``s through to-one ones,
/// and the relationships of ``Condition/any(_:_:)`` and ``Condition/all(_:_:)``): which changes
/// of other entities can change its result, and the values of a path section key, which an
/// object's own values do not hold.
struct ObservedPaths: Sendable {
    /// Whether the query names a path or an `any`/`all` (its result is then read again on a
    /// change, not merged).
    let readsPaths: Bool
    /// The relationships of the observed entity that paths and `any`/`all` start with.
    let firstRelationships: Set<String>
    /// For each entity on the way of a path (after the first relationship), the names a path
    /// reads of it: the relationship it follows on, or the attribute at its end.
    private let read: [String: Set<String>]
    /// The entities an `any`/`all` reads (its destinations, and what their conditions read in
    /// turn): any change of one of their objects reads the result again.
    private let quantified: Set<String>
    /// The section key, when it is a path.
    private let section: AttributePath?

    /// `condition`: the query's, on `entity`; `schema` resolves its `any`/`all`.
    init(_ resolved: [String: AttributePath], sectionKey: String?, condition: Condition? = nil, entity: Entity? = nil,
         schema: Schema? = nil) throws {
        var first = Set<String>()
        var read: [String: Set<String>] = [:]
        var quantified = Set<String>()
        if let condition, let entity, let schema {
            func visit(_ condition: Condition, on entity: Entity) throws {
                for (relationship, inner) in condition.quantified {
                    let destination = try QueryCheck.destination(of: relationship, from: entity) { schema[$0] }
                    quantified.insert(destination.name)
                    for path in try QueryCheck.check(inner, of: destination, entities: { schema[$0] }).values {
                        for hop in path.hops { quantified.insert(hop.destination) }
                    }
                    try visit(inner, on: destination)
                }
            }
            try visit(condition, on: entity)
            first.formUnion(condition.quantified.map(\.relationship))
        }
        self.quantified = quantified
        for path in resolved.values where path.isPath {
            first.insert(path.hops[0].relationship)
            for (i, hop) in path.hops.enumerated() {
                let next = i + 1 < path.hops.count ? path.hops[i + 1].relationship : path.attribute
                read[hop.destination, default: []].insert(next)
            }
        }
        readsPaths = !first.isEmpty
        firstRelationships = first
        self.read = read
        section = sectionKey.flatMap { resolved[$0] }.flatMap { $0.isPath ? $0 : nil }
    }

    /// Whether `changes` may change what a path reads: an object of an entity on the way was
    /// inserted or deleted, or had a property a path reads (or unrecorded properties) changed.
    func areTouched(by changes: ChangeSet) -> Bool {
        guard readsPaths else { return false }
        for entity in quantified {
            if !changes.inserted.rowIDRanges(of: entity).isEmpty || !changes.deleted.rowIDRanges(of: entity).isEmpty
                || !changes.updated.rowIDRanges(of: entity).isEmpty { return true }
        }
        for (entity, names) in read {
            if !changes.inserted.rowIDRanges(of: entity).isEmpty || !changes.deleted.rowIDRanges(of: entity).isEmpty { return true }
            let updated = changes.updated.rowIDRanges(of: entity)
            guard !updated.isEmpty else { continue }
            var recorded = 0
            for update in changes.propertyUpdates {
                let mine = update.objects.rowIDRanges(of: entity)
                guard !mine.isEmpty else { continue }
                // (A link set from the other side is recorded on this object by its name here.)
                if !update.properties.isDisjoint(with: names) { return true }
                recorded += mine.reduce(0) { $0 + $1.count }
            }
            if recorded < updated.reduce(0, { $0 + $1.count }) { return true }
        }
        return false
    }

    /// The objects with the value of a path section key set under its name (what
    /// ``ResultsSnapshot/sections`` groups by), read with one batched read per relationship.
    func withSectionValues(_ objects: [Object], reader: any StoreReader) throws -> [Object] {
        guard let section, !objects.isEmpty else { return objects }
        let values = try AttributePaths.values(of: section, for: objects.map(\.id), reader: reader)
        return objects.map { object in
            guard let value = values[object.id] else { return object }
            var own = object.values
            own[section.name] = value
            return Object(id: object.id, values: own)
        }
    }
}
