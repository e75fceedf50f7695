import Foundation

/// Steps 2 to 5 of an import, one ``MappedBatch`` at a time, inside the store transaction:
/// resolve the batch's identities against the store, comparing the payload with what is stored,
/// write what changed, and record it in the result. The only part of an import that touches the
/// store.
final class ImportSession {
    private let importer: Importer
    private let writer: any StoreWriter
    private let plans: [EntityPlan]
    /// The batch being written.
    private var batch = MappedBatch(entities: 0)

    // Across batches: what the result reports. One small entry per object touched: its status in
    // the low bits, and whether it is already listed as a top-level object, by entity ordinal and
    // row id (about a byte per object); the lists keep runs of consecutive row ids.
    private static var unchanged: UInt8 { 0 }
    private static var updated: UInt8 { 1 }
    private static var inserted: UInt8 { 2 }
    private static var statusMask: UInt8 { 3 }
    private static var listedAtTopLevel: UInt8 { 0x80 }
    private var status: [RowStatusMap]
    private var order = ObjectIDList()
    private var topLevel = ObjectIDList()
    /// The number of top-level objects recorded so far.
    var topLevelCount: Int { topLevel.count }
    private var diagnostics: [ImportDiagnostic] = []
    /// Every relationship of every plan, at ``linkBase``[entity ordinal] + position: what
    /// writing its links needs, worked out once per import.
    private let links: [LinkPlan]
    private let linkBase: [Int]
    /// The objects of entities without identity, owned by their parents: matched in place.
    private let owned: OwnedObjects
    /// By entity ordinal: the row ids of the objects the mapper remembers
    /// (``MappedBatch/Slot/remembered``), so that a later batch's unchanged repeat of one is not
    /// looked up (``MappedBatch/Slot/repeatsEarlierBatch``).
    private(set) var rememberedRows: [IdentityMap<Int64>]

    // For the batch being written.
    /// By relationship (flat index, see ``links``): whether it has links in the batch.
    private var linksInBatch: [Bool] = []
    /// By entity ordinal: the positions of the relationships whose targets the lookup read
    /// (``MappedBatch/Slot/targets``).
    private var lookedUpLinks: [[Int]]
    /// By slot: the object occurs at the top level of the payload (else only nested), for
    /// ``ImportOptions/insert`` and ``ImportOptions/update`` against their `…Relationships` twins.
    private var isTopLevel: [Bool] = []
    /// Objects deleted so far (tombstones, and whatever their delete rules took).
    private var deleted: [ObjectID] = []
    /// Whether the import deleted any object (tombstones, delete rules, orphans, missing ones).
    var deletedAny: Bool { !deleted.isEmpty }
    /// Children unlinked from a one-to-many relationship under ``ImportOptions/deleteRelationships``:
    /// deleted at the end, unless the payload holds them elsewhere or they were linked again.
    private var orphans: [(id: ObjectID, inverse: String)] = []
    private let options: ImportOptions
    /// Whether the store may hold pending references (read at the first batch that needs it).
    private var mayHavePending: Bool?
    private var pendingDiagnostics: [ImportDiagnostic] = []
    /// The pending references this import recorded, with their diagnostics: one a later batch
    /// replaces is no longer reported (the result does not depend on the batch size).
    private var recordedPending: [PendingReferences.Reference: ImportDiagnostic] = [:]
    /// Diagnostics of earlier batches withdrawn since (their references dropped, restated or
    /// made), with how many times each: taken out of ``diagnostics`` once, at the end (the last
    /// equal ones), rather than searched for one by one (a linear search per made reference was
    /// quadratic on a large import with many replies to later statuses).
    private var withdrawn: [ImportDiagnostic: Int] = [:]
    private var pendingError: (any Error)?

    /// The payload's size, when known (for ``ImportOptions/progress``).
    private let totalBytes: Int?
    private var progress: ImportProgress

