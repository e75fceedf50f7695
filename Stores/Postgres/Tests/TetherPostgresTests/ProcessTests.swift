import Foundation
import Testing
import Tether
import TetherPostgres
import TetherPostgresTestSupport
import TetherTesting

/// The many-writers and cross-instance cases with real processes (Sources/TetherPostgresWorker),
/// each its own pool and store, against the server.
@Suite(.enabled(if: TestDatabase.enabled, "TETHER_POSTGRES_URL is not set"))
struct ProcessTests {
    static func output(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("tether-postgres-\(name)-\(UUID().uuidString).log").path
    }

    /// The worker executable (Sources/TetherPostgresWorker), built beside the test bundle.
    static var worker: String {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let beside = directory.appendingPathComponent("TetherPostgresWorker").path
        if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        // swift test runs the bundle by its full path inside .build/<triple>/debug.
        return directory.deletingLastPathComponent().appendingPathComponent("TetherPostgresWorker").path
    }

    /// Four processes import overlapping pages of repositories (with owners) and issues (with
    /// labels) at once: every one finishes, one row per identity, every import complete.
    @Test func fourProcessesImportOverlappingPayloads() async throws {
        let namespace = TestDatabase.namespace("processes")
        defer { Task { await TestDatabase.drop([namespace]) } }
        let (writers, pages, size) = (4, 5, 400)
        let children = try (0..<writers).map { w in
            try ChildProcess(Self.worker, ["import", namespace, "\(w)", "\(pages)", "\(size)"], output: Self.output("import-\(w)"))
        }
        for child in children {
            let termination = try await child.wait(timeout: .seconds(300))
            #expect(termination == .exited(0), "worker: \(child.printed)")
            print("ProcessTests: worker \(child.pid): \(child.printed.trimmingCharacters(in: .whitespacesAndNewlines))")
            try? FileManager.default.removeItem(atPath: child.output ?? "")
        }
        var repositories = Set<Int>(), issues = Set<Int>()
        for w in 0..<writers {
            for page in 0..<pages {
                let start = Payloads.start(writer: w, page: page, size: size)
                repositories.formUnion(start..<start + size)
                issues.formUnion(start..<start + size / 2)
            }
        }
        let store = PostgresStore(client: try TestDatabase.client(), namespace: namespace)
        try store.prepare(for: Payloads.schema)
        let counts = try await store.readSQL { sql in
            try ["Repository", "User", "Issue", "Label"].map { entity in
                try sql.rows("SELECT count(*) AS n, count(DISTINCT \"id\") AS d FROM \"\(namespace)\".\"\(entity)\"")[0]
            }
        }
        for (entity, row) in zip(["Repository", "User", "Issue", "Label"], counts) {
            #expect(row["n"] == row["d"], "duplicate identities of \(entity): \(row)")
        }
        #expect(counts.map { $0["n"] } == [.int(Int64(repositories.count)), .int(37), .int(Int64(issues.count)), .int(17)])
        let links = try await store.read { reader -> (owners: Int, labels: Int) in
            let all = try reader.fetch(Query("Repository"))
            let owners = try reader.related("owner", of: all.map(\.id)).values.filter { $0.count == 1 }.count
            let issues = try reader.fetch(Query("Issue"))
            let labels = try reader.related("labels", of: issues.map(\.id)).values.filter { $0.count == 3 }.count
            return (owners, labels)
        }
        #expect(links.owners == repositories.count)
        #expect(links.labels == issues.count)
    }

    /// A process observing the namespace sees each repository this process imports.
    @Test func anotherProcessSeesEachCommit() async throws {
        let namespace = TestDatabase.namespace("processobserve")
        defer { Task { await TestDatabase.drop([namespace]) } }
        let store = PostgresStore(client: try TestDatabase.client(), namespace: namespace)
        let client = try Client.Builder(schema: Payloads.schema).store(store).build()
        try await store.migrate()
        let commits = 20
        let observer = try ChildProcess(Self.worker, ["observe", namespace, "\(commits)"], output: Self.output("observe"))
        #expect(try await observer.waitForLine("listening", timeout: .seconds(60)), "observer: \(observer.printed)")
        for i in 0..<commits {
            _ = try await client.import(.array([.object(["id": .int(Int64(i)), "name": .string("repo \(i)")])]), as: "Repository")
            #expect(try await observer.waitForLine("seen \(i + 1) \"repo \(i)\"", timeout: .seconds(10)), "observer: \(observer.printed)")
        }
        #expect(try await observer.wait(timeout: .seconds(30)) == .exited(0), "observer: \(observer.printed)")
        #expect(observer.printed.contains("observed \(commits)"))
        try? FileManager.default.removeItem(atPath: observer.output ?? "")
    }
}
