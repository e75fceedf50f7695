import Foundation
import Testing
import Tether
import TetherSQLite
import TetherTestSupport

/// A random-schema differential test of the import engine (issue 37): random schemas (one-to-many,
/// many-to-many, one-to-one, to-one without inverse, self-references, owned objects nested two
/// deep, owned objects that reference other objects, string and integer identities) and random
/// payload sequences (bare lists and lists in an envelope, repeated objects anywhere, re-imports of the same bytes, updates, owned
/// lists that grow, shrink and change kind, references to objects that arrive later or never),
/// imported into both stores at different batch sizes and compared, after every import, with a
/// deliberately simple reference importer written for this test: one object at a time, no
/// batching, nothing remembered, a plain graph in dictionaries. Owned objects are counted, not
/// only the linked ones.
///
/// `TETHER_IMPORT_DIFF_SEEDS` (comma-separated) and `TETHER_IMPORT_DIFF_IMPORTS` (per seed) run it
/// longer; `TETHER_IMPORT_DIFF_PRINT=1` prints each seed's schema and payloads.
@Suite struct ImportDifferentialTests {
    static let environment = ProcessInfo.processInfo.environment
    static let seeds: [UInt64] = environment["TETHER_IMPORT_DIFF_SEEDS"]
        .map { $0.split(separator: ",").compactMap { UInt64($0.trimmingCharacters(in: .whitespaces)) } } ?? Array(1...60)
    static let imports = environment["TETHER_IMPORT_DIFF_IMPORTS"].flatMap { Int($0) } ?? 6

    @Test func theEngineAgreesWithAOneObjectAtATimeImporter() async throws {
        for seed in Self.seeds {
            var random = SeededRandom(seed: seed)
            let generated = GeneratedSchema(&random)
            let folder = try TemporaryDirectory()
            // Lists come bare or in an envelope, as Stripe's list objects: `{"data": [...], "has_more": false}`.
            let memory = try Client.Builder(schema: generated.schema).store(InMemoryStore()).responseShape(.keyPath("data")).build()
            let sqlite = try Client.Builder(schema: generated.schema).store(try SQLiteStore(path: folder.path())).responseShape(.keyPath("data")).build()
            let reference = ReferenceImporter(generated)
            var payloads: [(entity: String, text: String)] = []
            for step in 0..<Self.imports {
                let payload = step > 0 && random.chance(20) ? payloads[random.below(payloads.count)] : generated.payload(&random)
                payloads.append(payload)
                let sizes = [1, 2, 3, 10_000]
                let (memorySize, sqliteSize) = (random.pick(sizes), random.pick(sizes))
                if Self.environment["TETHER_IMPORT_DIFF_PRINT"] == "1" {
                    print("seed \(seed) import \(step) as \(payload.entity) (batches \(memorySize), \(sqliteSize)): \(payload.text)")
                }
                let data = Data(payload.text.utf8)
                _ = try await memory.import(data, as: payload.entity, options: ImportOptions(batchSize: memorySize))
                _ = try await sqlite.import(data, as: payload.entity, options: ImportOptions(batchSize: sqliteSize))
                reference.import(try JSON(parsing: data), as: payload.entity)

                let expected = reference.dump()
                let (fromMemory, fromSQLite) = (try await generated.dump(memory), try await generated.dump(sqlite))
                let context = "seed \(seed), import \(step)\nschema:\n\(generated.description)\npayloads:\n"
                    + payloads.map { "\($0.entity): \($0.text)" }.joined(separator: "\n")
                #expect(fromMemory == expected, "in-memory store (batches of \(memorySize)) vs reference, \(context)\n\(Self.difference(fromMemory, expected))")
                #expect(fromSQLite == expected, "SQLite store (batches of \(sqliteSize)) vs reference, \(context)\n\(Self.difference(fromSQLite, expected))")
                if fromMemory != expected || fromSQLite != expected { return }
            }
        }
    }

