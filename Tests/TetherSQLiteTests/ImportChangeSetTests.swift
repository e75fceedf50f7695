import Foundation
import Testing
import Tether
import TetherSQLite

/// The change sets an import publishes (issue 19): per updated object, the attributes and
/// relationships that changed; none at all for an import that changes nothing. Both stores.
@Suite struct ImportChangeSetTests {
    static let schema = try! Schema {
        Entity("User") {
            Attribute("id", .int64)
            Attribute("login", .string)
            Relationship.toMany("repositories", "Repository", inverse: "owner")
        }
        Entity("Repository") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Attribute("stars", .int64)
            Relationship.toOne("owner", "User", inverse: "repositories")
        }
    }

    @Test(arguments: ["memory", "sqlite"])
    func importsPublishWhatChanged(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let store: any Store = kind == "memory" ? InMemoryStore() : try SQLiteStore(path: folder.path())
        let client = try Client.Builder(schema: Self.schema).store(store).build()
        let payload: JSON = [
            ["id": 1, "name": "a", "stars": 1, "owner": ["id": 10, "login": "x"]],
            ["id": 2, "name": "b", "stars": 2, "owner": ["id": 10, "login": "x"]],
        ]
        let stream = store.changes()
        var iterator = stream.makeAsyncIterator()
        _ = try await client.import(payload, as: "Repository")
        let first = try #require(await iterator.next())
        #expect(first.inserted.count == 3)

        // The same payload again: nothing changes, nothing is published (the marker comes next).
        let same = try await client.import(payload, as: "Repository")
        #expect(same.updated.isEmpty && same.inserted.isEmpty)
        _ = try await client.import([["id": 3, "name": "marker"]], as: "Repository")
        let marker = try #require(await iterator.next())
        #expect(marker.inserted.count == 1, "the unchanged import published nothing: \(marker)")

        // Only stars of one, the owner of another.
        _ = try await client.import([
            ["id": 1, "stars": 5],
            ["id": 2, "owner": ["id": 11, "login": "y"]],
        ], as: "Repository")
        let changes = try #require(await iterator.next())
        let one = try #require(try await client.object("Repository", identity: .int(1)))
        let two = try #require(try await client.object("Repository", identity: .int(2)))
        let oldOwner = try #require(try await client.object("User", identity: .int(10)))
        #expect(changes.changedProperties(of: one.id) == ["stars"])
        #expect(changes.changedProperties(of: two.id) == ["owner"])
        #expect(changes.changedProperties(of: oldOwner.id) == ["repositories"])
        #expect(!changes.mayHaveChanged(one.id, properties: ["name"]))
        #expect(changes.mayHaveChanged(one.id, properties: ["name", "stars"]))
    }

    /// A string is unchanged when its UTF-8 bytes are: the same text again, also outside ASCII, is
    /// unchanged; the same text in another normalization form (canonically equivalent, other
    /// bytes) is a change, as `Value.==` and SQLite have it. Both stores, from bytes and from trees.
    @Test(arguments: ["memory", "sqlite"], [false, true])
    func stringsAreComparedByTheirBytes(_ kind: String, tree: Bool) async throws {
        let folder = try TemporaryDirectory()
        let store: any Store = kind == "memory" ? InMemoryStore() : try SQLiteStore(path: folder.path())
        let client = try Client.Builder(schema: Self.schema).store(store).build()
        func run(_ text: String) async throws -> ImportResult {
            tree ? try await client.import(try JSON(parsing: text), as: "Repository")
                : try await client.import(Data(text.utf8), as: "Repository")
        }
        _ = try await run(#"[{"id":1,"name":"caf\u00e9 😀"},{"id":2,"name":"plain"}]"#)
        let same = try await run(#"[{"id":1,"name":"caf\u00e9 😀"},{"id":2,"name":"plain"}]"#)
        #expect(same.unchanged.count == 2 && same.updated.isEmpty)
        let decomposed = try await run(#"[{"id":1,"name":"cafe\u0301 😀"},{"id":2,"name":"plaiN"}]"#)
        #expect(decomposed.updated.count == 2)
        let stored = try #require(try await client.object("Repository", identity: .int(1)))
        #expect(stored["name"] == .string("cafe\u{301} 😀"))
        #expect(stored["name"] != .string("caf\u{e9} 😀"))
    }
}
