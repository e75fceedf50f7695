import Foundation
import Testing
import Tether
import TetherSQLite

/// The rules of Docs/Keeping-In-Step.md on both stores (the engine applies them through the
/// `Store` protocol; these make sure both stores give the same result).
@Suite struct KeepingInStepStoreTests {
    static let schema = try! Schema {
        Entity("User") {
            Attribute("id", .int64)
            Attribute("login", .string)
            Relationship.toMany("messages", "Message", inverse: "user", deleteRule: .cascade)
            Relationship.toOne("location", "Location", inverse: "user")
        }
        Entity("Message") {
            Attribute("id", .int64)
            Attribute("text", .string)
            Relationship.toOne("user", "User", inverse: "messages")
        }
        Entity("Location") {
            Attribute("city", .string)
            Relationship.toOne("user", "User", inverse: "location")
        }
    }

    static func client(_ kind: String, _ folder: TemporaryDirectory) throws -> Client {
        let store: any Store = kind == "memory" ? InMemoryStore() : try SQLiteStore(path: folder.path())
        return try Client.Builder(schema: schema).store(store).build()
    }

    static func ids(_ client: Client, _ entity: String) async throws -> [Value?] {
        try await client.fetch(Query(entity, sortedBy: [.ascending("id")])).map { $0["id"] }
    }

    @Test(arguments: ["memory", "sqlite"])
    func optionsScopesTombstonesAndOwnedObjects(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let client = try Self.client(kind, folder)
        _ = try await client.import(Data(#"""
            [{"id": 1, "login": "a", "location": {"city": "Oslo"}, "messages": [{"id": 10}, {"id": 11}]},
             {"id": 2, "login": "b", "messages": [{"id": 20}]}, {"id": 3, "login": "c"}]
            """#.utf8), as: "User")

        // Update only: 4 is not inserted, 1 is updated; its owned location is updated in place.
        _ = try await client.import(Data(#"[{"id": 1, "login": "A", "location": {"city": "Bergen"}}, {"id": 4}]"#.utf8), as: "User",
                                    options: ImportOptions(insert: false))
        #expect(try await Self.ids(client, "User") == [.int(1), .int(2), .int(3)])
        #expect(try await client.fetch(Query("Location")).map { $0["city"] } == [.string("Bergen")])

        // A tombstone and delete-missing in a condition's scope, with the cascade.
        let result = try await client.import(Data(#"[{"id": 1, "messages": [{"id": 11}]}, {"id": 2, "deleted": true}]"#.utf8), as: "User",
                                             options: ImportOptions(deleteMissing: .matching(.greaterOrEqual("id", .int(3))),
                                                                    deleteRelationships: true, tombstones: [Tombstone("deleted", equals: true)]))
        #expect(try await Self.ids(client, "User") == [.int(1)])
        #expect(try await Self.ids(client, "Message") == [.int(11)], "10 dropped from 1's list, 20 with user 2")
        #expect(result.deleted.count == 4)

        // deleteMissing over a parent's relationship, imported into it.
        let one = try #require(try await client.object("User", identity: .int(1)))
        _ = try await client.import(Data(#"[{"id": 12}]"#.utf8), as: "Message", into: "messages", of: one.id,
                                    options: ImportOptions(deleteMissing: .related("messages", of: one.id)))
        #expect(try await Self.ids(client, "Message") == [.int(12)])
    }
}
