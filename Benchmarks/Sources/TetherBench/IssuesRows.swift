import Foundation
import Tether
import TetherSQLite

/// The issues workload's rows (issue 23): insert, update and unchanged passes into both stores and
/// the hand-written baseline, and the page refresh an app repeats all day.
extension RowWorker {
    func runIssuesBaseline(_ row: inout Measurement) throws {
        let directory = try TemporaryDirectory()
        let database = try IssuesBaseline.createDatabase(at: directory.file("baseline.sqlite"))
        if let setup = setupFile { try IssuesBaseline.importIssues(load(setup), into: database) }
        let data = try load(measuredFile)
        try row.time { try IssuesBaseline.importIssues(data, into: database) }
        let stored = try database.scalar("SELECT count(*) FROM issues")
        if stored != request.size { throw BenchmarkError("baseline stored \(stored) issues, expected \(request.size)") }
    }

    func runIssues(_ row: inout Measurement, verify: Bool) async throws {
        let n = request.size
        let directory = try TemporaryDirectory()
        let store: any Store = kind == .issuesMemory || kind == .issuesStreamMemory
            ? InMemoryStore() : try SQLiteStore(path: directory.file("issues.sqlite"))
        let client = try IssuesImport.client(store: store)
        let batchSize = request.batchSize
        let streaming = kind.isStreaming
        func importFile(_ path: String) async throws -> ImportResult {
            streaming
                ? try await IssuesImport.importIssues(file: path, batchSize: batchSize, into: client)
                : try await IssuesImport.importIssues(load(path), into: client)
        }
        if let setup = setupFile {
            _ = try await importFile(setup)
            await (store as? SQLiteStore)?.checkpoint()
        }
        let result: ImportResult
        if streaming {
            let path = measuredFile
            result = try await row.time { try await IssuesImport.importIssues(file: path, batchSize: batchSize, into: client) }
        } else {
            let data = try load(measuredFile)
            result = try await row.time { try await IssuesImport.importIssues(data, into: client) }
        }
        let issues = { (list: ObjectIDList) in list.reduce(0) { $0 + ($1.entity == "Issue" ? 1 : 0) } }
        switch request.pass {
        case "insert":
            if issues(result.inserted) != n { throw BenchmarkError("Tether inserted \(issues(result.inserted)) issues, expected \(n)") }
        case "update":
            if issues(result.updated) != n { throw BenchmarkError("Tether updated \(issues(result.updated)) issues, expected \(n)") }
        default:
            if !result.updated.isEmpty || !result.inserted.isEmpty {
                throw BenchmarkError("an unchanged re-import changed \(result.updated.count) and inserted \(result.inserted.count) objects")
            }
        }
        let stored = try await client.count(Query("Issue"))
        if stored != n { throw BenchmarkError("Tether stored \(stored) issues, expected \(n)") }
        if verify { try await checkIssueLinks(client, sample: min(n, 500)) }
    }

    /// The links of a sample of issues are those of the payload the pass imported, in order, and
    /// each label lists each of its issues once.
    private func checkIssueLinks(_ client: Client, sample: Int) async throws {
        let version = request.pass == "insert" ? 1 : 2
        let step = max(1, request.size / sample)
        for i in stride(from: 0, to: request.size, by: step).prefix(sample) {
            let json = try JSONParser.parse(IssuesWorkload.page([i], seed: request.seed, version: { _ in version }))[0]!
            guard let issue = try await client.object("Issue", identity: .int(Int64(IssuesWorkload.issueID(i)))) else {
                throw BenchmarkError("issue \(i) is not stored")
            }
            func ids(_ relationship: String) async throws -> [Int64] {
                try await client.related(relationship, of: issue.id).map { $0["id", as: Int64.self] ?? -1 }
            }
            let labels = json["labels"]?.arrayValue?.compactMap { $0["id"]?.int64Value } ?? []
            let assignees = json["assignees"]?.arrayValue?.compactMap { $0["id"]?.int64Value } ?? []
            if try await ids("labels") != labels { throw BenchmarkError("issue \(i): labels \(try await ids("labels")), expected \(labels)") }
            if try await Set(ids("assignees")) != Set(assignees) { throw BenchmarkError("issue \(i): wrong assignees") }
            if try await ids("user") != [json["user"]?["id"]?.int64Value ?? -1] { throw BenchmarkError("issue \(i): wrong user") }
            let milestone = json["milestone"]?["id"]?.int64Value
            if try await ids("milestone") != (milestone.map { [$0] } ?? []) { throw BenchmarkError("issue \(i): wrong milestone") }
        }
        for label in try await client.fetch(Query("Label")) {
            let issues = try await client.related("issues", of: label.id)
            if Set(issues.map(\.id)).count != issues.count { throw BenchmarkError("\(label.id) lists an issue twice") }
        }
    }

    /// A store holding N issues, then 200 pages of 30 consecutive issues, every other one changed
    /// (title, counters, labels, assignees), each page one import; one duration per page.
    func runRefresh(_ row: inout Measurement) async throws {
        let directory = try TemporaryDirectory()
        let n = request.size
        let seed = request.seed
        var stored = [Int](repeating: 1, count: n)
        var pages: [(data: Data, changed: Int)] = []
        for p in 0..<IssuesRefresh.pages {
            let indices = (0..<IssuesRefresh.pageSize).map { (p * IssuesRefresh.pageSize + $0) % n }
            var changed = 0
            for (k, i) in indices.enumerated() where k % 2 == 0 {
                stored[i] += 1
                changed += 1
            }
            let versions = stored
            pages.append((IssuesWorkload.page(indices, seed: seed, version: { versions[$0] }), changed))
        }
        let clock = ContinuousClock()
        if kind == .refreshFloor {
            try await runPageFloor(&row, first: load(request.first), pages: pages.map(\.data), client: { try IssuesImport.client(store: $0) },
                                   importPage: { _ = try await IssuesImport.importIssues($0, into: $1) })
            return
        }
        if kind == .refreshBaseline {
            let database = try IssuesBaseline.createDatabase(at: directory.file("baseline.sqlite"))
            try IssuesBaseline.importIssues(load(request.first), into: database)
            let statements = try IssuesBaseline.Statements(database)
            for page in pages {
                let start = clock.now
                try IssuesBaseline.importIssues(page.data, into: database, statements: statements)
                row.durations.append(clock.now - start)
            }
            return
        }
        let store: any Store = kind == .refreshMemory ? InMemoryStore() : try SQLiteStore(path: directory.file("refresh.sqlite"))
        let client = try IssuesImport.client(store: store)
        _ = try await IssuesImport.importIssues(load(request.first), into: client)
        await (store as? SQLiteStore)?.checkpoint()
        for page in pages {
            let start = clock.now
            let result = try await IssuesImport.importIssues(page.data, into: client)
            row.durations.append(clock.now - start)
            let updated = result.updated.reduce(0) { $0 + ($1.entity == "Issue" ? 1 : 0) }
            if updated != page.changed { throw BenchmarkError("a page updated \(updated) issues, expected \(page.changed)") }
        }
    }

}

/// The page refresh's shape.
enum IssuesRefresh {
    static let pages = 200
    static let pageSize = 30
}
