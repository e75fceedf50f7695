import Foundation
import Testing
import Tether
import TetherRails
import TetherTesting
import TetherURLSession

/// The examples of Docs/Talking-To-Your-Server.md, compiled and run against a stub of the page's
/// notes API.
@Suite struct TalkingToYourServerDocTests {
    static let schema = try! Schema {
        Entity("Note") {
            Attribute("id", .int64)
            Attribute("title", .string)
            Attribute("body", .string)
            Attribute("createdAt", .date)
        }
    }

    /// The page's builder, as written.
    static func builder() -> Client.Builder {
        Client.Builder(schema: schema)
            .naming(.rails)
            .transport(URLSessionTransport())
            .baseURL(URL(string: "https://notes.example/v2")!)
            .resource("/notes", for: "Note")
            .responseShape(.keyPath("data"), for: "Note")
            .pagination(.cursor(at: "meta.next_cursor", parameter: "cursor"), for: "Note")
            .readOnly(["id", "createdAt"], of: "Note")
    }

    static func note(_ id: Int, _ title: String, body: String? = "text") -> JSON {
        ["id": .int(Int64(id)), "title": .string(title), "body": body.map(JSON.string) ?? .null, "created_at": "2026-01-01T00:00:00Z"]
    }

    static func stub() -> StubTransport {
        let stub = StubTransport()
        stub.on(.get, "/v2/notes", json: ["data": [note(41, "a"), note(42, "b")], "meta": ["next_cursor": "c2"]])
        stub.on(.get, "/v2/notes?cursor=c2", json: ["data": [note(43, "c")], "meta": ["next_cursor": nil]])
        return stub
    }

    @Test func shapesAndPagination() async throws {
        let stub = Self.stub()
        let client = try Self.builder().transport(stub).build()
        let notes = try await client.fetchObjects("Note", from: "/notes")
        #expect(notes.pages == 2)
        #expect(notes.isComplete)
        #expect(notes.objects.count == 3)

        // The custom shape of the page.
        let custom = try Self.builder().transport(stub).responseShape(.custom { json in
            if let notes = json["notes"] { return notes }
            if let note = json["note"] { return note }
            throw ImportError(path: .root, entity: "Note", message: "neither notes nor note in the response")
        }, for: "Note").pagination(.none, for: "Note").build()
        stub.on(.get, "/v2/custom", json: ["notes": [Self.note(44, "d")]])
        stub.on(.get, "/v2/custom/1", json: ["note": Self.note(45, "e")])
        stub.on(.get, "/v2/custom/2", json: ["other": []])
        #expect(try await custom.fetchObjects("Note", from: "/custom").objects.count == 1)
        #expect(try await custom.fetchObject("Note", from: "/custom/1")["title"] == .string("e"))
        await #expect(throws: ImportError.self) { _ = try await custom.fetchObject("Note", from: "/custom/2") }
    }

    @Test func savingOnlyWhatChanged() async throws {
        let stub = Self.stub()
        stub.on(.get, "/v2/notes/42", headers: ["ETag": "\"v7\""], json: ["data": Self.note(42, "b")])
        stub.on(.patch, "/v2/notes/42", headers: ["ETag": "\"v8\""], json: ["data": Self.note(42, "Renamed", body: nil)])
        let client = try Self.builder().transport(stub).build()

        let note = try await client.fetchObject("Note", at: "/notes/:id", values: ["id": .int(42)])
        try await client.updateLocally(note.id, setting: ["title": .string("Renamed")], clearing: ["body"])
        try await client.save(note.id)
        try await client.save(note.id)
        let patches = stub.requests(.patch)
        #expect(patches.count == 1)
        #expect(try JSON(parsing: try #require(patches.first?.body)) == ["title": "Renamed", "body": nil])
        #expect(patches.first?.headers["If-Match"] == "\"v7\"")
    }

