import Foundation
import Observation
import Synchronization
import Testing
import Tether
import TetherSQLite
import TetherTesting

/// Typed live results on both stores: sections keyed by a key path through a to-one relationship
/// (RSDataFetcher's sections by `group.title`), typed changes of a running observation, remote
/// sources named by models, and `LiveResults`, the `@Observable` object (the Observation module on
/// Linux too).
@Suite struct TypedLiveResultsTests {
    struct Group: EntityModel, Equatable {
        var id: Int64
        var title: String
        var items: [Item] = []
    }

    struct Item: EntityModel, Equatable {
        var id: Int64
        var name: String
        var rank: Int?
        var group: Group?
    }

    static let stores = ["memory", "sqlite"]

    static func client(_ store: String, _ directory: TemporaryDirectory, transport: StubTransport? = nil) throws -> Client {
        var builder = try Client.Builder(models: [Group.self, Item.self])
        if let transport { builder = builder.transport(transport).baseURL(URL(string: "https://api.example")!) }
        return store == "sqlite" ? try builder.store(try SQLiteStore(path: directory.path())).build() : try builder.build()
    }

    static let payload = #"""
        [{"id": 1, "name": "apple", "rank": 2, "group": {"id": 10, "title": "fruit"}},
         {"id": 2, "name": "kale", "rank": 1, "group": {"id": 11, "title": "greens"}},
         {"id": 3, "name": "banana", "rank": 3, "group": {"id": 10}},
         {"id": 4, "name": "salt"}]
        """#

    /// The sections as (key, names) pairs.
    static func shape(_ results: ModelResults<Item>) -> [String] {
        results.sections.map { section in
            let key = section.key.map { if case .string(let s) = $0 { s } else { "\($0)" } } ?? "-"
            return key + ": " + section.models.map(\.name).joined(separator: ",")
        }
    }

    @Test(arguments: stores) func sectionsByAKeyPathThroughARelationship(store: String) async throws {
        let directory = try TemporaryDirectory()
        let client = try Self.client(store, directory)
        _ = try await client.import(Data(Self.payload.utf8), as: Item.self)
        let observation = try client.observe(Item.self, sortedBy: [.ascending(\.name)], sectionedBy: \.group?.title)
        var iterator = observation.makeAsyncIterator()
        let first = try #require(try await iterator.next())
        #expect(Self.shape(first) == ["-: salt", "fruit: apple,banana", "greens: kale"])
        #expect(first.models.map(\.group?.title) == [nil, "fruit", "fruit", "greens"])   // depth 1

        // The group's title changes: an attribute of another entity, on the way of the section key.
        _ = try await client.import(Data(#"[{"id": 10, "title": "produce"}]"#.utf8), as: Group.self)
        let renamed = try #require(try await iterator.next())
        #expect(Self.shape(renamed) == ["-: salt", "greens: kale", "produce: apple,banana"])
        #expect(renamed.difference.insertedSections == [2] && renamed.difference.deletedSections == [1])

        // An item moves to another group (a link of the observed entity).
        _ = try await client.import(Data(#"[{"id": 4, "name": "salt", "group": {"id": 11}}]"#.utf8), as: Item.self)
        let moved = try #require(try await iterator.next())
        #expect(Self.shape(moved) == ["greens: kale,salt", "produce: apple,banana"])

        // A change elsewhere in Group (not on the way) and in Item still comes through as usual.
        _ = try await client.import(Data(#"[{"id": 5, "name": "cherry", "group": {"id": 10}}]"#.utf8), as: Item.self)
        let inserted = try #require(try await iterator.next())
        #expect(Self.shape(inserted) == ["greens: kale,salt", "produce: apple,banana,cherry"])

        // A section key that is a plain attribute.
        var byRank = try client.observe(Item.self, where: .notEqual(\.rank, nil), sectionedBy: \.rank, depth: 0).makeAsyncIterator()
        #expect(try #require(try await byRank.next()).sections.map(\.key) == [.int(1), .int(2), .int(3)])
    }

    @Test(arguments: stores) func typedChangesOfARunningObservation(store: String) async throws {
        let directory = try TemporaryDirectory()
        let client = try Self.client(store, directory)
        _ = try await client.import(Data(Self.payload.utf8), as: Item.self)
        let observation = try client.observe(Item.self, where: .equal(\.group?.title, "fruit"), sortedBy: [.ascending(\.name)], depth: 0)
        var iterator = observation.makeAsyncIterator()
        #expect(try #require(try await iterator.next()).models.map(\.name) == ["apple", "banana"])

        try observation.change(where: .notEqual(\.group?.title, "fruit"), sortedBy: [.descending(\.rank)])
        let changed = try #require(try await iterator.next())
        #expect(changed.models.map(\.name) == ["kale"])   // an item without a group has no title to differ
        try observation.change(where: nil)
        #expect(try #require(try await iterator.next()).models.map(\.name) == ["banana", "apple", "kale", "salt"])   // sort kept
        // A key path that names nothing changes nothing.
        #expect(throws: ModelError.self) { try observation.change(where: .equal(\.group, nil)) }
        #expect(observation.observation.query.condition == nil)
    }

    /// A stub server: a group's items.
    static func server() -> StubTransport {
        let stub = StubTransport()
        stub.on(.get, "/groups/10/items", json: [["id": 1, "name": "apple", "rank": 2], ["id": 6, "name": "fig", "rank": 9]])
        return stub
    }

    /// The next state whose source is no longer loading.
    static func settled(_ iterator: inout ModelObservation<Item>.Iterator) async throws -> ModelResults<Item> {
        while true {
            let results = try #require(try await iterator.next())
            if results.remoteState?.isLoading == false, results.remoteState?.lastRefreshed != nil || results.remoteState?.lastError != nil {
                return results
            }
        }
    }

    @Test(arguments: stores) func remoteSourcesNamedByModels(store: String) async throws {
        let directory = try TemporaryDirectory()
        let client = try Self.client(store, directory, transport: Self.server())
        _ = try await client.import(Data(Self.payload.utf8), as: Item.self)
        let fruit = try #require(try await client.model(Group.self, identity: 10))

        // The relationship's list: set to what the server lists (banana leaves it, fig joins).
        let source = try RemoteSource.relationship(\Group.items, of: fruit, from: "/groups/:id/items")
        #expect(source.key == "Group(10).items from /groups/:id/items")
        var relationship = try client.observe(Item.self, where: .equal(\.group?.id, 10), sortedBy: [.ascending(\.name)],
                                              from: source).makeAsyncIterator()
        #expect(try #require(try await relationship.next()).models.map(\.name) == ["apple", "banana"])   // local, at once
        let refreshed = try await Self.settled(&relationship)
        #expect(refreshed.models.map(\.name) == ["apple", "fig"])
        #expect(refreshed.models.allSatisfy { $0.group?.id == 10 })

        // Objects at a URL read from a model, sectioned.
        let objects = try RemoteSource.objects(at: "/groups/:id/items", for: fruit, deletingMissing: false)
        var sectioned = try client.observe(Item.self, sortedBy: [.ascending(\.name)], sectionedBy: \.group?.title,
                                           depth: 0, from: objects, refresh: .never).makeAsyncIterator()
        let local = try #require(try await sectioned.next())
        #expect(Self.shape(local).last == "greens: kale")
        #expect(local.remoteState?.isLoading == false)

        // A model without identity cannot name a source.
        #expect(throws: ModelError.self) { try RemoteSource.objects(at: "/x", for: Unidentified(name: "x")) }
    }

    struct Unidentified: EntityModel {
        var name: String
    }

    @MainActor
    @Test(arguments: stores) func liveResultsIsObservable(store: String) async throws {
        let directory = try TemporaryDirectory()
        let client = try Self.client(store, directory)
        _ = try await client.import(Data(Self.payload.utf8), as: Item.self)
        let results = LiveResults(try client.observe(Item.self, sortedBy: [.ascending(\.name)], sectionedBy: \.group?.title, depth: 0))
        try await Self.waitUntil { results.isLoaded }
        #expect(results.models.map(\.name) == ["salt", "apple", "banana", "kale"])
        #expect(results.sections.map(\.models.count) == [1, 2, 1])

        let changed = Flag()
        withObservationTracking { _ = results.models } onChange: { changed.set() }
        _ = try await client.import(Data(#"[{"id": 7, "name": "avocado", "group": {"id": 10}}]"#.utf8), as: Item.self)
        try await Self.waitUntil { changed.isSet && results.models.count == 5 }
        #expect(results.sections.last?.models.map(\.name) == ["kale"])
        #expect(results.difference.inserted == [ResultIndex(section: 1, item: 1)])   // apple, avocado, banana

        try results.change(where: .equal(\.group?.title, "greens"))
        try await Self.waitUntil { results.models.count == 1 }
        #expect(results.models.map(\.name) == ["kale"])

        results.stop()
        _ = try await client.import(Data(#"[{"id": 8, "name": "chard", "group": {"id": 11}}]"#.utf8), as: Item.self)
        try await Task.sleep(for: .milliseconds(50))
        #expect(results.models.map(\.name) == ["kale"], "a stopped object shows what it showed")
        #expect(results.error == nil)
    }

    final class Flag: Sendable {
        private let value = Mutex(false)
        func set() { value.withLock { $0 = true } }
        var isSet: Bool { value.withLock { $0 } }
    }

    /// Waits (yielding to the main actor) until `condition` holds; fails after a generous bound.
    @MainActor
    static func waitUntil(_ condition: @MainActor () -> Bool) async throws {
        for _ in 0..<1000 {
            if condition() { return }
            try await Task.sleep(for: .milliseconds(5))
        }
        Testing.Issue.record("the condition never held")
    }
}