    /// A session writing `importer`'s batches with `writer`; `rememberedRows`: the row ids of the
    /// objects an earlier import remembered (``RememberedObjects``).
    init(importer: Importer, writer: any StoreWriter, totalBytes: Int? = nil, rememberedRows: [IdentityMap<Int64>]? = nil) {
        self.totalBytes = totalBytes
        self.progress = ImportProgress(phase: .importing, totalBytes: totalBytes)
        self.importer = importer
        self.writer = writer
        self.plans = importer.plans
        self.status = Array(repeating: RowStatusMap(), count: importer.plans.count)
        self.lookedUpLinks = Array(repeating: [], count: importer.plans.count)
        self.rememberedRows = rememberedRows ?? Array(repeating: IdentityMap(), count: importer.plans.count)
        self.options = importer.options
        var base: [Int] = []
        var links: [LinkPlan] = []
        for plan in importer.plans {
            base.append(links.count)
            for (position, mapping) in plan.mapping.relationships.enumerated() {
                let relationship = mapping.relationship
                let destination = plan.destinations[position]
                let inverse = destination.flatMap { d in plan.inverses[position].map { (d, $0) } }
                let toOneInverse = destination.flatMap { d in
                    relationship.inverse.flatMap { importer.plans[d].mapping.relationship($0) }.flatMap { $0.relationship.isToMany ? nil : $0.name }
                }
                links.append(LinkPlan(
                    entity: plan.name, name: relationship.name, inverse: inverse,
                    inOrder: relationship.isOrdered || !relationship.isToMany,
                    orphanedBy: relationship.isToMany ? toOneInverse : nil,
                    movesTargets: plan.movesTargets[position]))
            }
        }
        self.links = links
        self.linkBase = base
        self.owned = OwnedObjects(importer: importer)
    }

    /// What writing the links of one relationship needs.
    private struct LinkPlan {
        let entity: String
        let name: String
        /// The inverse, by destination ordinal and position (its flat index is found through
        /// ``ImportSession/linkBase``).
        let inverse: (entity: Int, position: Int)?
        /// Whether its links compare in order (ordered or to-one), or as sets.
        let inOrder: Bool
        /// For a to-many relationship whose inverse is to-one, the inverse's name: children it no
        /// longer lists may be orphans (``ImportOptions/deleteRelationships``).
        let orphanedBy: String?
        /// The inverse is to-one: linking a target takes it from the object it was linked to
        /// before, so a link a later occurrence replaced is still applied, in payload order
        /// (``ImportSession/writeBatch()``).
        let movesTargets: Bool
    }

    /// Resolves, merges, writes and records one mapped batch. Batches are written in payload
    /// order; later batches find earlier ones in the store, so memory is bounded by the batch.
    /// The batch is changed in place (ids, changed positions); the caller frees it.
    func write(_ mapped: inout MappedBatch) throws {
        // A cancelled import stops at the next batch and rolls back: nothing is written.
        try Task.checkCancellation()
        swap(&batch, &mapped)
        defer { swap(&batch, &mapped) }
        linksInBatch.removeAll(keepingCapacity: true)
        linksInBatch.append(contentsOf: repeatElement(false, count: links.count))
        for index in batch.links.indices where !batch.links[index].superseded {  // read in place, not copied
            linksInBatch[linkBase[batch.slots[batch.links[index].slot].entity] + batch.links[index].position] = true
        }
        isTopLevel.removeAll(keepingCapacity: true)
        isTopLevel.append(contentsOf: repeatElement(false, count: batch.slots.count))
        for slot in batch.topLevel { isTopLevel[slot] = true }
        if !owned.isEmpty { owned.dropReplaced(in: &batch, isTopLevel: isTopLevel) }
        try resolve()
        if !owned.isEmpty {
            deleted.append(contentsOf: try owned.match(in: &batch, linksInBatch: &linksInBatch, linkBase: linkBase, writer: writer))
        }
        try writeBatch()
        if let pendingError { throw pendingError }
        try deleteTombstones()
        recordBatch()
        rememberRows()
        if let reporter = options.progress {
            progress.objects += batch.elementCount
            progress.bytes = max(progress.bytes, batch.bytesEnd)
            reporter.report(progress)
        }
    }

    // MARK: Resolve and compare

    /// One lookup per entity (in name order) finds the stored objects of the batch and, for
    /// each, which of the values the payload gives differ from the stored ones: the store
    /// compares them where they are, without handing them over. An attribute the payload does
    /// not give keeps its stored value. An object named only by id gets a slot of its own, so
    /// that links to it resolve. The lookup also reads the current targets of the to-one
    /// relationships the batch links (``EntityPlan/lookupLinks``).
    private func resolve() throws {
        for plan in plans where !batch.lookups[plan.ordinal].isEmpty {
            let ordinal = plan.ordinal
            lookedUpLinks[ordinal] = plan.lookupLinks.filter { linksInBatch[linkBase[ordinal] + $0] }
            var lookup = LookupBatch(entity: plan.name, attributes: plan.attributeNames,
                                     relationships: lookedUpLinks[ordinal].map { plan.mapping.relationships[$0].name }, sharing: batch.values)
            lookup.reserveCapacity(batch.lookups[ordinal].count)
            var asked: [Int] = []  // the lookup's rows: indices into the batch's lookups
            asked.reserveCapacity(batch.lookups[ordinal].count)
            for (i, (key, slot)) in zip(batch.lookups[ordinal], batch.lookupSlots[ordinal]).enumerated() {
                if slot >= 0 {
                    // An unchanged repeat of an object an earlier batch stored (remembered here
                    // too, as the mapper remembers the same objects; were it not, the lookup
                    // would find it, with nothing given to compare).
                    if batch.slots[slot].repeatsEarlierBatch, let row = rememberedRows[ordinal][key] {
                        batch.slots[slot].id = ObjectID(entity: plan.name, rowID: row)
                        batch.slots[slot].changed = []
                        continue
                    }
                    lookup.append(key, rowAt: batch.slots[slot].start, given: batch.slots[slot].given)
                } else {
                    lookup.append(key)
                }
                asked.append(i)
            }
            guard lookup.count > 0 else { continue }
            let found = try writer.compare(lookup)
            for (i, difference) in zip(asked, found) {
                guard let difference else { continue }
                let slot = batch.lookupSlots[ordinal][i]
                if slot >= 0 {
                    batch.slots[slot].id = difference.id
                    batch.slots[slot].changed = difference.changed
                    batch.slots[slot].targets = difference.targets
                } else {
                    batch.slots.append(MappedBatch.Slot(entity: ordinal, id: difference.id, changed: [], start: -1))
                    batch.identityMap[ordinal][batch.lookups[ordinal][i]] = batch.slots.count - 1
                }
            }
        }
    }

