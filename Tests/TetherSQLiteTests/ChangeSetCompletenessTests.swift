import Foundation
import Synchronization
import Testing
import Tether
import TetherSQLite
import TetherTestSupport

/// A seeded randomised test that the change set of every committed transaction is complete:
/// every object inserted is in `inserted`, every object deleted in `deleted`, and every object
/// that survives with a different attribute value or different links (either side of a link,
/// the old partner of a moved to-one, what delete rules removed, pending references resolved
/// later, links cleared by delete-missing; a relationship without inverse as `Entity.name` on
/// its targets) is named so that `mayHaveChanged(id, properties: [property])` is true. The truth
/// is a full snapshot of the graph before and after each transaction. A transaction that changed
/// nothing must publish nothing; one that changed something must publish one change set.
///
/// Transactions: imports of random nested payloads with id references (bytes and trees, batch
/// sizes 1, 2 and the default, delete-missing scopes, tombstones, into a parent, several
/// payloads), direct write bodies (single and batched links, insert and update batches, deletes
/// with and without delete rules) and `deleteLocally`. Both stores.
///
/// `TETHER_CHANGESET_TRANSACTIONS` and `TETHER_CHANGESET_SEEDS` (comma-separated) run it longer.
@Suite struct ChangeSetCompletenessTests {
    static let schema = try! Schema {
        Entity("A", identity: "id") {
            Attribute("id", .int64)
            Attribute("v", .int64)
            Attribute("s", .string)
            Relationship.toOne("owner", "B", inverse: "owned")                      // to-one, to-many inverse
            Relationship.toMany("tags", "C", inverse: "tagged")                     // many-to-many unordered
            Relationship.toMany("items", "D", inverse: "holders", ordered: true)    // ordered on this side
            Relationship.toMany("cards", "E", inverse: "decks", ordered: true)      // ordered on both sides
            Relationship.toOne("profile", "F", inverse: "person")                   // one-to-one
            Relationship.toOne("pinned", "E")                                       // to-one without inverse
            Relationship.toMany("watchers", "B")                                    // to-many without inverse
            Relationship.toOne("note", "N", inverse: "a", deleteRule: .cascade)     // owned, no identity
        }
        Entity("B", identity: "id") {
            Attribute("id", .int64)
            Attribute("v", .int64)
            Relationship.toMany("owned", "A", inverse: "owner", deleteRule: .cascade)
            Relationship.toOne("parent", "B", inverse: "children")                  // self reference
            Relationship.toMany("children", "B", inverse: "parent", deleteRule: .nullify)
            Relationship.toMany("favs", "D", inverse: "fans")                       // ordered on the other side
            Relationship.toMany("entries", "D", inverse: "list", ordered: true)     // ordered one-to-many
            Relationship.toMany("gs", "G", inverse: "b", deleteRule: .nullify)
        }
        Entity("C", identity: "id") {
            Attribute("id", .int64)
            Attribute("v", .int64)
            Relationship.toMany("tagged", "A", inverse: "tags")
        }
        Entity("D", identity: "id") {
            Attribute("id", .int64)
            Attribute("v", .int64)
            Relationship.toMany("holders", "A", inverse: "items")
            Relationship.toMany("fans", "B", inverse: "favs", ordered: true)
            Relationship.toOne("list", "B", inverse: "entries", deleteRule: .nullify)
        }
        Entity("E", identity: "id") {
            Attribute("id", .int64)
            Attribute("v", .int64)
            Relationship.toMany("decks", "A", inverse: "cards", ordered: true)
        }
        Entity("F", identity: "id") {
            Attribute("id", .int64)
            Attribute("v", .int64)
            Relationship.toOne("person", "A", inverse: "profile")
        }
        Entity("G", identity: "k", "n") {                                           // composite identity
            Attribute("k", .string)
            Attribute("n", .int64)
            Attribute("v", .int64)
            Relationship.toOne("b", "B", inverse: "gs")
        }
        Entity("N") {                                                               // no identity
            Attribute("text", .string)
            Relationship.toOne("a", "A", inverse: "note")
        }
        Entity("M", identity: "id") {                                               // the marker
            Attribute("id", .int64)
            Attribute("n", .int64)
        }
    }

