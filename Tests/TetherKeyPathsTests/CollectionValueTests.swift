import Foundation
import Testing
import Tether
import TetherKeyPaths
import TetherSQLite

/// Arrays, maps and JSON values in key-path mappings: the property types become array, map and
/// JSON attributes, imported and read back on both stores.
@Suite struct KeyPathCollectionValueTests {
    struct Status: KeyPathModel, Equatable {
        var id: Int64 = 0
        var tags: [String] = []
        var ownVotes: [Int] = []
        var metadata: [String: String] = [:]
        var card: JSON = .null
    }

    static let mapping: KeyPathMapping<Status> = KeyPathMapping("Status", identity: \.id) {
        $0.map("id", to: \.id)
        $0.map("tags", to: \.tags)
        $0.map("poll.own_votes", to: \.ownVotes, named: "ownVotes")
        $0.map("metadata", to: \.metadata)
        $0.map("card", to: \.card)
    }

    @Test(arguments: ["memory", "sqlite"]) func importedAndReadBack(store: String) async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tether-keypaths-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let builder = try Client.Builder(models: [Self.mapping])
        let client = store == "sqlite" ? try builder.store(try SQLiteStore(path: path)).build() : try builder.build()
        #expect(client.schema["Status"]?.attribute(named: "ownVotes")?.type == .array(.int64))
        #expect(client.schema["Status"]?.attribute(named: "metadata")?.type == .map(.string))
        #expect(client.schema["Status"]?.attribute(named: "card")?.type == .json)
        let statuses = try await client.import(Data(#"""
            [{"id": 1, "tags": ["swift", "linux"], "poll": {"own_votes": [0, 2]}, "metadata": {"lang": "en"},
              "card": {"title": "T", "width": 400, "html": null}},
             {"id": 2, "tags": [], "card": null}]
            """#.utf8), as: Self.mapping)
        let first = Status(id: 1, tags: ["swift", "linux"], ownVotes: [0, 2], metadata: ["lang": "en"],
                           card: ["title": "T", "width": 400, "html": nil])
        #expect(statuses == [first, Status(id: 2)])
        #expect(try await client.fetch(Self.mapping, where: .contains(\.tags, "linux")) == [first])
        #expect(try await client.fetch(Self.mapping, where: .contains(\.ownVotes, 1)) == [])
        #expect(try await client.fetch(Self.mapping, where: .condition(.isNull("card"))) == [Status(id: 2)])
    }
}