    /// The lines of two dumps that differ.
    static func difference(_ actual: String, _ expected: String) -> String {
        let a = actual.split(separator: "\n"), e = expected.split(separator: "\n")
        let only = a.filter { !e.contains($0) }.map { "+ \($0)" } + e.filter { !a.contains($0) }.map { "- \($0)" }
        return only.joined(separator: "\n")
    }
}

// MARK: - The schema

/// A random schema: 2 or 3 entities with identity (`E0`…, an integer or a string `id`, attributes
/// `a` and `b`) linked by random relationship pairs, and 1 to 3 entities without identity (`O0`…),
/// each owned by an entity with identity or by an earlier owned entity, some referencing an entity
/// with identity. Payloads only set the *forward* side of a pair (the inverse follows).
struct GeneratedSchema: CustomStringConvertible {
    struct Forward {
        let entity: String
        let relationship: Relationship
        var owning: Bool
    }
    let schema: Schema
    let identities: [String]
    let owned: [String]
    let stringIDs: Set<String>
    /// By entity: the relationships payloads set.
    let forward: [String: [Forward]]

    init(_ random: inout SeededRandom) {
        let identities = (0..<(2 + random.below(2))).map { "E\($0)" }
        let owned = (0..<(1 + random.below(3))).map { "O\($0)" }
        var relationships: [String: [Relationship]] = [:]
        var forward: [String: [Forward]] = [:]
        func add(_ entity: String, _ relationship: Relationship, forward isForward: Bool, owning: Bool = false) {
            relationships[entity, default: []].append(relationship)
            if isForward { forward[entity, default: []].append(Forward(entity: entity, relationship: relationship, owning: owning)) }
        }
        for k in 0..<(2 + random.below(3)) {
            let (from, to) = (random.pick(identities), random.pick(identities))
            switch random.below(4) {
            case 0:  // one-to-many, set from either side
                let ordered = random.chance(50)
                let fromMany = random.chance(50)
                add(from, .toMany("m\(k)s", to, inverse: "p\(k)", ordered: ordered), forward: fromMany)
                add(to, .toOne("p\(k)", from, inverse: "m\(k)s"), forward: !fromMany)
            case 1:  // many-to-many
                add(from, .toMany("n\(k)s", to, inverse: "q\(k)s", ordered: random.chance(50)), forward: true)
                add(to, .toMany("q\(k)s", from, inverse: "n\(k)s"), forward: false)
            case 2:  // one-to-one
                add(from, .toOne("x\(k)", to, inverse: "y\(k)"), forward: true)
                add(to, .toOne("y\(k)", from, inverse: "x\(k)"), forward: false)
            default:  // to-one without inverse
                add(from, .toOne("u\(k)", to), forward: true)
            }
        }
        for (k, entity) in owned.enumerated() {
            let parent = k > 0 && random.chance(50) ? owned[random.below(k)] : random.pick(identities)
            if random.chance(50) {
                add(parent, .toMany("o\(k)s", entity, inverse: "up\(k)", ordered: random.chance(70)), forward: true, owning: true)
            } else {
                add(parent, .toOne("o\(k)", entity, inverse: "up\(k)"), forward: true, owning: true)
            }
            add(entity, .toOne("up\(k)", parent, inverse: random.chance(50) ? "o\(k)s" : "o\(k)"), forward: false)
            if random.chance(40) {
                let target = random.pick(identities)
                if random.chance(50) {
                    add(entity, .toOne("r\(k)", target, inverse: "rs\(k)"), forward: true)
                    add(target, .toMany("rs\(k)", entity, inverse: "r\(k)"), forward: false)
                } else {
                    add(entity, .toOne("r\(k)", target), forward: true)
                }
            }
        }
        // Inverses named above for a parent's side that was not chosen are fixed here.
        for (entity, list) in relationships {
            relationships[entity] = list.map { relationship in
                guard relationship.name.hasPrefix("up") else { return relationship }
                let parentSide = relationships[relationship.destination]!.first { $0.destination == entity && $0.inverse == relationship.name }!
                return .toOne(relationship.name, relationship.destination, inverse: parentSide.name)
            }
        }
        var stringIDs = Set<String>()
        var entities: [Entity] = []
        for name in identities {
            let string = random.chance(50)
            if string { stringIDs.insert(name) }
            entities.append(Entity(name, identity: ["id"], attributes: [Attribute("id", string ? .string : .int64), Attribute("a", .string), Attribute("b", .int64)],
                                   relationships: relationships[name] ?? []))
        }
        for name in owned {
            entities.append(Entity(name, attributes: [Attribute("a", .string), Attribute("b", .int64)], relationships: relationships[name] ?? []))
        }
        schema = try! Schema(entities)
        self.identities = identities
        self.owned = owned
        self.stringIDs = stringIDs
        self.forward = forward
    }