    static let entities = ["A", "B", "C", "D", "E", "F", "G", "N"]
    static let idEntities = ["A", "B", "C", "D", "E", "F"]

    struct Rel: Sendable {
        let entity: String, name: String, destination: String, toOne: Bool, ordered: Bool, inverse: String?
    }

    static let rels: [Rel] = entities.flatMap { name in
        schema[name]!.relationships.map {
            Rel(entity: name, name: $0.name, destination: $0.destination, toOne: !$0.isToMany, ordered: $0.isOrdered, inverse: $0.inverse)
        }
    }
    static func rels(of entity: String) -> [Rel] { rels.filter { $0.entity == entity } }

    // MARK: The graph

    /// Every object's properties, each as a comparable text: attributes, relationships (ordered
    /// as arrays, unordered sorted) and, for a relationship without inverse, `Entity.name` on
    /// its targets (the sources, sorted).
    struct Graph: Sendable, Equatable {
        var objects: [ObjectID: [String: String]] = [:]
        var labels: [ObjectID: String] = [:]

        func live(_ entity: String) -> [ObjectID] { objects.keys.filter { $0.entity == entity }.sorted() }
        func label(_ id: ObjectID) -> String { labels[id] ?? id.description }
    }

    static func graph(_ reader: any StoreReader) throws -> Graph {
        var graph = Graph()
        for entity in entities {
            for object in try reader.fetch(Query(entity)) {
                var properties: [String: String] = [:]
                for attribute in schema[entity]!.attributes { properties[attribute.name] = object[attribute.name].map { "\($0)" } ?? "nil" }
                graph.objects[object.id] = properties
                let identity = schema[entity]!.identity.map { "\($0)=\(object[$0].map { "\($0)" } ?? "nil")" }.joined(separator: ",")
                graph.labels[object.id] = "\(object.id)(\(identity))"
            }
        }
        for rel in rels {
            let sources = graph.live(rel.entity)
            let related = try reader.related(rel.name, of: sources)
            var reverse: [ObjectID: [ObjectID]] = [:]
            for source in sources {
                var targets = related[source] ?? []
                if !rel.ordered { targets.sort() }
                graph.objects[source]![rel.name] = targets.map(\.description).joined(separator: " ")
                if rel.inverse == nil { for target in targets { reverse[target, default: []].append(source) } }
            }
            if rel.inverse == nil {
                for target in graph.live(rel.destination) {
                    graph.objects[target]!["\(rel.entity).\(rel.name)"] = (reverse[target] ?? []).sorted().map(\.description).joined(separator: " ")
                }
            }
        }
        return graph
    }

    /// What changed between two graphs.
    struct Truth {
        var inserted: [ObjectID] = []
        var deleted: [ObjectID] = []
        /// Surviving objects and their changed properties, with before and after.
        var updated: [(ObjectID, String, String, String)] = []
        var isEmpty: Bool { inserted.isEmpty && deleted.isEmpty && updated.isEmpty }
    }

    static func truth(_ before: Graph, _ after: Graph) -> Truth {
        var truth = Truth()
        for (id, properties) in after.objects.sorted(by: { $0.key < $1.key }) {
            guard let old = before.objects[id] else { truth.inserted.append(id); continue }
            if before.labels[id] != after.labels[id] { truth.inserted.append(id); truth.deleted.append(id); continue }  // a row id used again
            for (name, value) in properties.sorted(by: { $0.key < $1.key }) where old[name] != value {
                truth.updated.append((id, name, old[name] ?? "?", value))
            }
        }
        for id in before.objects.keys.sorted() where after.objects[id] == nil { truth.deleted.append(id) }
        return truth
    }

