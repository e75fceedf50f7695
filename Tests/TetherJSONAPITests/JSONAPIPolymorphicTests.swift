import Foundation
import Testing
import Tether
import TetherJSONAPI
import TetherSQLite
import TetherTesting

/// Notes on an article or a tag: `commentable` is one JSON:API relationship whose linkage's
/// `type` says which, held by one relationship per type (``PolymorphicRelationship``).
enum Notes {
    struct Article: EntityModel {
        var id: Int64
        var title: String?
    }

    struct Tag: EntityModel {
        var id: Int64
        var name: String?
    }

    struct Note: EntityModel {
        var id: Int64
        var body: String?
        var commentedArticle: Article?     // "commentable" of type "articles"
        var commentedTag: Tag?             // "commentable" of type "tags"
    }

    /// A board pins articles and tags in one to-many member, `pins`.
    struct Board: EntityModel {
        var id: Int64
        var pinnedArticles: [Article] = []
        var pinnedTags: [Tag] = []
    }

    static let models: [any EntityModel.Type] = [Note.self, Article.self, Tag.self, Board.self]
    static let polymorphic = [
        PolymorphicRelationship("commentable", of: "Note", as: ["commentedArticle", "commentedTag"]),
        PolymorphicRelationship("pins", of: "Board", as: ["pinnedArticles", "pinnedTags"]),
    ]
}

@Suite struct JSONAPIPolymorphicTests {
    static let base = URL(string: "https://blog.example.com/api/v1")!

    static func client(_ kind: String, _ folder: TemporaryDirectory, _ stub: StubTransport) throws -> Client {
        var builder = try Client.Builder(models: Notes.models).jsonAPI(polymorphic: Notes.polymorphic)
        builder.store = kind == "memory" ? InMemoryStore() : try SQLiteStore(path: folder.path())
        return try builder.transport(stub).baseURL(base).build()
    }

    static func note(_ id: Int, _ body: String, _ commentable: JSON) -> JSON {
        let attributes: JSON = ["body": .string(body)]
        return ["type": "notes", "id": .string(String(id)), "attributes": attributes, "relationships": ["commentable": ["data": commentable]]]
    }

    static func linkage(_ type: String, _ id: Int) -> JSON { ["type": .string(type), "id": .string(String(id))] }

    static let included: JSON = [
        ["type": "articles", "id": "1", "attributes": ["title": "Notes on the Engine"]],
        ["type": "tags", "id": "2", "attributes": ["name": "rest"]],
    ]

    @Test(arguments: ["memory", "sqlite"])
    func linkageGoesToTheRelationshipOfItsType(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let stub = StubTransport()
        let client = try Self.client(kind, folder, stub)
        stub.on(.get, "/api/v1/notes", response: JSONAPIFormatTests.document([
            "data": [Self.note(1, "on an article", Self.linkage("articles", 1)), Self.note(2, "on a tag", Self.linkage("tags", 2)),
                     Self.note(3, "on nothing", .null)],
            "included": Self.included,
        ]))
        let result = try await client.fetchObjects("Note", from: "/notes")
        #expect(result.objects.count == 3)
        #expect(result.importResult.diagnostics.isEmpty, "\(result.importResult.diagnostics)")
        let one = try #require(try await client.model(Notes.Note.self, identity: Int64(1)))
        #expect(one.commentedArticle?.title == "Notes on the Engine")
        #expect(one.commentedTag == nil)
        let two = try #require(try await client.model(Notes.Note.self, identity: Int64(2)))
        #expect(two.commentedArticle == nil)
        #expect(two.commentedTag?.name == "rest")
        let three = try #require(try await client.model(Notes.Note.self, identity: Int64(3)))
        #expect(three.commentedArticle == nil && three.commentedTag == nil)

        // The note moves to the tag: one target, so its article goes.
        stub.on(.get, "/api/v1/notes/1", response: JSONAPIFormatTests.document(["data": Self.note(1, "on an article", Self.linkage("tags", 2))]))
        let moved = try await client.fetchModel(Notes.Note.self, from: "/notes/1")
        #expect(moved.commentedArticle == nil)
        #expect(moved.commentedTag?.name == "rest")
        // And to nothing.
        stub.on(.get, "/api/v1/notes/2", response: JSONAPIFormatTests.document(["data": Self.note(2, "on a tag", .null)]))
        let cleared = try await client.fetchModel(Notes.Note.self, from: "/notes/2")
        #expect(cleared.commentedArticle == nil && cleared.commentedTag == nil)
    }

