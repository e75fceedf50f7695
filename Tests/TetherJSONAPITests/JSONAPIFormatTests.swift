import Foundation
import Testing
import Tether
import TetherJSONAPI
import TetherSQLite
import TetherTesting

/// A blog as a JSON:API server serves it: articles with an author and tags. The models of the
/// tests here and of the server tests.
enum Blog {
    struct Article: EntityModel {
        var id: Int64
        var title: String?
        var bodyText: String?
        var author: Person?
        var tags: [Tag] = []
    }

    struct Person: EntityModel {
        var id: Int64
        var name: String?
        var articles: [Article] = []
    }

    struct Tag: EntityModel {
        var id: Int64
        var name: String?
    }

    static let models: [any EntityModel.Type] = [Article.self, Person.self, Tag.self]
}

/// JSON:API through ``JSONAPIFormat`` with builder lines only, against a stub transport, on both stores.
@Suite struct JSONAPIFormatTests {
    static let base = URL(string: "https://blog.example.com/api/v1")!

    static func client(_ kind: String, _ folder: TemporaryDirectory, _ stub: StubTransport) throws -> Client {
        var builder = try Client.Builder(models: Blog.models).jsonAPI()
        builder.store = kind == "memory" ? InMemoryStore() : try SQLiteStore(path: folder.path())
        return try builder
            .transport(stub)
            .baseURL(base)
            .build()
    }

    static func document(_ json: JSON, status: Int = 200) -> TransportResponse {
        TransportResponse(status: status, headers: ["Content-Type": "application/vnd.api+json"], body: json.serialized())
    }

    static func article(_ id: Int, _ title: String, author: Int?, tags: [Int], links: Bool = true) -> JSON {
        var relationships: [String: JSON] = [
            "author": ["data": author.map { id -> JSON in ["type": "people", "id": .string(String(id))] } ?? .null],
            "tags": ["data": .array(tags.map { id -> JSON in ["type": "tags", "id": .string(String(id))] })],
        ]
        if links { relationships["comments"] = ["links": ["related": .string("/api/v1/articles/\(id)/comments")]] }
        let attributes: JSON = ["title": .string(title), "body-text": "…"]
        let selfLink: JSON = ["self": .string("/api/v1/articles/\(id)")]
        return ["type": "articles", "id": .string(String(id)), "attributes": attributes, "relationships": .object(relationships), "links": selfLink]
    }

    static func person(_ id: Int, _ name: String) -> JSON {
        let attributes: JSON = ["name": .string(name)]
        return ["type": "people", "id": .string(String(id)), "attributes": attributes]
    }

    static func tag(_ id: Int, _ name: String) -> JSON {
        let attributes: JSON = ["name": .string(name)]
        return ["type": "tags", "id": .string(String(id)), "attributes": attributes]
    }

