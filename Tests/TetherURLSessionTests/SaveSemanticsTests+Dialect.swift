import Foundation
import Testing
import Tether
import TetherTesting
import TetherURLSession

/// Save semantics against a server the test starts (`Fixtures/dialect_server.py`, which refuses
/// read-only and unknown fields, checks `If-Match` and answers `If-None-Match`): minimal PATCH
/// bodies, PUT, empty answers, ETags (issue 20).
@Suite(.serialized) struct DialectSaveTests {
    static func client(_ server: DialectServer, _ collection: URLTemplate = "/notes", _ configure: (Client.Builder) -> Client.Builder = { $0 }) throws -> Client {
        try notesClient(server, collection: collection) { configure($0.readOnly(["id", "createdAt"], of: "Note")) }
    }

    static func note(_ client: Client, _ collection: String = "/notes") async throws -> Object {
        try await client.fetchObject("Note", at: URLTemplate(collection + "/:id"), values: ["id": .int(1)])
    }

    @Test func aPatchSendsOnlyWhatChangedAndAnotherClientsChangeSurvives() async throws {
        let server = try await DialectServer()
        let client = try Self.client(server, "/untagged/notes")
        let note = try await Self.note(client, "/untagged/notes")
        try await server.patch("/untagged/notes/1", #"{"body": "theirs"}"#)

        try await client.updateLocally(note.id, setting: ["title": .string("Mine")], clearing: ["status"])
        let saved = try await client.save(note.id)
        let patch = try #require(try await server.log().last)
        #expect(patch.method == "PATCH")
        #expect(patch.body == .object(["title": "Mine", "status": .null]))   // no id, no created_at, no body
        #expect(saved["title"] == .string("Mine"))
        #expect(saved["status"] == nil)
        #expect(saved["body"] == .string("theirs"))   // the other client's change, kept on the server and merged back

        // Nothing changed since the answer: nothing is sent. A value changed and changed back: nothing either.
        let count = try await server.log().count
        _ = try await client.save(note.id)
        try await client.updateLocally(note.id, setting: ["title": .string("Other")])
        try await client.updateLocally(note.id, setting: ["title": .string("Mine")])
        _ = try await client.save(note.id)
        let after = try await server.log()
        #expect(after.count == count, "\(after.dropFirst(count))")
    }

    @Test func aPutSendsTheWholeObjectButNothingReadOnly() async throws {
        let server = try await DialectServer()
        let client = try Self.client(server) { $0.saveMethod(.put, for: "Note") }
        let note = try await Self.note(client)
        try await client.updateLocally(note.id, setting: ["title": .string("Whole")])
        let saved = try await client.save(note.id)
        let put = try #require(try await server.log().last)
        #expect(put.method == "PUT")
        #expect(put.keys == ["body", "status", "title"])
        #expect(saved["title"] == .string("Whole"))
    }

    @Test func answersWithoutBodyKeepTheLocalObject() async throws {
        let server = try await DialectServer()
        let client = try Self.client(server, "/quiet/notes") { $0.resource("/quiet/notes", item: "/quiet/notes/:id", for: "Note") }
        // 204 to a create, with a Location: stored as sent, then read from the Location (its identity).
        let created = try await client.create("Note", values: ["title": .string("Quiet"), "body": .string("b")])
        #expect(created["title"] == .string("Quiet"))
        #expect(created["id"] != nil)
        #expect(try await client.isUnconfirmed(created.id) == false)
        #expect(try await client.count(Query("Note")) == 1)
        // 204 to a save: the local object stays as it is.
        let note = try await Self.note(client, "/quiet/notes")
        try await client.updateLocally(note.id, setting: ["body": .string("changed")])
        let saved = try await client.save(note.id)
        #expect(saved["body"] == .string("changed"))
        #expect(try await server.log().last?.method == "PATCH")
    }

    @Test func aRefreshWithAnUnchangedETagImportsNothing() async throws {
        let server = try await DialectServer()
        let client = try Self.client(server)
        let note = try await Self.note(client)
        let refreshed = try await client.refresh(note.id)
        #expect(refreshed == note)
        var log = try await server.log()
        #expect(log.last?.ifNoneMatch == "\"v1\"")

        try await server.patch("/notes/1", #"{"title": "Changed elsewhere"}"#)
        #expect(try await client.refresh(note.id)["title"] == .string("Changed elsewhere"))
        log = try await server.log()
        #expect(log.last?.ifNoneMatch == "\"v1\"")
        // The new version's tag is kept: the next refresh is a 304 again.
        _ = try await client.refresh(note.id)
        log = try await server.log()
        #expect(log.last?.ifNoneMatch == "\"v2\"")
        #expect(try await client.object(note.id)?["title"] == .string("Changed elsewhere"))
    }

    @Test func aListFetchedAgainWithAnUnchangedETagImportsNothing() async throws {
        let server = try await DialectServer()
        let client = try Self.client(server)
        let first = try await client.fetchObjects("Note", from: "/notes", options: ImportOptions(deleteMissing: .all))
        #expect(first.objects.count == 2 && !first.notModified)
        #expect(try await server.log().last?.ifNoneMatch == nil)

        let again = try await client.fetchObjects("Note", from: "/notes", options: ImportOptions(deleteMissing: .all))
        #expect(again.notModified)
        #expect(again.objects.map(\.id) == first.objects.map(\.id))
        #expect(again.importResult.objects.isEmpty)
        #expect(try await server.log().last?.ifNoneMatch != nil)

        try await server.patch("/notes/2", #"{"title": "Changed elsewhere"}"#)
        let changed = try await client.fetchObjects("Note", from: "/notes", options: ImportOptions(deleteMissing: .all))
        #expect(!changed.notModified)
        #expect(changed.objects.last?["title"] == .string("Changed elsewhere"))
        #expect(try await client.count(Query("Note")) == 2)

        // An object the list did not hold, stored since: deleting what the list lacks needs the
        // whole list again, not a 304.
        try await client.import(JSON(parsing: Data(#"[{"id": 99, "title": "local only"}]"#.utf8)), as: "Note")
        let whole = try await client.fetchObjects("Note", from: "/notes", options: ImportOptions(deleteMissing: .all))
        #expect(!whole.notModified)
        #expect(try await client.object("Note", identity: .int(99)) == nil)

        // A remote-backed observation counts a 304 as a successful refresh.
        let observation = client.observe(Query("Note"), from: .objects(at: "/notes"), refresh: .never)
        try await observation.refresh()
        #expect(try await server.log().last?.ifNoneMatch != nil)
        var snapshots = observation.makeAsyncIterator()
        let snapshot = try #require(try await snapshots.next())
        #expect(snapshot.objects.count == 2)
        #expect(snapshot.remote?.lastError == nil)
        #expect(snapshot.remote?.lastRefreshed != nil)
    }

    @Test func aSaveOverAChangedVersionIsAConflictThatWritesNothing() async throws {
        let server = try await DialectServer()
        let client = try Self.client(server)
        let note = try await Self.note(client)
        try await server.patch("/notes/1", #"{"body": "theirs", "title": "Their title"}"#)
        try await client.updateLocally(note.id, setting: ["title": .string("Mine")])

        let conflict = await #expect(throws: ConflictError.self) { _ = try await client.save(note.id) }
        let error = try #require(conflict)
        #expect(error.status == 412 && error.method == .patch)
        #expect(error.local == .object(["title": "Mine"]))
        #expect(error.server?["title"]?.stringValue == "Their title")
        #expect(error.serverETag == "\"v2\"")
        #expect(try await server.log().filter { $0.method == "PATCH" }.last?.ifMatch == "\"v1\"")
        // The store still holds the local change, and the server's copy is not imported.
        let stored = try #require(try await client.object(note.id))
        #expect(stored["title"] == .string("Mine"))
        #expect(stored["body"] == .string("hello"))

        // Keep mine: saved over the server's version; their other change survives.
        let saved = try await client.save(note.id, overriding: error)
        #expect(saved["title"] == .string("Mine"))
        #expect(saved["body"] == .string("theirs"))
        #expect(try await server.log().filter { $0.method == "PATCH" }.last?.ifMatch == "\"v2\"")
    }

    @Test func keepingTheServersCopyDropsTheLocalChange() async throws {
        let server = try await DialectServer()
        let client = try Self.client(server)
        let note = try await Self.note(client)
        try await server.patch("/notes/1", #"{"title": "Theirs"}"#)
        try await client.updateLocally(note.id, setting: ["title": .string("Mine")])
        await #expect(throws: ConflictError.self) { _ = try await client.save(note.id) }
        #expect(try await client.refresh(note.id)["title"] == .string("Theirs"))
        let count = try await server.log().count
        _ = try await client.save(note.id)   // nothing pending any more
        #expect(try await server.log().count == count)
    }

    @Test func readOnlyNamesAreChecked() throws {
        #expect(throws: ConfigurationError.self) {
            _ = try Client.Builder(schema: try notesSchema()).readOnly(["nope"], of: "Note").build()
        }
        #expect(throws: ConfigurationError.self) {
            _ = try Client.Builder(schema: try notesSchema()).readOnly(["id"], of: "Nope").build()
        }
    }
}