    /// The first way `changes` fails to cover `truth`, or nil.
    static func violation(_ truth: Truth, _ changes: ChangeSet?, _ before: Graph, _ after: Graph) -> String? {
        guard let changes else {
            if truth.isEmpty { return nil }
            if let id = truth.inserted.first { return "no change set published, but \(after.label(id)) was inserted" }
            if let id = truth.deleted.first { return "no change set published, but \(before.label(id)) was deleted" }
            let (id, property, old, new) = truth.updated[0]
            return "no change set published, but \(after.label(id)).\(property) changed from [\(old)] to [\(new)]"
        }
        for id in truth.inserted where !changes.inserted.contains(id) && !changes.deleted.contains(id) {
            return "\(after.label(id)) was inserted, not in `inserted`"
        }
        for id in truth.deleted where !changes.deleted.contains(id) {
            return "\(before.label(id)) was deleted, not in `deleted`"
        }
        for (id, property, old, new) in truth.updated where !changes.mayHaveChanged(id, properties: [property]) {
            return "\(after.label(id)).\(property) changed from [\(old)] to [\(new)], but mayHaveChanged is false "
                + "(updated: \(changes.updated.contains(id)), recorded properties: \(changes.changedProperties(of: id).map { $0.sorted().description } ?? "none"))"
        }
        return nil
    }

    /// Objects and properties named by `changes` that did not change (of the test's entities).
    static func overReported(_ truth: Truth, _ changes: ChangeSet) -> Int {
        let changed = Set(truth.updated.map { "\($0.0)|\($0.1)" })
        var count = 0
        for update in changes.propertyUpdates {
            for id in update.objects where entities.contains(id.entity) {
                for property in update.properties where !changed.contains("\(id)|\(property)") { count += 1 }
            }
        }
        count += changes.inserted.filter { entities.contains($0.entity) && !truth.inserted.contains($0) }.count
        return count
    }


    // MARK: Imports

    /// Builds payloads by the client's mapping: nested objects under relationship names, ids under foreign keys.
    struct Payloads {
        let mapping: Mapping
        var random: SeededRandom
        /// Identities 1...span are usual; span+1...span+3 are often not stored (pending references).
        var span: Int = 8
        var wide: Bool { span > 8 }

        mutating func identity() -> Int64 { Int64(1 + random.below(random.chance(85) ? span : span + 3)) }

        mutating func object(_ entity: String, depth: Int) -> JSON {
            var object: [String: JSON] = [:]
            switch entity {
            case "G":
                object["k"] = .string(random.pick(["x", "y"]))
                object["n"] = .int(Int64(random.below(3)))
            case "N":
                object["text"] = .string(random.pick(["p", "q", "r"]))
                return .object(object)
            default:
                object["id"] = random.chance(50) ? .int(identity()) : .string("\(identity())")
            }
            if random.chance(70) { object["v"] = random.chance(15) ? .null : .int(Int64(random.below(3))) }
            if entity == "A", random.chance(40) { object["s"] = random.chance(15) ? .null : .string(random.pick(["s", "t"])) }
            if random.chance(8) { object["gone"] = .bool(true) }
            for rel in ChangeSetCompletenessTests.rels(of: entity) where random.chance(depth == 0 ? 35 : 15) {
                let mapped = mapping[entity]!.relationship(rel.name)!
                let nestable = depth < 2
                let byIDs = ChangeSetCompletenessTests.idEntities.contains(rel.destination)
                if (nestable && (!byIDs || random.chance(50))) {
                    if rel.toOne {
                        object[rel.name] = random.chance(15) ? .null : self.object(rel.destination, depth: depth + 1)
                    } else {
                        object[rel.name] = .array((0..<random.below(wide && depth == 0 ? 20 : 4)).map { _ in self.object(rel.destination, depth: depth + 1) })
                    }
                } else if byIDs {
                    if rel.toOne {
                        object[mapped.foreignKey] = random.chance(15) ? .null : .int(identity())
                    } else {
                        object[mapped.foreignKey] = .array((0..<random.below(wide ? 24 : 4)).map { _ in .int(identity()) })
                    }
                }
            }
            return .object(object)
        }
    }