    /// Linkage of a type the declaration does not name is a diagnostic naming it; the
    /// relationship keeps its stored target, the rest of the object is imported. Under the fail
    /// policy it is the error, and nothing is written.
    @Test(arguments: ["memory", "sqlite"])
    func anUndeclaredTypeIsADiagnosticAndKeepsTheStoredTarget(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let stub = StubTransport()
        let client = try Self.client(kind, folder, stub)
        stub.on(.get, "/api/v1/notes/1", once: true, response: JSONAPIFormatTests.document([
            "data": Self.note(1, "on an article", Self.linkage("articles", 1)), "included": Self.included,
        ]))
        _ = try await client.fetchObject("Note", from: "/notes/1")
        stub.on(.get, "/api/v1/notes", response: JSONAPIFormatTests.document([
            "data": [Self.note(1, "on a video", Self.linkage("videos", 7))],
        ]))
        let result = try await client.fetchObjects("Note", from: "/notes")
        let diagnostic = try #require(result.importResult.diagnostics.first)
        #expect(result.importResult.diagnostics.count == 1)
        #expect(diagnostic.problem == .invalidRelationship)
        #expect(diagnostic.action == .valueSkipped)
        #expect(diagnostic.entity == "Note")
        #expect(diagnostic.attribute == "commentable")
        #expect(diagnostic.path.components.contains(.key("commentable")))
        #expect(diagnostic.message.contains("'videos'"), "\(diagnostic.message)")
        let one = try #require(try await client.model(Notes.Note.self, identity: Int64(1)))
        #expect(one.body == "on a video", "the rest of the object is imported")
        #expect(one.commentedArticle?.id == 1, "the stored target stays")

        stub.on(.get, "/api/v1/notes?strict", response: JSONAPIFormatTests.document([
            "data": [Self.note(1, "strict", Self.linkage("videos", 7))],
        ]))
        let error = await #expect(throws: ImportError.self) {
            try await client.fetchObjects("Note", from: "/notes?strict", options: ImportOptions(policy: .fail))
        }
        #expect(error?.description.contains("videos") == true)
        #expect(try await client.model(Notes.Note.self, identity: Int64(1))?.body == "on a video", "nothing written")
    }

    @Test(arguments: ["memory", "sqlite"])
    func writesSendTheOneMember(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let stub = StubTransport()
        let client = try Self.client(kind, folder, stub)
        stub.on(.get, "/api/v1/notes/1", response: JSONAPIFormatTests.document([
            "data": Self.note(1, "seed", Self.linkage("articles", 1)), "included": Self.included,
        ]))
        let seed = try await client.fetchObject("Note", from: "/notes/1")
        let article = try #require(try await client.related("commentedArticle", of: seed.id).first)
        let tag = try #require(try await client.object("Tag", identity: .int(2)))

        stub.on(.post, "/api/v1/notes", response: JSONAPIFormatTests.document(["data": Self.note(5, "new", Self.linkage("tags", 2))], status: 201))
        let draft = try await client.insertLocally("Note", values: ["body": .string("new")], related: ["commentedTag": [tag.id]])
        let created = try await client.create(draft.id, options: ExportOptions(omitIdentity: true))
        #expect(created.values["id"] == .int(5))
        #expect(try JSONAPIFormatTests.body(stub.requests(.post).last) == ["data": [
            "type": "notes", "attributes": ["body": "new"], "relationships": ["commentable": ["data": ["type": "tags", "id": "2"]]],
        ]])

        // Moved from the tag to the article: one PATCH of the one member.
        stub.on(.patch, "/api/v1/notes/5", status: 204)
        _ = try await client.updateLocally(created.id, setting: [:], relating: ["commentedArticle": [article.id], "commentedTag": []])
        _ = try await client.save(created.id)
        #expect(try JSONAPIFormatTests.body(stub.requests(.patch).last) == ["data": [
            "type": "notes", "id": "5", "relationships": ["commentable": ["data": ["type": "articles", "id": "1"]]],
        ]])
        // Cleared.
        _ = try await client.updateLocally(created.id, setting: [:], relating: ["commentedArticle": []])
        _ = try await client.save(created.id)
        #expect(try JSONAPIFormatTests.body(stub.requests(.patch).last) == ["data": ["type": "notes", "id": "5", "relationships": ["commentable": ["data": .null]]]])

        // Two targets of a to-one: refused, nothing sent.
        let sent = stub.requests().count
        let both = try await client.insertLocally("Note", values: ["body": .string("both")], related: ["commentedArticle": [article.id], "commentedTag": [tag.id]])
        let error = await #expect(throws: RequestError.self) { try await client.create(both.id, options: ExportOptions(omitIdentity: true)) }
        #expect(error?.kind == .unsupported)
        #expect(stub.requests().count == sent)
    }

    /// A to-many member is split by type, each relationship set to exactly its share; a PATCH
    /// of only some of its relationships is refused (it would unlink the others on the server).
    @Test func aToManyMemberIsSplitByType() throws {
        let client = try Client.Builder(models: Notes.models).jsonAPI(polymorphic: Notes.polymorphic).build()
        let board = try #require(client.mapping["Board"])
        let format = JSONAPIFormat(polymorphic: Notes.polymorphic)
        let document = try format.read([
            "data": ["type": "boards", "id": "1", "relationships": ["pins": ["data": [
                Self.linkage("tags", 2), Self.linkage("articles", 1), Self.linkage("tags", 3),
            ]]]],
        ], DocumentRequest(entity: board, mapping: client.mapping, operation: .item, description: "GET /boards/1"))
        #expect(document.objects == [["id": "1", "pinned-articles": ["1"], "pinned-tags": ["2", "3"]]])
        #expect(document.diagnostics.isEmpty)

        let mixed = try format.read([
            "data": ["type": "boards", "id": "1", "relationships": ["pins": ["data": [Self.linkage("tags", 2), Self.linkage("videos", 9)]]]],
        ], DocumentRequest(entity: board, mapping: client.mapping, operation: .item, description: "GET /boards/1"))
        #expect(mixed.objects == [["id": "1"]], "not given: the stored pins stay")
        #expect(mixed.diagnostics.map(\.attribute) == ["pins"])

        let pinned = try #require(board.relationship("pinnedTags"))
        let member = DocumentMember(name: "pinnedTags", keyPath: pinned.keyPath, value: ["2"], relationship: pinned)
        let patch = DocumentWrite(operation: .save, entity: board, mapping: client.mapping, identity: 1, members: [member], onlyChanges: true)
        #expect(throws: RequestError.self) { try format.body(patch) }
        let articles = try #require(board.relationship("pinnedArticles"))
        let whole = DocumentWrite(operation: .save, entity: board, mapping: client.mapping, identity: 1, members: [
            DocumentMember(name: "pinnedArticles", keyPath: articles.keyPath, value: ["1"], relationship: articles), member,
        ])
        #expect(try format.body(whole) == ["data": ["type": "boards", "id": "1", "relationships": ["pins": ["data": [
            Self.linkage("articles", 1), Self.linkage("tags", 2),
        ]]]]])

        // Replacing the tags alone would replace every pin on the server: refused. Adding names only its targets.
        let tag = try #require(client.mapping["Tag"])
        let replace = DocumentWrite(operation: .replace, entity: tag, mapping: client.mapping, identity: nil, members: [], relationship: pinned, targets: [2])
        #expect(throws: RequestError.self) { try format.body(replace) }
        let add = DocumentWrite(operation: .add, entity: tag, mapping: client.mapping, identity: nil, members: [], relationship: pinned, targets: [2])
        #expect(try format.body(add) == ["data": [Self.linkage("tags", 2)]])
    }

    @Test func aDeclarationTheSchemaCannotHoldIsAConfigurationError() throws {
        #expect(throws: ConfigurationError.self) {
            try Client.Builder(models: Notes.models)
                .jsonAPI(polymorphic: [PolymorphicRelationship("commentable", of: "Note", as: ["commentedArticle", "body"])])
                .build()
        }
        #expect(throws: ConfigurationError.self) {
            try Client.Builder(models: Notes.models)
                .jsonAPI(polymorphic: [PolymorphicRelationship("commentable", of: "Note", as: ["commentedArticle"])])
                .build()
        }
        #expect(throws: ConfigurationError.self) {
            try Client.Builder(models: Notes.models)
                .jsonAPI(polymorphic: [PolymorphicRelationship("mixed", of: "Board", as: ["pinnedArticles", "pinnedTags"]),
                                       PolymorphicRelationship("commentable", of: "Nothing", as: ["a", "b"])])
                .build()
        }
    }
}