    // MARK: Write

    private func writeBatch() throws {
        // Attribute updates of stored objects, once per object, grouped by entity and by the
        // attributes that changed (one update batch each); new objects are gathered by entity.
        var newSlots = [[Int]](repeating: [], count: plans.count)
        var updates: [UpdateBatch] = []
        var groups: [UpdateGroup: Int] = [:]
        var last: (group: UpdateGroup, index: Int)?  // objects in a row tend to change the same attributes
        let values = batch.values
        let gated = !options.insert || !options.update || !options.insertRelationships || !options.updateRelationships
        for slot in 0..<batch.objectSlots {
            if batch.slots[slot].tombstone { continue }  // deleted after the links, or never inserted
            guard let positions = batch.slots[slot].changed else {
                if !gated || (isTopLevel[slot] ? options.insert : options.insertRelationships) {
                    newSlots[batch.slots[slot].entity].append(slot)
                }
                continue
            }
            guard !positions.isEmpty else { continue }
            if gated && !(isTopLevel[slot] ? options.update : options.updateRelationships) {
                batch.slots[slot].changed = []  // it keeps its attributes, and is still linked
                continue
            }
            let start = batch.slots[slot].start
            let group = UpdateGroup(entity: batch.slots[slot].entity, positions: positions)
            let index: Int
            if let last, last.group == group {
                index = last.index
            } else if let known = groups[group] {
                index = known
            } else {
                let plan = plans[group.entity]
                index = updates.count
                groups[group] = index
                updates.append(UpdateBatch(entity: plan.name, attributes: positions.map { plan.attributeNames[$0] }, sharing: values, offsets: positions))
            }
            last = (group, index)
            updates[index].append(batch.slots[slot].id!, rowAt: start)
            batch.slots[slot].attributesChanged = true
        }
        for update in updates { try writer.update(update) }

        // New objects, one batch insert per entity, to-one destinations first: a to-one link
        // whose target already has an id is written with the row (unless the inverse side is also
        // set in this batch: then links are applied in payload order below).
        // A link that replaces an earlier occurrence's, where that one takes its targets from
        // other objects (``LinkPlan/movesTargets``): the earlier one is applied too, in payload
        // order, as importing the occurrences one at a time would, so that the graph does not
        // depend on where the batches end. The later one is then always written, after it.
        var replayed = Set<Int>()  // ``MappedBatch/linkKey(slot:relationship:)`` of the later links
        for link in batch.links where link.superseded && links[linkBase[batch.slots[link.slot].entity] + link.position].movesTargets {
            replayed.insert(MappedBatch.linkKey(slot: link.slot, relationship: link.position))
        }
        var linkedOnInsert = [Bool](repeating: false, count: batch.links.count)
        var pendingOnInsert: [Int] = []
        for ordinal in importer.insertOrder where !newSlots[ordinal].isEmpty {
            let plan = plans[ordinal]
            let relationships = plan.toOne.filter { r in
                // A one-to-one link takes its target from another object: written in payload
                // order with the batch's other links of the relationship, below.
                if links[linkBase[ordinal] + r].movesTargets { return false }
                guard let inverse = plan.inverses[r], let destination = plan.destinations[r] else { return true }
                return !linksInBatch[linkBase[destination] + inverse]
            }
            var insert = InsertBatch(entity: plan.name, attributes: plan.attributeNames,
                                     relationships: relationships.map { plan.mapping.relationships[$0].name }, sharing: batch.values)
            insert.identity = plan.mapping.identity.map(\.name)
            insert.reserveCapacity(newSlots[ordinal].count)
            var targets = [ObjectID?](repeating: nil, count: relationships.count)
            for slot in newSlots[ordinal] {
                for (k, r) in relationships.enumerated() {
                    targets[k] = nil
                    let key = MappedBatch.linkKey(slot: slot, relationship: r)
                    guard let index = batch.linkIndex[key], !replayed.contains(key) else { continue }
                    let link = batch.links[index]
                    if link.targets.isEmpty {
                        linkedOnInsert[index] = true  // null: a new object has no link to clear
                    } else if let target = resolve(link.targets[0], link.destination) {
                        targets[k] = target
                        linkedOnInsert[index] = true
                    } else if link.byReference {
                        // An id of an object of this payload that is not inserted yet (of this
                        // entity, in this very insert) is linked after the inserts, below; an id
                        // naming nothing stored is kept pending.
                        if case .identity(let key) = link.targets[0], batch.identityMap[link.destination][key] != nil { continue }
                        linkedOnInsert[index] = true
                        pendingOnInsert.append(index)
                    }
                }
                insert.append(rowAt: batch.slots[slot].start, targets: targets)
            }
            let ids = try writer.insert(insert)
            for (slot, id) in zip(newSlots[ordinal], ids) {
                batch.slots[slot].id = id
                batch.slots[slot].inserted = true
            }
        }

        // The other links: resolve targets, take the current links from the lookup or read them
        // in one call per relationship, and set those that differ.
        // Each link's targets are a run of one flat array (no array per link); what the later
        // passes need of its source is taken now, while the source's slot is at hand.
        var resolved: [ResolvedLink] = []
        var resolvedIDs: [ObjectID] = []
        var pending = pendingOnInsert
        for index in batch.links.indices where !linkedOnInsert[index] {
            let slot = batch.links[index].slot
            let superseded = batch.links[index].superseded
            let isReplayed = !replayed.isEmpty && replayed.contains(MappedBatch.linkKey(slot: slot, relationship: batch.links[index].position))
            if superseded && !isReplayed { continue }
            // A source that was not inserted (``ImportOptions/insert``) or is a tombstone has no links.
            guard let source = batch.slots[slot].id, !batch.slots[slot].tombstone else { continue }
            let relationship = linkBase[batch.slots[slot].entity] + batch.links[index].position
            let destination = batch.links[index].destination
            let start = resolvedIDs.count
            if !batch.links[index].unseen.isEmpty {
                resolveInOrder(batch.links[index], into: &resolvedIDs)
            } else {
                for target in batch.links[index].targets {
                    if let id = resolve(target, destination) { resolvedIDs.append(id) }
                }
            }
            // Ids that name nothing stored: the link is set to the others (it holds exactly the
            // objects listed, known now or pending), and they are kept pending.
            if !superseded && batch.links[index].byReference && resolvedIDs.count - start < batch.links[index].targets.count {
                pending.append(index)
            }
            resolved.append(ResolvedLink(link: index, slot: slot, source: source, relationship: relationship, ids: start..<resolvedIDs.count,
                                         looked: isReplayed ? nil : lookedUpTarget(slot: slot, position: batch.links[index].position),
                                         replayed: isReplayed))
        }
        // The links set now replace what was pending for the same objects and relationships (a
        // source that names the same missing objects again keeps its references as they are).
        var restated = Set<String>()
        if try hasPending() { restated = try clearPending(for: resolved.map(\.link) + pendingOnInsert, restating: pending) }
        // Stored pending references to the objects just inserted are linked now, before the
        // batch's own links, which the payload states later and so win (as importing one object
        // at a time does: a pending reference is made when its object arrives). What the lookup
        // read of to-one links may be stale then, so the current links are read again.
        if try resolvePending() {
            for k in resolved.indices { resolved[k].looked = nil }
        }
        defer {
            if !pending.isEmpty { recordPending(pending, restated: restated) }
        }
        guard !resolved.isEmpty else { return }

        // The current links of the sources the lookup did not read: one read per relationship,
        // row `read` of the relationship's batch.
        var sourcesRead = [[ObjectID]](repeating: [], count: links.count)
        for k in resolved.indices where resolved[k].looked == nil {
            let r = resolved[k].relationship
            resolved[k].read = sourcesRead[r].count
            sourcesRead[r].append(resolved[k].source)
        }
        var current = [LinkBatch](repeating: LinkBatch(entity: "", relationship: ""), count: links.count)
        for r in sourcesRead.indices where !sourcesRead[r].isEmpty {
            current[r] = try writer.links(links[r].name, of: sourcesRead[r])
        }
        // The links that change are written one batch per relationship (a store writes a batch
        // in set operations), in payload order within each link set.
        var writes = LinkWrites(links)
        // By relationship whose links move their targets: the targets rows of this batch linked,
        // so that a later row that lists one again is written, though it matches what was read.
        var taken: [Int: Set<ObjectID>] = [:]
        for link in resolved {
            let ids = resolvedIDs[link.ids]
            let (slot, source, r) = (link.slot, link.source, link.relationship)
            let inverse = links[r].inverse.map { linkBase[$0.entity] + $0.position }
            if let looked = link.looked {
                // A to-one link whose current target the lookup read (the inverse is not set in
                // this batch, so nothing written since has changed it).
                if ids.count <= 1 && ids.first == looked { continue }
                try writes.add(r, inverse: inverse, source, ids, writer)
                batch.slots[slot].linksChanged = true
                continue
            }
            let before = current[r].targets(row: link.read)
            let same = links[r].inOrder ? before.elementsEqual(ids) : Self.sameSet(before, ids)
            // When both sides of a relationship are set in the same batch, the state read above
            // may be stale by the time this link is applied, so always write.
            let inverseAlsoSet = inverse.map { !sourcesRead[$0].isEmpty } ?? false
            let moves = links[r].movesTargets
            let retaken = moves && taken[r].map { taken in ids.contains { taken.contains($0) } } == true
            if same && !inverseAlsoSet && !link.replayed && !retaken { continue }
            // The occurrences of one object, and a row that takes back a target an earlier row
            // took, are written after what came before them.
            if link.replayed || retaken { try writes.flush(writer) }
            try writes.add(r, inverse: inverse, source, ids, writer)
            if moves { taken[r, default: []].formUnion(ids) }
            if !same { batch.slots[slot].linksChanged = true }
            // Children a nested one-to-many array no longer lists: deleted at the end (unless held
            // elsewhere in the payload), not only unlinked.
            if options.deleteRelationships, !same, !batch.links[link.link].byReference, let inverseName = links[r].orphanedBy {
                let kept = Set(ids)
                for child in before where !kept.contains(child) { orphans.append((child, inverseName)) }
            }
        }
        try writes.flush(writer)
    }