    var description: String {
        schema.entities.map { entity in
            "\(entity.name)(\(entity.attributes.map { "\($0.name): \($0.type)" }.joined(separator: ", ")))"
                + entity.relationships.map { r in
                    " \(r.name) -> \(r.isToMany ? "[\(r.destination)\(r.isOrdered ? ", ordered" : "")]" : r.destination)\(r.inverse.map { " (\($0))" } ?? "")"
                        + (forward[entity.name]?.contains { $0.relationship.name == r.name } == true ? "*" : "")
                }.joined()
        }.joined(separator: "\n")
    }

    // MARK: Payloads

    /// A payload of 1 to 8 objects of an entity with identity, from a small pool of ids (so that
    /// objects repeat), with nested objects to depth 3 and references to ids that may never come.
    func payload(_ random: inout SeededRandom) -> (entity: String, text: String) {
        let entity = random.pick(identities)
        let objects = (0..<(1 + random.below(8))).map { _ in object(entity, depth: 0, &random) }
        let list = "[" + objects.joined(separator: ", ") + "]"
        return (entity, random.chance(25) ? #"{"object": "list", "data": \#(list), "has_more": false}"# : list)
    }

    func idText(_ entity: String, _ n: Int, _ random: inout SeededRandom) -> String {
        if stringIDs.contains(entity) { return "\"s\(n)\"" }
        return random.chance(20) ? "\"\(n)\"" : "\(n)"
    }

    func scalars(_ random: inout SeededRandom) -> [String] {
        var members: [String] = []
        if random.chance(60) { members.append(random.chance(15) ? "\"a\": null" : "\"a\": \"\(random.pick(["x", "y", "z", "ü"]))\"") }
        if random.chance(60) { members.append(random.chance(15) ? "\"b\": null" : "\"b\": \(random.below(3))") }
        return members
    }

    func object(_ entity: String, depth: Int, _ random: inout SeededRandom) -> String {
        var members = ["\"id\": \(idText(entity, random.below(6), &random))"] + scalars(&random)
        members += relationships(of: entity, depth: depth, &random)
        return "{" + random.shuffled(members).joined(separator: ", ") + "}"
    }

    func ownedObject(_ entity: String, depth: Int, _ random: inout SeededRandom) -> String {
        "{" + (scalars(&random) + relationships(of: entity, depth: depth, &random)).joined(separator: ", ") + "}"
    }

    func relationships(of entity: String, depth: Int, _ random: inout SeededRandom) -> [String] {
        var members: [String] = []
        for link in forward[entity] ?? [] where random.chance(depth < 3 ? 45 : 0) {
            let r = link.relationship
            let destination = r.destination
            if link.owning {
                if random.chance(10) {
                    members.append("\"\(r.name)\": null")
                } else if r.isToMany {
                    let count = random.below(4)
                    members.append("\"\(r.name)\": [" + (0..<count).map { _ in ownedObject(destination, depth: depth + 1, &random) }.joined(separator: ", ") + "]")
                } else {
                    members.append("\"\(r.name)\": " + ownedObject(destination, depth: depth + 1, &random))
                }
                continue
            }
            let foreignKey = VerbatimNaming().foreignKey(for: r, in: entity)
            // (An owned object names other objects by id: nesting one that could nest the owned
            // object's own parent again would make a cycle no real payload has.)
            let isOwned = owned.contains(entity)
            switch isOwned ? 1 + random.below(r.isToMany ? 2 : 3) : random.below(r.isToMany ? 3 : 4) {
            case 0:  // nested objects
                if r.isToMany {
                    let ids = random.shuffled(Array(0..<6)).prefix(random.below(4))
                    members.append("\"\(r.name)\": [" + ids.map { _ in object(destination, depth: depth + 1, &random) }.joined(separator: ", ") + "]")
                } else {
                    members.append("\"\(r.name)\": " + object(destination, depth: depth + 1, &random))
                }
            case 1:  // ids, of objects that may never come (the pool of ids is larger than the payloads')
                if r.isToMany {
                    let ids = random.shuffled(Array(0..<8)).prefix(random.below(4))
                    members.append("\"\(foreignKey)\": [" + ids.map { idText(destination, $0, &random) }.joined(separator: ", ") + "]")
                } else {
                    members.append("\"\(foreignKey)\": \(idText(destination, random.below(8), &random))")
                }
            case 2:
                members.append(r.isToMany ? "\"\(r.name)\": []" : "\"\(r.name)\": null")
            default:
                members.append("\"\(foreignKey)\": null")
            }
        }
        return members
    }

    // MARK: Dumps

    /// The graph a client's store holds, as text: each object with identity by its id, with its
    /// attributes and links (owned objects inline, as values), and the count of every entity.
    func dump(_ client: Client) async throws -> String {
        var graph = Graph()
        for entity in schema.entities {
            for object in try await client.fetch(Query(entity.name)) {
                let node = "\(object.id)"
                graph.entity[node] = entity.name
                graph.attributes[node] = object.values
                for relationship in entity.relationships {
                    graph.links[node, default: [:]][relationship.name] = try await client.related(relationship.name, of: object.id).map { "\($0.id)" }
                }
            }
        }
        return graph.text(self)
    }
}

/// A graph of objects named by strings: what a store holds, or what the reference importer made.
struct Graph {
    var entity: [String: String] = [:]
    var attributes: [String: [String: Value]] = [:]
    var links: [String: [String: [String]]] = [:]

