import Foundation
import Testing
import Tether
import TetherJSONAPI
import TetherSQLite
import TetherTesting

/// Models that keep what a resource carries beside its attributes: a relationship's links
/// (which relationship fetches and writes then use) and meta, and the resource's meta.
enum Linked {
    struct Person: EntityModel {
        var id: Int64
        var name: String?
        var articles: [Article] = []
        var articlesLink: String?          // relationships.articles.links.related
        var articlesSelf: String?          // relationships.articles.links.self
        var articleCount: Int?             // relationships.articles.meta.count

        static func describe(_ model: inout ModelDescription<Self>) {
            model.jsonKey(\.articlesLink, "relationships.articles.links.related")
            model.jsonKey(\.articlesSelf, "relationships.articles.links.self")
            model.jsonKey(\.articleCount, "relationships.articles.meta.count")
        }
    }

    struct Article: EntityModel {
        var id: Int64
        var title: String?
        var author: Person?
    }

    struct Tag: EntityModel {
        var id: Int64
        var name: String?
        var articleCount: Int?             // meta.article-count

        static func describe(_ model: inout ModelDescription<Self>) {
            model.jsonKey(\.articleCount, "meta.article-count")
        }
    }

    static let models: [any EntityModel.Type] = [Person.self, Article.self, Tag.self]
}

@Suite struct JSONAPIRelationshipLinksTests {
    static let base = URL(string: "https://blog.example.com/api/v1")!

    static func client(_ kind: String, _ folder: TemporaryDirectory, _ stub: StubTransport) throws -> Client {
        var builder = try Client.Builder(models: Linked.models).jsonAPI()
        builder.store = kind == "memory" ? InMemoryStore() : try SQLiteStore(path: folder.path())
        return try builder.transport(stub).baseURL(base).build()
    }

    static func person(_ id: Int, _ name: String, articles: [Int], links: JSON?) -> JSON {
        var relationship: [String: JSON] = [
            "data": .array(articles.map { ["type": "articles", "id": .string(String($0))] }), "meta": ["count": .int(Int64(articles.count))],
        ]
        if let links { relationship["links"] = links }
        let attributes: JSON = ["name": .string(name)]
        return ["type": "people", "id": .string(String(id)), "attributes": attributes, "relationships": ["articles": .object(relationship)]]
    }

    static func article(_ id: Int, _ title: String) -> JSON {
        let attributes: JSON = ["title": .string(title)]
        return ["type": "articles", "id": .string(String(id)), "attributes": attributes]
    }