    /// A link of the batch to set: its index among the batch's links, its source (slot and id)
    /// and relationship (flat index, see ``links``), its targets (a run of the resolved ids), the
    /// current target the lookup read (to-one relationships), and its row in the read of the
    /// relationship's current links (-1: not read).
    private struct ResolvedLink {
        let link: Int
        let slot: Int
        let source: ObjectID
        let relationship: Int
        let ids: Range<Int>
        var looked: ObjectID??
        /// One of several occurrences' links of one object that are all applied.
        var replayed = false
        var read = -1
    }

    /// Whether two lists of ids hold the same ids, in any order (a few are compared in place).
    private static func sameSet(_ one: ArraySlice<ObjectID>, _ two: ArraySlice<ObjectID>) -> Bool {
        guard one.count == two.count else { return false }
        if one.count <= 16 { return one.allSatisfy(two.contains) && two.allSatisfy(one.contains) }
        return Set(one) == Set(two)
    }

    /// Link changes gathered into one ``LinkBatch`` per relationship (by flat index, see
    /// ``ImportSession/links``). Batches of different link sets are independent; a relationship
    /// and its inverse are one link set, whose rows must be written in order: a row of one side
    /// first writes what is pending on the other.
    private struct LinkWrites {
        private var batches: [LinkBatch?]
        private var order: [Int] = []
        /// The import's relationships, by flat index: a batch's entity and relationship names
        /// are read from here when it starts, not passed (and retained) with every link.
        private let plans: [LinkPlan]