    func text(_ generated: GeneratedSchema) -> String {
        func key(_ node: String) -> String {
            attributes[node]?["id"].map { value in
                if case .string(let s) = value { return s }
                if case .int(let i) = value { return "\(i)" }
                return "\(value)"
            } ?? "?"
        }
        func values(_ node: String) -> String {
            (attributes[node] ?? [:]).filter { $0.key != "id" }.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        func render(_ node: String, depth: Int) -> String {
            let name = entity[node]!
            let isOwned = generated.owned.contains(name)
            var parts = [isOwned ? "{\(values(node))" : "\(name)[\(key(node))] \(values(node))"]
            for relationship in generated.schema[name]!.relationships {
                let targets = links[node]?[relationship.name] ?? []
                let owning = generated.forward[name]?.first { $0.relationship.name == relationship.name }?.owning == true
                let toOwned = generated.owned.contains(relationship.destination)
                if toOwned && !owning && isOwned { continue }  // the link back to an owned parent
                let forward = generated.forward[name]?.contains { $0.relationship.name == relationship.name } == true
                var rendered = targets.map { target in
                    toOwned ? (depth < 6 ? render(target, depth: depth + 1) : "…") : "\(relationship.destination)[\(key(target))]"
                }
                if !(forward && relationship.isOrdered) && !(owning && relationship.isToMany) { rendered.sort() }
                if !targets.isEmpty { parts.append("\(relationship.name): [\(rendered.joined(separator: ", "))]") }
            }
            return parts.joined(separator: " ") + (isOwned ? "}" : "")
        }
        var lines: [String] = []
        for name in generated.schema.entities.map(\.name) {
            let nodes = entity.filter { $0.value == name }.map(\.key)
            lines.append("count \(name) = \(nodes.count)")
            if !generated.owned.contains(name) { lines += nodes.map { render($0, depth: 0) }.sorted() }
        }
        return lines.joined(separator: "\n")
    }
}

// MARK: - The reference importer

/// Imports a payload one object at a time into dictionaries: the rules of Docs/Keeping-In-Step.md
/// written as plainly as possible, with no batching and nothing remembered.
final class ReferenceImporter {
    let generated: GeneratedSchema
    var graph = Graph()
    private var serial = 0
    private var byKey: [String: [String: String]] = [:]  // entity -> identity key -> node
    private struct Pending {
        let source: String
        let relationship: String
        let entity: String
        let key: String
        let position: Int
    }
    private var pending: [Pending] = []

