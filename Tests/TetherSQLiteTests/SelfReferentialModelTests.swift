import Foundation
import Testing
import Tether
import TetherSQLite

/// A model that refers to its own type (a Mastodon status and the status it reblogs): a struct
/// cannot contain itself, so it is a `final class` with `let` properties, as
/// Docs/Typed-Models.md ("Self-referential models") declares it. Imported, read at depth, queried
/// through the self-reference, on both stores.
@Suite struct SelfReferentialModelTests {
    final class Status: EntityModel {
        let id: String
        let content: String
        let tags: [String]
        let reblog: Status?
        let inReplyTo: Status?

        init(id: String, content: String, tags: [String] = [], reblog: Status? = nil, inReplyTo: Status? = nil) {
            self.id = id
            self.content = content
            self.tags = tags
            self.reblog = reblog
            self.inReplyTo = inReplyTo
        }
    }

    static let timeline = #"""
        [{"id": "3", "content": "boost", "tags": [], "reblog": {"id": "1", "content": "hello", "tags": ["intro"]}},
         {"id": "4", "content": "reply", "tags": ["swift"], "inReplyTo": {"id": "2", "content": "question", "tags": []},
          "reblog": null},
         {"id": "5", "content": "boost of a boost", "tags": [], "reblog": {"id": "3", "content": "boost", "tags": []}}]
        """#

    @Test(arguments: ["memory", "sqlite"]) func aFinalClassRefersToItself(store: String) async throws {
        let directory = try TemporaryDirectory()
        let builder = try Client.Builder(models: [Status.self])
        #expect(builder.schema["Status"]?.relationship(named: "reblog")?.destination == "Status")
        let client = store == "sqlite" ? try builder.store(try SQLiteStore(path: directory.path())).build() : try builder.build()

        let imported = try await client.import(Data(Self.timeline.utf8), as: Status.self)
        #expect(imported.map(\.id) == ["3", "4", "5"])
        #expect(imported[0].reblog?.content == "hello")
        #expect(imported[0].reblog?.reblog == nil, "depth 1: the related status has its attributes only")

        // Deeper: a boost of a boost, two levels down.
        let deep = try #require(try await client.model(Status.self, identity: "5", depth: 2))
        #expect(deep.reblog?.id == "3" && deep.reblog?.reblog?.content == "hello")

        // Queries through the self-reference, typed and by name.
        let boostsOfHello = try await client.fetch(Status.self, where: .equal(\.reblog?.content, "hello"), depth: 0)
        #expect(boostsOfHello.map(\.id) == ["3"])
        let boostsOfBoosts = try await client.fetch(Status.self, where: .isNotNullPath("reblog.reblog.id"), depth: 0)
        #expect(boostsOfBoosts.map(\.id) == ["5"])
        let sorted = try await client.fetch(Status.self, where: .notEqual(\.inReplyTo?.id, nil) || .contains(\.tags, "intro"),
                                            sortedBy: [.ascending(\.id)], depth: 0)
        #expect(sorted.map(\.id) == ["1", "4"])
    }
}

extension ModelPredicate {
    /// A path that is set, by name (the string form beside the typed one).
    static func isNotNullPath(_ name: String) -> Self { .condition(.isNotNull(name)) }
}