    @Test(arguments: [true, false]) func conflicts(keepMine: Bool) async throws {
        let stub = Self.stub()
        stub.on(.get, "/v2/notes/42", once: true, headers: ["ETag": "\"v7\""], json: ["data": Self.note(42, "b")])
        stub.on(.patch, "/v2/notes/42", once: true, status: 412, json: ["detail": "changed"])
        stub.on(.get, "/v2/notes/42", headers: ["ETag": "\"v9\""], json: ["data": Self.note(42, "Theirs")])
        stub.on(.patch, "/v2/notes/42", headers: ["ETag": "\"v10\""], json: ["data": Self.note(42, "Mine")])
        let client = try Self.builder().transport(stub).build()
        let note = try await client.fetchObject("Note", at: "/notes/:id", values: ["id": .int(42)])
        try await client.updateLocally(note.id, setting: ["title": .string("Mine")])

        do {
            try await client.save(note.id)
        } catch let conflict as ConflictError {
            #expect(conflict.server?["title"] == "Theirs")
            #expect(conflict.serverETag == "\"v9\"")
            if keepMine {
                try await client.save(note.id, overriding: conflict)   // If-Match: the server's new ETag
            } else {
                try await client.refresh(note.id)                       // the server's copy; local changes dropped
            }
        }
        if keepMine {
            #expect(stub.requests(.patch).last?.headers["If-Match"] == "\"v9\"")
            #expect(try await client.object(note.id)?["title"] == .string("Mine"))
        } else {
            #expect(stub.requests(.patch).count == 1)
            #expect(try await client.object(note.id)?["title"] == .string("Theirs"))
        }
    }

    /// On a store that keeps no remote records, a save of only the changes is refused before
    /// anything is sent; a save of everything still works.
    @Test func aStoreWithoutRecordsSaysSo() async throws {
        final class NoRecords: Store {
            let base = InMemoryStore()
            func prepare(for schema: Schema) throws { try base.prepare(for: schema) }
            func read<T: Sendable>(_ body: @Sendable (any StoreReader) throws -> T) async throws -> T { try await base.read { try body(Forward($0)) } }
            func write<T: Sendable>(_ body: @Sendable (any StoreWriter) throws -> T) async throws -> T { try await base.write { try body(Forward($0)) } }
            func changes() -> AsyncStream<ChangeSet> { base.changes() }
            final class Forward: StoreWriter {
                let base: any StoreReader
                init(_ base: any StoreReader) { self.base = base }
                var writer: any StoreWriter { base as! any StoreWriter }
                func objects(_ e: String, identities: [IdentityKey]) throws -> [IdentityKey: Object] { try base.objects(e, identities: identities) }
                func object(_ id: ObjectID) throws -> Object? { try base.object(id) }
                func fetch(_ q: Query) throws -> [Object] { try base.fetch(q) }
                func count(_ q: Query) throws -> Int { try base.count(q) }
                func related(_ r: String, of ids: [ObjectID]) throws -> [ObjectID: [ObjectID]] { try base.related(r, of: ids) }
                func insert(_ e: String, values: [String: Value]) throws -> Object { try writer.insert(e, values: values) }
                func update(_ id: ObjectID, setting v: [String: Value], clearing c: Set<String>) throws { try writer.update(id, setting: v, clearing: c) }
                func delete(_ id: ObjectID) throws { try writer.delete(id) }
                func setRelated(_ r: String, of id: ObjectID, to t: [ObjectID]) throws { try writer.setRelated(r, of: id, to: t) }
            }
        }
        let stub = Self.stub()
        stub.on(.get, "/v2/notes/42", json: ["data": Self.note(42, "b")])
        stub.on(.patch, "/v2/notes/42", json: ["data": Self.note(42, "Whole")])
        let client = try Self.builder().transport(stub).store(NoRecords()).build()
        let note = try await client.fetchObject("Note", at: "/notes/:id", values: ["id": .int(42)])
        try await client.updateLocally(note.id, setting: ["title": .string("Whole")])
        let error = await #expect(throws: RequestError.self) { try await client.save(note.id) }
        #expect(error?.kind == .unsupported)
        #expect(stub.requests(.patch).isEmpty)
        try await client.save(note.id, options: ExportOptions(content: .everything))
        #expect(try JSON(parsing: try #require(stub.requests(.patch).first?.body)) == ["title": "Whole", "body": "text"])
    }
}