    init(_ generated: GeneratedSchema) { self.generated = generated }

    func dump() -> String { graph.text(generated) }

    func `import`(_ json: JSON, as entity: String) {
        guard case .array(let elements) = json["data"] ?? json else { return }
        for element in elements { _ = applyIdentified(entity, element) }
    }

    private func relationship(_ entity: String, _ name: String) -> Relationship { generated.schema[entity]!.relationship(named: name)! }

    private func key(_ entity: String, _ json: JSON) -> String? {
        switch json {
        case .string(let s): return generated.stringIDs.contains(entity) ? s : (Int64(s).map { "\($0)" })
        case .int(let i): return generated.stringIDs.contains(entity) ? nil : "\(i)"
        default: return nil
        }
    }

    private func create(_ entity: String) -> String {
        serial += 1
        let node = "r\(serial)"
        graph.entity[node] = entity
        graph.attributes[node] = [:]
        graph.links[node] = [:]
        return node
    }

    /// Finds or creates the object, applies its attributes and relationships, in payload order.
    private func applyIdentified(_ entity: String, _ json: JSON) -> String? {
        guard case .object(let members) = json, let id = members["id"], let key = key(entity, id) else { return nil }
        let node: String
        if let known = byKey[entity]?[key] {
            node = known
        } else {
            node = create(entity)
            byKey[entity, default: [:]][key] = node
            graph.attributes[node]!["id"] = generated.stringIDs.contains(entity) ? .string(key) : .int(Int64(key)!)
            resolvePending(entity, key, node)
        }
        applyBody(node, members, whole: false, parentInverse: nil)
        return node
    }

    private func attribute(_ name: String, _ json: JSON) -> Value? {
        switch json {
        case .string(let s): return .string(s)
        case .int(let i): return .int(i)
        default: return nil
        }
    }

    /// Attributes, then each relationship (in the entity's order) the object gives. An owned
    /// object is given whole: what it does not give is cleared.
    private func applyBody(_ node: String, _ members: [String: JSON], whole: Bool, parentInverse: String?) {
        let entity = graph.entity[node]!
        for name in ["a", "b"] {
            if let json = members[name] {
                graph.attributes[node]![name] = attribute(name, json)
            } else if whole {
                graph.attributes[node]![name] = nil
            }
        }
        for r in generated.schema[entity]!.relationships where r.name != parentInverse {
            let foreignKey = VerbatimNaming().foreignKey(for: r, in: entity)
            let owning = generated.owned.contains(r.destination)
            if let nested = members[r.name] {
                if owning {
                    applyOwned(node, r, nested)
                } else {
                    switch nested {
                    case .null: set(node, r, [])
                    case .object: set(node, r, applyIdentified(r.destination, nested).map { [$0] } ?? [])
                    case .array(let elements): set(node, r, elements.compactMap { applyIdentified(r.destination, $0) })
                    default: break
                    }
                }
            } else if let reference = members[foreignKey] {
                switch reference {
                case .null: set(node, r, [])
                case .array(let elements): setByIDs(node, r, elements.compactMap { key(r.destination, $0) })
                default: setByIDs(node, r, key(r.destination, reference).map { [$0] } ?? [])
                }
            } else if whole {
                if owning { applyOwned(node, r, .null) } else { set(node, r, []) }
            }
        }
    }

