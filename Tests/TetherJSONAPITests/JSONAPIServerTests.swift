import Foundation
import Testing
import Tether
import TetherJSONAPI
import TetherTesting
import TetherTestSupport
import TetherURLSession

/// The project's JSON:API server (`Tests/Servers/jsonapi`: djangorestframework-jsonapi, a blog
/// with dasherized member names, `include=` and `links.next` pages of two), reached through
/// `URLSessionTransport` with builder lines only: no hook, no shape, no transport of the user's.
///
/// Start it with `bash .ci/servers.sh start jsonapi` (which writes its URL where the tests read
/// it), or `bash Tests/Servers/jsonapi/start.sh 8100` and `TETHER_JSONAPI_URL=http://127.0.0.1:8100/api`.
/// Without a URL these tests are skipped, and the skip says why; with `TETHER_REQUIRE_SERVERS=1`
/// (CI) a missing URL fails.
enum JSONAPIServer {
    static let variable = "TETHER_JSONAPI_URL"
    /// The variable's URL, else the one `bash .ci/servers.sh start` wrote for the test run.
    static var baseURL: URL? { TestServers.url(variable) }
    static var required: Bool { ProcessInfo.processInfo.environment["TETHER_REQUIRE_SERVERS"] == "1" }
    static var runs: Bool { baseURL != nil || required }

    /// The client the guide shows (Docs/JSON-API.md), or a recorded failure when the URL is
    /// missing under CI.
    static func client(sourceLocation: SourceLocation = #_sourceLocation) throws -> Client? {
        guard let baseURL else {
            Issue.record("\(variable) is not set but TETHER_REQUIRE_SERVERS=1: start the server with `bash Tests/Servers/jsonapi/start.sh 8100`",
                         sourceLocation: sourceLocation)
            return nil
        }
        return try Client.Builder(models: Blog.models)
            .jsonAPI()
            .transport(URLSessionTransport(timeout: 20))
            .baseURL(baseURL)
            .build()
    }

    static func unique(_ prefix: String) -> String { "\(prefix) \(UUID().uuidString.prefix(8).lowercased())" }
}

@Suite(.serialized, .enabled(if: JSONAPIServer.runs, "TETHER_JSONAPI_URL is not set: JSON:API server tests skipped (run `bash Tests/Servers/jsonapi/start.sh 8100` and export TETHER_JSONAPI_URL=http://127.0.0.1:8100/api)"))
struct JSONAPIServerTests {
    @Test func aListWithIncludedAuthorsAndTagsAcrossPages() async throws {
        guard let client = try JSONAPIServer.client() else { return }
        let result = try await client.fetchObjects("Article", from: "/articles?include=author,tags")
        #expect(result.pages >= 3, "pages of two: \(result.pages)")
        #expect(result.objects.count >= 5)
        #expect(result.importResult.diagnostics.isEmpty, "\(result.importResult.diagnostics)")
        #expect(result.meta.count == result.pages, "each page's meta (its pagination)")
        let first = try #require(try await client.model(Blog.Article.self, identity: Int64(1)))
        #expect(first.title == "Notes on the Engine")
        #expect(first.bodyText == "The text of Notes on the Engine.")
        #expect(first.author?.name == "Ada Lovelace")
        #expect(Set(first.tags.compactMap { $0.name }) == ["swift", "rest"])
        #expect(try await client.model(Blog.Article.self, identity: Int64(5))?.author == nil)
        #expect(try await client.count(Query("Person")) >= 3)
    }

    /// Deleting what the list lacks works across pages and never touches the included objects.
    @Test func deleteMissingAcrossPagesKeepsIncludedObjects() async throws {
        guard let client = try JSONAPIServer.client() else { return }
        try await client.import(JSON.array([["id": 99_999, "title": "gone from the server"]]), as: "Article")
        try await client.import(JSON.array([["id": 99_999, "name": "a person no article names"]]), as: "Person")
        let result = try await client.fetchObjects("Article", from: "/articles?include=author", options: ImportOptions(deleteMissing: .all))
        #expect(result.pages >= 3)
        #expect(result.importResult.deleted.map(\.entity) == ["Article"])
        #expect(try await client.object("Article", identity: .int(99_999)) == nil)
        #expect(try await client.count(Query("Article")) == result.objects.count)
        #expect(try await client.object("Person", identity: .int(99_999)) != nil, "included entities are not the list's")
        #expect(try await client.count(Query("Person")) >= 4)
    }