    /// The related link (here a link object, relative) lists the relationship, and its own link
    /// takes add, remove and replace: neither is the registered `/people/:id/articles`.
    @Test(arguments: ["memory", "sqlite"])
    func keptLinksAreFollowedInsteadOfTheTemplate(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let stub = StubTransport()
        let client = try Self.client(kind, folder, stub)
        stub.on(.get, "/api/v1/people/1", response: JSONAPIFormatTests.document(["data": Self.person(1, "Ada", articles: [1], links: [
            "self": "https://blog.example.com/api/v1/writers/1/links/articles", "related": ["href": "/api/v1/writers/1/writings"],
        ])]))
        let ada = try await client.fetchObject("Person", from: "/people/1")
        #expect(ada.values["articlesLink"] == .string("/api/v1/writers/1/writings"), "a link object's href")
        #expect(ada.values["articlesSelf"] == .string("https://blog.example.com/api/v1/writers/1/links/articles"))
        #expect(ada.values["articleCount"] == .int(1), "relationship meta")

        stub.on(.get, "/api/v1/writers/1/writings", response: JSONAPIFormatTests.document([
            "data": [Self.article(1, "One"), Self.article(2, "Two")], "meta": ["count": 2],
        ]))
        let articles = client.relationship("articles", of: ada.id)
        let listed = try await articles.list()
        #expect(listed.objects.map { $0.values["title"] } == [.string("One"), .string("Two")])
        #expect(listed.meta == [["count": 2]])
        #expect(stub.requests(.get).last?.url.absoluteString == "https://blog.example.com/api/v1/writers/1/writings")

        let own = "/api/v1/writers/1/links/articles"
        stub.on(.post, own, status: 204)
        stub.on(.delete, own, status: 204)
        stub.on(.patch, own, status: 204)
        let two = try #require(listed.objects.last)
        let one = try #require(listed.objects.first)
        _ = try await articles.remove(two.id)
        #expect(try JSONAPIFormatTests.body(stub.requests(.delete, own).last) == ["data": [["type": "articles", "id": "2"]]])
        _ = try await articles.add(two.id)
        #expect(try JSONAPIFormatTests.body(stub.requests(.post, own).last) == ["data": [["type": "articles", "id": "2"]]])
        _ = try await articles.replace(with: [one.id])
        #expect(try JSONAPIFormatTests.body(stub.requests(.patch, own).last) == ["data": [["type": "articles", "id": "1"]]])
        #expect(try await client.related("articles", of: ada.id).map(\.id) == [one.id])
        #expect(stub.requests().allSatisfy { !$0.url.path.contains("/people/1/") }, "\(stub.requests().map(\.url))")

        // What the server gave beside the attributes is never written back.
        stub.on(.patch, "/api/v1/people/1", status: 204)
        _ = try await client.updateLocally(ada.id, setting: ["name": .string("Ada L."), "articleCount": .int(9)])
        _ = try await client.save(ada.id)
        #expect(try JSONAPIFormatTests.body(stub.requests(.patch, "/api/v1/people/1").last)
                    == ["data": ["type": "people", "id": "1", "attributes": ["name": "Ada L."]]])
    }

    /// Without a kept link, the registered URL; a link to another origin is refused, and
    /// nothing is sent to it.
    @Test(arguments: ["memory", "sqlite"])
    func withoutALinkTheTemplateAndAnUntrustedLinkIsRefused(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let stub = StubTransport()
        let client = try Self.client(kind, folder, stub)
        stub.on(.get, "/api/v1/people/3", response: JSONAPIFormatTests.document(["data": Self.person(3, "Cy", articles: [], links: nil)]))
        let cy = try await client.fetchObject("Person", from: "/people/3")
        stub.on(.get, "/api/v1/people/3/articles", response: JSONAPIFormatTests.document(["data": [Self.article(3, "Three")]]))
        #expect(try await client.relationship("articles", of: cy.id).list().objects.count == 1)
        stub.on(.post, "/api/v1/people/3/relationships/articles", status: 204)
        _ = try await client.relationship("articles", of: cy.id).add(try #require(try await client.object("Article", identity: .int(3))).id)
        #expect(stub.requests(.post, "/api/v1/people/3/relationships/articles").count == 1)

        stub.on(.get, "/api/v1/people/4", response: JSONAPIFormatTests.document(["data": Self.person(4, "Mallory", articles: [], links: [
            "self": "https://evil.example.net/steal/links", "related": "https://evil.example.net/steal",
        ])]))
        let mallory = try await client.fetchObject("Person", from: "/people/4")
        let listing = await #expect(throws: RequestError.self) { try await client.relationship("articles", of: mallory.id).list() }
        #expect(listing?.kind == .untrustedLink)
        let adding = await #expect(throws: RequestError.self) {
            try await client.relationship("articles", of: mallory.id).add(try #require(try await client.object("Article", identity: .int(3))).id)
        }
        #expect(adding?.kind == .untrustedLink)

        // A relative link that leads elsewhere (scheme-relative) is refused the same way.
        stub.on(.get, "/api/v1/people/5", response: JSONAPIFormatTests.document(["data": Self.person(5, "Eve", articles: [], links: [
            "self": "//evil.example.net/steal/links", "related": "//evil.example.net/steal",
        ])]))
        let eve = try await client.fetchObject("Person", from: "/people/5")
        let relative = await #expect(throws: RequestError.self) { try await client.relationship("articles", of: eve.id).list() }
        #expect(relative?.kind == .untrustedLink)
        #expect(stub.requests().allSatisfy { $0.url.host != "evil.example.net" })
    }

    /// A resource's meta is kept by attributes mapped under `meta`.
    @Test(arguments: ["memory", "sqlite"])
    func resourceMetaIsKeptInMappedAttributes(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let stub = StubTransport()
        let client = try Self.client(kind, folder, stub)
        stub.on(.get, "/api/v1/tags", response: JSONAPIFormatTests.document([
            "data": [["type": "tags", "id": "1", "attributes": ["name": "swift"], "meta": ["article-count": 2]],
                     ["type": "tags", "id": "2", "attributes": ["name": "rest"]]],
            "meta": ["total": 2],
        ]))
        let result = try await client.fetchObjects("Tag", from: "/tags")
        #expect(result.meta == [["total": 2]])
        #expect(try await client.model(Linked.Tag.self, identity: Int64(1))?.articleCount == 2)
        #expect(try await client.model(Linked.Tag.self, identity: Int64(2))?.articleCount == nil)
    }
}