    /// Owned objects: the i-th given is the parent's i-th current one, given whole; the current
    /// ones past the given ones are deleted.
    private func applyOwned(_ parent: String, _ r: Relationship, _ json: JSON) {
        let given: [JSON] = switch json {
        case .array(let elements): elements.filter { $0 != .null }
        case .object: [json]
        default: []
        }
        let current = graph.links[parent]![r.name] ?? []
        var result: [String] = []
        for (i, element) in given.enumerated() {
            guard case .object(let members) = element else { continue }
            let node = i < current.count ? current[i] : create(r.destination)
            result.append(node)
            applyBody(node, members, whole: true, parentInverse: r.inverse)
        }
        for gone in current.dropFirst(given.count) { deleteOwned(gone) }
        set(parent, r, result)
    }

    private func deleteOwned(_ node: String) {
        let entity = graph.entity[node]!
        for r in generated.schema[entity]!.relationships where generated.forward[entity]?.first(where: { $0.relationship.name == r.name })?.owning == true {
            for child in graph.links[node]?[r.name] ?? [] { deleteOwned(child) }
        }
        for r in generated.schema[entity]!.relationships { set(node, r, []) }
        graph.entity[node] = nil
        graph.attributes[node] = nil
        graph.links[node] = nil
        pending.removeAll { $0.source == node }
    }

    private func setByIDs(_ node: String, _ r: Relationship, _ keys: [String]) {
        var targets: [String] = []
        var missing: [(key: String, position: Int)] = []
        for (position, key) in keys.enumerated() {
            if let target = byKey[r.destination]?[key] { targets.append(target) } else { missing.append((key, position)) }
        }
        set(node, r, targets)
        for (key, position) in missing { pending.append(Pending(source: node, relationship: r.name, entity: r.destination, key: key, position: position)) }
    }

    private func resolvePending(_ entity: String, _ key: String, _ node: String) {
        let matching = pending.filter { $0.entity == entity && $0.key == key }
        pending.removeAll { $0.entity == entity && $0.key == key }
        for reference in matching where graph.entity[reference.source] != nil {
            let r = relationship(graph.entity[reference.source]!, reference.relationship)
            if r.isToMany {
                var linked = graph.links[reference.source]![r.name] ?? []
                guard !linked.contains(node) else { continue }
                linked.insert(node, at: min(reference.position, linked.count))
                set(reference.source, r, linked, keepingPending: true)
            } else {
                set(reference.source, r, [node], keepingPending: true)
            }
        }
    }

    /// Sets a relationship to exactly `targets`, keeping both sides in step: a target of a
    /// relationship whose inverse is to-one leaves the object it was linked to.
    /// Setting a relationship replaces what was pending for it, but when a pending reference is
    /// made (`keepingPending`).
    private func set(_ node: String, _ r: Relationship, _ listed: [String], keepingPending: Bool = false) {
        var targets: [String] = []  // an object listed twice is linked once, where it is first listed
        for target in listed where !targets.contains(target) { targets.append(target) }
        let old = graph.links[node]![r.name] ?? []
        if let inverse = r.inverse {
            let inverseIsToMany = relationship(r.destination, inverse).isToMany
            for gone in old where !targets.contains(gone) { graph.links[gone]?[inverse]?.removeAll { $0 == node } }
            for target in targets where !old.contains(target) || !inverseIsToMany {
                if inverseIsToMany {
                    graph.links[target]![inverse, default: []].append(node)
                } else {
                    if let previous = graph.links[target]![inverse]?.first, previous != node {
                        graph.links[previous]?[r.name]?.removeAll { $0 == target }
                    }
                    graph.links[target]![inverse] = [node]
                }
            }
        }
        graph.links[node]![r.name] = targets
        if !keepingPending { pending.removeAll { $0.source == node && $0.relationship == r.name } }
    }
}
