import Foundation
import Testing
import Tether
import TetherSQLite

/// `identity: []` (and `noIdentity()` on a typed model) declares that an entity's objects have no
/// identity even when it has an `id` attribute: a poll's options carry ids unique only within
/// their poll. They are then owned objects of their parent, on both stores (issue 41).
@Suite struct NoIdentityTests {
    static let schema = try! Schema {
        Entity("Poll") {
            Attribute("id", .string)
            Relationship.toMany("options", "PollOption", inverse: "poll", ordered: true)
        }
        Entity("PollOption", identity: []) {
            Attribute("id", .int64)
            Attribute("title", .string)
            Relationship.toOne("poll", "Poll", inverse: "options")
        }
    }

    static func store(_ kind: String, _ folder: TemporaryDirectory) throws -> any Store {
        kind == "memory" ? InMemoryStore() : try SQLiteStore(path: folder.path())
    }

    /// Two polls whose options are numbered 0 and 1 each: with `id` as identity they would share
    /// two options; without, each poll keeps its own, and re-imports neither duplicate nor change them.
    static let polls = Data(#"""
        [{"id": "p1", "options": [{"id": 0, "title": "yes"}, {"id": 1, "title": "no"}]},
         {"id": "p2", "options": [{"id": 0, "title": "tea"}, {"id": 1, "title": "coffee"}]}]
        """#.utf8)

    @Test(arguments: ["memory", "sqlite"])
    func anEntityDeclaredWithoutIdentityIsOwnedEvenWithAnIdAttribute(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let client = try Client.Builder(schema: Self.schema).store(try Self.store(kind, folder)).build()
        #expect(client.schema["PollOption"]?.identity == [])
        #expect(client.schema["Poll"]?.identity == ["id"])  // the strategy still decides for the others
        for round in 1...2 {
            let result = try await client.import(Self.polls, as: "Poll")
            #expect(result.diagnostics.isEmpty, "\(result.diagnostics)")
            #expect(try await client.count(Query("PollOption")) == 4, "import \(round)")
            if round == 2 { #expect(result.inserted.isEmpty && result.updated.isEmpty && result.deleted.isEmpty) }
        }
        let poll = try #require(try await client.object("Poll", identity: .string("p2")))
        #expect(try await client.related("options", of: poll.id).map { $0["title"] } == [.string("tea"), .string("coffee")])
    }

    struct Poll: EntityModel {
        var id: String
        var options: [PollOption] = []
        static func describe(_ model: inout ModelDescription<Self>) { model.ordered(\.options) }
    }

    struct PollOption: EntityModel {
        var id: Int64
        var title: String
        static func describe(_ model: inout ModelDescription<Self>) { model.noIdentity() }
    }

    @Test(arguments: ["memory", "sqlite"])
    func aTypedModelDeclaresNoIdentity(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let client = try Client.Builder(models: [Poll.self, PollOption.self]).store(try Self.store(kind, folder)).build()
        #expect(client.schema["PollOption"]?.identity == [])
        try await client.import(Self.polls, as: Poll.self)
        let polls = try await client.import(Self.polls, as: Poll.self)
        #expect(polls.map { $0.options.map(\.title) } == [["yes", "no"], ["tea", "coffee"]])
        #expect(try await client.fetch(PollOption.self).count == 4)
    }
}
