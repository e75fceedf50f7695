import Foundation
import Synchronization
import Testing
import Tether
import TetherJSONAPI
import TetherTesting
import TetherTestSupport
import TetherURLSession

/// The JSON:API server's polymorphic `commentable` of notes (an article or a tag), its people's
/// `articles` links (at `/writers/<id>/writings` and `/writers/<id>/links/articles`, which no
/// template of the client predicts) and its relationship and resource meta, with builder lines
/// only.
@Suite(.serialized, .enabled(if: JSONAPIServer.runs, "TETHER_JSONAPI_URL is not set: JSON:API server tests skipped (run `bash Tests/Servers/jsonapi/start.sh 8100` and export TETHER_JSONAPI_URL=http://127.0.0.1:8100/api)"))
struct JSONAPIServerLinksTests {
    /// The URLs of the requests a client sent.
    final class Requests: Sendable {
        private let urls = Mutex<[URL]>([])
        func record(_ event: ClientEvent) {
            if case .request(let request) = event { urls.withLock { $0.append(request.url) } }
        }
        var all: [URL] { urls.withLock { $0 } }
    }

    static func client(_ models: [any EntityModel.Type], polymorphic: [PolymorphicRelationship] = [], requests: Requests? = nil,
                       sourceLocation: SourceLocation = #_sourceLocation) throws -> Client? {
        guard let baseURL = JSONAPIServer.baseURL else {
            Issue.record("\(JSONAPIServer.variable) is not set but TETHER_REQUIRE_SERVERS=1", sourceLocation: sourceLocation)
            return nil
        }
        var builder = try Client.Builder(models: models)
            .jsonAPI(polymorphic: polymorphic)
            .transport(URLSessionTransport(timeout: 20))
            .baseURL(baseURL)
        if let requests { builder = builder.onEvent { requests.record($0) } }
        return try builder.build()
    }

    @Test func notesOnArticlesAndTagsByTheLinkageType() async throws {
        guard let client = try Self.client(Notes.models, polymorphic: Notes.polymorphic) else { return }
        _ = try await client.fetchObjects("Tag", from: "/tags")
        let first = try await client.fetchObject("Article", from: "/articles/1")
        let notes = try await client.fetchObjects("Note", from: "/notes")
        #expect(notes.pages >= 2)
        #expect(notes.importResult.diagnostics.isEmpty, "\(notes.importResult.diagnostics)")
        let one = try #require(try await client.model(Notes.Note.self, identity: Int64(1)))
        #expect(one.commentedArticle?.title == "Notes on the Engine")
        #expect(one.commentedTag == nil)
        let two = try #require(try await client.model(Notes.Note.self, identity: Int64(2)))
        #expect(two.commentedArticle == nil)
        #expect(two.commentedTag?.name == "rest")
        let three = try #require(try await client.model(Notes.Note.self, identity: Int64(3)))
        #expect(three.commentedArticle == nil && three.commentedTag == nil)

        // Create a note on a tag, move it to an article, read it back, delete it.
        let json = try #require(try await client.object("Tag", identity: .int(3)))
        let body = JSONAPIServer.unique("Note")
        let draft = try await client.insertLocally("Note", values: ["body": .string(body)], related: ["commentedTag": [json.id]])
        let created = try await client.create(draft.id, options: ExportOptions(omitIdentity: true))
        guard case .int(let id)? = created.values["id"] else {
            Issue.record("the created note has no server id: \(created)")
            return
        }
        #expect(try await client.related("commentedTag", of: created.id).map(\.id) == [json.id])
        _ = try await client.updateLocally(created.id, setting: [:], relating: ["commentedArticle": [first.id], "commentedTag": []])
        _ = try await client.save(created.id)
        let fetched = try await client.fetchModel(Notes.Note.self, from: URLTemplate("/notes/\(id)"))
        #expect(fetched.commentedArticle?.id == 1)
        #expect(fetched.commentedTag == nil)
        #expect(fetched.body == body)
        #expect(try await client.delete(created.id) == 204)
    }

    @Test func relationshipLinksTheServerGaveAreFollowed() async throws {
        let requests = Requests()
        guard let client = try Self.client(Linked.models, requests: requests) else { return }
        let person = try await client.create("Person", values: ["name": .string(JSONAPIServer.unique("Writer"))])
        guard case .int(let id)? = person.values["id"] else {
            Issue.record("the created person has no server id: \(person)")
            return
        }
        guard case .string(let related)? = person.values["articlesLink"], case .string(let own)? = person.values["articlesSelf"] else {
            Issue.record("the person keeps no links: \(person.values)")
            return
        }
        #expect(related.hasSuffix("/writers/\(id)/writings"))
        #expect(own.hasSuffix("/writers/\(id)/links/articles"))
        #expect(person.values["articleCount"] == .int(0))

        let a = try await client.create("Article", values: ["title": .string(JSONAPIServer.unique("Writing"))])
        let b = try await client.create("Article", values: ["title": .string(JSONAPIServer.unique("Writing"))])
        let articles = client.relationship("articles", of: person.id)
        #expect(try await articles.list().objects.isEmpty)
        _ = try await articles.add(a.id)
        _ = try await articles.add(b.id)
        #expect(try await articles.list().objects.map(\.id) == [a.id, b.id])
        _ = try await articles.replace(with: [b.id])
        #expect(try await articles.list().objects.map(\.id) == [b.id])
        #expect([200, 204].contains(try await articles.remove(b.id)))
        #expect(try await articles.list().objects.isEmpty)
        _ = try await articles.add(a.id)

        // Every relationship request went to the server's links, none to a template's URL.
        let relationshipPaths = requests.all.map(\.path).filter { $0.contains("/writers/") || $0.contains("/people/\(id)/") }
        #expect(relationshipPaths.count == 9, "\(relationshipPaths)")
        #expect(relationshipPaths.allSatisfy { $0.contains("/writers/\(id)/") }, "\(relationshipPaths)")

        // Relationship meta, per object.
        let again = try await client.fetchModel(Linked.Person.self, from: URLTemplate("/people/\(id)"))
        #expect(again.articleCount == 1)
        #expect(again.articles.count == 1)
        _ = try await client.delete(a.id)
        _ = try await client.delete(b.id)
        _ = try await client.delete(person.id)
    }

    @Test func resourceMetaIsKept() async throws {
        guard let client = try Self.client(Linked.models) else { return }
        let result = try await client.fetchObjects("Tag", from: "/tags")
        #expect(result.meta.first?["pagination"] != nil, "top-level meta, per page")
        let swift = try #require(try await client.model(Linked.Tag.self, identity: Int64(1)))
        #expect((swift.articleCount ?? 0) >= 1, "resource meta: \(String(describing: swift.articleCount))")
    }
}
