import Foundation
import Synchronization
import Testing
import Tether
import TetherSQLite
import TetherTestSupport

/// Observed queries, objects and relationships (Docs/Live-Results.md) on both stores.
@Suite struct LiveResultsTests {
    static let schema = try! Schema {
        Entity("Repository") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Attribute("language", .string)
            Attribute("stars", .int64)
            Attribute("summary", .string)
            Relationship.toOne("owner", "User", inverse: "repositories")
        }
        Entity("User") {
            Attribute("id", .int64)
            Attribute("login", .string)
            Relationship.toMany("repositories", "Repository", inverse: "owner", ordered: true)
        }
    }

    static func client(_ kind: String, _ folder: TemporaryDirectory, store: (any Store)? = nil) throws -> Client {
        let store: any Store = try store ?? (kind == "memory" ? InMemoryStore() : SQLiteStore(path: folder.path()))
        return try Client.Builder(schema: schema).store(store).build()
    }

    static func repositories(_ json: String, _ client: Client, options: ImportOptions? = nil) async throws {
        try await client.import(Data(json.utf8), as: "Repository", options: options)
    }

    /// Checks that the snapshot's difference turns `previous` into it and lists every object that
    /// changed in place, and, when no later write may have happened (`settled`), that it is what a
    /// fresh fetch finds (`reading`: of those attributes).
    static func check(_ snapshot: ResultsSnapshot, after previous: ResultsSnapshot?, _ client: Client, _ query: Query,
                      sectionKey: String? = nil, reading: Set<String>? = nil, settled: Bool = true,
                      sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let applied = snapshot.difference.applied(to: previous?.sectionedIDs ?? [], from: snapshot.sectionedIDs)
        #expect(applied == snapshot.sectionedIDs, "difference \(snapshot.difference)", sourceLocation: sourceLocation)
        if let previous {
            // Every object that stayed in place with other values is listed as updated.
            var moved = Set(snapshot.difference.moved.map(\.to))
            moved.formUnion(snapshot.difference.inserted)
            let before = Dictionary(uniqueKeysWithValues: previous.objects.map { ($0.id, $0) })
            for (offset, object) in snapshot.objects.enumerated() {
                let index = snapshot.index(ofOffset: offset)
                guard !moved.contains(index), !snapshot.difference.insertedSections.contains(index.section),
                      let old = before[object.id], old.values != object.values else { continue }
                let oldOffset = previous.objects.firstIndex { $0.id == object.id }!
                #expect(snapshot.difference.updated.contains(previous.index(ofOffset: oldOffset)),
                        "\(object.id) changed in place but is not listed as updated", sourceLocation: sourceLocation)
            }
        }
        guard settled else { return }
        var sorted = query
        if let sectionKey, query.sort.first?.attribute != sectionKey { sorted.sort.insert(.ascending(sectionKey), at: 0) }
        var fetched = try await client.fetch(sorted)
        if let reading {
            let read = reading.union(query.condition?.attributes ?? []).union(sorted.sort.map(\.attribute))
            fetched = fetched.map { Object(id: $0.id, values: $0.values.filter { read.contains($0.key) }) }
        }
        #expect(fetched == snapshot.objects, sourceLocation: sourceLocation)
    }

    static let seed = #"""
        [{"id": 1, "name": "tether", "language": "Swift", "stars": 50},
         {"id": 2, "name": "sync", "language": "Swift", "stars": 30},
         {"id": 3, "name": "rails", "language": "Ruby", "stars": 90},
         {"id": 4, "name": "django", "language": "Python", "stars": 70}]
        """#

    @Test(arguments: ["memory", "sqlite"])
    func firstSnapshotThenDifferencesAcrossSections(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let client = try Self.client(kind, folder)
        try await Self.repositories(Self.seed, client)
        let query = Query("Repository", sortedBy: [.descending("stars")])
        var results = client.observe(query, sectionedBy: "language").makeAsyncIterator()

        let first = try #require(try await results.next())
        #expect(first.sections.map(\.key) == [.string("Python"), .string("Ruby"), .string("Swift")])
        #expect(first.objects.map { $0["name"] } == ["django", "rails", "tether", "sync"].map(Value.string))
        #expect(first.difference.insertedSections == [0, 1, 2])
        try await Self.check(first, after: nil, client, query, sectionKey: "language")

        // An update in place, a move inside a section, a new section, a section emptied.
        try await Self.repositories(#"""
            [{"id": 1, "name": "tether", "language": "Swift", "stars": 10},
             {"id": 2, "name": "sync2", "language": "Swift", "stars": 30},
             {"id": 5, "name": "phoenix", "language": "Elixir", "stars": 5},
             {"id": 3, "name": "rails", "language": "Swift", "stars": 90}]
            """#, client)
        let second = try #require(try await results.next())
        #expect(second.sections.map(\.key) == [.string("Elixir"), .string("Python"), .string("Swift")])
        #expect(second.difference.insertedSections == [0])
        #expect(second.difference.deletedSections == [1], "Ruby is empty")
        #expect(second.difference.inserted == [ResultIndex(section: 2, item: 0)], "rails came from a deleted section")
        #expect(second.difference.moved == [ResultsDifference.Move(from: ResultIndex(section: 2, item: 0), to: ResultIndex(section: 2, item: 2))])
        #expect(second.difference.updated == [ResultIndex(section: 2, item: 1)], "sync renamed in place")
        try await Self.check(second, after: first, client, query, sectionKey: "language")

        // A deletion.
        let django = try #require(try await client.object("Repository", identity: .int(4)))
        try await client.deleteLocally(django.id)
        let third = try #require(try await results.next())
        #expect(third.difference.deletedSections == [1])
        try await Self.check(third, after: second, client, query, sectionKey: "language")
    }

    @Test(arguments: ["memory", "sqlite"])
    func noOpAndUnrelatedChangesYieldNothing(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let client = try Self.client(kind, folder)
        try await Self.repositories(Self.seed, client)
        let query = Query("Repository", where: .greater("stars", .int(40)), sortedBy: [.ascending("name")])
        var results = client.observe(query, reading: ["name", "stars"]).makeAsyncIterator()
        let first = try #require(try await results.next())
        #expect(first.objects.map { $0["name"] } == ["django", "rails", "tether"].map(Value.string))

        try await Self.repositories(Self.seed, client)                                          // no-op import
        try await Self.repositories(#"[{"id": 1, "summary": "not read"}]"#, client)            // attribute not read
        try await Self.repositories(#"[{"id": 2, "name": "not in the result"}]"#, client)      // object not in the result
        try await client.import(Data(#"[{"id": 9, "login": "someone"}]"#.utf8), as: "User")    // another entity
        try await Self.repositories(#"[{"id": 3, "name": "rails!"}]"#, client)                 // the marker
        let next = try #require(try await results.next())
        #expect(next.difference.updated == [ResultIndex(item: 1)], "only the marker: \(next.difference)")
        try await Self.check(next, after: first, client, query, reading: ["name", "stars"])
    }

    @Test(arguments: ["memory", "sqlite"])
    func slowConsumerGetsTheLatestState(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let client = try Self.client(kind, folder)
        let query = Query("Repository", sortedBy: [.descending("stars"), .ascending("id")])
        var results = client.observe(query).makeAsyncIterator()
        let first = try #require(try await results.next())
        #expect(first.isEmpty)
        for round in 1...20 {
            try await Self.repositories("[" + (1...10).map { #"{"id": \#($0 + round), "name": "r\#(round)", "stars": \#(($0 * 7 + round * 3) % 11)}"# }.joined(separator: ",") + "]", client)
        }
        var previous = first
        var snapshots = 0
        let expected = try await client.fetch(query)
        while previous.objects != expected {
            let next = try #require(try await results.next())
            try await Self.check(next, after: previous, client, query, settled: false)
            previous = next
            snapshots += 1
        }
        #expect(snapshots < 20, "coalesced: \(snapshots) snapshots for 20 commits")
        // Nothing stale is queued: the next snapshot is the next change.
        try await Self.repositories(#"[{"id": 100, "stars": 1000}]"#, client)
        let last = try #require(try await results.next())
        #expect(last.difference.inserted == [ResultIndex(item: 0)])
    }

    @Test(arguments: ["memory", "sqlite"])
    func conditionAndSortChangedInPlace(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let client = try Self.client(kind, folder)
        try await Self.repositories(Self.seed, client)
        let observation = client.observe(Query("Repository", where: .equal("language", .string("Swift")), sortedBy: [.ascending("name")]))
        var results = observation.makeAsyncIterator()
        let first = try #require(try await results.next())
        #expect(first.objects.map { $0["name"] } == ["sync", "tether"].map(Value.string))

        observation.change(where: .greater("stars", .int(40)), sortedBy: [.descending("stars")])
        #expect(observation.query.sort == [.descending("stars")])
        let second = try #require(try await results.next())
        #expect(second.objects.map { $0["name"] } == ["rails", "django", "tether"].map(Value.string))
        try await Self.check(second, after: first, client, observation.query)

        observation.change { $0.limit = 2 }
        let third = try #require(try await results.next())
        #expect(third.objects.map { $0["name"] } == ["rails", "django"].map(Value.string))
        // The window follows the store: a new first pushes django out.
        try await Self.repositories(#"[{"id": 7, "name": "vapor", "stars": 95}]"#, client)
        let fourth = try #require(try await results.next())
        #expect(fourth.objects.map { $0["name"] } == ["vapor", "rails"].map(Value.string))
        try await Self.check(fourth, after: third, client, observation.query)
    }

    /// Random imports, updates and deletes; every snapshot's difference applied to the one before
    /// gives it, and it is what a fresh fetch finds.
    @Test(arguments: ["memory", "sqlite"])
    func differencesApplyToRandomChanges(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let client = try Self.client(kind, folder)
        var random = SeededRandom(seed: kind == "memory" ? 7 : 11)
        let languages = ["Swift", "Ruby", "Go", "C", "Rust"]
        let queries: [(Query, String?)] = [
            (Query("Repository", sortedBy: [.descending("stars")]), "language"),
            (Query("Repository", where: .greater("stars", .int(20)), sortedBy: [.ascending("name")]), nil),
            (Query("Repository", sortedBy: [.ascending("stars")], limit: 10), nil),
        ]
        for (query, sectionKey) in queries {
            var results = client.observe(query, sectionedBy: sectionKey).makeAsyncIterator()
            var previous = try #require(try await results.next())
            for _ in 0..<25 {
                if random.next() % 4 == 0 {
                    let stored = try await client.fetch(Query("Repository"))
                    for object in stored where random.next() % 3 == 0 { try await client.deleteLocally(object.id) }
                } else {
                    let rows = (0..<Int(random.next() % 12)).map { _ in
                        let id = random.next() % 40
                        var fields = [#""id": \#(id)"#]
                        if random.next() % 2 == 0 { fields.append(#""stars": \#(random.next() % 50)"#) }
                        if random.next() % 3 == 0 { fields.append(#""language": "\#(languages[Int(random.next() % 5)])""#) }
                        if random.next() % 3 == 0 { fields.append(#""name": "n\#(random.next() % 9)""#) }
                        return "{" + fields.joined(separator: ", ") + "}"
                    }
                    try await Self.repositories("[" + rows.joined(separator: ",") + "]", client)
                }
                var sorted = query
                if let sectionKey { sorted.sort.insert(.ascending(sectionKey), at: 0) }
                let expected = try await client.fetch(sorted)
                while previous.objects != expected {
                    let next = try #require(try await results.next())
                    try await Self.check(next, after: previous, client, query, sectionKey: sectionKey, settled: false)
                    #expect(!next.difference.isEmpty)
                    previous = next
                }
            }
        }
    }

    @Test(arguments: ["memory", "sqlite"])
    func oneObjectAndOneRelationship(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let client = try Self.client(kind, folder)
        try await client.import(Data(#"""
            [{"id": 1, "login": "ada", "repositories": [{"id": 10, "name": "a", "stars": 1}, {"id": 11, "name": "b", "stars": 2}]}]
            """#.utf8), as: "User")
        let ada = try #require(try await client.object("User", identity: .int(1)))
        let b = try #require(try await client.object("Repository", identity: .int(11)))

        var user = client.observe(ada.id, reading: ["login"]).makeAsyncIterator()
        var repositories = try client.observe("repositories", of: ada.id, reading: ["name"]).makeAsyncIterator()
        var repository = client.observe(b.id).makeAsyncIterator()
        #expect(try await user.next()??["login"] == .string("ada"))
        #expect(try await repositories.next()?.objects.map { $0["name"] } == ["a", "b"].map(Value.string))
        #expect(try await repository.next()??["stars"] == .int(2))

        // Not read by the user's observer (a relationship), then read (login); a new link; an attribute not read.
        try await client.import(Data(#"""
            [{"id": 1, "login": "ada", "repositories": [{"id": 10, "name": "a", "stars": 5}, {"id": 11, "name": "b", "stars": 3}, {"id": 12, "name": "c"}]}]
            """#.utf8), as: "User")
        try await client.import(Data(#"[{"id": 1, "login": "Ada"}]"#.utf8), as: "User")
        #expect(try await user.next()??["login"] == .string("Ada"))
        let linked = try #require(try await repositories.next())
        #expect(linked.objects.map { $0["name"] } == ["a", "b", "c"].map(Value.string))
        #expect(linked.difference.inserted == [ResultIndex(item: 2)])
        #expect(linked.difference.updated.isEmpty, "stars are not read")
        #expect(try await repository.next()??["stars"] == .int(3))

        // Deleted: the object observer yields nil and ends; the relationship loses it.
        try await client.deleteLocally(b.id)
        #expect(try await repository.next() == .some(nil))
        #expect(try await repository.next() == nil)
        let unlinked = try #require(try await repositories.next())
        #expect(unlinked.difference.deleted == [ResultIndex(item: 1)])
        #expect(unlinked.difference.applied(to: linked.sectionedIDs, from: unlinked.sectionedIDs) == unlinked.sectionedIDs)

        #expect(throws: StoreError.self) { try client.observe("followers", of: ada.id) }
    }

    @Test(arguments: ["memory", "sqlite"])
    func unknownNamesAreReported(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let client = try Self.client(kind, folder)
        var unknownEntity = client.observe(Query("Repo")).makeAsyncIterator()
        await #expect(throws: StoreError.self) { try await unknownEntity.next() }
        var unknownKey = client.observe(Query("Repository"), sectionedBy: "lang").makeAsyncIterator()
        let error = await #expect(throws: StoreError.self) { try await unknownKey.next() }
        #expect(error?.member == "lang")
    }

    /// Cancelling the consuming task ends the iteration and the observer's subscription (checked
    /// through a third-party store that counts its open change streams).
    @Test func cancellationFreesTheObserver() async throws {
        let folder = try TemporaryDirectory()
        let store = StreamCountingStore(InMemoryStore())
        let client = try Self.client("memory", folder, store: store)
        try await Self.repositories(Self.seed, client)
        let observation = client.observe(Query("Repository", sortedBy: [.ascending("name")]))
        let started = AsyncStream<Void>.makeStream()
        let consumer = Task {
            var count = 0
            for try await _ in observation {
                count += 1
                started.continuation.yield()
            }
            return count
        }
        for await _ in started.stream { break }
        #expect(store.openStreams == 1)
        consumer.cancel()
        #expect(try await consumer.value == 1)
        let deadline = ContinuousClock.now + .seconds(30)
        while store.openStreams > 0 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(store.openStreams == 0)
        // The store goes on working without the observer.
        try await Self.repositories(#"[{"id": 8, "name": "later"}]"#, client)
        #expect(try await client.count(Query("Repository")) == 5)
    }
}

/// A store of someone else's: an in-memory store behind the `Store` protocol, counting the
/// change streams open on it.
final class StreamCountingStore: Store {
    let inner: InMemoryStore
    private let open = Counter()

    final class Counter: Sendable {
        let value = Mutex(0)
    }

    init(_ inner: InMemoryStore) { self.inner = inner }

    var openStreams: Int { open.value.withLock { $0 } }

    func prepare(for schema: Schema) throws { try inner.prepare(for: schema) }
    func read<T: Sendable>(_ body: @Sendable (any StoreReader) throws -> T) async throws -> T { try await inner.read(body) }
    func write<T: Sendable>(_ body: @Sendable (any StoreWriter) throws -> T) async throws -> T { try await inner.write(body) }

    func changes() -> AsyncStream<ChangeSet> {
        let source = inner.changes()
        open.value.withLock { $0 += 1 }
        let (stream, continuation) = AsyncStream<ChangeSet>.makeStream()
        let forward = Task {
            for await changes in source { continuation.yield(changes) }
            continuation.finish()
        }
        continuation.onTermination = { [open] _ in
            forward.cancel()
            open.value.withLock { $0 -= 1 }
        }
        return stream
    }
}
