import Foundation
import PostgresNIO
import Testing
import Tether
import TetherPostgres
import TetherPostgresTestSupport

/// Several instances (each its own pool, store and client) import overlapping payloads into one
/// namespace at the same moment: one row per identity, every import complete, and no error for
/// the serialization failures and deadlocks PostgreSQL raises meanwhile (the store retries).
@Suite(.enabled(if: TestDatabase.enabled, "TETHER_POSTGRES_URL is not set"))
struct ManyWritersTests {
    @Test func overlappingImportsKeepOneRowPerIdentity() async throws {
        let namespace = TestDatabase.namespace("writers")
        defer { Task { await TestDatabase.drop([namespace]) } }
        let writers = 4
        let pages = 6
        let pageSize = 400
        // Writer w imports pages that start at w * 100: every page overlaps the other writers'.
        let results = try await withThrowingTaskGroup(of: (Int, PostgresStore.Counters).self) { group in
            for w in 0..<writers {
                group.addTask {
                    try await TestDatabase.withClient { pool in
                        let store = PostgresStore(client: pool, namespace: namespace)
                        let client = try Client.Builder(schema: Payloads.schema).store(store).build()
                        var imported = 0
                        for page in 0..<pages {
                            let start = Payloads.start(writer: w, page: page, size: pageSize)
                            let repositories = try await client.import(Payloads.repositories(start..<start + pageSize), as: "Repository")
                            #expect(repositories.diagnostics.isEmpty)
                            let issues = try await client.import(Payloads.issues(start..<start + pageSize / 2), as: "Issue")
                            #expect(issues.diagnostics.isEmpty)
                            imported += 1
                        }
                        return (imported, store.counters)
                    }
                }
            }
            var all: [(Int, PostgresStore.Counters)] = []
            for try await result in group { all.append(result) }
            return all
        }
        #expect(results.map(\.0) == Array(repeating: pages, count: writers))
        let retries = results.map(\.1.retries).reduce(0, +)
        print("ManyWritersTests: \(writers) writers, \(results.map(\.1.commits).reduce(0, +)) commits, \(retries) retried for serialization failures or deadlocks")

        // One row per identity, and everything each import wrote.
        let store = PostgresStore(client: try TestDatabase.client(), namespace: namespace)
        try store.prepare(for: Payloads.schema)
        var expectedRepositories = Set<Int>()
        var expectedIssues = Set<Int>()
        for w in 0..<writers {
            for page in 0..<pages {
                let start = Payloads.start(writer: w, page: page, size: pageSize)
                expectedRepositories.formUnion(start..<start + pageSize)
                expectedIssues.formUnion(start..<start + pageSize / 2)
            }
        }
        let rows = try await store.readSQL { sql in
            try ["Repository", "User", "Issue", "Label"].map { entity in
                try sql.rows("SELECT count(*) AS n, count(DISTINCT \"id\") AS d FROM \"\(namespace)\".\"\(entity)\"")[0]
            }
        }
        for (entity, row) in zip(["Repository", "User", "Issue", "Label"], rows) {
            #expect(row["n"] == row["d"], "duplicate identities of \(entity): \(row)")
        }
        #expect(rows[0]["n"] == .int(Int64(expectedRepositories.count)))
        #expect(rows[1]["n"] == .int(37))
        #expect(rows[2]["n"] == .int(Int64(expectedIssues.count)))
        #expect(rows[3]["n"] == .int(17))
        // Every repository has its owner, every issue its labels in order.
        try await store.read { reader in
            let repositories = try reader.fetch(Query("Repository"))
            let owners = try reader.related("owner", of: repositories.map(\.id))
            for repository in repositories {
                let owner = try owners[repository.id].flatMap { $0.count == 1 ? try reader.object($0[0]) : nil }
                #expect(owner?["id"] == .int(repository["id", as: Int64.self]! % 37), "owner of \(repository)")
            }
            let issues = try reader.fetch(Query("Issue"))
            let labels = try reader.related("labels", of: issues.map(\.id))
            for issue in issues {
                let ids = try (labels[issue.id] ?? []).map { try reader.object($0)?["id", as: Int64.self] }
                #expect(ids == Payloads.labels(of: Int(issue["id", as: Int64.self]!)).map { Int64($0) }, "labels of \(issue)")
            }
        }
    }
}
