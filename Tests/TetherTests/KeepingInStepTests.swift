import Foundation
import Synchronization
import Testing
@testable import Tether

/// Staying equal to the server (issue 19): import options, delete-missing within a scope,
/// tombstones and imports into a parent. Tests that follow a peer's test name it; the fixtures are
/// Sync's (Tests/TetherTests/Fixtures/sync, MIT), some with the trailing commas Sync's loader takes.
@Suite struct KeepingInStepTests {
    static let schema = try! Schema {
        Entity("User") {
            Attribute("id", .int64)
            Attribute("firstName", .string)
            Attribute("lastName", .string)
            Attribute("age", .int32)
            Attribute("email", .string)
            Relationship.toMany("messages", "Message", inverse: "user", deleteRule: .cascade)
            Relationship.toMany("notes", "Note", inverse: "users")
        }
        Entity("Message") {
            Attribute("id", .int64)
            Attribute("text", .string)
            Relationship.toOne("user", "User", inverse: "messages")
        }
        Entity("Note") {
            Attribute("id", .string)
            Attribute("text", .string)
            Relationship.toMany("users", "User", inverse: "notes")
        }
    }

    static func client(_ options: ImportOptions = ImportOptions(), store: some Store = InMemoryStore()) throws -> Client {
        try Client.Builder(schema: schema).naming(SnakeCase()).store(store).importOptions(options).build()
    }

    /// `first_name` ↔ `firstName`.
    struct SnakeCase: NamingStrategy {
        func jsonKey(for name: String, in entity: String) -> String {
            name.reduce(into: "") { out, c in out += c.isUppercase ? "_" + c.lowercased() : String(c) }
        }
        func modelName(for jsonKey: String, in entity: String) -> String { jsonKey }
        func resourcePath(for entity: String) -> String { entity.lowercased() + "s" }
    }

