// Fuzz target 2: a full import into the in-memory store. Compiled into one module with Tether's
// sources (Fuzz/build.sh).
//
// The bytes are imported as `Repo`s (nested to-one `owner`, to-many `labels`, id references
// `owner_id`, `label_ids`, `parent_id`, an ordered to-many `forks`) into a store that already
// holds data. For any bytes:
// - batch sizes 1, 2, 3 and the default give the same outcome: the same error, or the same
//   result (objects, inserted, the existing objects named, diagnostics) and the same store
//   afterwards (every object's values and links, by identity); a new object is reported
//   inserted, and no object whose values changed is reported unchanged (which of the objects
//   named are reported updated may depend on the batch size: see `Outcome`);
// - the bytes and their parsed `JSON` tree give the same outcome (a syntax error: the parser's
//   error), and so does the streamed import of a file with those bytes;
// - `.fail` throws exactly when `.report` rejects something or throws (the same syntax error;
//   the first rejection's `ImportError`), and otherwise gives the same outcome;
// - an import that throws changes nothing.
// Each input is imported as bytes at the default batch size (the reference), and then one other
// way that varies with the input (a hash of it): as bytes with a batch size of 1 to 3, as a file
// or as a tree with `.report`, or as bytes with `.fail` (the last three at the default batch size
// or one of 1 to 3).
// A disagreement stops the fuzzer (fatalError).

import Foundation

