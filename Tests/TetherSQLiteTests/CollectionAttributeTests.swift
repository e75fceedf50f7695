import Foundation
import Testing
import Tether
import TetherSQLite

/// Array, map and JSON attributes (`AttributeType.array`, `.map`, `.json`) on both stores: stored
/// and read back exactly, compared for changes (an unchanged re-import writes nothing), exported
/// in request bodies, found by `.includes`, refused as sort keys, rejected element by element with
/// a diagnostic, added to an existing SQLite file, and held by typed models.
@Suite struct CollectionAttributeTests {
    static let schema = try! Schema {
        Entity("Repo", identity: "id") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Attribute("topics", .array(.string))
            Attribute("votes", .array(.int64))
            Attribute("ratios", .array(.double))
            Attribute("flags", .array(.bool))
            Attribute("stamps", .array(.date))
            Attribute("metadata", .map(.string))
            Attribute("counts", .map(.int32))
            Attribute("extra", .json)
        }
    }

    /// Each store a test runs on, by name: a fresh client over it.
    static let stores: [String] = ["memory", "sqlite"]

    static func client(_ store: String, _ directory: TemporaryDirectory, schema: Schema = schema) throws -> Client {
        let builder = Client.Builder(schema: schema)
        return store == "sqlite" ? try builder.store(try SQLiteStore(path: directory.path())).build() : try builder.build()
    }

    static let payload = #"""
        [{"id": 1, "name": "tether", "topics": ["swift", "ios", "e\u0301", ""], "votes": [0, 2, -9223372036854775808],
          "ratios": [0.5, 2, -0.0, 1e300], "flags": [true, false], "stamps": ["2024-05-06T07:08:09Z", 0],
          "metadata": {"order_id": "6735", "": "empty key", "ü": "ß"}, "counts": {"a": 1, "b": -2},
          "extra": {"nested": [1, 2.5, "x", null, {"deep": true}], "n": null}},
         {"id": 2, "name": "empty", "topics": [], "votes": [], "metadata": {}, "extra": "just a string"},
         {"id": 3, "name": "none"}]
        """#

    static func repo(_ client: Client, _ id: Int64) async throws -> [String: Value] {
        try #require(await client.fetch(Query("Repo", where: .equal("id", .int(id)))).first).values
    }

    @Test(arguments: stores) func storedAndReadBackExactly(store: String) async throws {
        let directory = try TemporaryDirectory()
        let client = try Self.client(store, directory)
        let result = try await client.import(Data(Self.payload.utf8), as: "Repo")
        #expect(result.diagnostics.isEmpty, "\(result.diagnostics)")
        let one = try await Self.repo(client, 1)
        #expect(one["topics"] == .array([.string("swift"), .string("ios"), .string("e\u{301}"), .string("")]))
        #expect(one["votes"] == .array([.int(0), .int(2), .int(.min)]))
        #expect(one["ratios"] == .array([.double(0.5), .double(2), .double(-0.0), .double(1e300)]))
        #expect(one["flags"] == .array([.bool(true), .bool(false)]))
        #expect(one["stamps"] == .array([.date(Date(timeIntervalSince1970: 1_714_979_289)), .date(Date(timeIntervalSince1970: 0))]))
        #expect(one["metadata"] == .map(["order_id": .string("6735"), "": .string("empty key"), "ü": .string("ß")]))
        #expect(one["counts"] == .map(["a": .int(1), "b": .int(-2)]))
        #expect(one["extra"] == .json(["nested": [1, 2.5, "x", nil, ["deep": true]], "n": nil]))
        // The decomposed accent keeps its scalars.
        if case .array(let topics)? = one["topics"], case .string(let accent) = topics[2] {
            #expect(Array(accent.unicodeScalars) == ["e", "\u{301}"])
        }
        let two = try await Self.repo(client, 2)
        #expect(two["topics"] == .array([]) && two["votes"] == .array([]) && two["metadata"] == .map([:]))
        #expect(two["extra"] == .json("just a string"))
        let three = try await Self.repo(client, 3)
        #expect(three["topics"] == nil && three["extra"] == nil)

        if store == "sqlite" {  // and after a reopen
            let reopened = try Self.client(store, directory)
            #expect(try await Self.repo(reopened, 1) == one)
            #expect(try await Self.repo(reopened, 2) == two)
        }
    }

    @Test(arguments: stores) func anUnchangedReimportWritesNothingAndAChangeIsSeen(store: String) async throws {
        let directory = try TemporaryDirectory()
        let client = try Self.client(store, directory)
        _ = try await client.import(Data(Self.payload.utf8), as: "Repo")
        // The same values, keys in another order and the numbers spelled otherwise.
        let same = #"""
            [{"id": 1, "name": "tether", "topics": ["swift", "ios", "e\u0301", ""], "votes": [0, 2.0, -9223372036854775808],
              "ratios": [0.5, 2.0, -0.0, 1e300], "flags": [true, false], "stamps": ["2024-05-06T07:08:09Z", 0],
              "metadata": {"ü": "ß", "": "empty key", "order_id": "6735"}, "counts": {"b": -2, "a": 1},
              "extra": {"n": null, "nested": [1, 2.5, "x", null, {"deep": true}]}}]
            """#
        let again = try await client.import(Data(same.utf8), as: "Repo")
        #expect(again.updated.isEmpty, "an unchanged re-import updates nothing: \(again.updated)")
        #expect(again.unchanged.count == 1)

        for (changed, attribute) in [
            (#"[{"id": 1, "topics": ["swift", "ios", "e\u0301"]}]"#, "topics"),      // one element fewer
            (#"[{"id": 1, "topics": ["swift", "ios", "\u00e9", ""]}]"#, "topics"),   // composed: another string
            (#"[{"id": 1, "votes": [2, 0, -9223372036854775808]}]"#, "votes"),       // another order
            (#"[{"id": 1, "metadata": {"order_id": "6736", "": "empty key", "ü": "ß"}}]"#, "metadata"),
            (#"[{"id": 1, "extra": {"nested": [1, 2.5, "x", null, {"deep": false}], "n": null}}]"#, "extra"),
            (#"[{"id": 1, "extra": {"nested": [1.0, 2.5, "x", null, {"deep": false}], "n": null}}]"#, "extra"),  // 1 → 1.0
        ] {
            let result = try await client.import(Data(changed.utf8), as: "Repo")
            #expect(result.updated.count == 1, "\(attribute) changed: \(changed)")
            let stored = try await Self.repo(client, 1)[attribute]
            let expected = try #require(try JSON(parsing: changed)[0]?[attribute])
            #expect(stored.map { "\($0)" } == "\(try #require(Self.valueOf(expected, attribute)))")
        }
        // null clears, as for any attribute
        _ = try await client.import(Data(#"[{"id": 1, "topics": null, "extra": null}]"#.utf8), as: "Repo")
        let cleared = try await Self.repo(client, 1)
        #expect(cleared["topics"] == nil && cleared["extra"] == nil)
    }

    /// The value `json` of `attribute` should be stored as (for the change test's expectations).
    static func valueOf(_ json: JSON, _ attribute: String) -> Value? {
        switch attribute {
        case "topics": .array(json.arrayValue!.map { .string($0.stringValue!) })
        case "votes": .array(json.arrayValue!.map { .int($0.int64Value!) })
        case "metadata": .map(json.objectValue!.mapValues { .string($0.stringValue!) })
        case "extra": .json(json)
        default: nil
        }
    }

    @Test(arguments: stores) func exportedInRequestBodies(store: String) async throws {
        let directory = try TemporaryDirectory()
        let client = try Self.client(store, directory)
        let result = try await client.import(Data(Self.payload.utf8), as: "Repo")
        let body = try await client.export(result.objects[0])
        #expect(body["topics"] == ["swift", "ios", "e\u{301}", ""])
        #expect(body["votes"] == [0, 2, .int(.min)])
        #expect(body["ratios"] == [0.5, 2.0, -0.0, 1e300])
        #expect(body["flags"] == [true, false])
        #expect(body["stamps"] == .array([client.dateDecoding.json(from: Date(timeIntervalSince1970: 1_714_979_289)),
                                          client.dateDecoding.json(from: Date(timeIntervalSince1970: 0))]))
        #expect(body["metadata"] == ["order_id": "6735", "": "empty key", "ü": "ß"])
        #expect(body["counts"] == ["a": 1, "b": -2])
        #expect(body["extra"] == ["nested": [1, 2.5, "x", nil, ["deep": true]], "n": nil])
        // What is exported imports back to the same values.
        let values = try await Self.repo(client, 1)
        var copy = try #require(body.objectValue)
        copy["id"] = 10
        _ = try await client.import(.array([.object(copy)]), as: "Repo")
        var back = try await Self.repo(client, 10)
        back["id"] = .int(1)
        #expect(back == values)
    }

    @Test(arguments: stores) func includesFindsAnElementAndNothingElseComparesCollections(store: String) async throws {
        let directory = try TemporaryDirectory()
        let client = try Self.client(store, directory)
        _ = try await client.import(Data(Self.payload.utf8), as: "Repo")
        func ids(_ condition: Condition) async throws -> [Int64] {
            try await client.fetch(Query("Repo", where: condition, sortedBy: [.ascending("id")])).map {
                if case .int(let id)? = $0.values["id"] { return id } else { return -1 }
            }
        }
        #expect(try await ids(.includes("topics", .string("swift"))) == [1])
        #expect(try await ids(.includes("topics", .string(""))) == [1])
        #expect(try await ids(.includes("topics", .string("e\u{301}"))) == [1])
        #expect(try await ids(.includes("topics", .string("\u{E9}"))) == [])       // bytes, as strings compare
        #expect(try await ids(.includes("topics", .string("swif"))) == [])
        // A NUL inside an element (SQLite's JSON functions would end the string there).
        _ = try await client.import(Data(#"[{"id": 4, "topics": ["a\u0000b", "\u0000", "c"]}]"#.utf8), as: "Repo")
        #expect(try await ids(.includes("topics", .string("a"))) == [])
        #expect(try await ids(.includes("topics", .string("a\u{0}b"))) == [4])
        #expect(try await ids(.includes("topics", .string("\u{0}"))) == [4])
        #expect(try await ids(.includes("topics", .string(""))) == [1])
        #expect(try await ids(.includes("topics", .string(#"{"nul":["a","b"]}"#))) == [])
        #expect(try await Self.repo(client, 4)["topics"] == .array([.string("a\u{0}b"), .string("\u{0}"), .string("c")]))
        _ = try await client.import(Data(#"[{"id": 4, "topics": null}]"#.utf8), as: "Repo")
        #expect(try await ids(!.includes("topics", .string("swift"))) == [2, 3, 4])  // unset arrays included
        #expect(try await ids(.includes("votes", .double(2))) == [1])              // numbers as numbers
        #expect(try await ids(.includes("votes", .double(2.5))) == [])
        #expect(try await ids(.includes("votes", .int(.min))) == [1])
        #expect(try await ids(.includes("ratios", .int(2))) == [1])
        #expect(try await ids(.includes("flags", .bool(false))) == [1])
        #expect(try await ids(.includes("flags", .int(0))) == [])                  // a boolean is not a number
        #expect(try await ids(.includes("stamps", .date(Date(timeIntervalSince1970: 0)))) == [1])
        #expect(try await ids(.includes("topics", .int(1))) == [])
        #expect(try await ids(.includes("name", .string("tether"))) == [])         // not an array
        #expect(try await ids(.includes("metadata", .string("6735"))) == [])       // a map is not an array
        // Comparisons see no collection; set and unset do.
        #expect(try await ids(.equal("topics", .array([]))) == [])
        #expect(try await ids(.in("extra", [.json("just a string")])) == [])
        #expect(try await ids(.notEqual("metadata", .string("x"))) == [])
        #expect(try await ids(.isNull("topics")) == [3, 4])
        #expect(try await ids(.isNotNull("extra")) == [1, 2])
        #expect(try await client.count(Query("Repo", where: .includes("topics", .string("ios")) || .includes("votes", .int(0)))) == 1)

        await #expect(throws: StoreError.self) { try await client.fetch(Query("Repo", sortedBy: [.ascending("topics")])) }
        do {
            _ = try await client.fetch(Query("Repo", sortedBy: [.descending("extra")]))
            Issue.record("a sort by a JSON attribute is refused")
        } catch let error as StoreError {
            #expect(error.kind == .unsupported && error.member == "extra")
        }
    }

    @Test(arguments: stores) func anElementThatDoesNotConvertRejectsTheValueNamingIt(store: String) async throws {
        let directory = try TemporaryDirectory()
        let client = try Self.client(store, directory)
        _ = try await client.import(Data(Self.payload.utf8), as: "Repo")
        let bad = #"""
            [{"id": 1, "votes": [1, "x", 3]}, {"id": 2, "topics": ["a", null]}, {"id": 3, "counts": {"a": 3000000000}},
             {"id": 4, "stamps": ["yesterday"]}, {"id": 5, "topics": "swift"}, {"id": 6, "metadata": ["a"]},
             {"id": 7, "votes": ["12", 1.0]}]
            """#
        let result = try await client.import(Data(bad.utf8), as: "Repo")
        let messages = Dictionary(result.diagnostics.map { ("\($0.path)", $0) }, uniquingKeysWith: { a, _ in a })
        #expect(result.diagnostics.count == 6, "\(result.diagnostics)")
        #expect(messages["$[0].votes"]?.attribute == "votes" && messages["$[0].votes"]?.message.contains("element 1") == true,
                "\(result.diagnostics)")
        #expect(messages["$[1].topics"]?.message.contains("element 1 is null") == true)
        #expect(messages["$[2].counts"]?.message.contains("'a'") == true)
        #expect(messages["$[3].stamps"]?.message.contains("element 0") == true)
        #expect(messages["$[4].topics"]?.problem == .typeMismatch)
        #expect(messages["$[5].metadata"]?.problem == .typeMismatch)
        // Nothing of a rejected value is kept: the stored array is the one from before.
        #expect(try await Self.repo(client, 1)["votes"] == .array([.int(0), .int(2), .int(.min)]))
        // Lossless coercion applies to each element ("12" is 12, 1.0 is 1).
        #expect(try await Self.repo(client, 7)["votes"] == .array([.int(12), .int(1)]))
    }

    @Test(arguments: stores) func localWritesAreCheckedAsImportsAre(store: String) async throws {
        let directory = try TemporaryDirectory()
        let client = try Self.client(store, directory)
        let result = try await client.import(Data(Self.payload.utf8), as: "Repo")
        let id = result.objects[0]
        let refused: [(String, Value, StoreError.Kind)] = [
            ("ratios", .array([.double(1), .double(.infinity)]), .invalidValue),   // JSON has no infinity
            ("stamps", .array([.date(.distantPast)]), .invalidValue),
            ("extra", .json(["x": [.double(.nan)]]), .invalidValue),
            ("topics", .array([.int(1)]), .typeMismatch),
            ("metadata", .array([.string("a")]), .typeMismatch),
            ("votes", .int(1), .typeMismatch),
        ]
        for (name, value, kind) in refused {
            do {
                try await client.updateLocally(id, setting: [name: value])
                Issue.record("\(name) = \(value) was stored")
            } catch let error as StoreError {
                #expect(error.kind == kind && error.member == name, "\(name): \(error)")
            }
        }
        let written: [String: Value] = [
            "topics": .array([.string("a\u{0}b"), .string("😀")]), "ratios": .array([.double(.leastNonzeroMagnitude), .double(3)]),
            "stamps": .array([.date(Date(timeIntervalSinceReferenceDate: 1e-9))]), "counts": .map([:]),
            "extra": .json([[], [:], ""]),
        ]
        try await client.updateLocally(id, setting: written)
        let stored = try await Self.repo(client, 1)
        for (name, value) in written { #expect(stored[name] == value, "\(name)") }
    }

    @Test func theSchemaRefusesCollectionsOfCollectionsAndCollectionIdentities() {
        for type: AttributeType in [.array(.data), .array(.decimal), .map(.array(.string)), .array(.json), .map(.transformable("x"))] {
            #expect(throws: SchemaError.self) { try Schema { Entity("E", identity: "id") { Attribute("id", .int64); Attribute("x", type) } } }
        }
        do {
            _ = try Schema { Entity("E", identity: "tags") { Attribute("tags", .array(.string)) } }
            Issue.record("an array identity was accepted")
        } catch {
            #expect(error.kind == .unsupportedType && error.member == "tags")
        }
    }

    @Test func anExistingFileGainsCollectionAttributes() async throws {
        let directory = try TemporaryDirectory()
        let before = try Schema { Entity("Repo", identity: "id") { Attribute("id", .int64); Attribute("name", .string) } }
        let old = try Self.client("sqlite", directory, schema: before)
        _ = try await old.import(Data(#"[{"id": 1, "name": "kept", "topics": ["ignored"]}]"#.utf8), as: "Repo")
        let new = try Self.client("sqlite", directory)
        let kept = try await Self.repo(new, 1)
        #expect(kept["name"] == .string("kept") && kept["topics"] == nil)
        _ = try await new.import(Data(Self.payload.utf8), as: "Repo")
        #expect(try await Self.repo(new, 1)["topics"] == .array([.string("swift"), .string("ios"), .string("e\u{301}"), .string("")]))
        // A changed element type is a changed type: refused, the file untouched.
        let changed = try Schema {
            Entity("Repo", identity: "id") { Attribute("id", .int64); Attribute("name", .string); Attribute("topics", .array(.int64)) }
        }
        #expect(throws: ConfigurationError.self) { try Self.client("sqlite", directory, schema: changed) }
        #expect(try await Self.repo(try Self.client("sqlite", directory), 1)["name"] == .string("tether"))
    }

    // MARK: Typed models

    struct Charge: EntityModel, Equatable {
        var id: String
        var amount: Int
        var topics: [String]
        var votes: [Int] = []
        var scores: [Double]?
        var seen: [Date]?
        var flags: [Bool] = []
        var metadata: [String: String]
        var limits: [String: Int]?
        var raw: JSON?
    }

    @Test(arguments: stores) func typedModelsHoldArraysMapsAndJSON(store: String) async throws {
        let directory = try TemporaryDirectory()
        let builder = try Client.Builder(models: [Charge.self])
        let schema = builder.schema
        #expect(schema["Charge"]?.attribute(named: "metadata")?.type == .map(.string))
        #expect(schema["Charge"]?.attribute(named: "topics")?.type == .array(.string))
        #expect(schema["Charge"]?.attribute(named: "votes")?.type == .array(.int64))
        #expect(schema["Charge"]?.attribute(named: "seen")?.type == .array(.date))
        #expect(schema["Charge"]?.attribute(named: "raw")?.type == .json)
        let client = store == "sqlite" ? try builder.store(try SQLiteStore(path: directory.path())).build() : try builder.build()
        let json = #"""
            [{"id": "ch_1", "amount": 2000, "topics": ["a", "b"], "votes": [0, 2], "scores": [0.5], "seen": ["2024-05-06T07:08:09Z"],
              "flags": [true], "metadata": {"order_id": "6735"}, "limits": {"daily": 5}, "raw": {"livemode": false, "n": [1, 2.5]}},
             {"id": "ch_2", "amount": 1, "topics": [], "votes": [], "flags": [], "metadata": {}}]
            """#
        let imported = try await client.import(Data(json.utf8), as: Charge.self)
        let first = Charge(id: "ch_1", amount: 2000, topics: ["a", "b"], votes: [0, 2], scores: [0.5],
                           seen: [Date(timeIntervalSince1970: 1_714_979_289)], flags: [true], metadata: ["order_id": "6735"],
                           limits: ["daily": 5], raw: ["livemode": false, "n": [1, 2.5]])
        let second = Charge(id: "ch_2", amount: 1, topics: [], metadata: [:])
        #expect(imported == [first, second])
        #expect(try await client.fetch(Charge.self, sortedBy: [.ascending(\.id)]) == [first, second])
        #expect(try await client.fetch(Charge.self, where: .contains(\.topics, "b")) == [first])
        #expect(try await client.fetch(Charge.self, where: .contains(\.votes, 2)) == [first])
        #expect(try await client.fetch(Charge.self, where: .contains(\.scores, 0.5)) == [first])
        #expect(try await client.fetch(Charge.self, where: .equal(\.raw, nil)) == [second])
        #expect(try await client.count(Charge.self, where: !.contains(\.topics, "b")) == 1)

        var changed = first
        changed.topics = ["c"]
        changed.metadata["note"] = "x"
        changed.raw = .array([])
        changed.seen = nil
        try await client.updateLocally(changed)
        #expect(try await client.model(Charge.self, identity: "ch_1") == changed)
        // An unchanged struct is no change.
        let reread = try await client.import(Data(#"[{"id": "ch_2", "amount": 1, "topics": [], "votes": [], "flags": [], "metadata": {}}]"#.utf8), as: Charge.self)
        #expect(reread == [second])
        let report = try await client.importReport(Data(#"[{"id": "ch_2", "amount": 1, "topics": [], "votes": [], "flags": [], "metadata": {}}]"#.utf8), as: Charge.self)
        #expect(report.report.updated.isEmpty)
    }

    @Test func jsonIsCodable() throws {
        let text = #"{"a": [1, 2.5, "x", null, true, {"b": {}}], "c": -9223372036854775808, "d": ""}"#
        let parsed = try JSON(parsing: text)
        let decoded = try JSONDecoder().decode(JSON.self, from: Data(text.utf8))
        #expect(decoded == parsed)
        let encoded = try JSONEncoder().encode(parsed)
        #expect(try JSON(parsing: encoded) == parsed)
    }
}
