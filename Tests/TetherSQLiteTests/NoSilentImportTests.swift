import Foundation
import Testing
import Tether
import TetherSQLite
import TetherTesting

/// No silent import (issue 39), on both stores: an object of the primary data holding its
/// identity and nothing the mapping reads, a document with no object of the entity (after a
/// custom shape too), and key-path shapes given a bare object. Stored links are kept throughout.
@Suite struct NoSilentImportTests {
    struct Member: EntityModel {
        var id: Int64
        var name: String?
        var repositories: [Repo] = []
    }

    struct Repo: EntityModel {
        var id: Int64
        var title: String?
        var owner: Member?
    }

    static let base = URL(string: "https://api.example.com")!

    static func store(_ kind: String, _ folder: TemporaryDirectory) throws -> any Store {
        kind == "memory" ? InMemoryStore() : try SQLiteStore(path: folder.path())
    }

    static func builder(_ store: any Store, _ stub: StubTransport) throws -> Client.Builder {
        try Client.Builder(models: [Member.self, Repo.self])
            .store(store)
            .transport(stub)
            .baseURL(base)
            .resource("/members", for: "Member")
            .resource("/repos", for: "Repo")
            .relationshipResource("/members/:id/repos", for: "repositories", of: "Member")
    }

    /// A member linked to two repositories, as the server first listed them.
    static func seed(_ client: Client, _ stub: StubTransport, wrapped: Bool = false) async throws -> ObjectID {
        stub.on(.get, "/members/1", once: true, json: ["id": 1, "name": "Ann"])
        let repos: JSON = [["id": 10, "title": "a"], ["id": 11, "title": "b"]]
        stub.on(.get, "/members/1/repos", once: true, json: wrapped ? ["data": repos] : repos)
        let member = try await client.fetchObject("Member", from: "/members/1")
        let listed = try await client.relationship("repositories", of: member.id).list()
        #expect(listed.objects.count == 2)
        return member.id
    }

    static func titles(_ client: Client, of member: ObjectID) async throws -> [String] {
        try await client.store.read { reader in
            try reader.objects(try reader.related("repositories", of: member)).compactMap { object -> String? in
                if case .string(let title)? = object.values["title"] { return title }
                return nil
            }.sorted()
        }
    }

    // MARK: Hollow objects

