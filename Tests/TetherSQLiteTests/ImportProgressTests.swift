import Foundation
import Synchronization
import Testing
import Tether
import TetherSQLite
import TetherTesting

/// Progress reports and cancellation of imports and fetches, on both stores.
@Suite struct ImportProgressTests {
    static let schema = try! Schema {
        Entity("Repository") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Attribute("stars", .int64)
        }
    }

    static func client(_ kind: String, _ folder: TemporaryDirectory, transport: (any Transport)? = nil) throws -> Client {
        let store: any Store = kind == "memory" ? InMemoryStore() : try SQLiteStore(path: folder.path())
        var builder = Client.Builder(schema: schema).store(store)
        if let transport { builder = builder.transport(transport).baseURL(URL(string: "https://api.example")!) }
        return try builder.build()
    }

    static func payload(_ count: Int, from start: Int = 0) -> Data {
        var text = "["
        for i in start..<(start + count) {
            if i > start { text += ",\n" }
            text += #"{"id": \#(i), "name": "repository \#(i)", "stars": \#(i % 1000)}"#
        }
        return Data((text + "]").utf8)
    }

    @Test(arguments: ["memory", "sqlite"])
    func fileImportReportsObjectsAndBytes(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let client = try Self.client(kind, folder)
        let file = folder.url.appendingPathComponent("repositories.json")
        let data = Self.payload(5_000)
        try data.write(to: file)
        let reports = Mutex<[ImportProgress]>([])
        let progress = ProgressReporter { step in reports.withLock { $0.append(step) } }
        let collected = Task { await progress.updates.reduce(into: 0) { count, _ in count += 1 } }
        try await client.import(contentsOf: file, as: "Repository", options: ImportOptions(batchSize: 1_000, progress: progress))

        let steps = reports.withLock { $0 }
        let importing = steps.filter { $0.phase == .importing }
        #expect(importing.count >= 5, "one report per batch: \(steps)")
        #expect(importing.map(\.objects) == importing.map(\.objects).sorted())
        #expect(importing.map(\.bytes) == importing.map(\.bytes).sorted())
        #expect(importing.last?.objects == 5_000)
        #expect(importing.allSatisfy { $0.totalBytes == data.count })
        #expect((importing.last?.fractionCompleted ?? 0) > 0.99)
        #expect(steps.last?.phase == .finished)
        #expect(steps.last?.fractionCompleted == 1)
        #expect(await collected.value >= 1, "the updates stream ends after .finished")

        // Bytes in memory too.
        let again = ProgressReporter()
        try await client.import(Self.payload(3_000, from: 5_000), as: "Repository", options: ImportOptions(batchSize: 1_000, progress: again))
        #expect(again.latest?.phase == .finished)
        #expect(again.latest?.objects == 3_000)
        #expect(try await client.count(Query("Repository")) == 8_000)
    }

    @Test func fetchReportsPages() async throws {
        let folder = try TemporaryDirectory()
        let stub = StubTransport()
        for page in 1...3 {
            let next: JSON = page < 3 ? .string("https://api.example/repositories?page=\(page + 1)") : .null
            let results = JSON.array((0..<10).map { i in .object(["id": .int(Int64(page * 100 + i)), "name": .string("r")]) })
            stub.on(.get, "/repositories?page=\(page)", json: .object(["count": .int(30), "next": next, "results": results]))
        }
        let client = try Self.client("memory", folder, transport: stub)
        let reports = Mutex<[ImportProgress]>([])
        let progress = ProgressReporter { step in reports.withLock { $0.append(step) } }
        let fetched = try await client.fetchObjects("Repository", from: "/repositories?page=1", options: ImportOptions(progress: progress))
        #expect(fetched.objects.count == 30)
        let steps = reports.withLock { $0 }
        #expect(steps.filter { $0.phase == .fetching }.map(\.pages) == [1, 2, 3])
        #expect(steps.contains { $0.phase == .importing && $0.objects == 30 })
        #expect(steps.last?.phase == .finished)
    }

    /// A cancelled 100,000-object import stops at a batch boundary and writes nothing: the
    /// store holds exactly what it held before.
    @Test(arguments: ["memory", "sqlite"])
    func cancelledLargeImportLeavesTheStoreUntouched(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let client = try Self.client(kind, folder)
        try await client.import(Self.payload(1_000), as: "Repository")
        let before = try await client.fetch(Query("Repository", sortedBy: [.ascending("id")]))
        let file = folder.url.appendingPathComponent("large.json")
        // The first 500 update stored objects, the rest are new.
        try Self.payload(100_000, from: 500).write(to: file)

        // Reports come from the importing task: the first one cancels it (as a Cancel button
        // would, without depending on when another task gets to run).
        let progress = ProgressReporter { step in
            if step.phase == .importing { withUnsafeCurrentTask { $0?.cancel() } }
        }
        let importing = Task {
            try await client.import(contentsOf: file, as: "Repository", options: ImportOptions(batchSize: 5_000, progress: progress))
        }
        let outcome = await importing.result
        #expect(throws: CancellationError.self) { try outcome.get() }
        #expect(progress.latest?.phase == .finished)
        #expect((progress.latest?.objects ?? 0) < 100_000, "stopped before the end: \(String(describing: progress.latest))")
        #expect(try await client.fetch(Query("Repository", sortedBy: [.ascending("id")])) == before)
    }
}