    // MARK: Direct writes

    /// Random single and batched writes in one write transaction; returns what it did.
    static func directWrites(_ writer: any StoreWriter, _ random: inout SeededRandom, noop: Bool, schema: Schema, wide: Bool) throws -> [String] {
        let most = wide ? 20 : 4
        var done: [String] = []
        func live(_ entity: String) throws -> [ObjectID] { try writer.ids(Query(entity)) }
        func targets(_ rel: Rel, current: [ObjectID]) throws -> [ObjectID] {
            let all = try live(rel.destination)
            switch random.below(5) {
            case 0: return current
            case 1: return rel.toOne ? current : random.shuffled(current)
            default:
                if rel.toOne { return random.chance(25) || all.isEmpty ? [] : [random.pick(all)] }
                return random.subset(all, max: most)
            }
        }
        func freshID(_ entity: String, after taken: Set<Value> = []) throws -> Int64 {
            let used = Set(try writer.fetch(Query(entity)).compactMap { object -> Int64? in if case .int(let i)? = object["id"] { i } else { nil } })
            return (1...).first { !used.contains($0) && !taken.contains(.int($0)) }!
        }
        func values(_ entity: String) throws -> [String: Value] {
            switch entity {
            case "G": return ["k": .string("w"), "n": .int(1000 + Int64(random.below(1_000_000_000))), "v": .int(Int64(random.below(3)))]
            case "N": return ["text": .string(random.pick(["p", "q"]))]
            default: return ["id": .int(try freshID(entity)), "v": .int(Int64(random.below(3)))]
            }
        }
        let count = noop ? 1 + random.below(3) : 1 + random.below(4)
        for _ in 0..<count {
            if noop {
                // Links written back as they are, single and batched.
                let rel = random.pick(rels)
                let sources = random.subset(try live(rel.entity), max: most)
                if sources.isEmpty { continue }
                if sources.count == 1 && random.chance(50) {
                    try writer.setRelated(rel.name, of: sources[0], to: try writer.related(rel.name, of: sources[0]))
                    done.append("setRelated(\(rel.entity).\(rel.name), of: \(sources[0]), as it is)")
                } else {
                    let batch = try writer.links(rel.name, of: sources)
                    try writer.setRelated(batch)
                    done.append("setRelated(batch \(rel.entity).\(rel.name) of \(sources), as it is)")
                }
                continue
            }
            switch random.below(12) {
            case 0, 1, 2:
                let rel = random.pick(rels)
                guard let source = try live(rel.entity).randomElement(using: &random) else { continue }
                let to = try targets(rel, current: try writer.related(rel.name, of: source))
                try writer.setRelated(rel.name, of: source, to: to)
                done.append("setRelated(\(rel.entity).\(rel.name), of: \(source), to: \(to))")
            case 3, 4, 5:
                let rel = random.pick(rels)
                var sources = random.subset(try live(rel.entity), max: most)
                if sources.isEmpty { continue }
                if random.chance(10) { sources.append(sources[0]) }  // named twice
                var batch = LinkBatch(entity: rel.entity, relationship: rel.name)
                var rows: [String] = []
                for source in sources {
                    let to = try targets(rel, current: try writer.related(rel.name, of: source))
                    batch.append(source, to: to)
                    rows.append("\(source)->\(to)")
                }
                try writer.setRelated(batch)
                done.append("setRelated(batch \(rel.entity).\(rel.name): \(rows.joined(separator: ", ")))")
            case 6:
                let entity = random.pick(entities)
                let inserted = try writer.insert(entity, values: try values(entity))
                done.append("insert(\(inserted.id))")
            case 7:
                let entity = random.pick(entities)
                let toOne = rels(of: entity).filter { $0.toOne && random.chance(60) }
                let attributes = try values(entity).keys.sorted()
                var batch = InsertBatch(entity: entity, attributes: attributes, relationships: toOne.map(\.name))
                var rows: [String] = []
                var taken: Set<Value> = []
                for _ in 0..<(1 + random.below(wide ? 12 : 3)) {
                    var row = try values(entity)
                    if row["id"] != nil { row["id"] = .int(try freshID(entity, after: taken)); taken.insert(row["id"]!) }
                    var linked: [ObjectID?] = []
                    for rel in toOne { linked.append(random.chance(70) ? try live(rel.destination).randomElement(using: &random) : nil) }
                    batch.append(attributes.map { row[$0] }, targets: linked)
                    rows.append("\(attributes.map { "\($0)=\(row[$0]!)" }) \(linked.map { $0?.description ?? "nil" })")
                }
                let ids = try writer.insert(batch)
                done.append("insert(batch \(entity) \(toOne.map(\.name)): \(rows) -> \(ids))")
            case 8:
                let entity = random.pick(entities)
                guard let id = try live(entity).randomElement(using: &random) else { continue }
                let attribute = entity == "N" ? "text" : (entity == "A" && random.chance(50) ? "s" : "v")
                if random.chance(20) {
                    try writer.update(id, setting: [:], clearing: [attribute])
                    done.append("update(\(id), clearing \(attribute))")
                } else {
                    let value: Value = attribute == "v" ? .int(Int64(random.below(3))) : .string(random.pick(["p", "s"]))
                    try writer.update(id, setting: [attribute: value], clearing: [])
                    done.append("update(\(id), \(attribute)=\(value))")
                }
            case 9:
                let entity = random.pick(["A", "B", "C", "D", "E", "F", "G"])
                let ids = random.subset(try live(entity), max: 3)
                if ids.isEmpty { continue }
                var batch = UpdateBatch(entity: entity, attributes: ["v"])
                var rows: [String] = []
                for id in ids {
                    let value: Value? = random.chance(15) ? nil : .int(Int64(random.below(3)))
                    batch.append(id, [value])
                    rows.append("\(id) v=\(value.map { "\($0)" } ?? "nil")")
                }
                try writer.update(batch)
                done.append("update(batch \(rows))")
            case 10:
                let entity = random.pick(entities)
                guard let id = try live(entity).randomElement(using: &random) else { continue }
                try writer.delete(id)
                done.append("delete(\(id))")
            default:
                let entity = random.pick(entities)
                let ids = random.subset(try live(entity), max: 2)
                if ids.isEmpty { continue }
                if ids.count == 1 && random.chance(50) {
                    try DeleteRules.delete(ids[0], schema: schema, in: writer)
                    done.append("DeleteRules.delete(\(ids[0]))")
                } else {
                    let deleted = try DeleteRules.delete(ids, schema: schema, in: writer)
                    done.append("DeleteRules.delete(\(ids)) -> \(deleted)")
                }
            }
        }
        return done
    }

