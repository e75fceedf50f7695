import Foundation
import Testing
import Tether
import TetherRails
import TetherSQLite

/// Array, map and JSON properties take their JSON keys from the naming strategy like any
/// attribute (`ownVotes` ↔ `own_votes`), are imported and sent back under them, on both stores.
@Suite struct CollectionNamingTests {
    struct Poll: EntityModel, Equatable {
        var id: String
        var ownVotes: [Int]?
        var optionTitles: [String] = []
        var expiresAt: Date?
        var extraFields: [String: String]?
        var rawOptions: JSON?
    }

    @Test(arguments: ["memory", "sqlite"]) func railsNamingMapsCollectionKeys(store: String) async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tether-rails-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let builder = try Client.Builder(models: [Poll.self]).naming(RailsNaming())
        let client = store == "sqlite" ? try builder.store(try SQLiteStore(path: path)).build() : try builder.build()
        let polls = try await client.import(Data(#"""
            [{"id": "34830", "own_votes": [1], "option_titles": ["yes", "no"], "expires_at": "2019-12-05T04:05:08.302Z",
              "extra_fields": {"voters_count": "3"}, "raw_options": [{"title": "yes", "votes_count": 10}]}]
            """#.utf8), as: Poll.self)
        let expected = Poll(id: "34830", ownVotes: [1], optionTitles: ["yes", "no"], expiresAt: Date(timeIntervalSince1970: 1_575_518_708.302),
                            extraFields: ["voters_count": "3"], rawOptions: [["title": "yes", "votes_count": 10]])
        #expect(polls == [expected])
        let body = try await client.export(try #require(try await client.objectID(of: polls[0])))
        #expect(body["own_votes"] == [1])
        #expect(body["option_titles"] == ["yes", "no"])
        #expect(body["extra_fields"] == ["voters_count": "3"])
        #expect(body["raw_options"] == [["title": "yes", "votes_count": 10]])
    }
}