    @Test func getCreatePatchAndDelete() async throws {
        guard let client = try JSONAPIServer.client() else { return }
        let ada = try await client.fetchObject("Person", from: "/people/1")
        #expect(ada.values["name"] == .string("Ada Lovelace"))
        let swift = try await client.fetchObject("Tag", from: "/tags/1")
        let title = JSONAPIServer.unique("Draft")
        let draft = try await client.insertLocally("Article", values: ["title": .string(title), "bodyText": .string("Hello")],
                                                    related: ["author": [ada.id], "tags": [swift.id]])
        let created = try await client.create(draft.id, options: ExportOptions(omitIdentity: true))
        guard case .int(let id)? = created.values["id"] else {
            Issue.record("the created article has no server id: \(created)")
            return
        }
        #expect(try await client.count(Query("Article", where: .equal("title", .string(title)))) == 1, "no duplicate")

        // A PATCH of the title only; the server's copy keeps the rest.
        _ = try await client.updateLocally(created.id, setting: ["title": .string(title + " (final)")])
        _ = try await client.save(created.id)
        let fetched = try await client.fetchModel(Blog.Article.self, from: URLTemplate("/articles/\(id)?include=author,tags"))
        #expect(fetched.title == title + " (final)")
        #expect(fetched.bodyText == "Hello")
        #expect(fetched.author?.name == "Ada Lovelace")
        #expect(fetched.tags.compactMap { $0.name } == ["swift"])

        #expect(try await client.delete(created.id) == 204)
        let gone = try await #require(throws: HTTPError.self) { try await client.fetchObject("Article", from: URLTemplate("/articles/\(id)")) }
        #expect(gone.status == 404)
        #expect(gone.body.message?.contains("No Article matches") == true, "\(gone)")
    }

    @Test func relationshipFetchAddRemoveAndReplace() async throws {
        guard let client = try JSONAPIServer.client() else { return }
        let article = try await client.create("Article", values: ["title": .string(JSONAPIServer.unique("Tagged"))])
        let tags = client.relationship("tags", of: article.id)
        #expect(try await tags.list().objects.isEmpty)
        let swift = try await client.fetchObject("Tag", from: "/tags/1")
        let json = try await client.fetchObject("Tag", from: "/tags/3")

        _ = try await tags.add(swift.id)
        _ = try await tags.add(json.id)
        #expect(try await tags.list().objects.compactMap { $0.values["name"] } == [.string("swift"), .string("json")])

        #expect([200, 204].contains(try await tags.remove(swift.id)))
        #expect(try await tags.list().objects.compactMap { $0.values["name"] } == [.string("json")])

        _ = try await tags.replace(with: [swift.id])
        let listed = try await tags.list()
        #expect(listed.objects.compactMap { $0.values["name"] } == [.string("swift")])
        #expect(try await client.related("tags", of: article.id).map(\.id) == [swift.id])

        // The to-one author through its related URL.
        let first = try await client.fetchObject("Article", from: "/articles/1")
        let author = try await client.relationship("author", of: first.id).list()
        #expect(author.objects.first?.values["name"] == .string("Ada Lovelace"))
        _ = try await client.delete(article.id)
    }

    @Test func fieldErrorsBySourcePointer() async throws {
        guard let client = try JSONAPIServer.client() else { return }
        let error = try await #require(throws: HTTPError.self) { try await client.create("Article", values: ["title": .string("")]) }
        #expect(error.status == 400)
        #expect(error.body.messages(for: "title") == ["This field may not be blank."])
        #expect(error.body.entries.first?.pointer == "/data/attributes/title")
        #expect(error.body.entries.first?.code == "blank")
        #expect(try await client.count(Query("Article")) == 0, "nothing stored")
    }

    @Test func aBodyOfAnotherMediaTypeIsA415ThatSaysWhy() async throws {
        guard let baseURL = JSONAPIServer.baseURL else {
            if JSONAPIServer.required { Issue.record("\(JSONAPIServer.variable) is not set") }
            return
        }
        // A client whose hook sends plain JSON's content type: the server refuses it.
        let client = try Client.Builder(models: Blog.models)
            .jsonAPI()
            .transport(URLSessionTransport(timeout: 20))
            .baseURL(baseURL)
            .requestHook(PlainContentType())
            .build()
        let error = try await #require(throws: HTTPError.self) { try await client.create("Tag", values: ["name": .string("x")]) }
        #expect(error.status == 415)
        #expect(try await client.count(Query("Tag")) == 0)
        #expect(error.body.message?.contains("415 Unsupported Media Type") == true, "\(error)")
        // Plain JSON's Accept is refused with 406.
        let plain = try Client.Builder(models: Blog.models).transport(URLSessionTransport(timeout: 20)).baseURL(baseURL).build()
        let notAcceptable = try await #require(throws: HTTPError.self) { try await plain.fetchObjects("Tag", from: "/tags") }
        #expect(notAcceptable.status == 406)
    }
}

/// Sends plain JSON's content type, which a JSON:API server refuses.
struct PlainContentType: RequestHook {
    func prepare(_ request: inout TransportRequest) async throws {
        if request.body != nil { request.headers["Content-Type"] = "application/json" }
    }
}
