import Foundation
import Testing
import Tether
import TetherPostgres

/// A commit of one instance reaches another instance's change stream and observed queries
/// (LISTEN/NOTIFY; a change set too large for a notification through the change table).
@Suite(.enabled(if: TestDatabase.enabled, "TETHER_POSTGRES_URL is not set"))
struct ObserverTests {
    static let schema = try! Schema {
        Entity("Repository", identity: "id") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Attribute("stars", .int64)
        }
    }

    /// The first change set of `stream` that `matches`, or nil after `timeout`.
    static func first(_ stream: AsyncStream<ChangeSet>, within timeout: Duration, where matches: @escaping @Sendable (ChangeSet) -> Bool) async -> ChangeSet? {
        await withTaskGroup(of: ChangeSet?.self) { group in
            group.addTask {
                for await changes in stream where matches(changes) { return changes }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    @Test func anotherInstanceSeesCommitsOnItsChangeStream() async throws {
        let namespace = TestDatabase.namespace("observe")
        defer { Task { await TestDatabase.drop([namespace]) } }
        try await TestDatabase.withClient { poolA in
            try await TestDatabase.withClient { poolB in
                let a = PostgresStore(client: poolA, namespace: namespace)
                let b = PostgresStore(client: poolB, namespace: namespace)
                defer { a.close(); b.close() }
                try a.prepare(for: Self.schema)
                try b.prepare(for: Self.schema)
                let stream = b.changes()
                try await b.listen()

                // A small change set, in the notification.
                let inserted = try await a.write { try $0.insert("Repository", values: ["id": .int(1), "name": .string("one")]).id }
                let seen = await Self.first(stream, within: .seconds(10)) { $0.inserted.contains(inserted) }
                #expect(seen?.inserted == [inserted])

                // A change set larger than a notification holds (thousands of runs), through the change table.
                let ids = try await a.write { writer in
                    var batch = InsertBatch(entity: "Repository", attributes: ["id", "name", "stars"])
                    for i in 2..<6002 { batch.append([.int(Int64(i)), .string("repo \(i)"), .int(0)]) }
                    return try writer.insert(batch)
                }
                let everyOther = stride(from: 0, to: ids.count, by: 2).map { ids[$0] }
                try await a.write { writer in
                    var batch = UpdateBatch(entity: "Repository", attributes: ["stars"])
                    for id in everyOther { batch.append(id, [.int(5)]) }
                    try writer.update(batch)
                }
                let large = await Self.first(stream, within: .seconds(10)) { !$0.updated.isEmpty }
                #expect(large?.updated == ObjectIDSet(everyOther))
                #expect(large?.changedProperties(of: everyOther[0]) == ["stars"])
                #expect(b.counters.received >= 2)
            }
        }
    }

    /// An observed query on instance B follows A's commits; the time from A's commit to B's
    /// snapshot is printed (median and 90th percentile over 100 commits).
    @Test func anObservedQueryOnAnotherInstanceFollowsCommits() async throws {
        let namespace = TestDatabase.namespace("observed")
        defer { Task { await TestDatabase.drop([namespace]) } }
        try await TestDatabase.withClient { poolA in
            try await TestDatabase.withClient { poolB in
                let a = PostgresStore(client: poolA, namespace: namespace)
                let b = PostgresStore(client: poolB, namespace: namespace)
                defer { a.close(); b.close() }
                let clientA = try Client.Builder(schema: Self.schema).store(a).build()
                let clientB = try Client.Builder(schema: Self.schema).store(b).build()
                try await b.listen()
                let observation = clientB.observe(Query("Repository", sortedBy: [.ascending("id")]))
                var snapshots = observation.makeAsyncIterator()
                let initial = try await snapshots.next()
                #expect(initial?.count == 0)
                var latencies: [Duration] = []
                let clock = ContinuousClock()
                for i in 0..<100 {
                    let start = clock.now
                    _ = try await clientA.import(.array([.object(["id": .int(Int64(i)), "name": .string("repo \(i)")])]), as: "Repository")
                    var snapshot = try await snapshots.next()
                    while let current = snapshot, current.count < i + 1 { snapshot = try await snapshots.next() }
                    latencies.append(clock.now - start)
                    #expect(snapshot?.count == i + 1)
                }
                latencies.sort()
                print("ObserverTests: commit on A to snapshot on B over 100 commits: median \(latencies[50]), p90 \(latencies[90]) (each includes A's import)")
                // The target is 100 ms (median, a quiet machine: Docs/PostgreSQL.md); the
                // assertion leaves room for a loaded CI machine running every suite at once.
                #expect(latencies[50] < .seconds(1))
            }
        }
    }
}
