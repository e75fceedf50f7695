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

    /// At depth 0 a state reuses the models of the objects its difference leaves untouched and
    /// decodes the others: after random inserts, updates (moving or in place), deletes and
    /// section changes, every state's models are what a fresh typed fetch reads, in order.
    @Test(arguments: stores) func depthZeroStatesReuseUntouchedModelsAndMatchAFreshFetch(store: String) async throws {
        let directory = try TemporaryDirectory()
        let client = try Self.client(store, directory)
        var random = SystemRandomNumberGenerator()
        let seed = (0..<60).map { #"{"id": \#($0), "name": "n\#($0)", "rank": \#($0 % 7)}"# }
        _ = try await client.import(Data(("[" + seed.joined(separator: ",") + "]").utf8), as: Item.self)
        for sectioned in [false, true] {
            let observation = sectioned
                ? try client.observe(Item.self, sortedBy: [.ascending(\.name)], sectionedBy: \.rank, depth: 0)
                : try client.observe(Item.self, sortedBy: [.descending(\.rank), .ascending(\.name)], depth: 0)
            var iterator = observation.makeAsyncIterator()
            _ = try #require(try await iterator.next())
            for round in 0..<25 {
                // One write a round, which always changes the results: a delete, or an import
                // whose every row has a name of this round (moving it, or changing it in place).
                if round % 5 == 4, let victim = try await client.fetch(Item.self, depth: 0).randomElement(using: &random) {
                    try await client.deleteLocally(try #require(try await client.objectID(of: victim)))
                } else {
                    var rows: [String] = []
                    for id in Set((0..<Int.random(in: 1...6, using: &random)).map { _ in Int.random(in: 0..<80, using: &random) }) {
                        let rank = Bool.random(using: &random) ? id % 7 : Int.random(in: 0..<9, using: &random)
                        rows.append(#"{"id": \#(id), "name": "r\#(round)-\#(id)", "rank": \#(rank)}"#)
                    }
                    _ = try await client.import(Data(("[" + rows.joined(separator: ",") + "]").utf8), as: Item.self)
                }
                let state = try #require(try await iterator.next())
                let fetched = try await client.fetch(Item.self, sortedBy: sectioned ? [.ascending(\.rank), .ascending(\.name)] : [.descending(\.rank), .ascending(\.name)], depth: 0)
                #expect(state.models.map(\.id) == fetched.map(\.id), "round \(round)")
                #expect(state.models == fetched, "round \(round)")
            }
        }
    }

    /// Item, as a view that counts its decodings.
    struct CountedItem: EntityModel, Equatable {
        static var entityName: String { "Item" }
        static let decodings = Atomic(0)
        var id: Int64
        var name: String
        var rank: Int?

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decode(Int64.self, forKey: .id)
            name = try container.decode(String.self, forKey: .name)
            rank = try container.decodeIfPresent(Int.self, forKey: .rank)
            Self.decodings.add(1, ordering: .relaxed)
        }
    }

    /// At depth 0, a change of two objects of 60 decodes two models, not 60 (both stores one
    /// after the other: the count is shared).
    @Test func depthZeroStatesDecodeOnlyWhatChanged() async throws {
        for store in Self.stores { try await depthZeroStatesDecodeOnlyWhatChanged(store: store) }
    }

    func depthZeroStatesDecodeOnlyWhatChanged(store: String) async throws {
        let directory = try TemporaryDirectory()
        let client = try Self.client(store, directory)
        let seed = (0..<60).map { #"{"id": \#($0), "name": "n\#($0)", "rank": \#($0)}"# }
        _ = try await client.import(Data(("[" + seed.joined(separator: ",") + "]").utf8), as: Item.self)
        var iterator = try client.observe(CountedItem.self, sortedBy: [.ascending(\.rank)], depth: 0).makeAsyncIterator()
        #expect(try #require(try await iterator.next()).models.count == 60)
        let before = CountedItem.decodings.load(ordering: .relaxed)
        _ = try await client.import(Data(#"[{"id": 5, "name": "moved", "rank": 100}, {"id": 7, "name": "renamed", "rank": 7}]"#.utf8), as: Item.self)
        let state = try #require(try await iterator.next())
        #expect(state.models.last?.name == "moved" && state.models.first { $0.id == 7 }?.name == "renamed")
        #expect(CountedItem.decodings.load(ordering: .relaxed) - before == 2)
    }
}
