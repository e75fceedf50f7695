import Foundation
import Synchronization
import Testing
@testable import Tether
import TetherTestSupport

/// The import engine's rules, one test each.
@Suite struct ImportTests {
    static let schema = try! Schema {
        Entity("User") {
            Attribute("id", .int64)
            Attribute("login", .string)
            Attribute("age", .int16)
            Attribute("score", .double)
            Attribute("ratio", .float)
            Attribute("balance", .decimal)
            Attribute("admin", .bool)
            Attribute("createdAt", .date)
            Attribute("avatar", .data)
            Attribute("token", .uuid)
            Attribute("homepage", .url)
            Relationship.toMany("repositories", "Repository", inverse: "owner")
            Relationship.toMany("labels", "Label", inverse: "users")
        }
        Entity("Repository") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Relationship.toOne("owner", "User", inverse: "repositories")
        }
        Entity("Label") {
            Attribute("id", .string)
            Attribute("name", .string)
            Relationship.toMany("users", "User", inverse: "labels")
        }
    }

    func makeClient(_ store: some Store = InMemoryStore(), options: ImportOptions = ImportOptions()) throws -> Client {
        try Client.Builder(schema: Self.schema).store(store).importOptions(options).build()
    }

    // MARK: Values

    @Test func convertsEveryType() async throws {
        let client = try makeClient()
        let json = try JSON(parsing: #"""
            {"id": 1, "login": "octocat", "age": 12, "score": 4, "ratio": 0.5, "balance": "19.99",
             "admin": true, "createdAt": "2011-01-25T18:44:36Z", "avatar": "aGVsbG8=",
             "token": "E621E1F8-C36C-495A-93FC-0C247A3E6E5F", "homepage": "https://github.com/octocat"}
            """#)
        let result = try await client.import(json, as: "User")
        #expect(result.diagnostics.isEmpty)
        let user = try #require(try await client.object(result.objects[0]))
        #expect(user["login"] == .string("octocat"))
        #expect(user["age"] == .int(12))
        #expect(user["score"] == .double(4))
        #expect(user["ratio"] == .double(0.5))
        #expect(user["balance"] == .decimal(Decimal(string: "19.99")!))
        #expect(user["admin"] == .bool(true))
        #expect(user["createdAt"] == .date(Date(timeIntervalSince1970: 1_295_981_076)))
        #expect(user["avatar"] == .data(Data("hello".utf8)))
        #expect(user["token"] == .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!))
        #expect(user["homepage"] == .url(URL(string: "https://github.com/octocat")!))
        #expect(user["login", as: String.self] == "octocat")
    }

    @Test func wrongTypesAreNotSetAndAreReported() async throws {
        let client = try makeClient()
        _ = try await client.import(JSON(parsing: #"{"id": 1, "login": "octocat", "age": 3}"#), as: "User")
        let result = try await client.import(
            JSON(parsing: #"[{"id": 1, "login": true, "age": 70000, "admin": "yes", "createdAt": "yesterday", "token": "nope"}]"#),
            as: "User")
        let user = try #require(try await client.object("User", identity: .int(1)))
        #expect(user["login"] == .string("octocat"))  // kept
        #expect(user["age"] == .int(3))  // kept
        let byAttribute = Dictionary(uniqueKeysWithValues: result.diagnostics.map { ($0.attribute!, $0) })
        #expect(byAttribute.count == 5)
        #expect(byAttribute["login"]?.problem == .typeMismatch)
        #expect(byAttribute["login"]?.path.description == "$[0].login")
        #expect(byAttribute["login"]?.entity == "User")
        #expect(byAttribute["login"]?.action == .valueSkipped)
        #expect(byAttribute["age"]?.problem == .invalidValue)
        #expect(byAttribute["age"]?.message.contains("out of range") == true)
        #expect(byAttribute["admin"]?.problem == .typeMismatch)
        #expect(byAttribute["createdAt"]?.problem == .invalidValue)
        #expect(byAttribute["token"]?.problem == .invalidValue)
        #expect(result.unchanged == [user.id])
    }

    /// A number a `Float` cannot hold is rejected for a `.float` attribute, as an integer out of
    /// its attribute's range is (it was stored, and read back as infinity by a `Float` property).
    @Test(arguments: [false, true])
    func aNumberPastFloatsRangeIsReported(tree: Bool) async throws {
        let client = try makeClient()
        let text = #"[{"id": 1, "ratio": 0.5}, {"id": 2, "ratio": 1e39}, {"id": 3, "ratio": -3.5e38}, {"id": 4, "ratio": 3.4e38}]"#
        let result = tree ? try await client.import(JSON(parsing: text), as: "User") : try await client.import(Data(text.utf8), as: "User")
        #expect(result.diagnostics.map(\.path.description) == ["$[1].ratio", "$[2].ratio"])
        #expect(result.diagnostics.allSatisfy { $0.problem == .invalidValue && $0.message.contains("out of range for float") })
        let ratios = try await (1...4).asyncMap { try await client.object("User", identity: .int(Int64($0)))?["ratio"] }
        #expect(ratios == [.double(0.5), nil, nil, .double(3.4e38)])
    }

    @Test func nullClearsAndMissingKeyKeeps() async throws {
        let client = try makeClient()
        _ = try await client.import(JSON(parsing: #"{"id": 1, "login": "octocat", "age": 3, "admin": false}"#), as: "User")
        let result = try await client.import(JSON(parsing: #"{"id": 1, "age": null}"#), as: "User")
        let user = try #require(try await client.object("User", identity: .int(1)))
        #expect(user["age"] == nil)
        #expect(user["login"] == .string("octocat"))
        #expect(user["admin"] == .bool(false))
        #expect(result.updated == [user.id])
    }

    @Test(arguments: [
        ("2011-01-26T19:01:12Z", 1_296_068_472.0),
        ("2011-01-26T19:01:12.250Z", 1_296_068_472.25),
        ("2026-11-22T01:44:58.922346Z", 1_795_311_898.922346),
        ("2011-01-26T21:01:12+02:00", 1_296_068_472.0),
        ("2011-01-26", 1_296_000_000.0),
    ])
    func isoDates(text: String, seconds: Double) async throws {
        let client = try makeClient()
        let result = try await client.import(JSON.object(["id": 1, "createdAt": .string(text)]), as: "User")
        let date = try #require(try await client.object(result.objects[0])?["createdAt", as: Date.self])
        #expect(abs(date.timeIntervalSince1970 - seconds) < 0.000_01)
    }

    @Test func customDateFormatsAndTimestamps() async throws {
        let client = try Client.Builder(schema: Self.schema)
            .dateDecoding(DateDecoding([.format("dd/MM/yyyy HH:mm"), .millisecondsSince1970]))
            .build()
        let result = try await client.import(
            JSON(parsing: #"[{"id": 1, "createdAt": "26/01/2011 19:01"}, {"id": 2, "createdAt": 1296068472000}, {"id": 3, "createdAt": "2011-01-26T19:01:12Z"}]"#),
            as: "User")
        let users = try await client.fetch(Query("User", sortedBy: [.ascending("id")]))
        #expect(users[0]["createdAt"] == .date(Date(timeIntervalSince1970: 1_296_068_460)))
        #expect(users[1]["createdAt"] == .date(Date(timeIntervalSince1970: 1_296_068_472)))
        #expect(users[2]["createdAt"] == nil)  // ISO 8601 is not in this list
        #expect(result.diagnostics.map(\.path.description) == ["$[2].createdAt"])
    }

    @Test func nullEntriesInArraysAreIgnored() async throws {
        let client = try makeClient()
        let result = try await client.import(JSON(parsing: #"[null, {"id": 1}, null, {"id": 2, "repositories": [null, {"id": 5}]}]"#), as: "User")
        #expect(result.objects.count == 2)
        #expect(result.diagnostics.isEmpty)
        #expect(try await client.count(Query("Repository")) == 1)
    }

    // MARK: Identity

    @Test func numberAndStringFormsOfAnIdMatch() async throws {
        let client = try makeClient()
        let first = try await client.import(JSON(parsing: #"{"id": 12345, "login": "a"}"#), as: "User")
        let second = try await client.import(JSON(parsing: #"{"id": "12345", "login": "b"}"#), as: "User")
        #expect(first.objects == second.objects)
        #expect(try await client.count(Query("User")) == 1)
        // and the other way round for a string identity
        let labels = try await client.import(JSON(parsing: #"[{"id": 7, "name": "bug"}, {"id": "7", "name": "Bug"}]"#), as: "Label")
        #expect(labels.objects.count == 1)
        #expect(try await client.object(labels.objects[0])?["name"] == .string("Bug"))
    }

    @Test func repeatedObjectsBecomeOneLastOccurrenceWinsPayloadOrderKept() async throws {
        let client = try makeClient()
        let result = try await client.import(
            JSON(parsing: #"[{"id": 3, "login": "c"}, {"id": 1, "login": "first", "age": 1}, {"id": 2, "login": "b"}, {"id": 1, "login": "last"}]"#),
            as: "User")
        #expect(result.objects.count == 3)
        let logins = try await result.objects.asyncMap { try await client.object($0)?["login", as: String.self] }
        #expect(logins == ["c", "last", "b"])
        let one = try #require(try await client.object("User", identity: .int(1)))
        #expect(one["age"] == .int(1))  // a key missing in the last occurrence keeps the earlier value
        #expect(result.inserted.count == 3)
        #expect(try await client.count(Query("User")) == 3)
    }

    @Test func objectsWithoutIdentityAreSkippedAndReported() async throws {
        let client = try makeClient()
        let result = try await client.import(fixture("sync/users-with-nil.json"), as: "User")
        #expect(result.objects.count == 5)
        #expect(result.diagnostics.count == 1)
        let diagnostic = try #require(result.diagnostics.first)
        #expect(diagnostic.problem == .missingIdentity)
        #expect(diagnostic.action == .objectSkipped)
        #expect(diagnostic.path.description == "$[3].id")
        #expect(diagnostic.entity == "User")
        #expect(diagnostic.attribute == "id")

        let nullID = try await client.import(JSON(parsing: #"[{"id": 1}, {"id": 2, "repositories": [{"id": null, "name": "x"}]}]"#), as: "User")
        #expect(nullID.diagnostics.map(\.path.description) == ["$[1].repositories[0].id"])
        #expect(try await client.count(Query("Repository")) == 0)
    }

    // MARK: Relationships

    @Test func nestedObjectsAreImportedAndWiredBothWays() async throws {
        let client = try makeClient()
        let result = try await client.import(
            JSON(parsing: #"{"id": 1, "login": "octocat", "repositories": [{"id": 10, "name": "a"}, {"id": 11, "name": "b"}], "labels": [{"id": "x", "name": "X"}]}"#),
            as: "User")
        let user = result.objects[0]
        let repos = try await client.related("repositories", of: user)
        #expect(repos.map { $0["name"] } == [.string("a"), .string("b")])
        #expect(try await client.related("owner", of: repos[0].id).map(\.id) == [user])
        let labels = try await client.related("labels", of: user)
        #expect(try await client.related("users", of: labels[0].id).map(\.id) == [user])
        #expect(result.inserted.count == 4)
    }

    @Test func nestedToOneUniquesAgainstTheStore() async throws {
        let client = try makeClient()
        let user = try await client.import(JSON(parsing: #"{"id": 1, "login": "octocat"}"#), as: "User").objects[0]
        let result = try await client.import(
            JSON(parsing: #"[{"id": 10, "owner": {"id": 1}}, {"id": 11, "owner": {"id": "1", "login": "octo"}}]"#), as: "Repository")
        for repo in result.objects {
            #expect(try await client.related("owner", of: repo).map(\.id) == [user])
        }
        #expect(try await client.count(Query("User")) == 1)
        #expect(try await client.object(user)?["login"] == .string("octo"))
        #expect(Set(try await client.related("repositories", of: user).map(\.id)) == Set(result.objects))
    }

    @Test func movingAChildKeepsInversesConsistent() async throws {
        let client = try makeClient()
        _ = try await client.import(JSON(parsing: #"[{"id": 1, "repositories": [{"id": 10}, {"id": 11}]}, {"id": 2}]"#), as: "User")
        // repository 10 moves to user 2 through its to-one side
        _ = try await client.import(JSON(parsing: #"{"id": 10, "owner": {"id": 2}}"#), as: "Repository")
        let one = try #require(try await client.object("User", identity: .int(1)))
        let two = try #require(try await client.object("User", identity: .int(2)))
        #expect(try await client.related("repositories", of: one.id).map { $0["id"] } == [.int(11)])
        #expect(try await client.related("repositories", of: two.id).map { $0["id"] } == [.int(10)])
    }

    @Test func foreignKeysWireToStoredObjectsAndKeepUnknownOnesPending() async throws {
        let schema = try Schema {
            Entity("City") { Attribute("id", .int64); Attribute("name", .string); Relationship.toMany("locations", "Location", inverse: "city") }
            Entity("Location") { Attribute("id", .int64); Attribute("name", .string); Relationship.toOne("city", "City", inverse: "locations") }
        }
        let client = try Client.Builder(schema: schema).build()
        // Locations arrive before any city exists: the ids are kept pending (reported, not errors),
        // and the cities' import links them.
        let early = try await client.import(fixture("sync/157-locations.json"), as: "Location")
        #expect(early.diagnostics.map(\.problem) == [.pendingReference, .pendingReference])
        #expect(try await client.related("city", of: early.objects[0]).isEmpty)
        _ = try await client.import(fixture("sync/157-cities.json"), as: "City")
        func city(_ location: Int64) async throws -> Value? {
            let id = try #require(try await client.object("Location", identity: .int(location))).id
            return try await client.related("city", of: id).first?["name"]
        }
        #expect(try await city(0) == .string("Oslo"))
        #expect(try await city(1) == .string("Paris"))
        #expect(try await city(2) == nil)
        let update = try await client.import(fixture("sync/157-locations-update.json"), as: "Location")
        #expect(try await city(0) == nil)  // null unlinks
        #expect(try await city(1) == .string("Oslo"))
        #expect(try await city(2) == .string("Paris"))
        #expect(update.updated.count == 3)
        #expect(try await client.count(Query("City")) == 3)  // unlinking never deletes
    }

    /// A stored object's to-one link is read with it and compared with the payload: the same
    /// owner is no change; a new owner, nested or by id, or null is; so is an unknown id, which
    /// unlinks the old owner and is kept pending.
    @Test func toOneLinksComparedWithTheStoredTarget() async throws {
        let client = try makeClient()
        let first = try await client.import(JSON(parsing: #"""
            [{"id": 1, "name": "a", "owner": {"id": 10}}, {"id": 2, "name": "b", "owner": {"id": 10}},
             {"id": 3, "name": "c", "owner_id": 11}, {"id": 4, "name": "d", "owner": {"id": 11}}, {"id": 5, "name": "e", "owner": {"id": 11}}]
            """#), as: "Repository")
        #expect(first.inserted.count == 7)  // repository 3 names user 11 by id: linked, as it comes in the same batch
        let again = try await client.import(JSON(parsing: #"""
            [{"id": 1, "name": "a", "owner": {"id": 10}}, {"id": 2, "name": "b", "owner": {"id": 11}},
             {"id": 3, "name": "c", "owner_id": 11}, {"id": 4, "name": "d", "owner_id": 99}, {"id": 5, "name": "e", "owner": null}]
            """#), as: "Repository")
        func owner(_ repository: Int64) async throws -> Value? {
            let id = try #require(try await client.object("Repository", identity: .int(repository))).id
            return try await client.related("owner", of: id).first?["id"]
        }
        #expect(try await owner(1) == .int(10))
        #expect(try await owner(2) == .int(11))
        #expect(try await owner(3) == .int(11))
        #expect(try await owner(4) == nil)  // owner 99 is pending: the link holds what the payload says
        #expect(again.diagnostics.map(\.problem) == [.pendingReference])
        #expect(try await owner(5) == nil)
        let repository = { (id: Int64) in first.objects[Int(id) - 1] }
        #expect(Set(again.updated) == [repository(2), repository(4), repository(5)])
        #expect([1, 3].allSatisfy { again.unchanged.contains(repository($0)) })
    }

    /// The lookup reads the stored to-one targets along with the values (one `related` read per
    /// relationship and lookup in the default `compare`), so an update pass reads no link again.
    @Test func storedToOneTargetsComeWithTheLookup() async throws {
        let store = CountingStore()
        let client = try makeClient(store)
        let repos: JSON = .array((0..<500).map { i in ["id": .int(Int64(i)), "owner": ["id": .int(Int64(i % 7))]] })
        _ = try await client.import(repos, as: "Repository")
        store.counts.relatedReads.store(0, ordering: .relaxed)
        let again = try await client.import(repos, as: "Repository")
        #expect(again.unchanged.count == 507)
        #expect(store.counts.relatedReads.load(ordering: .relaxed) == 1)
        // A moved repository is written, and read no more than that.
        store.counts.relatedReads.store(0, ordering: .relaxed)
        let moved = try await client.import(JSON(parsing: #"[{"id": 3, "owner": {"id": 4}}, {"id": 5, "owner": null}]"#), as: "Repository")
        #expect(moved.updated.count == 2)
        #expect(store.counts.relatedReads.load(ordering: .relaxed) == 1)
        let three = try #require(try await client.object("Repository", identity: .int(3)))
        #expect(try await client.related("owner", of: three.id).map { $0["id"] } == [.int(4)])
    }

    /// A one-to-one link is read after the inserts: a new object linked to a stored object's
    /// partner takes it, and a later occurrence in the payload takes it back (the last wins).
    @Test func oneToOneLinksAreReadAfterTheInserts() async throws {
        let schema = try Schema {
            Entity("Person") { Attribute("id", .int64); Relationship.toOne("passport", "Passport", inverse: "holder") }
            Entity("Passport") { Attribute("id", .int64); Relationship.toOne("holder", "Person", inverse: "passport") }
        }
        let client = try Client.Builder(schema: schema).build()
        _ = try await client.import(JSON(parsing: #"[{"id": 1, "passport": {"id": 7}}, {"id": 2, "passport": {"id": 8}}]"#), as: "Person")
        let result = try await client.import(
            JSON(parsing: #"[{"id": 3, "passport": {"id": 7}}, {"id": 1, "passport": {"id": 7}}, {"id": 2, "passport": {"id": 8}}]"#), as: "Person")
        func passport(_ person: Int64) async throws -> [Value?] {
            let id = try #require(try await client.object("Person", identity: .int(person))).id
            return try await client.related("passport", of: id).map { $0["id"] }
        }
        #expect(try await passport(1) == [.int(7)])
        #expect(try await passport(2) == [.int(8)])
        #expect(try await passport(3) == [])
        #expect(result.inserted.count == 1)
    }

    @Test func toManyForeignKeysWithStringIds() async throws {
        let schema = try Schema {
            Entity("Tag") { Attribute("id", .string); Attribute("name", .string); Relationship.toMany("notes", "Note", inverse: "tags") }
            Entity("Note") { Attribute("id", .int64); Attribute("name", .string); Relationship.toMany("tags", "Tag", inverse: "notes") }
        }
        let client = try Client.Builder(schema: schema)
            .keyMapping(KeyOverrides([:], foreignKeys: ["Note": ["tags": "tags_ids"]]))
            .build()
        _ = try await client.import(fixture("sync/151-many-to-many-tags.json"), as: "Tag")
        _ = try await client.import(fixture("sync/151-many-to-many-notes.json"), as: "Note")
        func tags(_ note: Int64) async throws -> [String] {
            let id = try #require(try await client.object("Note", identity: .int(note))).id
            return try await client.related("tags", of: id).compactMap { $0["name", as: String.self] }.sorted()
        }
        #expect(try await tags(0) == ["#nofilter", "#yolo"])
        #expect(try await tags(1) == ["#yolo"])
        #expect(try await tags(2) == [])
        #expect(try await tags(3) == ["#nofilter"])
        _ = try await client.import(fixture("sync/151-many-to-many-notes-update.json"), as: "Note")
        #expect(try await tags(0) == ["#yolo"])
        #expect(try await tags(1) == [])  // [] clears
        #expect(try await tags(2) == ["#nofilter", "#yolo"])
        #expect(try await tags(3) == [])  // null clears
        #expect(try await client.count(Query("Tag")) == 2)
    }

    @Test func nullOrEmptyNestedArrayUnlinksWithoutDeleting() async throws {
        let schema = try Schema {
            Entity("User") { Attribute("id", .int64); Relationship.toMany("tags", "Tag", inverse: "users") }
            Entity("Tag") { Attribute("id", .int64); Relationship.toMany("users", "User", inverse: "tags") }
        }
        let client = try Client.Builder(schema: schema).build()
        for file in ["225-a-null", "225-a-empty"] {
            let user = try await client.import(fixture("sync/225-a.json"), as: "User").objects[0]
            #expect(try await client.related("tags", of: user).count == 1)
            let result = try await client.import(fixture("sync/\(file).json"), as: "User")
            #expect(try await client.related("tags", of: user).isEmpty)
            #expect(try await client.count(Query("Tag")) == 1)
            #expect(result.updated == [user])
        }
    }

    @Test func orderedToManyKeepsPayloadOrder() async throws {
        let schema = try Schema {
            Entity("Presentation") { Attribute("id", .int64); Relationship.toMany("slides", "Slide", inverse: "presentation", ordered: true) }
            Entity("Slide") { Attribute("id", .int64); Relationship.toOne("presentation", "Presentation", inverse: "slides") }
        }
        let client = try Client.Builder(schema: schema)
            .keyMapping(KeyOverrides([:], foreignKeys: ["Presentation": ["slides": "slides_ids"]]))
            .build()
        _ = try await client.import(JSON(parsing: #"[{"id": 1}, {"id": 2}]"#), as: "Slide")
        let presentation = try await client.import(JSON(parsing: #"{"id": 1, "slides": [{"id": 1}, {"id": 2}]}"#), as: "Presentation").objects[0]
        #expect(try await client.related("slides", of: presentation).map { $0["id"] } == [.int(1), .int(2)])
        _ = try await client.import(fixture("sync/233.json"), as: "Presentation")
        #expect(try await client.related("slides", of: presentation).map { $0["id"] } == [.int(2), .int(1)])
    }

    @Test func circularAndSharedNestingStayUnique() async throws {
        let schema = try Schema {
            Entity("Player") { Attribute("id", .int64); Relationship.toOne("playerGroup", "PlayerGroup", inverse: "players") }
            Entity("PlayerGroup") { Attribute("id", .int64); Relationship.toMany("players", "Player", inverse: "playerGroup") }
            Entity("Bus") { Attribute("id", .int64); Relationship.toMany("passengers", "Passenger", inverse: "buses") }
            Entity("Passenger") { Attribute("id", .int64); Relationship.toMany("buses", "Bus", inverse: "passengers") }
        }
        let client = try Client.Builder(schema: schema)
            .keyMapping(KeyOverrides(["Player": ["playerGroup": "player_group"]]))
            .build()
        _ = try await client.import(fixture("sync/265.json"), as: "Player")
        #expect(try await client.count(Query("Player")) == 1)  // Sync accepted 2 here; 1 is right
        #expect(try await client.count(Query("PlayerGroup")) == 1)
        let buses = try await client.import(fixture("sync/277.json"), as: "Bus")
        #expect(buses.objects.count == 2)
        #expect(try await client.count(Query("Passenger")) == 1)
        let passenger = try #require(try await client.object("Passenger", identity: .int(22)))
        #expect(Set(try await client.related("buses", of: passenger.id).map(\.id)) == Set(buses.objects))
    }

    @Test func invalidRelationshipValuesAreReported() async throws {
        let client = try makeClient()
        let result = try await client.import(JSON(parsing: #"{"id": 1, "repositories": {"id": 3}}"#), as: "User")
        #expect(result.diagnostics.count == 1)
        #expect(result.diagnostics[0].problem == .invalidRelationship)
        #expect(result.diagnostics[0].path.description == "$.repositories")
        #expect(result.diagnostics[0].attribute == "repositories")
    }

    // MARK: Repeated objects

    /// An object whose text repeats the last occurrence of the same object is not applied again
    /// (it would change nothing); one whose text differs is, so the last occurrence still wins.
    @Test func aRepeatedObjectTakesItsLastOccurrence() async throws {
        let owner = [#"{"id": 1, "login": "a"}"#, #"{"id": 1, "login": "b"}"#]
        for order in [[0, 1, 0], [0, 0, 1], [1, 0, 0]] {
            let text = "[" + order.enumerated().map { #"{"id": \#($0 + 10), "owner": \#(owner[$1])}"# }.joined(separator: ", ") + "]"
            let client = try makeClient()
            let result = try await client.import(Data(text.utf8), as: "Repository")
            #expect(result.inserted.count == 4)
            let user = try #require(try await client.object("User", identity: .int(1)))
            #expect(user["login"] == .string(order.last == 0 ? "a" : "b"))
            #expect(try await client.related("repositories", of: user.id).count == 3)
        }
    }

    /// Each occurrence of an object with a rejected value reports it, at its own path, in one
    /// batch or in several.
    @Test(arguments: [10_000, 1])
    func aRepeatedObjectReportsEachOccurrence(batchSize: Int) async throws {
        let text = #"[{"id": 10, "owner": {"id": 1, "age": "old"}}, {"id": 11, "owner": {"id": 1, "age": "old"}}]"#
        let result = try await makeClient(options: ImportOptions(batchSize: batchSize)).import(Data(text.utf8), as: "Repository")
        #expect(result.diagnostics.map(\.path.description) == ["$[0].owner.age", "$[1].owner.age"])
    }

    /// An object that nests others is applied again at each occurrence, in one batch or in
    /// several: what it nests may have changed in between.
    @Test(arguments: [10_000, 1])
    func aRepeatedObjectWithNestedObjectsIsAppliedAgain(batchSize: Int) async throws {
        let owner = #"{"id": 1, "repositories": [{"id": 20, "name": "first"}]}"#
        let text = #"[{"id": 10, "owner": \#(owner)}, {"id": 20, "name": "second"}, {"id": 11, "owner": \#(owner)}]"#
        let client = try makeClient(options: ImportOptions(batchSize: batchSize))
        _ = try await client.import(Data(text.utf8), as: "Repository")
        let repository = try #require(try await client.object("Repository", identity: .int(20)))
        #expect(repository["name"] == .string("first"))
    }

    /// A nested object whose text is that of its last occurrence in an earlier batch is not
    /// looked up again: the session remembers its id, and applying it would change nothing.
    @Test func aNestedObjectRepeatedInALaterBatchIsNotLookedUpAgain() async throws {
        let store = CountingStore()
        let client = try makeClient(store, options: ImportOptions(batchSize: 4))  // batches of 1, 2, 4, 4, 1
        func payload(_ logins: [String]) -> Data {
            Data(("[" + logins.enumerated().map { #"{"id": \#($0 + 10), "owner": {"id": 1, "login": "\#($1)"}}"# }
                .joined(separator: ", ") + "]").utf8)
        }
        func userLookups() -> Int { store.counts.identitiesByEntity.withLock { $0.removeValue(forKey: "User") ?? 0 } }
        func login() async throws -> Value? {
            defer { _ = userLookups() }  // not the import's
            return try await client.object("User", identity: .int(1))?["login"]
        }
        let same = payload(Array(repeating: "a", count: 12))
        let first = try await client.import(same, as: "Repository")
        #expect(first.inserted.count == 13)
        #expect(userLookups() == 1)
        let again = try await client.import(same, as: "Repository")
        #expect(again.unchanged.count == 13)
        #expect(userLookups() == 1)
        // Changed from the third batch on: looked up in the batch where it differs from the batch
        // before, and no more.
        let changed = try await client.import(payload(Array(repeating: "a", count: 3) + Array(repeating: "b", count: 9)), as: "Repository")
        #expect(changed.updated.count == 1)
        #expect(userLookups() == 2)
        #expect(try await login() == .string("b"))
        // Back to "a" in the first batch; in the second, "a" again and then "b": the last wins.
        let mixed = try await client.import(payload(["a", "a", "b"]), as: "Repository")
        #expect(mixed.updated.count == 1)
        #expect(userLookups() == 2)
        #expect(try await login() == .string("b"))
    }

    /// An object whose last occurrence in an earlier batch was not nested (or cannot be skipped)
    /// is looked up and applied again, even when its text is that of an occurrence before that.
    @Test func anObjectLastSeenAtTheTopLevelIsAppliedAgain() async throws {
        let nested = #"{"id": 20, "name": "first"}"#
        let text = #"[{"id": 10, "owner": {"id": 1, "repositories": [\#(nested)]}}, {"id": 20, "name": "second"}, "#
            + #"{"id": 11, "owner": {"id": 2, "repositories": [\#(nested)]}}]"#
        let client = try makeClient(options: ImportOptions(batchSize: 1))
        _ = try await client.import(Data(text.utf8), as: "Repository")
        let repository = try #require(try await client.object("Repository", identity: .int(20)))
        #expect(repository["name"] == .string("first"))
    }

    /// Past the limit of remembered objects (of an entity), the mapper and the session forget
    /// them all and start again: repeats are looked up again, and nothing else changes.
    @Test func rememberedObjectsAreForgottenPastTheLimit() async throws {
        let store = CountingStore()
        var options = ImportOptions(batchSize: 4)  // batches of 1, 2, 4, 4, 1
        options.rememberedLimit = 2
        let client = try makeClient(store, options: options)
        // Three owners in turn: the batches name {0}, {1, 2}, {0, 1, 2}, {0, 1, 2} and {2}.
        let text = "[" + (0..<12).map { #"{"id": \#($0 + 10), "owner": {"id": \#($0 % 3), "login": "u\#($0 % 3)"}}"# }
            .joined(separator: ", ") + "]"
        func userLookups() -> Int { store.counts.identitiesByEntity.withLock { $0.removeValue(forKey: "User") ?? 0 } }
        let first = try await client.import(Data(text.utf8), as: "Repository")
        #expect(first.inserted.count == 15)
        #expect(userLookups() == 1 + 2 + 3 + 3 + 1)  // 3 remembered after the second batch: all forgotten, and so on
        let again = try await client.import(Data(text.utf8), as: "Repository")
        #expect(again.unchanged.count == 15)
        #expect(userLookups() == 10)
        let users = try await client.fetch(Query("User", sortedBy: [.ascending("id")]))
        #expect(users.map { $0["login"] } == [.string("u0"), .string("u1"), .string("u2")])
        for user in users { #expect(try await client.related("repositories", of: user.id).count == 4) }
        // The default limit remembers them all: looked up in the first two batches only.
        let unlimited = try await client.import(Data(text.utf8), as: "Repository", options: ImportOptions(batchSize: 4))
        #expect(unlimited.unchanged.count == 15)
        #expect(userLookups() == 3)
    }

    /// A repeated object's link is applied where its last occurrence is, after the links that
    /// occur before it: in one batch as in a batch per object.
    @Test(arguments: [10_000, 1])
    func aRepeatedLinkTakesThePlaceOfItsLastOccurrence(batchSize: Int) async throws {
        let cases: [(payload: String, owners: [Int64: Int64?])] = [
            // Repository 0 joins user 1, user 1's repositories become [1], then repository 0 joins again.
            (#"[{"id": 0, "owner": {"id": 1}}, {"id": 0, "owner": {"id": 1, "repositories": [{"id": 1}]}}]"#, [0: 1, 1: 1]),
            // User 0's repositories are [0]; repository 1 joins; they are [0] again; repository 2 joins.
            (#"[{"id": 1, "owner": {"id": 0, "repositories": [{"id": 0}]}}, {"id": 2, "owner": {"id": 0, "repositories": [{"id": 0}]}}]"#,
             [0: 0, 1: nil, 2: 0]),
        ]
        for (payload, owners) in cases {
            let client = try makeClient(options: ImportOptions(batchSize: batchSize))
            _ = try await client.import(Data(payload.utf8), as: "Repository")
            var found: [Int64: Int64?] = [:]
            for repository in try await client.fetch(Query("Repository")) {
                let owner = try await client.related("owner", of: repository.id).first?["id", as: Int64.self]
                found.updateValue(owner, forKey: repository["id", as: Int64.self]!)
            }
            #expect(found == owners, "\(payload)")
        }
    }

    /// Random payloads whose nested owners repeat, change text now and then, nest others (labels,
    /// whose identities are strings) or report something, imported from bytes in small batches
    /// (where repeats are skipped) and as JSON trees in one batch (where every object is applied),
    /// give the same objects and links.
    @Test(arguments: 0..<6 as Range<UInt64>)
    func batchedImportsOfRepeatsMatchTreeImports(seed: UInt64) async throws {
        var random = SeededRandom(seed: seed)
        let batched = try makeClient(options: ImportOptions(batchSize: Int.random(in: 2...16, using: &random)))
        let tree = try makeClient()
        for round in 0..<3 {
            var repositories: [String] = []
            for _ in 0..<150 {
                var owner = [#""id": \#(Int.random(in: 0..<10, using: &random))"#]
                if Int.random(in: 0..<5, using: &random) > 0 { owner.append(#""login": "\#(Bool.random(using: &random) ? "a" : "b")""#) }
                if Int.random(in: 0..<6, using: &random) == 0 { owner.append(#""age": \#(Int.random(in: 1...2, using: &random))"#) }
                if Int.random(in: 0..<25, using: &random) == 0 { owner.append(#""age": "old""#) }  // reported
                if Int.random(in: 0..<8, using: &random) == 0 {
                    owner.append(#""labels": [{"id": "l\#(Int.random(in: 0..<4, using: &random))", "name": "n\#(Int.random(in: 0..<2, using: &random))"}]"#)
                }
                let name = Int.random(in: 0..<8, using: &random) == 0 ? "" : #", "name": "r\#(Int.random(in: 0..<3, using: &random))""#
                repositories.append(#"{"id": \#(Int.random(in: 0..<60, using: &random))\#(name), "owner": {\#(owner.joined(separator: ", "))}}"#)
            }
            let text = "[" + repositories.joined(separator: ", ") + "]"
            let a = try await batched.import(Data(text.utf8), as: "Repository")
            let b = try await tree.import(JSON(parsing: text), as: "Repository")
            #expect(a.diagnostics.map(\.path) == b.diagnostics.map(\.path))
            #expect(try await snapshot(batched) == snapshot(tree), "seed \(seed), round \(round)")
        }
    }

    /// Every object's values by identity, with a repository's owner and a user's labels.
    private func snapshot(_ client: Client) async throws -> [String: [IdentityKey: [String: Value]]] {
        var result: [String: [IdentityKey: [String: Value]]] = [:]
        for entity in ["User", "Repository", "Label"] {
            for object in try await client.fetch(Query(entity)) {
                var values = object.values
                if entity == "Repository", let owner = try await client.related("owner", of: object.id).first { values["owner"] = owner["id"] }
                if entity == "User" {
                    let labels = try await client.related("labels", of: object.id).compactMap { $0["id", as: String.self] }.sorted()
                    values["labels"] = .string(labels.joined(separator: ","))
                }
                result[entity, default: [:]][IdentityKey(object["id"]!)] = values
            }
        }
        return result
    }

    // MARK: Results and transactions

    @Test func resultClassifiesInsertedUpdatedUnchanged() async throws {
        let client = try makeClient()
        let first = try await client.import(JSON(parsing: #"[{"id": 1, "login": "a"}, {"id": 2, "login": "b"}]"#), as: "User")
        #expect(first.inserted == first.objects)
        let second = try await client.import(JSON(parsing: #"[{"id": 1, "login": "a"}, {"id": 2, "login": "B"}, {"id": 3}]"#), as: "User")
        #expect(second.unchanged == [first.objects[0]])
        #expect(second.updated == [first.objects[1]])
        #expect(second.inserted.count == 1)
        #expect(second.objects.count == 3)
    }

    @Test func anImportIsOneTransaction() async throws {
        let client = try makeClient(options: ImportOptions(policy: .fail))
        _ = try await client.import(JSON(parsing: #"{"id": 1, "login": "keep"}"#), as: "User")
        let changes = client.store.changes()
        let error = await #expect(throws: ImportError.self) {
            try await client.import(JSON(parsing: #"[{"id": 1, "login": "changed"}, {"id": 2}, {"id": 3, "age": "old"}]"#), as: "User")
        }
        #expect(error?.path.description == "$[2].age")
        #expect(error?.entity == "User")
        #expect(error?.attribute == "age")
        #expect(try await client.count(Query("User")) == 1)
        #expect(try await client.object("User", identity: .int(1))?["login"] == .string("keep"))
        // The next committed change is the only one announced.
        _ = try await client.import(JSON(parsing: #"{"id": 9}"#), as: "User")
        var iterator = changes.makeAsyncIterator()
        let next = await iterator.next()
        #expect(next?.inserted.count == 1)
    }

    /// A store whose writer fails on the `failAt`th single insert (the default batch insert
    /// inserts row by row).
    final class FailingStore: Store {
        let base = InMemoryStore()
        let failAt: Int
        init(failAt: Int = 3) { self.failAt = failAt }
        func prepare(for schema: Schema) throws { try base.prepare(for: schema) }
        func read<T: Sendable>(_ body: @Sendable (any StoreReader) throws -> T) async throws -> T { try await base.read(body) }
        func write<T: Sendable>(_ body: @Sendable (any StoreWriter) throws -> T) async throws -> T {
            try await base.write { [failAt] writer in try body(Failing(base: writer, failAt: failAt)) }
        }
        func changes() -> AsyncStream<ChangeSet> { base.changes() }
        final class Failing: StoreWriter {
            let base: any StoreWriter
            let failAt: Int
            var inserts = 0
            init(base: any StoreWriter, failAt: Int) {
                self.base = base
                self.failAt = failAt
            }
            func objects(_ e: String, identities: [IdentityKey]) throws -> [IdentityKey: Object] { try base.objects(e, identities: identities) }
            func object(_ id: ObjectID) throws -> Object? { try base.object(id) }
            func fetch(_ q: Query) throws -> [Object] { try base.fetch(q) }
            func count(_ q: Query) throws -> Int { try base.count(q) }
            func related(_ r: String, of ids: [ObjectID]) throws -> [ObjectID: [ObjectID]] { try base.related(r, of: ids) }
            func insert(_ e: String, values: [String: Value]) throws -> Object {
                inserts += 1
                if inserts == failAt { throw StoreError(.storage, "disk full") }
                return try base.insert(e, values: values)
            }
            func update(_ id: ObjectID, setting v: [String: Value], clearing c: Set<String>) throws { try base.update(id, setting: v, clearing: c) }
            func delete(_ id: ObjectID) throws { try base.delete(id) }
            func setRelated(_ r: String, of id: ObjectID, to t: [ObjectID]) throws { try base.setRelated(r, of: id, to: t) }
        }
    }

    @Test func storeErrorsRollBackTheImport() async throws {
        let store = FailingStore()
        let client = try makeClient(store)
        await #expect(throws: StoreError.self) {
            try await client.import(JSON(parsing: #"[{"id": 1}, {"id": 2}, {"id": 3}]"#), as: "User")
        }
        #expect(try await client.count(Query("User")) == 0)
    }

    /// Bytes of several batches are mapped on a second thread while earlier batches are written:
    /// a store error in a later batch stops that thread and rolls everything back.
    @Test func storeErrorsInALaterBatchOfBytesRollBackTheImport() async throws {
        let client = try makeClient(FailingStore(failAt: 7), options: ImportOptions(batchSize: 2))
        let text = "[" + (1...20).map { #"{"id": \#($0)}"# }.joined(separator: ", ") + "]"
        await #expect(throws: StoreError.self) { try await client.import(Data(text.utf8), as: "User") }
        #expect(try await client.count(Query("User")) == 0)
    }

    /// Diagnostics of every batch, in payload order, whichever thread mapped them; with `.fail`,
    /// the first rejected value of a later batch aborts the import.
    @Test func diagnosticsOfEveryBatchInPayloadOrder() async throws {
        let text = "[" + (0..<9).map { i in i % 3 == 1 ? #"{"id": \#(i), "age": "old"}"# : #"{"id": \#(i), "age": \#(i)}"# }
            .joined(separator: ", ") + "]"
        let client = try makeClient(options: ImportOptions(batchSize: 2))
        let result = try await client.import(Data(text.utf8), as: "User")
        #expect(result.diagnostics.map(\.path.description) == ["$[1].age", "$[4].age", "$[7].age"])
        #expect(result.inserted.count == 9)

        let strict = try makeClient(options: ImportOptions(policy: .fail, batchSize: 2))
        let error = await #expect(throws: ImportError.self) { try await strict.import(Data(text.utf8), as: "User") }
        #expect(error?.path.description == "$[1].age")
        let later = text.replacingOccurrences(of: #""id": 1, "age": "old""#, with: #""id": 1"#)
        let laterError = await #expect(throws: ImportError.self) { try await strict.import(Data(later.utf8), as: "User") }
        #expect(laterError?.path.description == "$[4].age")
        #expect(try await strict.count(Query("User")) == 0)
    }

    @Test func malformedJSONIsAnErrorWithAByteOffset() async throws {
        let client = try makeClient()
        let error = await #expect(throws: JSONParseError.self) {
            try await client.import(Data(#"[{"id": 1}, {"id": 2,]"#.utf8), as: "User")
        }
        #expect(error?.offset == 21)
    }

    /// Bytes are read a batch at a time: a syntax error after batches were imported rolls them back.
    @Test func malformedJSONInALaterBatchWritesNothing() async throws {
        let client = try makeClient(options: ImportOptions(batchSize: 2))
        let text = "[" + (1...5).map { #"{"id": \#($0)}"# }.joined(separator: ", ") + ", {\"id\": 6} x]"
        let error = await #expect(throws: JSONParseError.self) { try await client.import(Data(text.utf8), as: "User") }
        #expect(error?.offset == text.utf8.count - 2)
        #expect(try await client.count(Query("User")) == 0)
        // The same bytes without the stray character import in three batches.
        let fixed = try await client.import(Data(text.replacingOccurrences(of: " x]", with: "]").utf8), as: "User")
        #expect(fixed.inserted.count == 6)
    }

    @Test func wrongTopLevelShapeIsAnError() async throws {
        let client = try makeClient()
        let error = await #expect(throws: ImportError.self) { try await client.import(JSON(parsing: "42"), as: "User") }
        #expect(error?.message.contains("number") == true)
        let element = await #expect(throws: ImportError.self) { try await client.import(JSON(parsing: #"[{"id": 1}, "two"]"#), as: "User") }
        #expect(element?.path.description == "$[1]")
        let unknown = await #expect(throws: ImportError.self) { try await client.import(JSON(parsing: "[]"), as: "Team") }
        #expect(unknown?.entity == "Team")
    }

    @Test func multiEntityPayloadsShareOneTransaction() async throws {
        let client = try makeClient(options: ImportOptions(policy: .fail))
        let result = try await client.import([
            (entity: "User", json: try JSON(parsing: #"[{"id": 1}]"#)),
            (entity: "Repository", json: try JSON(parsing: #"[{"id": 5, "owner_id": 1}]"#)),
        ])
        #expect(result.objects.count == 2)
        let repo = try #require(try await client.object("Repository", identity: .int(5)))
        #expect(try await client.related("owner", of: repo.id).map { $0["id"] } == [.int(1)])
        await #expect(throws: ImportError.self) {
            try await client.import([
                (entity: "User", json: try JSON(parsing: #"[{"id": 2}]"#)),
                (entity: "Repository", json: try JSON(parsing: #"[{"id": 6, "name": false}]"#)),
            ])
        }
        #expect(try await client.count(Query("User")) == 1)
    }

    @Test func lookupsDoNotGrowWithPayloadSize() async throws {
        func lookups(_ n: Int) async throws -> (Int, [String: Int]) {
            let store = CountingStore()
            let client = try makeClient(store)
            var repos: [JSON] = []
            for i in 0..<n {
                repos.append(["id": .int(Int64(i)), "name": .string("r\(i)"), "owner": ["id": .int(Int64(i % 97)), "login": .string("u\(i % 97)")]])
            }
            _ = try await client.import(.array(repos), as: "Repository")
            _ = try await client.import(.array(repos), as: "Repository")  // the update pass too
            return (store.counts.lookups.load(ordering: .relaxed), store.counts.lookupsByEntity.withLock { $0 })
        }
        let small = try await lookups(1_000)
        let large = try await lookups(10_000)
        #expect(small.0 == large.0)
        #expect(large.1 == ["Repository": 2, "User": 2])  // one per entity per import
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}

/// One coercion rule (issue 19): lossless conversions by default, as RestKit and Sync make them;
/// lossy or ambiguous ones reported; `.strict` takes only each attribute's own JSON type.
@Suite struct CoercionTests {
    static let schema = try! Schema {
        Entity("Item") {
            Attribute("id", .int64)
            Attribute("count", .int32)
            Attribute("small", .int16)
            Attribute("score", .double)
            Attribute("ratio", .float)
            Attribute("price", .decimal)
            Attribute("flag", .bool)
            Attribute("label", .string)
        }
        Entity("Event") {
            Attribute("startsAt", .date)
            Attribute("title", .string)
        }
    }

    func client(_ coercion: ImportOptions.Coercion = .lossless) throws -> Client {
        try Client.Builder(schema: Self.schema).importOptions(ImportOptions(coercion: coercion)).build()
    }

    @Test func losslessConversionsAreMade() async throws {
        let text = #"[{"id": "1", "count": "187", "small": "-12", "score": "131.3", "ratio": "1e-3", "price": 19.5, "flag": "true", "label": 42},"#
            + #"{"id": 2, "flag": "false", "label": 1.5, "count": 12.0}]"#
        for json in [try JSON(parsing: Data(text.utf8))] {
            let client = try client()
            let byData = try await client.import(Data(text.utf8), as: "Item")
            let byTree = try await client.import(json, as: "Item")
            #expect(byData.diagnostics.isEmpty, "\(byData.diagnostics)")
            #expect(byTree.diagnostics.isEmpty)
            #expect(byTree.unchanged.count == 2, "the two ways give the same values")
            let items = try await client.fetch(Query("Item", sortedBy: [.ascending("id")]))
            #expect(items[0].values == [
                "id": .int(1), "count": .int(187), "small": .int(-12), "score": .double(131.3), "ratio": .double(0.001),
                "price": .decimal(Decimal(string: "19.5")!), "flag": .bool(true), "label": .string("42"),
            ])
            #expect(items[1].values == ["id": .int(2), "flag": .bool(false), "label": .string("1.5"), "count": .int(12)])
        }
    }

    @Test(arguments: [
        (#"{"id": 3, "count": "1.5"}"#, "count"),  // a fraction for an integer
        (#"{"id": 3, "count": "3000000000"}"#, "count"),  // out of range
        (#"{"id": 3, "small": "70000"}"#, "small"),
        (#"{"id": 3, "count": " 12"}"#, "count"),  // not a number as written
        (#"{"id": 3, "flag": "yes"}"#, "flag"),  // ambiguous
        (#"{"id": 3, "flag": 1}"#, "flag"),
        (#"{"id": 3, "score": "nan"}"#, "score"),
        (#"{"id": 3, "score": "0x10"}"#, "score"),
        (#"{"id": 3, "label": true}"#, "label"),
        (#"{"id": 3, "label": {"a": 1}}"#, "label"),
    ])
    func lossyConversionsAreReported(_ payload: String, _ attribute: String) async throws {
        let client = try client()
        let result = try await client.import(Data(payload.utf8), as: "Item")
        #expect(result.diagnostics.map(\.attribute) == [attribute])
        #expect(result.diagnostics.first?.action == .valueSkipped)
        let item = try #require(try await client.object("Item", identity: .int(3)))
        #expect(item[attribute] == nil)
    }

    @Test func strictTakesOnlyTheAttributesOwnType() async throws {
        let client = try client(.strict)
        let result = try await client.import(Data(#"[{"id": "4", "count": "187", "flag": "true", "label": 42, "score": 2}]"#.utf8), as: "Item")
        #expect(Set(result.diagnostics.compactMap(\.attribute)) == ["count", "flag", "label"])
        let item = try #require(try await client.object("Item", identity: .int(4)))
        #expect(item.values == ["id": .int(4), "score": .double(2)], "the identity is still read leniently")
    }

    @Test func identitiesMeetAcrossTypesInLookups() async throws {
        let client = try client()
        _ = try await client.import(Data(#"[{"id": 12345}]"#.utf8), as: "Item")
        #expect(try await client.object("Item", identity: .string("12345"))?["id"] == .int(12345))
        #expect(try await client.object("Item", identity: .int(12345)) != nil)
        await #expect(throws: StoreError.self) { _ = try await client.object("Item", identity: .string("x")) }
    }

    /// A date attribute can be the identity: ISO 8601 strings and Unix seconds name the same object.
    @Test func aDateCanBeTheIdentity() async throws {
        let client = try Client.Builder(schema: Self.schema).identity(.attribute("id", overrides: ["Event": ["startsAt"]])).build()
        let first = try await client.import(Data(#"[{"startsAt": "2011-01-26T19:01:12Z", "title": "a"}]"#.utf8), as: "Event")
        #expect(first.inserted.count == 1)
        #expect(first.diagnostics.isEmpty)
        let again = try await client.import(try JSON(parsing: Data(#"[{"startsAt": 1296068472, "title": "b"}]"#.utf8)), as: "Event")
        #expect(again.inserted.isEmpty)
        #expect(again.updated.count == 1)
        let events = try await client.fetch(Query("Event"))
        #expect(events.map { $0["title"] } == [.string("b")])
        #expect(try await client.object("Event", identity: .string("2011-01-26T19:01:12Z"))?["title"] == .string("b"))
        let unusable = try await client.import(Data(#"[{"startsAt": "someday"}]"#.utf8), as: "Event")
        #expect(unusable.diagnostics.map(\.problem) == [.missingIdentity])
    }
}