    // MARK: The run

    static let transactions = ProcessInfo.processInfo.environment["TETHER_CHANGESET_TRANSACTIONS"].flatMap { Int($0) } ?? 150
    static let trace = ProcessInfo.processInfo.environment["TETHER_CHANGESET_TRACE"] != nil
    static let stores = ProcessInfo.processInfo.environment["TETHER_CHANGESET_STORES"].map { $0.split(separator: ",").map(String.init) } ?? ["memory", "sqlite"]
    static let seeds: [UInt64] = ProcessInfo.processInfo.environment["TETHER_CHANGESET_SEEDS"]
        .map { $0.split(separator: ",").compactMap { UInt64($0) } } ?? [1, 2]

    struct Counts {
        var transactions = 0, changeSets = 0, noChangeSet = 0, noops = 0, failed = 0, updates = 0, overReported = 0, violations = 0, several = 0
        /// Transactions that changed nothing in the graph but published a change set naming its objects.
        var noopPublished = 0
        var noopExample: String?
    }

    static func run(_ kind: String, seed: UInt64, transactions: Int, span: Int) async throws -> (Counts, String?) {
        let folder = try TemporaryDirectory()
        let store: any Store = kind == "memory" ? InMemoryStore() : try SQLiteStore(path: folder.path())
        let client = try Client.Builder(schema: schema).store(store).build()
        let clientSchema = client.schema
        let marker = try await store.write { try $0.insert("M", values: ["id": .int(1), "n": .int(0)]).id }
        var markers: Int64 = 0
        // Change sets are collected as they come: a stream is fed before `write` returns, so
        // one is there (or soon taken) when the transaction has returned. No marker transaction
        // after one that changed something, so that an import may trust what the previous one
        // remembered.
        let collected = Collected()
        let stream = store.changes()
        let consumer = Task { for await changes in stream { collected.sets.withLock { $0.append(changes) } } }
        defer { consumer.cancel() }
        var random = SeededRandom(seed: seed)
        var counts = Counts()
        var before = try await store.read { try graph($0) }
        var lastImport: (String, JSON, ImportOptions)?
        for index in 0..<transactions {
            var operation = ""
            var intendedNoop = false
            var threw: (any Error)?
            do {
                switch random.below(100) {
                case 0..<50:
                    var payloads = Payloads(mapping: client.mapping, random: random, span: span)
                    let entity = payloads.random.pick(["A", "A", "A", "B", "B", "C", "D", "D", "E", "F"])
                    var options = ImportOptions(batchSize: payloads.random.pick([1, 2, 10_000]))
                    let json: JSON
                    if payloads.random.chance(10) {
                        json = payloads.object(entity, depth: 0)
                    } else {
                        json = .array((0..<(1 + payloads.random.below(span > 8 ? 12 : 4))).map { _ in payloads.object(entity, depth: 0) })
                        switch payloads.random.below(10) {
                        case 0: options.deleteMissing = .all
                        case 1: options.deleteMissing = .matching(.equal("v", .int(Int64(payloads.random.below(3)))))
                        case 2:
                            let holders = rels.filter { $0.destination == entity }
                            let rel = payloads.random.pick(holders)
                            if let parent = before.live(rel.entity).randomElement(using: &payloads.random) {
                                options.deleteMissing = .related(rel.name, of: parent)
                            }
                        default: break
                        }
                    }
                    if payloads.random.chance(25) { options.tombstones = [Tombstone("gone", equals: true)] }
                    if payloads.random.chance(20) { options.deleteRelationships = true }
                    if payloads.random.chance(8) { options.update = false }
                    if payloads.random.chance(8) { options.insertRelationships = false }
                    if payloads.random.chance(5) { options.updateRelationships = false }
                    if payloads.random.chance(5) { options.insert = false }
                    let bytes = payloads.random.chance(50)
                    let file = bytes && payloads.random.chance(30)
                    random = payloads.random
                    var (importEntity, importJSON, importOptions) = (entity, json, options)
                    var again = false
                    if let last = lastImport, random.chance(15) {
                        (importEntity, importJSON, importOptions) = last
                        importOptions.deleteMissing = nil
                        importOptions.tombstones = []
                        importOptions.deleteRelationships = false
                        again = true
                    }
                    lastImport = (importEntity, importJSON, importOptions)
                    operation = "import(\(bytes ? "bytes" : "tree") \(importJSON), as: \(importEntity), batchSize: \(importOptions.batchSize), deleteMissing: \(String(describing: importOptions.deleteMissing)), tombstones: \(!importOptions.tombstones.isEmpty), deleteRelationships: \(importOptions.deleteRelationships), update: \(importOptions.update), insertRelationships: \(importOptions.insertRelationships))\(again ? " again" : "")"
                    if file {
                        let url = folder.url.appendingPathComponent("payload.json")
                        try importJSON.serialized().write(to: url)
                        operation = "(from a file) " + operation
                        let result = try await client.import(contentsOf: url, as: importEntity, options: importOptions)
                        if trace { print("result: inserted \(Array(result.inserted)) updated \(Array(result.updated)) unchanged \(Array(result.unchanged))") }
                    } else if bytes {
                        _ = try await client.import(importJSON.serialized(), as: importEntity, options: importOptions)
                    } else {
                        _ = try await client.import(importJSON, as: importEntity, options: importOptions)
                    }
                case 50..<58:
                    var payloads = Payloads(mapping: client.mapping, random: random, span: span)
                    let holders = rels.filter { idEntities.contains($0.destination) }
                    let rel = payloads.random.pick(holders)
                    let parent = before.live(rel.entity).randomElement(using: &payloads.random)
                    let json: JSON = .array((0..<payloads.random.below(4)).map { _ in payloads.object(rel.destination, depth: 1) })
                    let adding = payloads.random.chance(40)
                    var options = ImportOptions(batchSize: payloads.random.pick([1, 2, 10_000]))
                    if let parent, payloads.random.chance(40) { options.deleteMissing = .related(rel.name, of: parent) }
                    random = payloads.random
                    guard let parent else { continue }
                    operation = "import(\(json), as: \(rel.destination), into: \(rel.name), of: \(before.label(parent)), \(adding ? "adding" : "replacing"), deleteMissing: \(String(describing: options.deleteMissing)))"
                    _ = try await client.import(json.serialized(), as: rel.destination, into: rel.name, of: parent, adding ? .adding : .replacing, options: options)
                case 58..<63:
                    var payloads = Payloads(mapping: client.mapping, random: random, span: span)
                    let list = (0..<2).map { _ in payloads.random.pick(idEntities) }.map { entity in
                        (entity: entity, json: JSON.array((0..<(1 + payloads.random.below(3))).map { _ in payloads.object(entity, depth: 1) }))
                    }
                    random = payloads.random
                    operation = "import(payloads \(list.map { "\($0.entity): \($0.json)" }))"
                    _ = try await client.import(list)
                case 63..<70:
                    let entity = random.pick(entities)
                    guard let id = before.live(entity).randomElement(using: &random) else { continue }
                    operation = "deleteLocally(\(before.label(id)))"
                    try await client.deleteLocally(id)
                default:
                    let noop = random.chance(15)
                    let start = random
                    let (done, after) = try await store.write { writer in
                        var random = start
                        do {
                            return (try directWrites(writer, &random, noop: noop, schema: clientSchema, wide: span > 8), random)
                        } catch {
                            throw WriteFailure(error: error, random: random)
                        }
                    }
                    random = after
                    intendedNoop = noop
                    operation = "write { \(done.joined(separator: "; ")) }"
                }
            } catch let failure as WriteFailure {
                random = failure.random
                threw = failure.error
                operation = "write (threw \(failure.error))"
            } catch {
                threw = error
                operation += " (threw \(error))"
            }
            if threw != nil { counts.failed += 1 }

            let after = try await store.read { try graph($0) }
            if trace, index == transactions - 1 {
                for id in before.objects.keys.sorted() where id.entity == "D" { print("before: \(before.label(id)) \(before.objects[id]!.sorted { $0.key < $1.key })") }
            }
            if trace { print("T\(index): \(operation) -> \(truth(before, after).updated.count) changed properties") }
            let truth = truth(before, after)
            // A change set is expected: wait for it. None is: a marker transaction fences what
            // this one published (it is taken before the marker's), deterministically.
            var published: [ChangeSet]
            if truth.isEmpty {
                markers += 1
                let n = markers
                try await store.write { try $0.update(marker, setting: ["n": .int(n)], clearing: []) }
                published = []
                while !published.contains(where: { $0.updated.contains(marker) }) {
                    published += await collected.take(waiting: .seconds(10))
                }
                published.removeAll { $0.updated.contains(marker) }
            } else {
                published = await collected.take(waiting: .seconds(10))
            }
            if published.count > 1 { counts.several += 1 }
            let changes: ChangeSet? = published.isEmpty ? nil : published.dropFirst().reduce(into: published[0]) { $0.formUnion($1) }
            counts.transactions += 1
            if let changes {
                counts.changeSets += 1
                counts.overReported += overReported(truth, changes)
            } else {
                counts.noChangeSet += 1
            }
            counts.updates += truth.updated.count
            if truth.isEmpty { counts.noops += 1 }
            if let problem = violation(truth, changes, before, after) {
                counts.violations += 1
                if trace { print("changes: \(changes.map { "\($0)" } ?? "none")") }
                return (counts, "\(kind), seed \(seed), transaction \(index): \(operation)\n  \(problem)")
            }
            if truth.isEmpty, let changes, !changes.entities.filter({ entities.contains($0) }).isEmpty {
                counts.noopPublished += 1
                if counts.noopExample == nil { counts.noopExample = "transaction \(index): \(operation)\n  published \(changes.propertyUpdates.map { "\($0.properties.sorted()): \($0.objects)" })" }
                if intendedNoop {
                    return (counts, "\(kind), seed \(seed), transaction \(index): \(operation)\n  changed nothing, published \(changes) with \(changes.propertyUpdates.map { "\($0.properties.sorted()): \($0.objects)" })")
                }
            }
            if threw != nil, !truth.isEmpty {
                return (counts, "\(kind), seed \(seed), transaction \(index): \(operation)\n  threw but changed the graph")
            }
            before = after
        }
        return (counts, nil)
    }