        init(_ plans: [LinkPlan]) {
            self.plans = plans
            batches = Array(repeating: nil, count: plans.count)
        }

        mutating func add(_ relationship: Int, inverse: Int?, _ source: ObjectID, _ targets: ArraySlice<ObjectID>, _ writer: any StoreWriter) throws {
            // Checked in place: binding the pending batch would copy it for every link.
            if let inverse, batches[inverse]?.isEmpty == false {
                try writer.setRelated(batches[inverse]!)
                batches[inverse] = LinkBatch(entity: plans[inverse].entity, relationship: plans[inverse].name)
            }
            if batches[relationship] == nil {
                batches[relationship] = LinkBatch(entity: plans[relationship].entity, relationship: plans[relationship].name)
                order.append(relationship)
            }
            batches[relationship]!.append(source, to: targets)
        }

        mutating func flush(_ writer: any StoreWriter) throws {
            for relationship in order {
                if !batches[relationship]!.isEmpty { try writer.setRelated(batches[relationship]!) }
                batches[relationship] = nil
            }
            order = []
        }
    }

    // MARK: Pending references

    private func hasPending() throws -> Bool {
        if let mayHavePending { return mayHavePending }
        let any = try PendingReferences.Storage(writer: writer).any()
        mayHavePending = any
        return any
    }

