import Foundation
import Testing
import Tether
import TetherSQLite

@Suite struct SQLiteBuilderTests {
    @Test func theBuilderTakesAFilePathAndTheGraphSurvivesAReopen() async throws {
        let directory = try TemporaryDirectory()
        let schema = try Schema {
            Entity("User") { Attribute("id", .int64); Attribute("login", .string); Relationship.toMany("repositories", "Repository", inverse: "owner") }
            Entity("Repository") { Attribute("id", .int64); Attribute("name", .string); Relationship.toOne("owner", "User", inverse: "repositories") }
        }
        do {
            let client = try Client.Builder(schema: schema).sqlite(path: directory.path()).build()
            #expect(client.store is SQLiteStore)
            _ = try await client.import(
                JSON(parsing: #"[{"id": 1, "name": "tether", "owner": {"id": 7, "login": "octocat"}}]"#), as: "Repository")
            (client.store as? SQLiteStore)?.close()
        }
        let reopened = try Client.Builder(schema: schema).sqlite(path: directory.path()).build()
        let user = try #require(try await reopened.object("User", identity: .int(7)))
        #expect(user["login"] == .string("octocat"))
        #expect(try await reopened.related("repositories", of: user.id).map { $0["name"] } == [.string("tether")])
    }
}
