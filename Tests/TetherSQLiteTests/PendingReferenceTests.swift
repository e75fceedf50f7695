import Foundation
import Testing
import Tether
import TetherSQLite

/// Pending references (issue 19): an id naming an object that is not stored yet is kept in the
/// store and linked by whichever later import brings the object; a to-many id array sets exactly
/// the objects it lists, known now or pending. Both stores; SQLite across closing and reopening.
@Suite struct PendingReferenceTests {
    static let schema = try! Schema {
        Entity("City") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Relationship.toMany("locations", "Location", inverse: "city")
        }
        Entity("Location") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Relationship.toOne("city", "City", inverse: "locations")
            Relationship.toMany("tags", "Tag", inverse: "locations", ordered: true)
        }
        Entity("Tag") {
            Attribute("id", .string)
            Relationship.toMany("locations", "Location", inverse: "tags")
        }
    }

    /// `city_id` and `tag_ids`, as Sync's fixtures name them.
    struct Keys: NamingStrategy {
        func jsonKey(for name: String, in entity: String) -> String { name }
        func modelName(for jsonKey: String, in entity: String) -> String { jsonKey }
        func resourcePath(for entity: String) -> String { entity.lowercased() }
        func foreignKey(for relationship: Relationship, in entity: String) -> String {
            relationship.isToMany ? String(relationship.name.dropLast()) + "_ids" : relationship.name + "_id"
        }
    }

    static func client(_ store: any Store) throws -> Client {
        try Client.Builder(schema: schema).naming(Keys()).store(store).build()
    }

    static func cityName(_ client: Client, location: Int64) async throws -> String? {
        let object = try #require(try await client.object("Location", identity: .int(location)))
        guard case .string(let name)? = try await client.related("city", of: object.id).first?["name"] else { return nil }
        return name
    }

    static func tags(_ client: Client, location: Int64) async throws -> [Value?] {
        let object = try #require(try await client.object("Location", identity: .int(location)))
        return try await client.related("tags", of: object.id).map { $0["id"] }
    }

    /// SyncTests.testBug157, where Sync needed the locations synced a second time: here the cities
    /// import links them.
    @Test(arguments: ["memory", "sqlite"])
    func bug157(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let client = try Self.client(kind == "memory" ? InMemoryStore() : try SQLiteStore(path: folder.path()))
        let locations = try await client.import(try fixture("157-locations.json"), as: "Location")
        #expect(locations.diagnostics.map(\.problem) == [.pendingReference, .pendingReference])
        #expect(locations.diagnostics.map(\.path.description) == ["$[0].city_id", "$[1].city_id"])
        #expect(locations.diagnostics.allSatisfy { $0.action == .linkPending })
        #expect(try await Self.cityName(client, location: 0) == nil)

        let cities = try await client.import(try fixture("157-cities.json"), as: "City")
        #expect(cities.diagnostics.isEmpty)
        #expect(try await Self.cityName(client, location: 0) == "Oslo")
        #expect(try await Self.cityName(client, location: 1) == "Paris")
        #expect(try await Self.cityName(client, location: 2) == nil)

        // Sync's update: the links move; nothing is left pending.
        _ = try await client.import(try fixture("157-locations-update.json"), as: "Location")
        #expect(try await Self.cityName(client, location: 0) == nil)
        #expect(try await Self.cityName(client, location: 1) == "Oslo")
        #expect(try await Self.cityName(client, location: 2) == "Paris")
    }

    @Test func pendingReferencesSurviveReopeningTheFile() async throws {
        let folder = try TemporaryDirectory()
        do {
            let client = try Self.client(try SQLiteStore(path: folder.path()))
            _ = try await client.import(Data(#"[{"id": 1, "city_id": 7, "tag_ids": ["a", "b"]}]"#.utf8), as: "Location")
        }
        let client = try Self.client(try SQLiteStore(path: folder.path()))
        _ = try await client.import(Data(#"[{"id": 7, "name": "Bergen"}]"#.utf8), as: "City")
        _ = try await client.import(Data(#"[{"id": "b"}, {"id": "a"}]"#.utf8), as: "Tag")
        #expect(try await Self.cityName(client, location: 1) == "Bergen")
        #expect(try await Self.tags(client, location: 1) == [.string("a"), .string("b")], "in the order listed")
    }

    @Test(arguments: ["memory", "sqlite"])
    func aToManyIdArraySetsExactlyWhatItLists(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let client = try Self.client(kind == "memory" ? InMemoryStore() : try SQLiteStore(path: folder.path()))
        _ = try await client.import(Data(#"[{"id": "a"}, {"id": "b"}]"#.utf8), as: "Tag")
        _ = try await client.import(Data(#"[{"id": 1, "tag_ids": ["a", "b"]}]"#.utf8), as: "Location")
        #expect(try await Self.tags(client, location: 1) == [.string("a"), .string("b")])

        // Known and unknown: the known ones now, the others when they come.
        let mixed = try await client.import(Data(#"[{"id": 1, "tag_ids": ["b", "x"]}]"#.utf8), as: "Location")
        #expect(mixed.diagnostics.map(\.problem) == [.pendingReference])
        #expect(try await Self.tags(client, location: 1) == [.string("b")])
        // All unknown: the same rule, the old links go.
        _ = try await client.import(Data(#"[{"id": 1, "tag_ids": ["y", "z"]}]"#.utf8), as: "Location")
        #expect(try await Self.tags(client, location: 1) == [])
        // "x" was replaced by the last list: it no longer links when it comes; "z" does.
        _ = try await client.import(Data(#"[{"id": "x"}, {"id": "z"}]"#.utf8), as: "Tag")
        #expect(try await Self.tags(client, location: 1) == [.string("z")])
        // A list set from nested objects replaces what was pending too.
        _ = try await client.import(Data(#"[{"id": 1, "tags": [{"id": "a"}]}]"#.utf8), as: "Location")
        _ = try await client.import(Data(#"[{"id": "y"}]"#.utf8), as: "Tag")
        #expect(try await Self.tags(client, location: 1) == [.string("a")])
    }

    @Test func aSourceDeletedMeanwhileLeavesNothingBehind() async throws {
        let client = try Self.client(InMemoryStore())
        _ = try await client.import(Data(#"[{"id": 1, "city_id": 7}]"#.utf8), as: "Location")
        let location = try #require(try await client.object("Location", identity: .int(1)))
        try await client.deleteLocally(location.id)
        let result = try await client.import(Data(#"[{"id": 7, "name": "Bergen"}]"#.utf8), as: "City")
        #expect(result.inserted.count == 1)
        let city = try #require(try await client.object("City", identity: .int(7)))
        #expect(try await client.related("locations", of: city.id).isEmpty)
    }

    /// A file written before the keyed entities keeps its pending references in
    /// `_TetherPendingReference`, one object each: the next import moves them over, and they link
    /// as before.
    @Test func pendingReferencesOfTheEarlierFormatStillLink() async throws {
        let folder = try TemporaryDirectory()
        let store = try SQLiteStore(path: folder.path())
        let client = try Self.client(store)
        _ = try await client.import(Data(#"[{"id": 1, "name": "Home"}, {"id": 2, "name": "Work"}]"#.utf8), as: "Location")
        let home = try #require(try await client.object("Location", identity: .int(1)))
        let work = try #require(try await client.object("Location", identity: .int(2)))
        // As an earlier version wrote them: Home's city 7, Home's tags b then a (positions 1 and 0), Work's city 7.
        let rows: [(ObjectID, String, String, String, Int64)] = [
            (home.id, "city", "City", "i7", 0), (home.id, "tags", "Tag", "sb", 1), (home.id, "tags", "Tag", "sa", 0), (work.id, "city", "City", "i7", 0),
        ]
        try await store.write { writer in
            for (source, relationship, entity, target, position) in rows {
                _ = try writer.insert("_TetherPendingReference", values: [
                    "sourceEntity": .string(source.entity), "sourceRow": .int(source.rowID), "relationship": .string(relationship),
                    "targetEntity": .string(entity), "target": .string(target), "position": .int(position),
                ])
            }
        }
        _ = try await client.import(Data(#"[{"id": "a"}, {"id": "b"}]"#.utf8), as: "Tag")
        _ = try await client.import(Data(#"[{"id": 7, "name": "Oslo"}]"#.utf8), as: "City")
        #expect(try await client.related("tags", of: home.id).map { $0["id"] } == [.string("a"), .string("b")])
        #expect(try await client.related("city", of: home.id).map { $0["name"] } == [.string("Oslo")])
        #expect(try await client.related("city", of: work.id).map { $0["name"] } == [.string("Oslo")])
        #expect(try await client.count(Query("_TetherPendingReference")) == 0)
        #expect(try await client.count(Query("_TetherPendingTarget")) == 0)
        #expect(try await client.count(Query("_TetherPendingSource")) == 0)
    }

    /// An unchanged re-import leaves pending references as they are (it rewrote every one of them:
    /// the timeline benchmark's finding), and a changed one replaces them.
    @Test(arguments: ["memory", "sqlite"])
    func anUnchangedReimportLeavesPendingReferencesAlone(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let store: any Store = kind == "memory" ? InMemoryStore() : try SQLiteStore(path: folder.path())
        let client = try Self.client(store)
        let payload = Data(#"[{"id": 1, "city_id": 99, "tag_ids": ["x", "y"]}, {"id": 2, "city_id": 99}]"#.utf8)
        _ = try await client.import(payload, as: "Location")
        func stored() async throws -> [String] {
            var rows: [String] = []
            for entity in ["_TetherPendingTarget", "_TetherPendingSource"] {
                rows += try await client.fetch(Query(entity)).map { "\($0.id) \($0.values.sorted { $0.key < $1.key })" }
            }
            return rows
        }
        let before = try await stored()
        #expect(before.count == 3 + 3, "targets 99, x, y; sources 1.city, 1.tags, 2.city")
        let again = try await client.import(payload, as: "Location")
        #expect(again.inserted.isEmpty && again.updated.isEmpty && again.deleted.isEmpty)
        #expect(again.diagnostics.count == 4, "still reported as pending")
        #expect(try await stored() == before, "the same objects, not deleted and inserted again")

        _ = try await client.import(Data(#"[{"id": 1, "city_id": 98, "tag_ids": ["y"]}]"#.utf8), as: "Location")
        _ = try await client.import(Data(#"[{"id": 99}, {"id": 98}]"#.utf8), as: "City")
        _ = try await client.import(Data(#"[{"id": "x"}, {"id": "y"}]"#.utf8), as: "Tag")
        let one = try #require(try await client.object("Location", identity: .int(1)))
        let two = try #require(try await client.object("Location", identity: .int(2)))
        #expect(try await client.related("city", of: one.id).map { $0["id"] } == [.int(98)])
        #expect(try await client.related("tags", of: one.id).map { $0["id"] } == [.string("y")])
        #expect(try await client.related("city", of: two.id).map { $0["id"] } == [.int(99)])
        #expect(try await stored().isEmpty)
    }

    /// Sync's 157 fixtures (MIT), copied into the TetherTests target; read from there.
    static func fixturesFolder() -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("TetherTests/Fixtures/sync")
    }
}

private func fixture(_ name: String) throws -> Data {
    try Data(contentsOf: PendingReferenceTests.fixturesFolder().appendingPathComponent(name))
}