    /// Drops the pending references of the sources and relationships of these links: the
    /// payload sets those relationships anew. A source whose link among `restating` (the links
    /// about to be kept pending) names exactly what it has pending keeps it untouched; returns
    /// the keys of those (``PendingReferences/sourceKey(_:_:)``).
    private func clearPending(for links: [Int], restating: [Int]) throws -> Set<String> {
        var sources: [(source: ObjectID, relationship: String)] = []
        var seen = Set<String>()
        for index in links {
            let link = batch.links[index]
            guard let id = batch.slots[link.slot].id else { continue }
            let name = plans[batch.slots[link.slot].entity].mapping.relationships[link.position].name
            if seen.insert(PendingReferences.sourceKey(id, name)).inserted { sources.append((id, name)) }
        }
        guard !sources.isEmpty else { return [] }
        var restated: [String: Set<PendingReferences.Reference>] = [:]
        for index in restating {
            let references = pendingReferences(of: index).map(\.reference)
            if let first = references.first { restated[PendingReferences.sourceKey(first.source, first.relationship)] = Set(references) }
        }
        let (dropped, kept) = try PendingReferences.Storage(writer: writer).clear(sources, restating: restated)
        // A reference dropped, or restated by a later occurrence of its source (which reports it
        // anew), is no longer reported where an earlier batch found it: the report does not
        // depend on the batch size.
        let restatedReferences = kept.flatMap { restated[$0] ?? [] }
        for reference in dropped + restatedReferences {
            if let diagnostic = recordedPending.removeValue(forKey: reference) { withdrawn[diagnostic, default: 0] += 1 }
        }
        return kept
    }

    /// The references a link keeps pending, each with the identity it names: its ids that name
    /// nothing stored and nothing in the payload.
    private func pendingReferences(of index: Int) -> [(reference: PendingReferences.Reference, key: IdentityKey)] {
        let link = batch.links[index]
        guard let source = batch.slots[link.slot].id else { return [] }
        let relationship = plans[batch.slots[link.slot].entity].mapping.relationships[link.position].name
        let destination = plans[link.destination].name
        var references: [(reference: PendingReferences.Reference, key: IdentityKey)] = []
        for (position, target) in link.targets.enumerated() {
            guard case .identity(let key) = target, batch.identityMap[link.destination][key] == nil else { continue }
            references.append((PendingReferences.Reference(
                source: source, relationship: relationship, target: PendingReferences.targetKey(destination, PendingReferences.encode(key)),
                position: position), key))
        }
        return references
    }

    /// Keeps the ids of these links that name nothing stored as pending references (but those a
    /// source restated, which are kept already), and reports each (a diagnostic, not an error).
    private func recordPending(_ links: [Int], restated: Set<String>) {
        let storage = PendingReferences.Storage(writer: writer)
        for index in links {
            let link = batch.links[index]
            let pending = pendingReferences(of: index)
            guard let first = pending.first?.reference else { continue }
            let plan = plans[batch.slots[link.slot].entity]
            let destination = plans[link.destination].name
            for (reference, key) in pending {
                let diagnostic = ImportDiagnostic(
                    path: link.path ?? .root, entity: plan.name, attribute: reference.relationship, problem: .pendingReference,
                    action: .linkPending,
                    message: "\(destination) \(key) is not stored yet: the link is kept, and made when an import brings it")
                pendingDiagnostics.append(diagnostic)
                recordedPending[reference] = diagnostic
            }
            guard !restated.contains(PendingReferences.sourceKey(first.source, first.relationship)) else { continue }
            do {
                try storage.record(pending.map(\.reference))
                mayHavePending = true
            } catch {
                pendingError = pendingError ?? error
            }
        }
    }