enum ImportOracle {
    static let schema = try! Schema {
        Entity("Repo") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Attribute("stars", .int32)
            Attribute("score", .double)
            Attribute("created", .date)
            Attribute("private", .bool)
            Relationship.toOne("owner", "User", inverse: "repos")
            Relationship.toMany("labels", "Label", inverse: "repos")
            Relationship.toOne("parent", "Repo", inverse: "forks")
            Relationship.toMany("forks", "Repo", inverse: "parent", ordered: true)
        }
        Entity("User") {
            Attribute("id", .int64)
            Attribute("login", .string)
            Relationship.toMany("repos", "Repo", inverse: "owner")
        }
        Entity("Label", identity: "name") {
            Attribute("name", .string)
            Attribute("color", .string)
            Relationship.toMany("repos", "Repo", inverse: "labels")
        }
    }

    /// What the store holds before each import.
    static let existing = Data(#"""
        [{"id":1,"name":"one","stars":5,"owner":{"id":10,"login":"ten"},"labels":[{"name":"bug","color":"red"},{"name":"ui"}]},
         {"id":2,"name":"two","owner_id":10,"label_ids":["bug"],"parent":{"id":1},"created":"2020-01-01T00:00:00Z"},
         {"id":3,"parent":{"id":1},"owner":{"id":11,"login":"eleven"},"score":1.5,"private":true}]
        """#.utf8)

    enum Source: String { case bytes, tree, file }

    struct Config: CustomStringConvertible {
        var source: Source
        var batchSize: Int?
        var policy: ImportOptions.Policy
        var description: String { "\(source), batch \(batchSize.map(String.init) ?? "default"), \(policy)" }
    }

    /// An import's outcome, by identity (row ids depend on the order of inserts).
    ///
    /// Which existing objects an import reports as updated and which as unchanged may depend on
    /// the batch size where an object changes and changes back (a repeat in a later batch, or a
    /// link set by one batch and undone by the next: each batch writes what it changes). So
    /// outcomes compare the objects the import named (`touched`, updated or unchanged) rather
    /// than the split, and check that no object whose values changed is reported unchanged
    /// (``check(changedFrom:_:_:)``).
    struct Outcome: Equatable, CustomStringConvertible {
        /// The error's type and text, or nil.
        var error: [UInt8]?
        var errorValue: (any Error)?
        var objects: [String] = []
        var inserted: [String] = []
        var updated: [String] = []
        var unchanged: [String] = []
        var diagnostics: [ImportDiagnostic] = []
        /// The store afterwards: a line per object (values and links), by the object's name.
        var store: Dump = Dump()

        var touched: [[UInt8]] { (updated + unchanged).utf8.sorted { $0.lexicographicallyPrecedes($1) } }

        static func == (a: Outcome, b: Outcome) -> Bool {
            a.error == b.error && a.objects.utf8 == b.objects.utf8 && a.inserted.utf8 == b.inserted.utf8
                && a.touched == b.touched && a.store == b.store
                && a.diagnostics.map(\.description).utf8 == b.diagnostics.map(\.description).utf8
        }

        /// Every object of the payload whose values differ from `before` was reported inserted
        /// or updated, and so was every new object. (Links are not checked here: an object
        /// outside the payload whose link changes as the inverse of one the payload sets is not
        /// named in the result.)
        func check(changedFrom before: Dump, _ data: Data, _ config: Config) {
            guard error == nil else { return }
            let reported = Set((inserted + updated).utf8)
            for name in unchanged.utf8 where before.values[name] != store.values[name] {
                fail("\(config): an object reported unchanged changed", data,
                     "\(String(decoding: name, as: UTF8.self))\n\(self)\nbefore:\n\(before)")
            }
            for name in store.lines.keys where before.lines[name] == nil && !reported.contains(name) {
                fail("\(config): a new object was not reported inserted", data, "\(String(decoding: name, as: UTF8.self))\n\(self)")
            }
        }

        var description: String {
            if let error { return "error \(String(decoding: error, as: UTF8.self))\nstore:\n\(store)" }
            return """
                objects \(objects)
                inserted \(inserted)
                updated \(updated)
                unchanged \(unchanged)
                diagnostics \(diagnostics.map(\.description))
                store:
                \(store)
                """
        }
    }

    /// The objects of a store, by name (`Repo(1)`, as bytes: two names that differ only in
    /// normalization form are two objects).
    struct Dump: Equatable, CustomStringConvertible {
        /// Values and links.
        var lines: [[UInt8]: [UInt8]] = [:]
        /// Values only.
        var values: [[UInt8]: [UInt8]] = [:]
        var description: String {
            lines.keys.sorted { $0.lexicographicallyPrecedes($1) }.map { String(decoding: lines[$0]!, as: UTF8.self) }.joined(separator: "\n")
        }
    }

    static let fileURL = URL(fileURLWithPath: NSTemporaryDirectory())
        .appendingPathComponent("tether-fuzz-import-\(ProcessInfo.processInfo.processIdentifier).json")

    /// The store before every import (the same for every input).
    nonisolated(unsafe) static var baselineStore: Dump?

    static func check(_ data: Data) async {
        let parsed: Result<JSON, JSONParseError> = Result { () throws(JSONParseError) in try JSONParser.parse(data) }
        let baseline: Dump
        if let known = baselineStore {
            baseline = known
        } else {
            baseline = await dump(await makeClient(ImportOptions())).store
            baselineStore = baseline
        }
        let reference = await run(data, parsed, Config(source: .bytes, batchSize: nil, policy: .report))
        reference.check(changedFrom: baseline, data, Config(source: .bytes, batchSize: nil, policy: .report))

        // Anything that throws changes nothing.
        if reference.error != nil, reference.store != baseline {
            fail("a failed import changed the store", data, "\(reference)\nbefore:\n\(baseline)")
        }
        // A syntax error is the parser's error.
        if case .failure(let error) = parsed {
            guard let thrown = reference.errorValue as? JSONParseError, thrown == error else {
                fail("a malformed payload did not throw the parser's error", data, "\(error) vs \(reference)")
            }
        }

        // One other way, chosen by the input (a hash of it, the same in every run), so that each
        // input costs two imports and every way is tried over the run.
        let seed = data.withUnsafeBytes { UInt(bitPattern: KeyTable.hash($0.bindMemory(to: UInt8.self))) }
        var way = Int(seed % 4)  // 0: bytes, 1: file, 2: tree, 3: .fail
        if way == 2, parsed.isFailure || hasEquivalentKeys(data) { way = 1 }
        let batchSize: Int? = way == 0 || seed >> 2 & 1 == 1 ? 1 + Int(seed >> 3 % 3) : nil
        switch way {
        case 0, 1, 2:
            let config = Config(source: way == 0 ? .bytes : way == 1 ? .file : .tree, batchSize: batchSize, policy: .report)
            let outcome = await run(data, parsed, config)
            if outcome != reference {
                fail("\(config) disagrees with bytes, default batch, report", data, "\(reference)\n--- vs ---\n\(outcome)")
            }
            outcome.check(changedFrom: baseline, data, config)
        default:
            await checkFail(data, parsed, reference, baseline, Config(source: .bytes, batchSize: batchSize, policy: .fail))
        }
    }

    /// `.fail` throws exactly when `.report` rejects something or throws. (A pending reference is
    /// not a rejection: the link is kept.)
    static func checkFail(_ data: Data, _ parsed: Result<JSON, JSONParseError>, _ reference: Outcome, _ baseline: Dump, _ config: Config) async {
        let outcome = await run(data, parsed, config)
        let rejections = reference.diagnostics.filter { $0.problem != .pendingReference }
        if reference.error == nil, rejections.isEmpty {
            if outcome != reference {
                fail("\(config) disagrees with report (no rejection)", data, "\(reference)\n--- vs ---\n\(outcome)")
            }
            outcome.check(changedFrom: baseline, data, config)
            return
        }
        guard outcome.error != nil else {
            fail("\(config) did not throw, report rejected \(rejections.count)", data, "\(reference)\n--- vs ---\n\(outcome)")
        }
        if outcome.store != baseline { fail("\(config) threw and changed the store", data, "\(outcome)") }
        if let error = reference.errorValue as? JSONParseError {
            if (outcome.errorValue as? JSONParseError) != error { fail("\(config): another error than report's syntax error", data, "\(reference)\n--- vs ---\n\(outcome)") }
        } else if reference.errorValue == nil {
            let expected = ImportError(rejections[0])
            guard let thrown = outcome.errorValue as? ImportError, Array(thrown.description.utf8) == Array(expected.description.utf8) else {
                fail("\(config) did not throw the first rejection", data, "expected \(expected)\n\(reference)\n--- vs ---\n\(outcome)")
            }
        }
    }

    static func makeClient(_ options: ImportOptions) async -> Client {
        do {
            let client = try Client.Builder(schema: schema).importOptions(options).build()
            let result = try await client.import(existing, as: "Repo")
            precondition(result.diagnostics.isEmpty, "\(result.diagnostics)")
            return client
        } catch {
            fatalError("setting up: \(error)")
        }
    }

    static func run(_ data: Data, _ parsed: Result<JSON, JSONParseError>, _ config: Config) async -> Outcome {
        var options = ImportOptions(policy: config.policy)
        if let size = config.batchSize { options.batchSize = size }
        let client = await makeClient(options)
        var outcome = Outcome()
        do {
            let result: ImportResult
            switch config.source {
            case .bytes:
                result = try await client.import(data, as: "Repo")
            case .tree:
                result = try await client.import(try parsed.get(), as: "Repo")
            case .file:
                try data.write(to: fileURL)
                result = try await client.import(contentsOf: fileURL, as: "Repo")
            }
            let (_, names) = await dump(client)
            func named(_ ids: ObjectIDList) -> [String] {
                ids.map { id in
                    guard let name = names[id] else { fail("a result names an object the store does not hold", data, "\(id)") }
                    return name
                }
            }
            outcome.objects = named(result.objects)
            outcome.inserted = named(result.inserted).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            outcome.updated = named(result.updated).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            outcome.unchanged = named(result.unchanged).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            outcome.diagnostics = result.diagnostics
        } catch {
            outcome.error = Array("\(type(of: error)): \(error)".utf8)
            outcome.errorValue = error
        }
        outcome.store = await dump(client).store
        return outcome
    }

    /// Every object by identity, with its values and links; and the name of each object id.
    static func dump(_ client: Client) async -> (store: Dump, names: [ObjectID: String]) {
        do {
            return try await client.store.read { reader in
                var names: [ObjectID: String] = [:]
                var objects: [(String, Object)] = []
                var seen = Set<[UInt8]>()
                for entity in ["Label", "Repo", "User"] {
                    for object in try reader.fetch(Query(entity)) {
                        let key = entity == "Label" ? "name" : "id"
                        guard let identity = object[key] else {
                            fail("an object without its identity", Data(), "\(object)")
                        }
                        let name = "\(entity)(\(identity))"
                        if !seen.insert(Array(name.utf8)).inserted { fail("two objects with one identity", Data(), name) }
                        names[object.id] = name
                        objects.append((name, object))
                    }
                }
                // The links, one call per relationship.
                var links: [String: [ObjectID: [ObjectID]]] = [:]
                for entity in schema.entities {
                    let ids = objects.lazy.filter { $0.1.entity == entity.name }.map(\.1.id)
                    for relationship in entity.relationships {
                        links[entity.name + "." + relationship.name] = try reader.related(relationship.name, of: Array(ids))
                    }
                }
                var dump = Dump()
                for (name, object) in objects {
                    var line = name
                    for key in object.values.keys.sorted() { line += " \(key)=\(object.values[key]!)" }
                    dump.values[Array(name.utf8)] = Array(line.utf8)
                    let entity = schema.entities.first { $0.name == object.entity }!
                    for relationship in entity.relationships {
                        var targets = links[entity.name + "." + relationship.name]![object.id, default: []].map { names[$0]! }
                        if !relationship.isOrdered { targets.sort { $0.utf8.lexicographicallyPrecedes($1.utf8) } }
                        if !targets.isEmpty { line += " \(relationship.name)->\(targets)" }
                    }
                    dump.lines[Array(name.utf8)] = Array(line.utf8)
                }
                return (dump, names)
            }
        } catch {
            fatalError("reading the store: \(error)")
        }
    }

    /// Whether an object of the payload has two keys with different bytes that Swift's `String`
    /// takes as equal (canonically equivalent): a `JSON` tree, a `[String: JSON]`, keeps one of
    /// them, so the tree import cannot see what the bytes import sees.
    static func hasEquivalentKeys(_ data: Data) -> Bool {
        data.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            guard let tape = try? JSONTape(parsing: bytes) else { return false }
            return tape.withRoots(bytes: bytes) { roots in equivalentKeys(roots[0]) }
        }
    }

    static func equivalentKeys(_ value: TapeValue) -> Bool {
        switch value.kind {
        case .array:
            return value.elements.contains(where: equivalentKeys)
        case .object:
            var strings = Set<String>(), byteKeys = Set<[UInt8]>()
            var i = value.index + 1
            for _ in 0..<value.entry.length {
                let key = TapeValue(entries: value.entries, bytes: value.bytes, index: i).stringValue ?? ""
                strings.insert(key)
                byteKeys.insert(Array(key.utf8))
                if equivalentKeys(TapeValue(entries: value.entries, bytes: value.bytes, index: i + 1)) { return true }
                i = Int(value.entries[i + 1].next)
            }
            return strings.count != byteKeys.count
        default:
            return false
        }
    }
}

extension Result {
    var isFailure: Bool { if case .failure = self { true } else { false } }
}

extension Array where Element == String {
    /// The strings' bytes, so that arrays compare byte for byte (not by canonical equivalence).
    var utf8: [[UInt8]] { map { [UInt8]($0.utf8) } }
}