    /// A Sync fixture, with the trailing commas of some of them removed.
    static func sync(_ name: String) throws -> Data {
        let text = String(decoding: try fixture("sync/\(name)"), as: UTF8.self)
        return Data(text.replacingOccurrences(of: #",(\s*[\]}])"#, with: "$1", options: .regularExpression).utf8)
    }

    /// Sync's DataFilterTests seed: users 0 to 4.
    static func seedUsers(_ client: Client, ids: [Int64] = [0, 1, 2, 3, 4]) async throws {
        let users = ids.map { id in JSON.object(["id": .int(id), "first_name": .string("u\(id)"), "age": .int(20)]) }
        _ = try await client.import(.array(users), as: "User")
    }

    static func ids(_ client: Client, _ entity: String = "User") async throws -> [Int64] {
        try await client.fetch(Query(entity, sortedBy: [.ascending("id")])).compactMap { $0["id"]?.intValue }
    }

    // MARK: Delete-missing (Sync's DataFilterTests)

    /// DataFilterTests.testMapChangesA: users.json against 0–4: 6 and 7 inserted, 0–3 updated, 4 deleted.
    @Test func mapChangesA() async throws {
        let client = try Self.client(ImportOptions(deleteMissing: .all))
        try await Self.seedUsers(client)
        let result = try await client.import(Self.sync("datafilter-users.json"), as: "User")
        #expect(result.inserted.count == 2)
        #expect(result.updated.count == 4)
        #expect(result.deleted.map(\.rowID) == [5])
        #expect(try await Self.ids(client) == [0, 1, 2, 3, 6, 7])
    }

    /// DataFilterTests.testMapChangesAWitNull: an element with `"id": null` is skipped, and is not held.
    @Test func mapChangesAWithNull() async throws {
        let client = try Self.client(ImportOptions(deleteMissing: .all))
        try await Self.seedUsers(client)
        let result = try await client.import(Self.sync("datafilter-users-with-null.json"), as: "User")
        #expect(result.diagnostics.map(\.problem) == [.missingIdentity])
        #expect(try await Self.ids(client) == [0, 1, 2, 3, 6, 7])
    }

    /// DataFilterTests.testMapChangesAWithNil: an element without an id is skipped; 3 is not in the payload.
    @Test func mapChangesAWithNil() async throws {
        let client = try Self.client(ImportOptions(deleteMissing: .all))
        try await Self.seedUsers(client)
        let result = try await client.import(Self.sync("users-with-nil.json"), as: "User")
        #expect(result.inserted.count == 2)
        #expect(result.deleted.count == 2)
        #expect(try await Self.ids(client) == [0, 1, 2, 6, 7])
    }

    /// DataFilterTests.testMapChangesB and testMapChangesC: the same five delete nothing; `[]` deletes all.
    @Test func mapChangesBAndC() async throws {
        let client = try Self.client(ImportOptions(deleteMissing: .all))
        try await Self.seedUsers(client)
        let same = try await client.import(Self.sync("datafilter-users2.json"), as: "User")
        #expect(same.deleted.isEmpty)
        #expect(same.inserted.isEmpty)
        let empty = try await client.import(Self.sync("datafilter-users3.json"), as: "User")
        #expect(empty.deleted.count == 5)
        #expect(try await client.count(Query("User")) == 0)
    }

    /// DataFilterTests.testStringID: a string id `"123"` updates the stored note 123.
    @Test func stringID() async throws {
        let client = try Self.client()
        _ = try await client.import(JSON.array([["id": "123", "text": "text"]]), as: "Note")
        let result = try await client.import(Self.sync("datafilter-note.json"), as: "Note")
        #expect(result.inserted.isEmpty)
        #expect(try await client.count(Query("Note")) == 1)
    }

    /// DataFilterTests.testInsertOnly, testUpdateOnly and testDeleteOnly on simple.json (0 and 7)
    /// against stored 0 and 1.
    @Test(arguments: [
        (ImportOptions(update: false), [Int64(0), 1, 7], "u0"),  // insert only (and no delete)
        (ImportOptions(insert: false), [0, 1], "Amy"),  // update only
        (ImportOptions(insert: false, update: false, deleteMissing: .all), [0], "u0"),  // delete only
    ])
    func operations(_ options: ImportOptions, _ expected: [Int64], _ firstName: String) async throws {
        let client = try Self.client()
        try await Self.seedUsers(client, ids: [0, 1])
        _ = try await client.import(Self.sync("datafilter-simple.json"), as: "User", options: options)
        #expect(try await Self.ids(client) == expected)
        #expect(try await client.object("User", identity: .int(0))?["firstName"] == .string(firstName))
    }

    /// DataFilterTests.testPredicate: a scope of a condition deletes only inside it.
    @Test func predicateScope() async throws {
        let client = try Self.client()
        try await Self.seedUsers(client)
        let result = try await client.import(
            JSON.array([["id": 1], ["id": 2], ["id": 9]]), as: "User",
            options: ImportOptions(deleteMissing: .matching(.less("id", .int(2)))))
        #expect(result.deleted.count == 1)  // 0 is in scope and missing; 3 and 4 are outside the scope
        #expect(try await Self.ids(client) == [1, 2, 3, 4, 9])
    }

    @Test func aScopeOfOneParentsRelationship() async throws {
        let client = try Self.client()
        _ = try await client.import(JSON.array([
            ["id": 1, "messages": [["id": 10], ["id": 11]]],
            ["id": 2, "messages": [["id": 20]]],
        ]), as: "User")
        let one = try #require(try await client.object("User", identity: .int(1)))
        let result = try await client.import(
            JSON.array([["id": 11, "text": "kept"], ["id": 12]]), as: "Message", into: "messages", of: one.id,
            options: ImportOptions(deleteMissing: .related("messages", of: one.id)))
        #expect(result.deleted.count == 1)
        #expect(try await Self.ids(client, "Message") == [11, 12, 20], "20 is another user's: outside the scope")
        #expect(try await client.related("messages", of: one.id).compactMap { $0["id"]?.intValue } == [11, 12])
        // Adding keeps what is linked.
        _ = try await client.import(JSON.array([["id": 13]]), as: "Message", into: "messages", of: one.id, .adding)
        #expect(try await client.related("messages", of: one.id).compactMap { $0["id"]?.intValue } == [11, 12, 13])
        await #expect(throws: ImportError.self) {
            _ = try await client.import(JSON.array([]), as: "Note", into: "messages", of: one.id)
        }
    }

    @Test func presentMeansMappedAnywhereNestedIncluded() async throws {
        let client = try Self.client()
        _ = try await client.import(JSON.array([["id": 1, "messages": [["id": 10], ["id": 11]]]]), as: "User")
        _ = try await client.import(JSON.array([["id": 12], ["id": 13]]), as: "Message")
        // Messages 10 (nested) and 12 (top level) are held; 11 and 13 are not.
        let result = try await client.import(
            JSON.array([["id": 12], ["id": 99, "user": ["id": 1, "messages": [["id": 10]]]]]), as: "Message",
            options: ImportOptions(deleteMissing: .all))
        #expect(Set(result.deleted.map(\.rowID)).count == 2)
        #expect(try await Self.ids(client, "Message") == [10, 12, 99])
    }

    @Test func deletionFollowsDeleteRulesAndFailsWholeOnDeny() async throws {
        let client = try Self.client()
        _ = try await client.import(JSON.array([["id": 1, "messages": [["id": 10]]], ["id": 2]]), as: "User")
        let result = try await client.import(JSON.array([["id": 2]]), as: "User", options: ImportOptions(deleteMissing: .all))
        #expect(Set(result.deleted.map(\.entity)) == ["User", "Message"], "the cascade took the messages")
        #expect(try await client.count(Query("Message")) == 0)
    }

    @Test func aSingleObjectIsNotAListToDeleteFrom() async throws {
        let client = try Self.client()
        try await Self.seedUsers(client)
        let error = await #expect(throws: ImportError.self) {
            _ = try await client.import(Data(#"{"id": 1}"#.utf8), as: "User", options: ImportOptions(deleteMissing: .all))
        }
        #expect(error?.message.contains("not a list") == true)
        #expect(try await client.count(Query("User")) == 5, "nothing was deleted")
    }

    /// Every way in, in small batches: bytes, a streamed file and a tree delete the same.
    @Test func deletionWaitsForTheLastBatch() async throws {
        let payload = (0..<50).filter { $0 % 7 != 0 }.map { #"{"id": \#($0)}"# }
        let text = "[" + payload.joined(separator: ",") + "]"
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tether-delete-\(UUID().uuidString).json")
        try Data(text.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        for way in 0..<3 {
            let client = try Self.client(ImportOptions(batchSize: 4, deleteMissing: .all))
            try await Self.seedUsers(client, ids: (0..<50).map(Int64.init))
            let result = switch way {
            case 0: try await client.import(Data(text.utf8), as: "User")
            case 1: try await client.import(contentsOf: file, as: "User")
            default: try await client.import(try JSON(parsing: Data(text.utf8)), as: "User")
            }
            #expect(result.deleted.count == 8, "way \(way)")
            #expect(try await Self.ids(client) == (0..<50).filter { $0 % 7 != 0 }.map(Int64.init), "way \(way)")
        }
    }

    // MARK: Options on nested objects (Sync's test422…)

    /// SyncTests.test422OneToManyOperationOptionsInsert: nested objects inserted, not updated.
    @Test func oneToManyInsertRelationshipsOnly() async throws {
        let client = try Self.client()
        _ = try await client.import(Self.sync("422-one-to-many-insert-option-initial.json"), as: "User")
        _ = try await client.import(Self.sync("422-one-to-many-insert-option-update.json"), as: "User",
                                    options: ImportOptions(updateRelationships: false))
        #expect(try await client.count(Query("Message")) == 2)
        #expect(try await client.object("Message", identity: .int(101))?["text"] == .string("101"))
    }

    /// SyncTests.test422OneToManyOperationOptionsUpdateRelationships: updated, not inserted.
    @Test func oneToManyUpdateRelationshipsOnly() async throws {
        let client = try Self.client()
        _ = try await client.import(Self.sync("422-one-to-many-update-option-initial.json"), as: "User")
        _ = try await client.import(Self.sync("422-one-to-many-update-option-update.json"), as: "User",
                                    options: ImportOptions(insertRelationships: false))
        #expect(try await client.count(Query("Message")) == 1)
        #expect(try await client.object("Message", identity: .int(101))?["text"] == .string("updated-101"))
    }

    /// SyncTests.test422OneToManyOperationOptionsDeleteRelationships: the unlisted child is deleted.
    @Test func oneToManyDeleteRelationships() async throws {
        let client = try Self.client()
        _ = try await client.import(Self.sync("422-one-to-many-delete-option-initial.json"), as: "User")
        let result = try await client.import(Self.sync("422-one-to-many-delete-option-update.json"), as: "User",
                                             options: ImportOptions(insertRelationships: false, updateRelationships: false, deleteRelationships: true))
        #expect(try await Self.ids(client, "Message") == [102])
        #expect(try await client.object("Message", identity: .int(102))?["text"] == .string("102"))
        #expect(result.deleted.count == 1)
    }

    @Test func withoutDeleteRelationshipsAChildIsOnlyUnlinked() async throws {
        let client = try Self.client()
        _ = try await client.import(Self.sync("422-one-to-many-delete-option-initial.json"), as: "User")
        _ = try await client.import(Self.sync("422-one-to-many-delete-option-update.json"), as: "User")
        #expect(try await Self.ids(client, "Message") == [101, 102, 103])
        let orphan = try #require(try await client.object("Message", identity: .int(101)))
        #expect(try await client.related("user", of: orphan.id).isEmpty)
    }

    @Test func aChildMovedToAnotherParentIsKept() async throws {
        let client = try Self.client(ImportOptions(deleteRelationships: true))
        _ = try await client.import(JSON.array([["id": 1, "messages": [["id": 10], ["id": 11]]], ["id": 2, "messages": []]]), as: "User")
        let result = try await client.import(JSON.array([["id": 1, "messages": [["id": 10]]], ["id": 2, "messages": [["id": 11]]]]), as: "User")
        #expect(result.deleted.isEmpty)
        #expect(try await Self.ids(client, "Message") == [10, 11])
    }

    /// SyncTests.test422ManyToManyOperationOptionsDeleteRelationships: many-to-many only unlinks.
    @Test func manyToManyOnlyUnlinks() async throws {
        let client = try Self.client(ImportOptions(deleteRelationships: true))
        _ = try await client.import(JSON.array([["id": 1, "notes": [["id": "a"], ["id": "b"]]]]), as: "User")
        _ = try await client.import(JSON.array([["id": 1, "notes": [["id": "b"]]]]), as: "User")
        #expect(try await client.count(Query("Note")) == 2)
        let user = try #require(try await client.object("User", identity: .int(1)))
        #expect(try await client.related("notes", of: user.id).map { $0["id"] } == [.string("b")])
    }

    // MARK: Tombstones

    @Test func tombstonesDeleteInsteadOfUpdating() async throws {
        let client = try Self.client(ImportOptions(tombstones: [Tombstone("deleted", equals: true), Tombstone("state", in: ["removed"], entity: "Message")]))
        _ = try await client.import(JSON.array([["id": 1, "messages": [["id": 10], ["id": 11]]], ["id": 2]]), as: "User")
        let result = try await client.import(JSON.array([
            ["id": 1, "deleted": true, "first_name": "ignored"],
            ["id": 2, "messages": [["id": 11, "state": "removed"], ["id": 12]]],
            ["id": 3, "deleted": true],  // not stored: not inserted
        ]), as: "User")
        #expect(try await Self.ids(client) == [2])
        #expect(try await Self.ids(client, "Message") == [12], "10 went with user 1 (cascade), 11 by its own tombstone")
        #expect(result.deleted.count == 3)
        let two = try #require(try await client.object("User", identity: .int(2)))
        #expect(try await client.related("messages", of: two.id).map { $0["id"] } == [.int(12)])
        // A later occurrence that is not a tombstone wins.
        let again = try await client.import(JSON.array([["id": 5, "deleted": true], ["id": 5, "first_name": "back"]]), as: "User")
        #expect(again.inserted.count == 1)
    }

    @Test func optionsThatCannotBeHonouredAreErrors() async throws {
        let client = try Self.client()
        let user = try await client.insertLocally("User", values: ["id": .int(1)])
        await #expect(throws: ImportError.self) {
            _ = try await client.import(JSON.array([]), as: "User", options: ImportOptions(deleteMissing: .related("messages", of: user.id)))
        }
        await #expect(throws: ImportError.self) {
            _ = try await client.import(JSON.array([]), as: "User", options: ImportOptions(tombstones: [Tombstone("x", equals: true, entity: "Nope")]))
        }
    }
}

private extension Value {
    var intValue: Int64? { if case .int(let i) = self { i } else { nil } }
}

/// Owned objects: a nested to-one object without identity belongs to its parent (Sync's rule).
@Suite struct OwnedObjectTests {
    static let schema = try! Schema {
        Entity("User") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Attribute("email", .string)
            Relationship.toOne("location", "Location", inverse: "user", deleteRule: .cascade)
            Relationship.toMany("profilePictures", "Image", inverse: "user")
            Relationship.toMany("addresses", "Address", inverse: "user")
        }
        Entity("Location") {
            Attribute("city", .string)
            Attribute("street", .string)
            Attribute("zipCode", .int64)
            Relationship.toOne("user", "User", inverse: "location")
        }
        Entity("Image") {
            Attribute("imageID", .int64)
            Attribute("url", .string)
            Relationship.toOne("user", "User", inverse: "profilePictures")
        }
        Entity("Address") {
            Attribute("line", .string)
            Relationship.toOne("user", "User", inverse: "addresses")
        }
    }

    static func client(_ options: ImportOptions = ImportOptions()) throws -> Client {
        try Client.Builder(schema: schema)
            .identity(.attribute("id", overrides: ["Image": ["imageID"]]))
            .keyMapping(KeyOverrides([
                "User": ["profilePictures": "profile_pictures"], "Location": ["zipCode": "zip_code"], "Image": ["imageID": "ImageId"],
            ]))
            .importOptions(options)
            .build()
    }

    /// SyncTests.testRelationshipsB, imported twice: 3 locations, not 6; each user keeps its own.
    @Test func reimportUpdatesTheOwnedObjectInPlace() async throws {
        let client = try Self.client()
        let data = try KeepingInStepTests.sync("users_c.json")
        let first = try await client.import(data, as: "User")
        #expect(first.diagnostics.isEmpty, "\(first.diagnostics)")
        let before = try await client.fetch(Query("Location", sortedBy: [.ascending("city")]))
        let again = try await client.import(data, as: "User")
        #expect(again.inserted.isEmpty)
        #expect(again.updated.isEmpty, "nothing changed")
        let after = try await client.fetch(Query("Location", sortedBy: [.ascending("city")]))
        #expect(after.map(\.id) == before.map(\.id))
        #expect(try await client.count(Query("User")) == 4)
        let user = try #require(try await client.object("User", identity: .int(6)))
        let location = try #require(try await client.related("location", of: user.id).first)
        #expect(location["city"] == .string("New York"))
        #expect(location["zipCode"] == .int(10012))
        #expect(try await client.related("profilePictures", of: user.id).count == 3)

        // A change updates the same object; the parent's other objects stay.
        let moved = try await client.import(JSON.array([["id": 6, "location": ["city": "Oslo"]]]), as: "User")
        #expect(moved.inserted.isEmpty)
        #expect(moved.updated == [location.id])
        let updated = try #require(try await client.object(location.id))
        #expect(updated["city"] == .string("Oslo"))
        #expect(updated["street"] == nil, "an owned object given again is given whole: a key it does not give is cleared")
        #expect(try await client.count(Query("Location")) == after.count)
    }

    @Test func aNewParentGetsANewOwnedObjectAndNullUnlinks() async throws {
        let client = try Self.client()
        _ = try await client.import(JSON.array([["id": 1, "location": ["city": "A"]], ["id": 2, "location": ["city": "B"]]]), as: "User")
        #expect(try await client.count(Query("Location")) == 2)
        _ = try await client.import(JSON.array([["id": 1, "location": nil]]), as: "User")
        let one = try #require(try await client.object("User", identity: .int(1)))
        #expect(try await client.related("location", of: one.id).isEmpty)
    }

    /// Identity-less objects in to-many arrays are owned by their parent: matched by position,
    /// so that re-imports leave as many as the payload gives, with or without deleteRelationships.
    @Test func identityLessObjectsInToManyArraysAreMatchedInPlace() async throws {
        let payload: JSON = .array([["id": 1, "addresses": [["line": "a"], ["line": "b"]]]])
        for options in [ImportOptions(), ImportOptions(deleteRelationships: true)] {
            let client = try Self.client(options)
            _ = try await client.import(payload, as: "User")
            let again = try await client.import(payload, as: "User")
            #expect(again.inserted.isEmpty && again.updated.isEmpty)
            #expect(try await client.count(Query("Address")) == 2)
            let user = try #require(try await client.object("User", identity: .int(1)))
            #expect(try await client.related("addresses", of: user.id).count == 2)
        }
    }

    @Test func nullDeletesTheOwnedObject() async throws {
        let client = try Self.client()
        _ = try await client.import(JSON.array([["id": 1, "location": ["city": "A"]], ["id": 2, "location": ["city": "B"]]]), as: "User")
        let result = try await client.import(JSON.array([["id": 1, "location": nil]]), as: "User")
        #expect(result.deleted.count == 1)
        #expect(try await client.count(Query("Location")) == 1)
    }
}

/// Fallback JSON keys (issue 19): read when the payload lacks a property's own key, first present wins.
@Suite struct FallbackKeyTests {
    static let schema = try! Schema {
        Entity("User") {
            Attribute("id", .int64)
            Attribute("avatarURL", .string)
            Attribute("login", .string)
            Relationship.toMany("repositories", "Repository", inverse: "owner")
        }
        Entity("Repository") {
            Attribute("id", .int64)
            Relationship.toOne("owner", "User", inverse: "repositories")
        }
    }