    /// Links the objects this batch inserted to the sources whose pending references name them,
    /// found by the inserted objects' identities; returns whether it linked any.
    private func resolvePending() throws -> Bool {
        guard try hasPending() else { return false }
        var linkedAny = false
        let storage = PendingReferences.Storage(writer: writer)
        for plan in plans where !plan.mapping.identity.isEmpty {
            var inserted: [String: (id: ObjectID, slot: Int)] = [:]
            for (key, slot) in zip(batch.lookups[plan.ordinal], batch.lookupSlots[plan.ordinal]) where slot >= 0 && batch.slots[slot].inserted {
                if let id = batch.slots[slot].id { inserted[PendingReferences.targetKey(plan.name, PendingReferences.encode(key))] = (id, slot) }
            }
            guard !inserted.isEmpty else { continue }
            let taken = try storage.take(Array(inserted.keys))
            // In the order the objects arrived, then the order the references were made.
            for target in taken.keys.sorted(by: { inserted[$0]!.slot < inserted[$1]!.slot }) {
                let id = inserted[target]!.id
                for reference in taken[target]! {
                    guard try writer.object(reference.source) != nil,
                        let relationship = importer.schema[reference.source.entity]?.relationship(named: reference.relationship)
                    else { continue }  // the source went meanwhile
                    // Made within the import that reported it (an object of a later batch, or
                    // of the primary data after what a document includes): no longer pending, so
                    // no longer reported, whatever the batch size.
                    if let diagnostic = recordedPending.removeValue(forKey: reference) { withdrawn[diagnostic, default: 0] += 1 }
                    if relationship.isToMany {
                        var linked = try writer.related(reference.relationship, of: reference.source)
                        guard !linked.contains(id) else { continue }
                        linked.insert(id, at: min(reference.position, linked.count))
                        try writer.setRelated(reference.relationship, of: reference.source, to: linked)
                    } else {
                        try writer.setRelated(reference.relationship, of: reference.source, to: [id])
                    }
                    linkedAny = true
                }
            }
        }
        return linkedAny
    }

    /// Deletes the stored objects whose last occurrence in the batch is a tombstone, with the
    /// schema's delete rules.
    private func deleteTombstones() throws {
        var ids: [ObjectID] = []
        for slot in 0..<batch.objectSlots where batch.slots[slot].tombstone {
            if let id = batch.slots[slot].id { ids.append(id) }
        }
        guard !ids.isEmpty else { return }
        deleted.append(contentsOf: try DeleteRules.delete(ids, schema: importer.schema, in: writer))
    }

    /// The current target (nil: none) of a link's source as the lookup read it, when it did and
    /// no link written since can have changed it: the source was stored, and the relationship's
    /// inverse has no links in the batch. Nil when the current target must be read.
    private func lookedUpTarget(slot: Int, position: Int) -> ObjectID?? {
        let entity = batch.slots[slot].entity
        guard batch.slots[slot].changed != nil, let k = lookedUpLinks[entity].firstIndex(of: position),
            k < batch.slots[slot].targets.count
        else {
            return nil
        }
        if let inverse = links[linkBase[entity] + position].inverse, linksInBatch[linkBase[inverse.entity] + inverse.position] {
            return nil
        }
        return .some(batch.slots[slot].targets[k])
    }

    /// The ids of an ordered list of ids, as importing one object at a time gives them: the
    /// objects known when the list was read, in the list's order, then each object that arrived
    /// later in the batch (``MappedBatch/PendingLink/unseen``), in the order they arrived, at its
    /// position in the list (or at the end): where a pending reference's object goes when it
    /// arrives in a later batch (``resolvePending()``), so that the order does not depend on
    /// where the batches end.
    private func resolveInOrder(_ link: MappedBatch.PendingLink, into ids: inout [ObjectID]) {
        let start = ids.count
        var arriving: [(slot: Int, position: Int, id: ObjectID)] = []
        var unseen = link.unseen[...]
        for (position, target) in link.targets.enumerated() {
            let later = unseen.first == position
            if later { unseen.removeFirst() }
            guard let id = resolve(target, link.destination) else { continue }
            if later, case .identity(let key) = target, let slot = batch.identityMap[link.destination][key], batch.slots[slot].inserted {
                arriving.append((slot, position, id))
            } else {
                ids.append(id)
            }
        }
        for (_, position, id) in arriving.sorted(by: { $0.slot < $1.slot }) { ids.insert(id, at: start + min(position, ids.count - start)) }
    }

    /// The id of a link target, if it has one (stored, or inserted already) and is not a tombstone.
    @inline(__always)
    private func resolve(_ target: MappedBatch.LinkTarget, _ destination: Int) -> ObjectID? {
        let slot: Int? = switch target {
        case .slot(let s): s
        case .identity(let key): batch.identityMap[destination][key]
        }
        guard let slot, !batch.slots[slot].tombstone else { return nil }
        return batch.slots[slot].id
    }

    /// Objects of one entity whose changed attributes are the same.
    private struct UpdateGroup: Hashable {
        let entity: Int
        let positions: [Int]
    }

    // MARK: Record

    /// Remembers the row ids of the batch's remembered objects (``MappedBatch/Slot/remembered``)
    /// and forgets the others of the batch, and all of an entity the mapper forgot, as the
    /// mapper does with their texts: the two remember the same objects.
    private func rememberRows() {
        for ordinal in plans.indices {
            let forgetting = !rememberedRows[ordinal].isEmpty
            for (key, slot) in zip(batch.lookups[ordinal], batch.lookupSlots[ordinal]) where slot >= 0 {
                if batch.slots[slot].remembered, let id = batch.slots[slot].id {
                    rememberedRows[ordinal][key] = id.rowID
                } else if forgetting {
                    rememberedRows[ordinal][key] = nil
                }
            }
        }
        for ordinal in batch.forgotten { rememberedRows[ordinal].removeAll() }
    }

