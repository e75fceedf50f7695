import Foundation
import Testing
import Tether

/// The README's "A taste" example, compiled and run, so the README stays true.
@Test func readmeExampleRuns() async throws {
    let jsonData = Data(#"""
        [{"id": 1, "full_name": "octocat/hello", "created_at": "2011-01-26T19:01:12Z",
          "owner": {"id": 7, "login": "octocat", "avatar_url": "https://example.com/a.png"}}]
        """#.utf8)

    let schema = try Schema {
        Entity("User", identity: "identifier") {
            Attribute("identifier", .int64)
            Attribute("login", .string)
            Attribute("avatarURL", .url)
            Relationship.toMany("repositories", "Repository", inverse: "owner")
        }
        Entity("Repository", identity: "identifier") {
            Attribute("identifier", .int64)
            Attribute("fullName", .string)
            Attribute("createdAt", .date)
            Relationship.toOne("owner", "User", inverse: "repositories")
        }
    }

    let client = try Client.Builder(schema: schema)
        .keyMapping(KeyOverrides([
            "User": ["identifier": "id", "avatarURL": "avatar_url"],
            "Repository": ["identifier": "id", "fullName": "full_name", "createdAt": "created_at"],
        ]))
        .build()  // in-memory store, verbatim naming by default

    let result = try await client.import(jsonData, as: "Repository")  // one transaction
    #expect((result.inserted.count, result.updated.count, result.diagnostics.count) == (2, 0, 0))

    let repositories = try await client.fetch(Query("Repository", sortedBy: [.descending("createdAt")]))
    let owner = try await client.related("owner", of: repositories[0].id)
    #expect(owner.first?["login"] == .string("octocat"))
}
