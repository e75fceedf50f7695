import Foundation
import Testing
import Tether
import TetherJSONAPI
import TetherTesting
import TetherURLSession

/// The examples of Docs/JSON-API.md, compiled and run as written against a stub of the page's
/// blog (the same client runs against the real server in JSONAPIServerTests).
@Suite struct JSONAPIDocTests {
    struct Article: EntityModel {
        var id: Int64
        var title: String?
        var bodyText: String?          // "body-text"
        var author: Person?            // relationships.author
        var tags: [Tag] = []           // relationships.tags
    }

    struct Person: EntityModel {       // type "people"
        var id: Int64
        var name: String?
        var articles: [Article] = []
    }

    struct Tag: EntityModel {
        var id: Int64
        var name: String?
    }

    /// The page's client, as written; the stub replaces the transport.
    static func client(_ stub: StubTransport) throws -> Client {
        try Client.Builder(models: [Article.self, Person.self, Tag.self])
            .jsonAPI()
            .transport(URLSessionTransport())
            .baseURL(URL(string: "https://blog.example.com/api")!)
            .transport(stub)
            .build()
    }

    static func document(_ json: JSON, status: Int = 200) -> TransportResponse {
        TransportResponse(status: status, headers: ["Content-Type": "application/vnd.api+json"], body: json.serialized())
    }

    static func resource(_ type: String, _ id: Int, _ attributes: JSON, _ relationships: JSON = [:]) -> JSON {
        ["type": .string(type), "id": .string(String(id)), "attributes": attributes, "relationships": relationships]
    }

    static func blog() -> StubTransport {
        let stub = StubTransport()
        let ada = resource("people", 1, ["name": "Ada Lovelace"])
        let first = resource("articles", 1, ["title": "Notes on the Engine", "body-text": "…"],
                             ["author": ["data": ["type": "people", "id": "1"]], "tags": ["data": [["type": "tags", "id": "1"]]]])
        stub.on(.get, "/api/articles?include=author,tags", response: document([
            "data": [first], "included": [ada, resource("tags", 1, ["name": "swift"])],
            "links": ["next": "/api/articles?include=author,tags&page%5Bnumber%5D=2"], "meta": ["pagination": ["page": 1]],
        ]))
        stub.on(.get, "/api/articles?include=author,tags&page%5Bnumber%5D=2", response: document([
            "data": [resource("articles", 2, ["title": "Two"], ["author": ["data": .null], "tags": ["data": []]])],
            "links": ["next": .null], "meta": ["pagination": ["page": 2]],
        ]))
        stub.on(.get, "/api/articles/1?include=author", response: document(["data": first, "included": [ada]]))
        stub.on(.get, "/api/people/1", response: document(["data": ada]))
        return stub
    }

    @Test func reading() async throws {
        let client = try Self.client(Self.blog())
        let articles = try await client.fetchObjects("Article", from: "/articles?include=author,tags")
        #expect(articles.pages == 2)       // every page, by links.next
        #expect(articles.meta == [["pagination": ["page": 1]], ["pagination": ["page": 2]]])
        let article = try await client.fetchModel(Article.self, from: "/articles/1?include=author")
        #expect(article.author?.name == "Ada Lovelace")
        #expect(article.tags.map { $0.name } == ["swift"])
    }

