import Foundation
import Testing
import Tether

/// The examples of Docs/Keeping-In-Step.md, compiled and run as written there (with the data they
/// need around them).
@Suite struct KeepingInStepDocTests {
    static let schema = try! Schema {
        Entity("User") {
            Attribute("id", .int64)
            Attribute("login", .string)
            Attribute("avatarURL", .string)
            Relationship.toMany("repositories", "Repository", inverse: "owner")
            Relationship.toMany("notes", "Note", inverse: "user")
        }
        Entity("Repository") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Attribute("stars", .int64)
            Relationship.toOne("owner", "User", inverse: "repositories")
        }
        Entity("Issue") {
            Attribute("id", .int64)
            Attribute("state", .string)
            Relationship.toMany("comments", "Comment", inverse: "issue")
        }
        Entity("Comment") {
            Attribute("id", .int64)
            Attribute("state", .string)
            Relationship.toOne("issue", "Issue", inverse: "comments")
        }
        Entity("Note") {
            Attribute("id", .int64)
            Relationship.toOne("user", "User", inverse: "notes")
        }
        Entity("City") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Relationship.toMany("locations", "Location", inverse: "city")
        }
        Entity("Location") {
            Attribute("id", .int64)
            Relationship.toOne("city", "City", inverse: "locations")
        }
    }

    static func data(_ text: String) -> Data { Data(text.utf8) }

    @Test func importOptionsAndScopes() async throws {
        let builder = Client.Builder(schema: Self.schema)
        let client = try builder.build()
        _ = try await client.import(Self.data(#"[{"id": 1, "login": "a"}, {"id": 2, "login": "b"}]"#), as: "User")
        let data = Self.data(#"[{"id": 1, "login": "changed"}, {"id": 3, "login": "c"}]"#)
        // Insert what is new, leave what is stored alone (Sync's `operations: [.insert]`):
        try await client.import(data, as: "User", options: ImportOptions(update: false))
        #expect(try await client.object("User", identity: .int(1))?["login"] == .string("a"))

        let users = Self.data(#"[{"id": 1}, {"id": 3}]"#)
        // The whole list, as the server has it:
        try await client.import(users, as: "User", options: ImportOptions(deleteMissing: .all))
        #expect(try await client.count(Query("User")) == 2)

        _ = try await client.import(Self.data(#"[{"id": 1, "state": "open"}, {"id": 2, "state": "closed"}, {"id": 3, "state": "open"}]"#), as: "Issue")
        let openIssues = Self.data(#"[{"id": 1, "state": "open"}]"#)
        // A filtered list deletes only within its filter (open issues do not delete closed ones):
        try await client.import(openIssues, as: "Issue",
                                options: ImportOptions(deleteMissing: .matching(.equal("state", .string("open")))))
        #expect(try await client.fetch(Query("Issue", sortedBy: [.ascending("id")])).map { $0["id"] } == [.int(1), .int(2)])

        let user = try #require(try await client.object("User", identity: .int(1)))
        _ = try await client.import(Self.data(#"[{"id": 10}, {"id": 11}]"#), as: "Repository", into: "repositories", of: user.id)
        let repositories = Self.data(#"[{"id": 11}]"#)
        // One parent's list: a user's repositories, not everyone's:
        try await client.import(repositories, as: "Repository", into: "repositories", of: user.id,
                                options: ImportOptions(deleteMissing: .related("repositories", of: user.id)))
        #expect(try await client.fetch(Query("Repository")).map { $0["id"] } == [.int(11)])
    }

    @Test func tombstonesAndParents() async throws {
        let options = ImportOptions(tombstones: [
            Tombstone("deleted", equals: true),                              // the imported entity
            Tombstone("state", in: ["removed", "spam"], entity: "Comment"),  // nested comments
        ])
        let client = try Client.Builder(schema: Self.schema).importOptions(options).build()
        _ = try await client.import(Self.data(#"[{"id": 1, "comments": [{"id": 5}, {"id": 6}]}, {"id": 2}]"#), as: "Issue")
        let result = try await client.import(Self.data(#"[{"id": 1, "comments": [{"id": 5, "state": "spam"}, {"id": 6}]}, {"id": 2, "deleted": true}]"#), as: "Issue")
        #expect(result.deleted.count == 2)

        _ = try await client.import(Self.data(#"[{"id": 1}]"#), as: "User")
        let user = try #require(try await client.object("User", identity: .int(1)))
        let notes = Self.data(#"[{"id": 1}, {"id": 2}]"#)
        let moreNotes = Self.data(#"[{"id": 3}]"#)
        try await client.import(notes, as: "Note", into: "notes", of: user.id)            // exactly these
        try await client.import(moreNotes, as: "Note", into: "notes", of: user.id, .adding) // and these too
        #expect(try await client.related("notes", of: user.id).count == 3)
    }

    @Test func pendingReferencesAndFallbacks() async throws {
        let builder = Client.Builder(schema: Self.schema)
        let client = try builder.build()
        let locations = Self.data(#"[{"id": 0, "city_id": 7}]"#)
        let cities = Self.data(#"[{"id": 7, "name": "Oslo"}]"#)
        try await client.import(locations, as: "Location")   // [{"id": 0, "city_id": 7}]: city 7 is unknown
        // result.diagnostics: $[0].city_id … pendingReference, linkPending — not an error
        try await client.import(cities, as: "City")          // [{"id": 7, "name": "Oslo"}]: location 0 is linked now
        let location = try #require(try await client.object("Location", identity: .int(0)))
        #expect(try await client.related("city", of: location.id).map { $0["name"] } == [.string("Oslo")])

        let fallbackClient = try builder
            .keyMapping(KeyOverrides(["User": ["avatarURL": "avatar_url"]],
                                    fallbacks: ["User": ["avatarURL": ["avatarUrl", "picture.url"]]]))
            .build()
        _ = try await fallbackClient.import(Self.data(#"[{"id": 1, "picture": {"url": "p"}}]"#), as: "User")
        #expect(try await fallbackClient.object("User", identity: .int(1))?["avatarURL"] == .string("p"))
    }

    @Test func changeSets() async throws {
        let client = try Client.Builder(schema: Self.schema).build()
        _ = try await client.import(Self.data(#"[{"id": 1, "name": "a", "stars": 1}]"#), as: "Repository")
        let repository = try #require(try await client.object("Repository", identity: .int(1)))
        var reloads = 0
        func reload() { reloads += 1 }
        let changes = client.store.changes()
        _ = try await client.import(Self.data(#"[{"id": 1, "stars": 2}]"#), as: "Repository")
        for await change in changes {
            if change.mayHaveChanged(repository.id, properties: ["name", "stars"]) { reload() }
            #expect(change.changedProperties(of: repository.id) == ["stars"])
            break
        }
        #expect(reloads == 1)
    }
}