    final class Collected: Sendable {
        let sets = Mutex<[ChangeSet]>([])

        /// The change sets published since the last call; waits up to `limit` for one.
        func take(waiting limit: Duration) async -> [ChangeSet] {
            let deadline = ContinuousClock.now + limit
            while true {
                let got = sets.withLock { sets in defer { sets = [] }; return sets }
                if !got.isEmpty || ContinuousClock.now >= deadline { return got }
                await Task.yield()
                try? await Task.sleep(for: .microseconds(100))
            }
        }
    }

    struct WriteFailure: Error { let error: any Error; let random: SeededRandom }

    @Test(arguments: Self.stores)
    func changeSetsNameEverythingThatChanged(_ kind: String) async throws {
        var total = Counts()
        for seed in Self.seeds {
            // Odd seeds: a few objects per entity; even seeds: more, with links past 16 per object.
            let (counts, problem) = try await Self.run(kind, seed: seed, transactions: Self.transactions, span: seed % 2 == 0 ? 24 : 8)
            total.transactions += counts.transactions
            total.changeSets += counts.changeSets
            total.noChangeSet += counts.noChangeSet
            total.noops += counts.noops
            total.failed += counts.failed
            total.updates += counts.updates
            total.overReported += counts.overReported
            total.several += counts.several
            total.noopPublished += counts.noopPublished
            if total.noopExample == nil, let example = counts.noopExample { total.noopExample = "seed \(seed), \(example)" }
            if let problem {
                Issue.record(Comment(rawValue: problem))
                break
            }
        }
        print("ChangeSetCompletenessTests \(kind): \(total.transactions) transactions, \(total.changeSets) change sets, \(total.noChangeSet) without one (\(total.noops) changed nothing, \(total.failed) threw), \(total.updates) changed properties of surviving objects checked, \(total.overReported) named but unchanged, \(total.noopPublished) published for an unchanged graph, \(total.several) times several change sets\(total.noopExample.map { ", first: " + $0 } ?? "")")
    }
}

extension SeededRandom {
    /// Up to `max` elements of `list`, in a random order.
    mutating func subset<T>(_ list: [T], max: Int) -> [T] { Array(shuffled(list).prefix(below(Swift.min(max, list.count) + 1))) }
}