    /// JSON:API's `{"id", "type", "attributes"}` read as plain JSON: every object holds its
    /// identity and none of the entity's keys. Before: 2 objects of ids only, 0 diagnostics.
    @Test(arguments: ["memory", "sqlite"])
    func anObjectWithOnlyItsIdentityAndOtherKeysIsReportedAndSkipped(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let stub = StubTransport()
        let client = try Self.builder(try Self.store(kind, folder), stub).responseShape(.keyPath("data"), for: "Repo").build()
        let member = try await Self.seed(client, stub, wrapped: true)
        stub.on(.get, "/repos", json: ["data": [
            ["id": "10", "type": "repos", "attributes": ["title": "changed"]],
            ["id": "12", "type": "repos", "attributes": ["title": "new"]],
        ]])
        let result = try await client.fetchObjects("Repo", from: "/repos")
        #expect(result.objects.isEmpty)
        let diagnostics = result.importResult.diagnostics
        #expect(diagnostics.count == 2)
        #expect(diagnostics.allSatisfy { $0.problem == .unmappedObject && $0.action == .objectSkipped })
        #expect(diagnostics.first?.message.contains("attributes, id, type") == true, "names its keys: \(diagnostics)")
        #expect(diagnostics.first?.path.description == "$[0]")
        // Nothing written: the stored repository keeps its title, no object of ids only appears.
        #expect(try await Self.titles(client, of: member) == ["a", "b"])
        #expect(try await client.count(Query("Repo")) == 2)

        // Strict: an error, nothing written.
        let strict = try await #require(throws: ImportError.self) {
            try await client.fetchObjects("Repo", from: "/repos", options: ImportOptions(policy: .fail))
        }
        #expect(strict.message.contains("attributes, id, type"))
        // Deleting what the list lacks from a list that was not understood: an error, nothing deleted.
        await #expect(throws: ImportError.self) {
            try await client.fetchObjects("Repo", from: "/repos", options: ImportOptions(deleteMissing: .all))
        }
        #expect(try await client.count(Query("Repo")) == 2)
        #expect(try await Self.titles(client, of: member) == ["a", "b"])
    }

    /// An object of its identity alone is a reference, not a hollow object; a tombstone's marker
    /// is not an unknown key.
    @Test(arguments: ["memory", "sqlite"])
    func identityAloneAndTombstonesAreNotHollow(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let stub = StubTransport()
        let client = try Self.builder(try Self.store(kind, folder), stub).build()
        _ = try await Self.seed(client, stub)
        let result = try await client.import(JSON.array([["id": 10], ["id": 11, "deleted": true]]), as: "Repo",
                                             options: ImportOptions(tombstones: [Tombstone("deleted", equals: true)]))
        #expect(result.diagnostics.isEmpty)
        #expect(result.deleted.count == 1)
        #expect(try await client.count(Query("Repo")) == 1)
    }

    // MARK: Documents without an object of the entity

    /// A loose custom shape given the API's index document: before, 0 objects, 1 diagnostic, and
    /// the relationship set to `[]`.
    @Test(arguments: ["memory", "sqlite"])
    func anIndexDocumentThroughACustomShapeIsAnErrorAndKeepsTheLinks(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let stub = StubTransport()
        let client = try Self.builder(try Self.store(kind, folder), stub)
            .responseShape(.custom { $0["resources"] ?? $0 }, for: "Repo")
            .build()
        let member = try await Self.seed(client, stub)
        stub.on(.get, "/members/1/repos", json: ["users": "/users", "repos": "/repos", "version": "1.0"])
        let error = try await #require(throws: ImportError.self) {
            try await client.relationship("repositories", of: member).list()
        }
        #expect(error.message.contains("repos, users, version"), "names the keys found: \(error)")
        #expect(error.message.contains("custom shape"))
        #expect(try await Self.titles(client, of: member) == ["a", "b"])

        // The same through a list fetch that deletes what the list lacks: nothing deleted.
        stub.on(.get, "/repos", json: ["users": "/users"])
        await #expect(throws: ImportError.self) {
            try await client.fetchObjects("Repo", from: "/repos", options: ImportOptions(deleteMissing: .all))
        }
        #expect(try await client.count(Query("Repo")) == 2)
    }

    /// An array of objects none of which carries the identity is no list of the entity either.
    @Test(arguments: ["memory", "sqlite"])
    func aListWithoutAnyIdentityIsAnErrorAndKeepsTheLinks(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let stub = StubTransport()
        let client = try Self.builder(try Self.store(kind, folder), stub).build()
        let member = try await Self.seed(client, stub)
        stub.on(.get, "/members/1/repos", json: [["name": "x", "href": "/a"], ["name": "y", "href": "/b"]])
        let error = try await #require(throws: ImportError.self) {
            try await client.relationship("repositories", of: member).list()
        }
        #expect(error.message.contains("href, name"))
        #expect(try await Self.titles(client, of: member) == ["a", "b"])
    }

    // MARK: Key-path shapes and bare items

    /// Lists wrapped, items bare (sandman2): a GET of one object and the answer to a create.
    @Test(arguments: ["memory", "sqlite"])
    func aKeyPathShapeTakesABareObjectInItemAndCreateAnswers(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let stub = StubTransport()
        let client = try Self.builder(try Self.store(kind, folder), stub).responseShape(.keyPath("resources")).build()
        stub.on(.get, "/members", json: ["resources": [["id": 1, "name": "Ann"]]])
        stub.on(.get, "/members/1", json: ["id": 1, "name": "Ann B."])
        stub.on(.post, "/repos", status: 201, json: ["id": 20, "title": "made", "owner_id": 1])
        #expect(try await client.fetchObjects("Member", from: "/members").objects.count == 1)
        let member = try await client.fetchObject("Member", from: "/members/1")
        #expect(member.values["name"] == .string("Ann B."))
        let refreshed = try await client.refresh(member.id)
        #expect(refreshed.values["name"] == .string("Ann B."))

        let created = try await client.create("Repo", values: ["title": .string("made")])
        #expect(created.values["id"] == .int(20))
        #expect(try await client.count(Query("Repo")) == 1, "the object the server made is in the store")
        #expect(try await Self.titles(client, of: member.id) == ["made"])

        // An item answer that is neither the envelope nor an object of the entity is still an error.
        stub.on(.get, "/members/2", json: ["user": ["id": 2]])
        let error = try await #require(throws: ImportError.self) { try await client.fetchObject("Member", from: "/members/2") }
        #expect(error.message.contains("no 'resources'"))
        // A list answered bare is not read as an envelope: a list must come as declared.
        stub.on(.get, "/others", json: ["id": 3, "name": "Cy"])
        await #expect(throws: ImportError.self) { try await client.fetchObjects("Member", from: "/others") }
    }
}
