import Foundation

/// Owned objects: objects of an entity without identity, nested in a parent (a to-one object or
/// the elements of a to-many array). They cannot be found by identity, so they are values of their
/// parent (Sync's rule, extended to lists and to any depth):
///
/// - **The last occurrence wins.** When the parent occurs more than once in a batch, the owned
///   objects of the occurrences a later one replaced are dropped before anything is written
///   (``dropReplaced(in:isTopLevel:)``).
/// - **Matched by position.** Under a stored parent, the i-th owned object the payload gives is
///   the parent's i-th stored one (in the relationship's order), updated in place: only the values
///   that differ are written, so an unchanged re-import writes nothing. Owned objects beyond the
///   stored ones are inserted; stored ones beyond the payload's are deleted, with what they own.
///   `null` and `[]` delete them.
/// - **Given whole.** An owned object the payload gives again is its whole value: the keys it does
///   not give are cleared, and the owned objects it does not nest (a card's details when a payment
///   becomes a SEPA debit) are deleted. A parent that does not give the relationship at all keeps
///   its owned objects, as any relationship a payload does not give is kept.
///
/// It runs between the lookup (which found the stored parents) and the writes, on the
/// transaction's thread, with one read of current links per relationship and level of nesting,
/// and one read of the matched objects' values per relationship and level.
struct OwnedObjects {
    private let plans: [EntityPlan]
    private let planIndex: [String: Int]
    private let schema: Schema
    /// By entity ordinal, by relationship position: whether the relationship leads to an entity
    /// without identity (its targets are owned by the source).
    private let owns: [[Bool]]
    /// Whether any relationship of the import owns its targets.
    let isEmpty: Bool

    init(importer: Importer) {
        plans = importer.plans
        planIndex = importer.planIndex
        schema = importer.schema
        let plans = importer.plans
        owns = plans.map { plan in plan.destinations.map { $0.map { plans[$0].mapping.identity.isEmpty } ?? false } }
        isEmpty = !owns.contains { $0.contains(true) }
    }

    /// Whether the link's relationship owns its targets.
    @inline(__always)
    private func owning(_ link: MappedBatch.PendingLink, in batch: MappedBatch) -> Bool {
        owns[batch.slots[link.slot].entity][link.position]
    }

    /// Drops the nested owned objects that no link of the batch holds any more: those of an
    /// occurrence of their parent that a later occurrence replaced, of a parent that is a
    /// tombstone, and, in turn, what they own. A dropped object is marked as a tombstone that is
    /// not stored: it is never inserted, and nothing is linked to or from it.
    func dropReplaced(in batch: inout MappedBatch, isTopLevel: [Bool]) {
        var owner = [Int](repeating: -1, count: batch.objectSlots)
        for link in batch.links where !link.superseded && owning(link, in: batch) {
            for case .slot(let child) in link.targets { owner[child] = link.slot }
        }
        // An owner's slot comes before its owned objects' (it is made when its first occurrence
        // starts), so one pass in slot order drops nested owned objects with their owners.
        for slot in 0..<batch.objectSlots where !isTopLevel[slot] && plans[batch.slots[slot].entity].mapping.identity.isEmpty {
            let parent = owner[slot]
            if parent < 0 || batch.slots[parent].tombstone { batch.slots[slot].tombstone = true }
        }
    }