    /// Folds the batch's slots into the result: first-touch order, strongest status wins.
    private func recordBatch() {
        for slot in 0..<batch.objectSlots {
            guard let id = batch.slots[slot].id, !batch.slots[slot].tombstone else { continue }
            let entity = batch.slots[slot].entity
            let now = batch.slots[slot].inserted ? Self.inserted
                : (batch.slots[slot].attributesChanged || batch.slots[slot].linksChanged) ? Self.updated : Self.unchanged
            if let before = status[entity][id.rowID] {
                if now > before & Self.statusMask { status[entity][id.rowID] = (before & ~Self.statusMask) | now }
            } else {
                status[entity][id.rowID] = now
                order.append(id)
            }
        }
        for slot in batch.topLevel {
            let entity = batch.slots[slot].entity
            guard let id = batch.slots[slot].id, let entry = status[entity][id.rowID], entry & Self.listedAtTopLevel == 0 else { continue }
            status[entity][id.rowID] = entry | Self.listedAtTopLevel
            topLevel.append(id)
        }
        if pendingDiagnostics.isEmpty {
            diagnostics.append(contentsOf: batch.diagnostics)
        } else {
            // In payload order: by the top-level element each is about (a stable sort).
            func element(_ d: ImportDiagnostic) -> Int {
                if case .index(let i)? = d.path.components.first { return i }
                return -1
            }
            let merged = (batch.diagnostics + pendingDiagnostics).enumerated()
                .sorted { (element($0.element), $0.offset) < (element($1.element), $1.offset) }.map(\.element)
            diagnostics.append(contentsOf: merged)
            pendingDiagnostics.removeAll()
        }
    }

    /// After the last batch: deletes the orphans of ``ImportOptions/deleteRelationships`` and, for
    /// ``ImportOptions/deleteMissing``, the objects of each entity of `entities` (the imported
    /// ones) in scope that the payload did not hold.
    /// `sparing`: objects never deleted (created offline, not yet sent: ``OutboxRebase``).
    func finish(deletingMissingOf entities: [String], sparing spared: Set<ObjectID> = []) throws {
        try Task.checkCancellation()
        var candidates: [ObjectID] = []
        if !orphans.isEmpty {
            var seen = Set<ObjectID>()
            for (id, inverse) in orphans where seen.insert(id).inserted && !isHeld(id) {
                // Linked again since (to another parent), or deleted already: kept, or nothing to do.
                guard try writer.object(id) != nil, try writer.related(inverse, of: id).isEmpty else { continue }
                candidates.append(id)
            }
        }
        if let scope = options.deleteMissing {
            for entity in Set(entities).sorted() {
                if let (name, owner) = scope.parent, try writer.object(owner) == nil {
                    throw StoreError(.objectNotFound, entity: owner.entity, "deleteMissing is scoped to \(owner).\(name), which is not stored")
                }
                let inScope = try scope.objects(of: entity, in: writer)
                candidates.append(contentsOf: inScope.filter { !isHeld($0) })
            }
        }
        if !spared.isEmpty { candidates.removeAll { spared.contains($0) } }
        guard !candidates.isEmpty else { return }
        deleted.append(contentsOf: try DeleteRules.delete(candidates, schema: importer.schema, in: writer))
    }

    /// Whether the payload mapped the object (anywhere, nested occurrences included).
    private func isHeld(_ id: ObjectID) -> Bool {
        guard let ordinal = importer.planIndex[id.entity] else { return false }
        return status[ordinal][id.rowID] != nil
    }

    func result() -> ImportResult {
        var result = ImportResult()
        result.deleted = deleted
        result.objects = topLevel
        var entity = (name: "", ordinal: 0)
        for id in order {
            if id.entity != entity.name { entity = (id.entity, importer.planIndex[id.entity]!) }
            switch status[entity.ordinal][id.rowID]! & Self.statusMask {
            case Self.inserted: result.inserted.append(id)
            case Self.updated: result.updated.append(id)
            default: result.unchanged.append(id)
            }
        }
        if !withdrawn.isEmpty {
            var kept: [ImportDiagnostic] = []
            kept.reserveCapacity(diagnostics.count)
            for diagnostic in diagnostics.reversed() {
                if let count = withdrawn[diagnostic], count > 0 {
                    withdrawn[diagnostic] = count - 1
                } else {
                    kept.append(diagnostic)
                }
            }
            diagnostics = kept.reversed()
            withdrawn.removeAll()
        }
        result.diagnostics = diagnostics
        return result
    }
}