    @Test func writingRelationshipsAndErrors() async throws {
        let stub = Self.blog()
        let client = try Self.client(stub)
        let made = Self.resource("articles", 6, ["title": "Notes"], ["author": ["data": ["type": "people", "id": "1"]], "tags": ["data": []]])
        stub.on(.post, "/api/articles", once: true, response: Self.document(["data": made], status: 201))
        stub.on(.patch, "/api/articles/6", status: 204)
        stub.on(.delete, "/api/articles/6", status: 204)

        let ada = try await client.fetchObject("Person", from: "/people/1")
        let draft = try await client.insertLocally("Article", values: ["title": .string("Notes")], related: ["author": [ada.id]])
        let created = try await client.create(draft.id, options: ExportOptions(omitIdentity: true))
        #expect(try JSON(parsing: try #require(stub.requests(.post).last?.body)) == ["data": [
            "type": "articles", "attributes": ["title": "Notes"],
            "relationships": ["author": ["data": ["type": "people", "id": "1"]], "tags": ["data": []]],
        ]])

        try await client.updateLocally(created.id, setting: ["title": .string("Notes, revised")])
        try await client.save(created.id)
        #expect(try JSON(parsing: try #require(stub.requests(.patch).last?.body))
            == ["data": ["type": "articles", "id": "6", "attributes": ["title": "Notes, revised"]]])

        // Relationships.
        stub.on(.get, "/api/tags/1", response: Self.document(["data": Self.resource("tags", 1, ["name": "swift"])]))
        stub.on(.get, "/api/tags/3", response: Self.document(["data": Self.resource("tags", 3, ["name": "json"])]))
        let swift = try await client.fetchObject("Tag", from: "/tags/1")
        let json = try await client.fetchObject("Tag", from: "/tags/3")
        stub.on(.get, "/api/articles/6/tags", response: Self.document(["data": []]))
        for method in [HTTPMethod.post, .delete, .patch] { stub.on(method, "/api/articles/6/relationships/tags", status: 204) }
        let tags = client.relationship("tags", of: created.id)
        try await tags.list()                    // GET    /articles/6/tags
        try await tags.add(swift.id)             // POST   /articles/6/relationships/tags
        try await tags.remove(swift.id)          // DELETE /articles/6/relationships/tags
        try await tags.replace(with: [json.id])  // PATCH  /articles/6/relationships/tags
        #expect(stub.requests().suffix(4).map { "\($0.method) \($0.url.path)" } == [
            "GET /api/articles/6/tags", "POST /api/articles/6/relationships/tags",
            "DELETE /api/articles/6/relationships/tags", "PATCH /api/articles/6/relationships/tags",
        ])
        #expect(try await client.related("tags", of: created.id).map(\.id) == [json.id])

        try await client.delete(created.id)    // DELETE /articles/6, 204
        #expect(try await client.object(created.id) == nil)

        // Errors.
        stub.on(.post, "/api/articles", response: Self.document(["errors": [
            ["detail": "This field may not be blank.", "status": "400", "code": "blank", "source": ["pointer": "/data/attributes/title"]],
        ]], status: 400))
        do {
            try await client.create("Article", values: ["title": .string("")])
            Issue.record("the create was accepted")
        } catch let error as HTTPError {
            #expect(error.body.messages(for: "title") == ["This field may not be blank."])
            #expect(error.body.entries.first?.code == "blank")
            #expect(error.body.message == nil)
        }
    }

    struct Writer: EntityModel {           // type "writers"
        var id: Int64
        var name: String?
        var articles: [Article] = []
        var articlesLink: String?          // relationships.articles.links.related
        var articlesSelf: String?          // relationships.articles.links.self
        var articleCount: Int?             // relationships.articles.meta.count
        var rank: Int?                     // meta.rank

        static func describe(_ model: inout ModelDescription<Self>) {
            model.jsonKey(\.articlesLink, "relationships.articles.links.related")
            model.jsonKey(\.articlesSelf, "relationships.articles.links.self")
            model.jsonKey(\.articleCount, "relationships.articles.meta.count")
            model.jsonKey(\.rank, "meta.rank")
        }
    }

    @Test func linksAndMetaTheServerGives() async throws {
        let stub = StubTransport()
        let client = try Client.Builder(models: [Article.self, Person.self, Tag.self, Writer.self])
            .jsonAPI()
            .transport(URLSessionTransport())
            .baseURL(URL(string: "https://blog.example.com/api")!)
            .transport(stub)
            .build()
        stub.on(.get, "/api/writers/1", response: Self.document(["data": [
            "type": "writers", "id": "1", "attributes": ["name": "Ada"], "meta": ["rank": 3],
            "relationships": ["articles": [
                "data": [["type": "articles", "id": "1"], ["type": "articles", "id": "2"]], "meta": ["count": 2],
                "links": ["related": "https://blog.example.com/api/writers/1/texts", "self": "https://blog.example.com/api/writers/1/links/articles"],
            ]],
        ]]))
        stub.on(.get, "/api/writers/1/texts", response: Self.document([
            "data": [Self.resource("articles", 1, ["title": "One"]), Self.resource("articles", 2, ["title": "Two"])], "meta": ["count": 2],
        ]))
        stub.on(.delete, "/api/writers/1/links/articles", status: 204)

        let writer = try await client.fetchObject("Writer", from: "/writers/1")
        #expect(writer.values["articleCount"] == .int(2))                  // 2, the relationship's meta
        let articles = client.relationship("articles", of: writer.id)
        let listed = try await articles.list()            // GET    the related link: /api/writers/1/texts
        #expect(listed.meta == [["count": 2]])                              // each page's top-level meta
        try await articles.remove(listed.objects[0].id)   // DELETE the self link:    /api/writers/1/links/articles
        #expect(stub.requests().suffix(2).map { "\($0.method) \($0.url.path)" } == ["GET /api/writers/1/texts", "DELETE /api/writers/1/links/articles"])
        #expect(try await client.model(Writer.self, identity: Int64(1))?.rank == 3)
    }

    struct Note: EntityModel {
        var id: Int64
        var body: String?
        var commentedArticle: Article?     // "commentable" when its type is "articles"
        var commentedTag: Tag?             // "commentable" when its type is "tags"
    }

    @Test func polymorphicRelationships() async throws {
        let stub = StubTransport()
        let notes = try Client.Builder(models: [Article.self, Person.self, Tag.self, Note.self])
            .jsonAPI(polymorphic: [PolymorphicRelationship("commentable", of: "Note", as: ["commentedArticle", "commentedTag"])])
            .transport(URLSessionTransport())
            .baseURL(URL(string: "https://blog.example.com/api")!)
            .transport(stub)
            .build()
        stub.on(.get, "/api/notes/2?include=commentable", response: Self.document([
            "data": Self.resource("notes", 2, ["body": "On rest"], ["commentable": ["data": ["type": "tags", "id": "2"]]]),
            "included": [Self.resource("tags", 2, ["name": "rest"])],
        ]))
        let note = try await notes.fetchModel(Note.self, from: "/notes/2?include=commentable")
        #expect(note.commentedTag?.name == "rest")            // "rest": {"type": "tags", "id": "2"}
        #expect(note.commentedArticle == nil)
    }

    /// The object's URL, kept from `links.self` by an attribute mapped there (read-only).
    struct Linked: EntityModel {
        var id: Int64
        var name: String?
        var url: String?

        static func describe(_ model: inout ModelDescription<Self>) {
            model.jsonKey(\.url, "links.self")
            model.readOnly(\.url)
        }
    }

    @Test func linksSelfKeptAsTheObjectURL() async throws {
        let stub = StubTransport()
        let client = try Client.Builder(models: [Linked.self]).jsonAPI().transport(stub).baseURL(URL(string: "https://blog.example.com/api")!).build()
        stub.on(.get, "/api/linkeds/1", response: Self.document(["data": [
            "type": "linkeds", "id": "1", "attributes": ["name": "x"], "links": ["self": "https://blog.example.com/api/linkeds/1"],
        ]]))
        let linked = try await client.fetchModel(Linked.self, from: "/linkeds/1")
        #expect(linked.url == "https://blog.example.com/api/linkeds/1")
        stub.on(.patch, "/api/linkeds/1", status: 204)
        _ = try await client.updateLocally(try #require(try await client.object("Linked", identity: .int(1))).id, setting: ["name": .string("y")])
        _ = try await client.save(try #require(try await client.object("Linked", identity: .int(1))).id)
        #expect(try JSON(parsing: try #require(stub.requests(.patch).last?.body)) == ["data": ["type": "linkeds", "id": "1", "attributes": ["name": "y"]]])
    }
}
