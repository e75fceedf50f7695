import Foundation
import Testing
import Tether
import TetherTesting
import TetherURLSession

/// The notes of `Fixtures/dialect_server.py`: `created_at` is read-only on the server.
func notesSchema() throws -> Schema {
    try Schema {
        Entity("Note") {
            Attribute("id", .int64)
            Attribute("title", .string)
            Attribute("body", .string)
            Attribute("status", .string)
            Attribute("createdAt", .date)
        }
    }
}

/// A client of the dialect server's notes, with `collection` (`/notes`, `/strict/notes`, `/quiet/notes`).
func notesClient(_ server: DialectServer, collection: URLTemplate = "/notes", store: (any Store)? = nil,
                 _ configure: (Client.Builder) -> Client.Builder = { $0 }) throws -> Client {
    var builder = Client.Builder(schema: try notesSchema())
        .naming(SnakeCaseNaming())
        .transport(URLSessionTransport(timeout: 10))
        .baseURL(server.base)
        .resource(collection, for: "Note")
    if let store { builder = builder.store(store) }
    return try configure(builder).build()
}

/// 307 and 308 keep the method and the body on Linux as on Apple platforms (issue 20).
@Suite(.serialized) struct RedirectTests {
    @Test func a308KeepsThePostAndItsBody() async throws {
        let server = try await DialectServer()
        let client = try notesClient(server, collection: "/strict/notes")
        let note = try await client.create("Note", values: ["title": .string("Redirected"), "body": .string("kept")])
        #expect(note["id"] == .int(3))
        #expect(note["body"] == .string("kept"))
        let log = try await server.log()
        #expect(log.map { "\($0.method) \($0.path)" } == ["POST /strict/notes", "POST /strict/notes/"])
        #expect(log[1].length == log[0].length)
        #expect(log[1].body?["title"]?.stringValue == "Redirected")
    }

    @Test func a307KeepsThePatchAndItsBody() async throws {
        let server = try await DialectServer()
        let client = try notesClient(server, collection: "/strict/notes") { $0.resource("/strict/notes", item: "/strict/notes/:id", for: "Note") }
        let note = try await client.fetchObject("Note", at: "/notes/:id", values: ["id": .int(1)])
        try await client.updateLocally(note.id, setting: ["title": .string("Renamed")])
        let saved = try await client.save(note.id)
        #expect(saved["title"] == .string("Renamed"))
        let patches = try await server.log().filter { $0.method == "PATCH" }
        #expect(patches.map(\.path) == ["/strict/notes/1", "/strict/notes/1/"])
        #expect(patches[1].body?["title"]?.stringValue == "Renamed")
    }

    @Test func a303BecomesAGetWithoutBody() throws {
        let post = TransportRequest(method: .post, url: URL(string: "https://a.test/notes")!, headers: ["Content-Type": "application/json", "Authorization": "token x"], body: Data("{}".utf8))
        let see = TransportResponse(status: 303, headers: ["Location": "/notes/9"], body: Data())
        let next = try #require(try URLSessionTransport.redirect(post, see, original: post))
        #expect(next.method == .get && next.body == nil && next.headers["Content-Type"] == nil)
        #expect(next.url.absoluteString == "https://a.test/notes/9")
        #expect(next.headers["Authorization"] == "token x")
        // Another host: the credentials stay behind; a 308 keeps the method and body.
        let away = TransportResponse(status: 308, headers: ["Location": "https://b.test/notes"], body: Data())
        let moved = try #require(try URLSessionTransport.redirect(post, away, original: post))
        #expect(moved.method == .post && moved.body == post.body && moved.headers["Authorization"] == nil)
        // Not a redirect: the answer as it is; nowhere to go: an error saying so (issue 37).
        #expect(try URLSessionTransport.redirect(post, TransportResponse(status: 304, headers: [:], body: Data()), original: post) == nil)
        let nowhere = #expect(throws: TransportError.self) {
            try URLSessionTransport.redirect(post, TransportResponse(status: 302, headers: [:], body: Data()), original: post)
        }
        #expect(nowhere?.kind == .badRedirect && nowhere?.status == 302)
        // Another origin: only Accept, Content-Type and the allowed headers go along.
        let custom = TransportRequest(method: .get, url: URL(string: "https://a.test/notes")!,
                                      headers: ["Accept": "application/json", "X-Auth-Key": "k1", "X-Request-ID": "r1", "X-Api-Key": "k2"])
        let elsewhere = try #require(try URLSessionTransport.redirect(
            custom, TransportResponse(status: 302, headers: ["Location": "HTTPS://b.test/notes"]), original: custom,
            crossOriginHeaders: ["x-request-id", "x-api-key"]))
        #expect(elsewhere.url.absoluteString == "https://b.test/notes")
        #expect(elsewhere.headers == ["Accept": "application/json", "X-Request-ID": "r1"], "a credential never goes, even when allowed")
    }
}