    /// Matches the owned objects of the batch's stored parents to the stored ones by position,
    /// level by level (an owned object matched in place is the stored parent of the next level),
    /// and deletes the stored owned objects the payload no longer gives. `linksInBatch` (by flat
    /// relationship index, from `linkBase`) is updated for the links it adds: the relationships an
    /// owned object given again does not give, set to nothing. Returns what it deleted.
    func match(in batch: inout MappedBatch, linksInBatch: inout [Bool], linkBase: [Int], writer: any StoreWriter) throws -> [ObjectID] {
        // An owned object is decided once its parent is: stored (then it is matched) or new.
        var decided = [Bool](repeating: true, count: batch.slots.count)
        var queue: [Int] = []
        for index in batch.links.indices where !batch.links[index].superseded && owning(batch.links[index], in: batch) {
            queue.append(index)
            for case .slot(let child) in batch.links[index].targets { decided[child] = false }
        }
        var gone: [(id: ObjectID, inverse: String?)] = []
        while !queue.isEmpty {
            var waiting: [Int] = []
            var groups: [Int: [Int]] = [:]  // flat relationship index -> links of stored parents
            for index in queue {
                let link = batch.links[index]
                guard decided[link.slot] else {
                    waiting.append(index)
                    continue
                }
                let parent = batch.slots[link.slot]
                if parent.id != nil && parent.changed != nil && !parent.tombstone {
                    groups[linkBase[parent.entity] + link.position, default: []].append(index)
                } else {
                    for case .slot(let child) in link.targets { decided[child] = true }  // a new parent's owned objects are new
                }
            }
            if groups.isEmpty && waiting.count == queue.count { break }  // nothing left can be decided
            var added: [Int] = []
            for relationship in groups.keys.sorted() {
                let indices = groups[relationship]!
                let first = batch.links[indices[0]]
                let parentPlan = plans[batch.slots[first.slot].entity]
                let mapping = parentPlan.mapping.relationships[first.position]
                let current = try writer.links(mapping.name, of: indices.map { batch.slots[batch.links[$0].slot].id! })
                var matched: [(slot: Int, id: ObjectID)] = []
                for (row, index) in indices.enumerated() {
                    let stored = current.targets(row: row)
                    var next = stored.startIndex
                    for case .slot(let child) in batch.links[index].targets {
                        decided[child] = true
                        guard next < stored.endIndex, !batch.slots[child].tombstone else { continue }
                        matched.append((child, stored[next]))
                        next += 1
                    }
                    if next < stored.endIndex {
                        for id in stored[next...] { gone.append((id, mapping.relationship.inverse)) }
                        batch.slots[batch.links[index].slot].linksChanged = true
                    }
                }
                guard !matched.isEmpty else { continue }
                let objects = try writer.objects(matched.map(\.id))
                var values: [ObjectID: Object] = [:]
                values.reserveCapacity(objects.count)
                for object in objects { values[object.id] = object }
                let inverse = parentPlan.inverses[first.position]
                for (slot, id) in matched {
                    let plan = plans[batch.slots[slot].entity]
                    let start = batch.slots[slot].start
                    let stored = values[id]
                    var changed: [Int] = []
                    // Given whole: a key the payload does not give is nil here, and so cleared.
                    for position in plan.attributeNames.indices where stored?.values[plan.attributeNames[position]] != batch.values[start + position] {
                        changed.append(position)
                        batch.slots[slot].given.insert(position)
                    }
                    batch.slots[slot].id = id
                    batch.slots[slot].changed = changed
                    // The relationships it does not give (but the one back to its parent) are set
                    // to nothing; owned objects it no longer nests are deleted at the next level.
                    for r in plan.mapping.relationships.indices where r != inverse {
                        guard let destination = plan.destinations[r] else { continue }
                        let key = MappedBatch.linkKey(slot: slot, relationship: r)
                        guard batch.linkIndex[key] == nil else { continue }
                        batch.linkIndex[key] = batch.links.count
                        batch.links.append(MappedBatch.PendingLink(slot: slot, position: r, destination: destination, targets: .init([]), byReference: false))
                        linksInBatch[linkBase[plan.ordinal] + r] = true
                        if owns[plan.ordinal][r] { added.append(batch.links.count - 1) }
                    }
                }
            }
            queue = waiting + added
        }
        return try delete(gone, writer: writer)
    }

    /// Deletes owned objects and what they own in turn (not following the relationship back to
    /// their parent), with the schema's delete rules.
    private func delete(_ roots: [(id: ObjectID, inverse: String?)], writer: any StoreWriter) throws -> [ObjectID] {
        guard !roots.isEmpty else { return [] }
        var all: [ObjectID] = []
        var seen = Set<ObjectID>()
        var stack = roots
        while let (id, inverse) = stack.popLast() {
            guard seen.insert(id).inserted else { continue }
            all.append(id)
            guard let ordinal = planIndex[id.entity] else { continue }
            let plan = plans[ordinal]
            for (r, mapping) in plan.mapping.relationships.enumerated() where owns[ordinal][r] && mapping.name != inverse {
                for child in try writer.related(mapping.name, of: id) { stack.append((child, mapping.relationship.inverse)) }
            }
        }
        return try DeleteRules.delete(all, schema: schema, in: writer)
    }
}