    @Test func fallbacksAreReadInOrderWhenTheOwnKeyIsAbsent() async throws {
        let client = try Client.Builder(schema: Self.schema)
            .keyMapping(KeyOverrides(["User": ["avatarURL": "avatar_url"]],
                                     fallbacks: ["User": ["avatarURL": ["avatarUrl", "picture.url"], "id": ["userId"], "repositories": ["repos"]]]))
            .build()
        let result = try await client.import(Data(#"""
            [{"id": 1, "avatar_url": "own", "avatarUrl": "ignored"},
             {"id": 2, "picture": {"url": "nested"}, "avatarUrl": "first"},
             {"userId": 3, "picture": {"url": "second"}, "repos": [{"id": 30}]}]
            """#.utf8), as: "User")
        #expect(result.diagnostics.isEmpty)
        let users = try await client.fetch(Query("User", sortedBy: [.ascending("id")]))
        #expect(users.map { $0["avatarURL"] } == [.string("own"), .string("first"), .string("second")])
        #expect(try await client.related("repositories", of: users[2].id).count == 1)
        // Request bodies use the own key only.
        #expect(try await client.export(users[0].id)["avatar_url"] == "own")
        #expect(try await client.export(users[0].id)["avatarUrl"] == nil)
    }

    @Test func aFallbackNamingAnotherPropertysKeyIsNotRead() async throws {
        let client = try Client.Builder(schema: Self.schema)
            .keyMapping(KeyOverrides([:], fallbacks: ["User": ["avatarURL": ["login"]]]))
            .build()
        _ = try await client.import(Data(#"[{"id": 1, "login": "octocat"}]"#.utf8), as: "User")
        let user = try #require(try await client.object("User", identity: .int(1)))
        #expect(user["avatarURL"] == nil)
        #expect(user["login"] == .string("octocat"))
    }

    @Test func anUnknownPropertyIsAConfigurationError() throws {
        #expect(throws: ConfigurationError.self) {
            _ = try Client.Builder(schema: Self.schema).keyMapping(KeyOverrides([:], fallbacks: ["User": ["nope": ["x"]]])).build()
        }
    }
}

/// Cancelling the task of an import stops it at the next batch and rolls it back (issue 21's
/// cancellation, which the session's batch boundary gives).
@Suite struct ImportCancellationTests {
    /// A store that cancels a task when the import's first insert batch reaches it.
    final class CancellingStore: Store {
        let base = InMemoryStore()
        let task = Mutex<Task<ImportResult, any Error>?>(nil)
        let inserts = Mutex(0)
        func prepare(for schema: Schema) throws { try base.prepare(for: schema) }
        func read<T: Sendable>(_ body: @Sendable (any StoreReader) throws -> T) async throws -> T { try await base.read(body) }
        func write<T: Sendable>(_ body: @Sendable (any StoreWriter) throws -> T) async throws -> T {
            let store = self
            return try await base.write { try body(Writer(base: $0, store: store)) }
        }
        func changes() -> AsyncStream<ChangeSet> { base.changes() }

        struct Writer: StoreWriter {
            let base: any StoreWriter
            let store: CancellingStore
            func objects(_ entity: String, identities: [IdentityKey]) throws -> [IdentityKey: Object] { try base.objects(entity, identities: identities) }
            func object(_ id: ObjectID) throws -> Object? { try base.object(id) }
            func fetch(_ query: Query) throws -> [Object] { try base.fetch(query) }
            func count(_ query: Query) throws -> Int { try base.count(query) }
            func related(_ relationship: String, of ids: [ObjectID]) throws -> [ObjectID: [ObjectID]] { try base.related(relationship, of: ids) }
            func insert(_ entity: String, values: [String: Value]) throws -> Object { try base.insert(entity, values: values) }
            func update(_ id: ObjectID, setting values: [String: Value], clearing cleared: Set<String>) throws {
                try base.update(id, setting: values, clearing: cleared)
            }
            func delete(_ id: ObjectID) throws { try base.delete(id) }
            func setRelated(_ relationship: String, of id: ObjectID, to targets: [ObjectID]) throws { try base.setRelated(relationship, of: id, to: targets) }
            func insert(_ batch: InsertBatch) throws -> [ObjectID] {
                if store.inserts.withLock({ $0 += 1; return $0 }) == 1 { store.task.withLock { $0?.cancel() } }
                return try base.insert(batch)
            }
        }
    }

    @Test func aCancelledImportWritesNothing() async throws {
        let schema = try Schema { Entity("Item") { Attribute("id", .int64); Attribute("name", .string) } }
        let store = CancellingStore()
        let client = try Client.Builder(schema: schema).store(store).importOptions(ImportOptions(batchSize: 100)).build()
        let text = "[" + (0..<5_000).map { #"{"id": \#($0), "name": "n\#($0)"}"# }.joined(separator: ",") + "]"
        let gate = Mutex(false)
        let task = Task {
            while !gate.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(1)) }
            return try await client.import(Data(text.utf8), as: "Item")
        }
        store.task.withLock { $0 = task }
        gate.withLock { $0 = true }
        await #expect(throws: CancellationError.self) { _ = try await task.value }
        #expect(store.inserts.withLock { $0 } == 1, "stopped at the next batch")
        #expect(try await client.count(Query("Item")) == 0, "rolled back")
    }
}