    static func body(_ request: TransportRequest?) throws -> JSON {
        try JSON(parsing: try #require(request?.body))
    }

    @Test(arguments: ["memory", "sqlite"])
    func aListWithIncludedObjectsAcrossPages(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let stub = StubTransport()
        let client = try Self.client(kind, folder, stub)
        stub.on(.get, "/api/v1/articles?include=author,tags", response: Self.document([
            "data": [Self.article(1, "One", author: 9, tags: [1, 2])],
            "included": [Self.person(9, "Ada"), Self.tag(1, "swift"), Self.tag(2, "rest")],
            "links": ["next": "https://blog.example.com/api/v1/articles?include=author,tags&page%5Bnumber%5D=2"],
            "meta": ["pagination": ["count": 2]],
        ]))
        stub.on(.get, "/api/v1/articles?include=author,tags&page%5Bnumber%5D=2", response: Self.document([
            "data": [Self.article(2, "Two", author: 10, tags: [2])],
            "included": [Self.person(10, "Bo"), Self.tag(2, "rest")],
            "links": ["next": .null],
            "meta": ["pagination": ["count": 2]],
        ]))
        let result = try await client.fetchObjects("Article", from: "/articles?include=author,tags")
        #expect(result.pages == 2)
        #expect(result.objects.map { $0.values["title"] } == [.string("One"), .string("Two")])
        #expect(result.importResult.diagnostics.isEmpty, "\(result.importResult.diagnostics)")
        #expect(result.meta.count == 2)
        let one = try #require(try await client.model(Blog.Article.self, identity: Int64(1)))
        #expect(one.bodyText == "…")
        #expect(one.author?.name == "Ada")
        #expect(one.tags.map { $0.name } == ["swift", "rest"])
        #expect(try await client.model(Blog.Article.self, identity: Int64(2))?.author?.name == "Bo")
        #expect(try await client.count(Query("Tag")) == 2)
        // application/vnd.api+json asked for; no query parameter of Tether's own added.
        #expect(stub.requests().allSatisfy { $0.headers["Accept"] == "application/vnd.api+json" })
        #expect(stub.requests().map(\.url.query) == ["include=author,tags", "include=author,tags&page%5Bnumber%5D=2"])
    }

    @Test(arguments: ["memory", "sqlite"])
    func aRelationshipWithLinksButNoDataKeepsItsTargets(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let stub = StubTransport()
        let client = try Self.client(kind, folder, stub)
        stub.on(.get, "/api/v1/articles/1", once: true, response: Self.document([
            "data": Self.article(1, "One", author: 9, tags: [1]), "included": [Self.person(9, "Ada"), Self.tag(1, "swift")],
        ]))
        _ = try await client.fetchObject("Article", from: "/articles/1")
        // The same article, its relationships given as links only (no `include`): not given.
        stub.on(.get, "/api/v1/articles/1", response: Self.document(["data": [
            "type": "articles", "id": "1", "attributes": ["title": "One again"],
            "relationships": ["author": ["links": ["related": "/api/v1/articles/1/author"]],
                              "tags": ["links": ["self": "/api/v1/articles/1/relationships/tags"]]],
        ]]))
        let again = try await client.fetchModel(Blog.Article.self, from: "/articles/1")
        #expect(again.title == "One again")
        #expect(again.author?.name == "Ada")
        #expect(again.tags.map { $0.name } == ["swift"])
    }

    @Test(arguments: ["memory", "sqlite"])
    func createSaveAndDeleteWriteJSONAPIDocuments(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let stub = StubTransport()
        let client = try Self.client(kind, folder, stub)
        stub.on(.get, "/api/v1/people/9", response: Self.document(["data": Self.person(9, "Ada")]))
        stub.on(.get, "/api/v1/tags/1", response: Self.document(["data": Self.tag(1, "swift")]))
        let ada = try await client.fetchObject("Person", from: "/people/9")
        let swift = try await client.fetchObject("Tag", from: "/tags/1")
        stub.on(.post, "/api/v1/articles", response: Self.document(["data": Self.article(5, "New", author: 9, tags: [1])], status: 201))
        let draft = try await client.insertLocally("Article", values: ["title": .string("New"), "bodyText": .string("Text")],
                                                    related: ["author": [ada.id], "tags": [swift.id]])
        let created = try await client.create(draft.id, options: ExportOptions(omitIdentity: true))
        #expect(created.values["id"] == .int(5))
        let posted = try Self.body(stub.requests(.post).last)
        #expect(posted == ["data": [
            "type": "articles",
            "attributes": ["title": "New", "body-text": "Text"],
            "relationships": ["author": ["data": ["type": "people", "id": "9"]], "tags": ["data": [["type": "tags", "id": "1"]]]],
        ]])
        #expect(stub.requests(.post).last?.headers["Content-Type"] == "application/vnd.api+json")

        // A PATCH: type, id and only what changed.
        stub.on(.patch, "/api/v1/articles/5", status: 204)
        _ = try await client.updateLocally(created.id, setting: ["title": .string("Renamed")])
        _ = try await client.save(created.id)
        #expect(try Self.body(stub.requests(.patch).last) == ["data": ["type": "articles", "id": "5", "attributes": ["title": "Renamed"]]])
        // A cleared to-one relationship is a null linkage.
        _ = try await client.updateLocally(created.id, setting: [:], relating: ["author": []])
        _ = try await client.save(created.id)
        #expect(try Self.body(stub.requests(.patch).last) == ["data": ["type": "articles", "id": "5", "relationships": ["author": ["data": .null]]]])

        stub.on(.delete, "/api/v1/articles/5", status: 204)
        #expect(try await client.delete(created.id) == 204)
        #expect(try await client.object(created.id) == nil)
    }

    @Test(arguments: ["memory", "sqlite"])
    func relationshipsAreFetchedAddedRemovedAndReplacedWithLinkage(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let stub = StubTransport()
        let client = try Self.client(kind, folder, stub)
        stub.on(.get, "/api/v1/articles/1", response: Self.document(["data": Self.article(1, "One", author: nil, tags: [])]))
        let article = try await client.fetchObject("Article", from: "/articles/1")
        stub.on(.get, "/api/v1/articles/1/tags", response: Self.document(["data": [Self.tag(1, "swift"), Self.tag(2, "rest")]]))
        let tags = client.relationship("tags", of: article.id)
        let listed = try await tags.list()
        #expect(listed.objects.count == 2)

        stub.on(.get, "/api/v1/tags/3", response: Self.document(["data": Self.tag(3, "json")]))
        let json = try await client.fetchObject("Tag", from: "/tags/3")
        stub.on(.post, "/api/v1/articles/1/relationships/tags", status: 204)
        _ = try await tags.add(json.id)
        #expect(try Self.body(stub.requests(.post).last) == ["data": [["type": "tags", "id": "3"]]])

        stub.on(.delete, "/api/v1/articles/1/relationships/tags", status: 204)
        let first = try #require(listed.objects.first)
        #expect(try await tags.remove(first.id) == 204)
        #expect(try Self.body(stub.requests(.delete).last) == ["data": [["type": "tags", "id": "1"]]])

        stub.on(.patch, "/api/v1/articles/1/relationships/tags", status: 204)
        _ = try await tags.replace(with: [json.id])
        #expect(try Self.body(stub.requests(.patch).last) == ["data": [["type": "tags", "id": "3"]]])
        #expect(try await client.model(Blog.Article.self, identity: Int64(1))?.tags.map { $0.name } == ["json"])
    }

    @Test func errorsBecomeFieldErrorsBySourcePointer() async throws {
        let folder = try TemporaryDirectory()
        let stub = StubTransport()
        let client = try Self.client("memory", folder, stub)
        stub.on(.post, "/api/v1/articles", response: Self.document([
            "errors": [
                ["detail": "This field may not be blank.", "status": "400", "code": "blank", "source": ["pointer": "/data/attributes/title"]],
                ["title": "Invalid author", "status": "400", "source": ["pointer": "/data/relationships/author"]],
                ["detail": "Unknown include", "status": "400", "source": ["parameter": "include"]],
                ["detail": "Something else went wrong", "status": "400"],
            ],
        ], status: 400))
        let error = try await #require(throws: HTTPError.self) {
            try await client.create("Article", values: ["title": .string("")])
        }
        #expect(error.body.fieldErrors == ["title": ["This field may not be blank."], "author": ["Invalid author"], "include": ["Unknown include"]])
        #expect(error.body.messages(for: "title") == ["This field may not be blank."])
        #expect(error.body.message == "Something else went wrong")
        #expect(error.body.entries.first == ErrorBody.Entry(field: "title", message: "This field may not be blank.", code: "blank",
                                                            status: "400", pointer: "/data/attributes/title"))
        #expect(try await client.count(Query("Article")) == 0)
    }

    @Test func notAcceptableAndUnsupportedMediaTypeSayWhy() async throws {
        let folder = try TemporaryDirectory()
        let stub = StubTransport()
        let client = try Self.client("memory", folder, stub)
        stub.on(.get, "/api/v1/articles", status: 406)
        let notAcceptable = try await #require(throws: HTTPError.self) { try await client.fetchObjects("Article", from: "/articles") }
        #expect(notAcceptable.body.message?.contains("406 Not Acceptable") == true)
        #expect(notAcceptable.description.contains("application/vnd.api+json"))
        stub.on(.post, "/api/v1/articles", response: Self.document(["errors": [["detail": "Unsupported media type \"application/json\" in request."]]], status: 415))
        let unsupported = try await #require(throws: HTTPError.self) { try await client.create("Article", values: ["title": .string("x")]) }
        #expect(unsupported.body.message?.contains("Unsupported media type") == true)
        #expect(unsupported.body.message?.contains("415") == true)
    }

    @Test func aDocumentOfAnotherTypeOrShapeIsAnError() async throws {
        let folder = try TemporaryDirectory()
        let stub = StubTransport()
        let client = try Self.client("memory", folder, stub)
        stub.on(.get, "/api/v1/articles", response: Self.document(["data": [Self.tag(1, "swift")]]))
        let wrongType = try await #require(throws: ImportError.self) { try await client.fetchObjects("Article", from: "/articles") }
        #expect(wrongType.path.description == "$.data[0].type")
        #expect(wrongType.message.contains("'articles'") && wrongType.message.contains("'tags'"))
        stub.on(.get, "/api/v1/people", response: Self.document([["id": 1, "name": "plain"]]))
        let plain = try await #require(throws: ImportError.self) { try await client.fetchObjects("Person", from: "/people") }
        #expect(plain.message.contains("JSON:API document"))
        stub.on(.get, "/api/v1/tags", response: Self.document(["data": [Self.tag(1, "swift")], "included": [["type": "widgets", "id": "1"]]]))
        let unknown = try await #require(throws: ImportError.self) { try await client.fetchObjects("Tag", from: "/tags") }
        #expect(unknown.message.contains("'widgets'"))
        #expect(try await client.count(Query("Tag")) == 0)
    }

    /// Plain JSON has no request that replaces a relationship's targets: refused before anything
    /// is sent; a format for an unknown entity is a configuration error.
    @Test func plainJSONRefusesAReplaceAndFormatsAreChecked() async throws {
        let stub = StubTransport()
        let client = try Client.Builder(models: Blog.models).transport(stub).baseURL(Self.base)
            .relationshipResource("/articles/:id/tags", for: "tags", of: "Article").build()
        try await client.import(JSON.array([["id": 1, "title": "One"]]), as: "Article")
        try await client.import(JSON.array([["id": 2, "name": "swift"]]), as: "Tag")
        let article = try #require(try await client.object("Article", identity: .int(1)))
        let tag = try #require(try await client.object("Tag", identity: .int(2)))
        let error = try await #require(throws: RequestError.self) { try await client.relationship("tags", of: article.id).replace(with: [tag.id]) }
        #expect(error.kind == .unsupported)
        #expect(stub.requests().isEmpty)
        #expect(try await client.related("tags", of: article.id).isEmpty)

        let configuration = try #require(throws: ConfigurationError.self) {
            try Client.Builder(models: Blog.models).documentFormat(.jsonAPI, for: "Nope").build()
        }
        #expect(configuration.entity == "Nope")
    }

    @Test func kebabCaseNaming() {
        let naming = KebabCaseNaming()
        #expect(naming.jsonKey(for: "createdAt", in: "Article") == "created-at")
        #expect(naming.jsonKey(for: "avatarURL", in: "Person") == "avatar-url")
        #expect(naming.jsonKey(for: "URLPath", in: "Person") == "url-path")
        #expect(naming.modelName(for: "created-at", in: "Article") == "createdAt")
        #expect(naming.resourcePath(for: "BlogPost") == "blog-posts")
        #expect(naming.resourcePath(for: "Person") == "people")
        #expect(naming.resourcePath(for: "Category") == "categories")
        #expect(naming.resourcePath(for: "Box") == "boxes")
        #expect(KebabCaseNaming(resourcePaths: ["Staff": "staff-members"]).resourcePath(for: "Staff") == "staff-members")
    }
}
