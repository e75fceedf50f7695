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

    // MARK: Stripe: the cursor of the last object, expandable fields

    static let stripeSchema = try! Schema {
        Entity("Customer") {
            Attribute("id", .string)
            Attribute("email", .string)
        }
        Entity("Charge") {
            Attribute("id", .string)
            Attribute("amount", .int64)
            Relationship.toOne("customer", "Customer")
        }
    }

    /// The page's Stripe client, as written (the transport a stub here).
    static func stripe(_ stub: StubTransport) throws -> Client {
        try Client.Builder(schema: stripeSchema)
            .transport(URLSessionTransport())
            .baseURL(URL(string: "https://api.stripe.com/v1")!)
            .responseShape(.keyPath("data"))              // {"object": "list", "data": [...]}
            .pagination(.startingAfter())                 // while has_more: ?starting_after=<last id>
            .transport(stub)
            .build()
    }

    @Test func stripeCursorOfTheLastObject() async throws {
        let stub = StubTransport()
        func customer(_ n: Int) -> JSON { ["id": .string("cus_\(n)"), "email": .string("\(n)@example.com")] }
        stub.on(.get, "/v1/customers?limit=2", json: ["object": "list", "data": [customer(1), customer(2)], "has_more": true, "url": "/v1/customers"])
        stub.on(.get, "/v1/customers?limit=2&starting_after=cus_2", json: ["object": "list", "data": [customer(3), customer(4)], "has_more": true])
        stub.on(.get, "/v1/customers?limit=2&starting_after=cus_4", json: ["object": "list", "data": [customer(5)], "has_more": false])
        let stripe = try Self.stripe(stub)
        let customers = try await stripe.fetchObjects("Customer", from: "/customers?limit=2")
        #expect(customers.pages == 3)
        #expect(customers.objects.map { $0["id"] } == (1...5).map { .string("cus_\($0)") })
        #expect(Pagination.startingAfter().description == "startingAfter(hasMore: has_more, parameter: starting_after)")

        // Backwards: the first object's id.
        stub.on(.get, "/v1/charges?ending_before=ch_9", json: ["data": [["id": "ch_7", "amount": 1], ["id": "ch_8", "amount": 2]], "has_more": true])
        stub.on(.get, "/v1/charges?ending_before=ch_7", json: ["data": [["id": "ch_6", "amount": 3]], "has_more": false])
        let backwards = try Client.Builder(schema: Self.stripeSchema).transport(stub).baseURL(URL(string: "https://api.stripe.com/v1")!)
            .responseShape(.keyPath("data")).pagination(.endingBefore(), for: "Charge").build()
        #expect(try await backwards.fetchObjects("Charge", from: "/charges?ending_before=ch_9").objects.count == 3)

        // has_more of another type is an error at its path; nothing imported.
        stub.on(.get, "/v1/customers?limit=9", json: ["data": [customer(6)], "has_more": "yes"])
        let error = try await #require(throws: ImportError.self) { try await stripe.fetchObjects("Customer", from: "/customers?limit=9") }
        #expect(error.path.description == "$.has_more")
        #expect(try await stripe.object("Customer", identity: .string("cus_6")) == nil)
    }

    @Test func expandableFieldsHoldAnIdOrTheWholeObject() async throws {
        let stripe = try Self.stripe(StubTransport())
        // Charge.customer is a to-one relationship to Customer, read from the key "customer".
        let payload: JSON = ["data": [
            ["id": "ch_1", "amount": 500, "customer": "cus_1"],                                  // an id
            ["id": "ch_2", "amount": 700, "customer": ["id": "cus_2", "email": "b@example.com"]], // expanded
        ]]
        let charges = try await stripe.import(payload, as: "Charge")
        #expect(charges.diagnostics.map(\.problem) == [.pendingReference])
        #expect(charges.objects.count == 2)
        let second = try #require(try await stripe.object("Charge", identity: .string("ch_2")))
        #expect(try await stripe.related("customer", of: second.id).first?["email"] == .string("b@example.com"))
        let first = try #require(try await stripe.object("Charge", identity: .string("ch_1")))
        #expect(try await stripe.related("customer", of: first.id).isEmpty)
        try await stripe.import([["id": "cus_1", "email": "a@example.com"]] as JSON, as: "Customer")  // links ch_1 to it
        #expect(try await stripe.related("customer", of: first.id).first?["email"] == .string("a@example.com"))
        // An id leaves the stored object as it is; a value that is neither is a diagnostic.
        let again = try await stripe.import(["data": [["id": "ch_2", "amount": 700, "customer": "cus_2"], ["id": "ch_3", "amount": 1, "customer": 12.5]]] as JSON,
                                            as: "Charge")
        #expect(again.diagnostics.map(\.path.description) == ["$[1].customer"])
        #expect(try await stripe.object("Customer", identity: .string("cus_2"))?["email"] == .string("b@example.com"))
    }

    // MARK: 7. Document formats

    struct Enveloped: DocumentFormat {
        func read(_ body: JSON, _ request: DocumentRequest) throws -> Document {
            try PlainJSONFormat().read(body["payload"] ?? .null, request)
        }
        func body(_ write: DocumentWrite) throws -> JSON {
            ["payload": try PlainJSONFormat().body(write)]
        }
    }

    @Test func aDocumentFormatOfYourOwn() async throws {
        let stub = Self.stub()
        // The format reads the payload's inside with plain JSON's rules: the shape of the page's
        // builder (`.keyPath("data")`) would look for "data" there, so it is set back to `.automatic`.
        let client = try Self.builder().transport(stub).responseShape(.automatic, for: "Note")
            .documentFormat(PlainJSONFormat())
            .documentFormat(Enveloped(), for: "Note")
            .build()
        stub.on(.get, "/v2/legacy", json: ["payload": [Self.note(50, "x"), Self.note(51, "y")]])
        #expect(try await client.fetchObjects("Note", from: "/legacy").objects.count == 2)
        stub.on(.post, "/v2/notes", status: 201, json: ["payload": Self.note(52, "made")])
        let made = try await client.create("Note", values: ["title": .string("made"), "body": .string("b")])
        #expect(made["id"] == .int(52))
        #expect(try JSON(parsing: try #require(stub.requests(.post).last?.body)) == ["payload": ["title": "made", "body": "b"]])
        #expect(stub.requests(.post).last?.headers["Content-Type"] == "application/json; charset=utf-8")
        // A format's reading is checked as the shapes' is: no object of the entity is an error.
        stub.on(.get, "/v2/index", json: ["payload": ["notes": "/v2/notes"]])
        await #expect(throws: ImportError.self) { try await client.fetchObjects("Note", from: "/index") }
    }
}
