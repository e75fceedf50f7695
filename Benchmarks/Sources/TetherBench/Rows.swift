import Foundation
import Synchronization
import Tether
import TetherSQLite

/// What a row measures.
enum Kind: String, CaseIterable, Sendable {
    case parseSerialization = "parse-serialization"
    case parseDecoder = "parse-decoder"
    case parseTether = "parse-tether"
    case parseValidate = "parse-validate"
    case baseline
    case memory
    case sqlite
    case streamMemory = "stream-memory"
    case streamSQLite = "stream-sqlite"
    /// The longest a 1 ms heartbeat task waits while four imports run at once (issue 18.6).
    case stall
    /// An observed sorted query over the stored repositories, then an import that changes 100 of
    /// them: from the import's return (committed) to the difference in hand, by the observer
    /// and by re-fetching the query and diffing it by hand (issue 21).
    case live
    /// The insert pass with one observer of a sorted query attached (issue 21: within 10% of none).
    case observed
    /// The issues workload (issue 23): every relationship kind, shared many-to-many targets.
    case issuesBaseline = "issues-baseline"
    case issuesMemory = "issues-memory"
    case issuesSQLite = "issues-sqlite"
    case issuesStreamMemory = "issues-stream-memory"
    case issuesStreamSQLite = "issues-stream-sqlite"
    /// A page of 30 issues (15 changed) imported 200 times into a store holding N issues.
    case refreshBaseline = "refresh-baseline"
    case refreshMemory = "refresh-memory"
    case refreshSQLite = "refresh-sqlite"
    /// The row changes of the refresh's pages written by prepared statements, no JSON (PageFloor).
    case refreshFloor = "refresh-floor"
    /// The home-timeline workload: Mastodon statuses with boosts, pending reply targets,
    /// many-to-many mentions and tags, and owned objects (profile fields, emojis, cards, polls).
    case timelineBaseline = "timeline-baseline"
    case timelineMemory = "timeline-memory"
    case timelineSQLite = "timeline-sqlite"
    /// Pages of 40 statuses (36 new, 4 changed) imported 100 times into a store holding N statuses.
    case timelineRefreshBaseline = "timeline-refresh-baseline"
    case timelineRefreshMemory = "timeline-refresh-memory"
    case timelineRefreshSQLite = "timeline-refresh-sqlite"
    case timelineRefreshFloor = "timeline-refresh-floor"
    /// The timeline's statuses imported typed (a self-referential class model) against the
    /// string form, in one process, alternating round by round (issue 41: within 10%).
    case timelineTyped = "timeline-typed"
    /// The stored repositories read back as Objects, as typed models and as GRDB records, in
    /// one process, alternating round by round (issue 22).
    case typedFetch = "typed-fetch"
    /// The repositories fetched as plain JSON and as a JSON:API document, in one process,
    /// alternating round by round (issue 39: JSON:API at most 1.3× plain JSON).
    case documentFormats = "jsonapi"
    /// N stored repositories changed and saved: sent at once (an instant transport) against
    /// queued in a local-first client's outbox, in one process, alternating (issue 40).
    case saves
    /// The issues whose repository's owner has a given login, among N issues: Tether's query
    /// through two to-one relationships against the same query in hand-written SQL with joins
    /// (issue 41: at least as fast).
    case pathQuery = "path-query"

    /// The `--only` groups, each a list of kinds (a kind's own name selects it alone too).
    static let groups: [String: [Kind]] = [
        "parse": [.parseSerialization, .parseDecoder, .parseTether, .parseValidate],
        "parser": [.parseTether, .parseValidate],
        "baseline": [.baseline],
        "tether": [.memory, .sqlite],
        "stream": [.streamMemory, .streamSQLite],
        "stall": [.stall],
        "live": [.live, .observed],
        "issues": [.issuesBaseline, .issuesMemory, .issuesSQLite, .issuesStreamMemory, .issuesStreamSQLite],
        "refresh": [.refreshBaseline, .refreshFloor, .refreshMemory, .refreshSQLite],
        "typed": [.typedFetch],
        "formats": [.documentFormats],
        "saves": [.saves],
        "paths": [.pathQuery],
        "timeline": [.timelineBaseline, .timelineMemory, .timelineSQLite, .timelineRefreshBaseline, .timelineRefreshFloor,
                     .timelineRefreshMemory, .timelineRefreshSQLite, .timelineTyped],
    ]

    var group: String {
        switch self {
        case .parseSerialization, .parseDecoder, .parseTether, .parseValidate: "JSON parse only"
        case .baseline: "baseline: JSONDecoder+SQLite"
        case .memory: "Tether: in-memory, Data"
        case .sqlite: "Tether: SQLite, Data"
        case .streamMemory: "Tether: in-memory, file stream"
        case .streamSQLite: "Tether: SQLite, file stream"
        case .stall: "heartbeat stall, 4 imports"
        case .live: "live results, 100 changed"
        case .observed: "Tether: insert, 1 observer"
        case .issuesBaseline: "baseline issues: JSONDecoder+SQLite"
        case .issuesMemory: "Tether issues: in-memory, Data"
        case .issuesSQLite: "Tether issues: SQLite, Data"
        case .issuesStreamMemory: "Tether issues: in-memory, stream"
        case .issuesStreamSQLite: "Tether issues: SQLite, stream"
        case .refreshBaseline: "baseline refresh: JSONDecoder+SQLite"
        case .refreshMemory: "Tether refresh: in-memory"
        case .refreshSQLite: "Tether refresh: SQLite"
        case .refreshFloor: "floor refresh: SQLite rows, no JSON"
        case .typedFetch: "fetch: SQLite, Tether vs GRDB"
        case .documentFormats: "fetch: in-memory, plain vs JSON:API"
        case .saves: "saves: SQLite, online vs queued"
        case .pathQuery: "query via 2 to-ones: SQLite"
        case .timelineBaseline: "baseline timeline: JSONDecoder+SQLite"
        case .timelineMemory: "Tether timeline: in-memory, Data"
        case .timelineSQLite: "Tether timeline: SQLite, Data"
        case .timelineRefreshBaseline: "baseline timeline refresh: JSONDecoder+SQLite"
        case .timelineRefreshMemory: "Tether timeline refresh: in-memory"
        case .timelineRefreshSQLite: "Tether timeline refresh: SQLite"
        case .timelineRefreshFloor: "floor timeline refresh: SQLite rows"
        case .timelineTyped: "timeline: SQLite, typed vs string"
        }
    }

    /// Kinds that import the issues workload rather than the repositories.
    var isIssues: Bool { Self.groups["issues"]!.contains(self) || Self.groups["refresh"]!.contains(self) }
    var isRefresh: Bool { Self.groups["refresh"]!.contains(self) }
    /// Kinds that import the timeline workload.
    var isTimeline: Bool { Self.groups["timeline"]!.contains(self) }
    var isTimelineRefresh: Bool {
        [.timelineRefreshBaseline, .timelineRefreshFloor, .timelineRefreshMemory, .timelineRefreshSQLite].contains(self)
    }

    var isParse: Bool { Self.groups["parse"]!.contains(self) }
    var isTether: Bool { [.memory, .sqlite, .streamMemory, .streamSQLite].contains(self) }
    /// Kinds whose passes run in one child process, alternating round by round.
    var alternatesPasses: Bool { self == .typedFetch || self == .saves || self == .documentFormats || self == .pathQuery || self == .timelineTyped }
    var isStreaming: Bool { [.streamMemory, .streamSQLite, .issuesStreamMemory, .issuesStreamSQLite].contains(self) }

    /// The passes of this kind: parse rows have one, imports have insert, update and unchanged,
    /// and the in-memory-payload imports a delete-missing pass (issue 19) when there is a payload for it.
    func passes(hasUpdate: Bool, hasMissing: Bool = false) -> [String] {
        switch self {
        case .parseSerialization: ["JSONSerialization"]
        case .parseDecoder: ["JSONDecoder→structs"]
        case .parseTether: ["JSONParser (Tether)"]
        case .parseValidate: ["JSONParser.validate"]
        case .stall, .observed: ["memory", "sqlite"]
        case .refreshBaseline, .refreshFloor, .refreshMemory, .refreshSQLite: ["30-issue page"]
        case .timelineRefreshBaseline, .timelineRefreshFloor, .timelineRefreshMemory, .timelineRefreshSQLite: ["40-status page"]
        case .live: ["observer memory", "typed observer memory", "re-fetch+diff memory", "observer sqlite", "typed observer sqlite",
                     "re-fetch+diff sqlite"]
        case .typedFetch: TypedFetch.passes
        case .documentFormats: DocumentFormatFetch.passes
        case .saves: Saves.passes
        case .pathQuery: PathQuery.passes
        case .timelineTyped: TimelineTyped.passes
        default:
            (hasUpdate ? ["insert", "update", "unchanged"] : ["insert", "unchanged"])
                + (hasMissing && !isStreaming ? ["delete-missing"] : [])
        }
    }
}

/// One measured row, as the parent asks a child process to run it.
struct RowRequest: Codable, Sendable {
    var kind: String
    var pass: String
    var size: Int
    /// The first payload (the insert pass), and the changed one (the update pass), as files.
    var first: String
    var update: String?
    /// The first payload without every tenth repository (the delete-missing pass).
    var missing: String?
    var runs: Int
    var batchSize: Int
    /// The workload's seed (the issues rows regenerate single issues and pages from it).
    var seed: UInt64 = 42
}

/// What a child reports back: one duration per run and the peak RSS over the measured runs.
struct RowResult: Codable, Sendable {
    var seconds: [Double]
    var peakBytes: Int?
    /// False when the kernel would not reset the high-water mark: the peak then includes the setup.
    var peakIsPerPass: Bool
    /// For a kind whose passes alternate in one child: each pass's runs and peak, in pass order.
    var passes: [PassResult]? = nil

    struct PassResult: Codable, Sendable {
        var pass: String
        var seconds: [Double]
        var peakBytes: Int?
    }
}

/// Runs each row in a fresh child process (this same binary with `--child`), so that the peak RSS
/// of a row is its own and not the high-water mark of everything the process did before.
enum ChildProcess {
    static let resultPrefix = "TETHER-BENCH-RESULT "

    static var executable: URL {
        #if os(Linux)
        if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            return URL(fileURLWithPath: path)
        }
        #endif
        if let url = Bundle.main.executableURL { return url }
        return URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
    }

    /// Runs `request` in a child and returns its result; throws with the child's stderr on failure.
    static func run(_ request: RowRequest) throws -> RowResult {
        let process = Process()
        process.executableURL = executable
        let encoded = String(decoding: try JSONEncoder().encode(request), as: UTF8.self)
        process.arguments = ["--child", encoded]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        // Read both pipes to the end before waiting, so a chatty child cannot block on a full pipe.
        let group = DispatchGroup()
        let errorData = Mutex(Data())
        DispatchQueue.global().async(group: group) {
            let data = errors.fileHandleForReading.readDataToEndOfFile()
            errorData.withLock { $0 = data }
        }
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        let stderr = errorData.withLock { String(decoding: $0, as: UTF8.self) }
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            let how = process.terminationReason == .exit
                ? "exited with status \(process.terminationStatus)" : "was killed by signal \(process.terminationStatus)"
            throw BenchmarkError("the child process \(how)\(stderr.isEmpty ? "" : ": \(stderr)")")
        }
        let text = String(decoding: outputData, as: UTF8.self)
        guard let line = text.split(separator: "\n").last(where: { $0.hasPrefix(resultPrefix) }) else {
            throw BenchmarkError("the child process printed no result\(stderr.isEmpty ? "" : ": \(stderr)")")
        }
        return try JSONDecoder().decode(RowResult.self, from: Data(line.dropFirst(resultPrefix.count).utf8))
    }
}

/// The child side: runs one row and prints its result.
struct RowWorker {
    let request: RowRequest
    let kind: Kind

    init(_ request: RowRequest) throws {
        guard let kind = Kind(rawValue: request.kind) else { throw BenchmarkError("unknown kind \(request.kind)") }
        self.request = request
        self.kind = kind
    }

    func run() async throws -> RowResult {
        let resettable = Memory.resetPeak()
        if kind == .typedFetch { return try await runTypedFetch(peakIsPerPass: resettable) }
        if kind == .documentFormats { return try await runDocumentFormats(peakIsPerPass: resettable) }
        if kind == .saves { return try await runSaves(peakIsPerPass: resettable) }
        if kind == .pathQuery { return try await runPathQuery(peakIsPerPass: resettable) }
        if kind == .timelineTyped { return try await runTimelineTyped(peakIsPerPass: resettable) }
        var row = Measurement(size: request.size, group: kind.group, pass: request.pass, objects: request.size, bytes: 0)
        for run in 0..<request.runs {
            if kind.isParse {
                try runParse(&row)
            } else if kind == .stall {
                try await runStall(&row)
            } else if kind == .live {
                try await runLive(&row)
            } else if kind == .observed {
                try await runObserved(&row)
            } else if kind == .timelineBaseline {
                try runTimelineBaseline(&row)
            } else if kind.isTimelineRefresh {
                try await runTimelineRefresh(&row, verify: run == 0)
            } else if kind.isTimeline {
                try await runTimeline(&row, verify: run == 0)
            } else if kind.isRefresh {
                try await runRefresh(&row)
            } else if kind == .issuesBaseline {
                try runIssuesBaseline(&row)
            } else if kind.isIssues {
                try await runIssues(&row, verify: run == 0)
            } else if kind == .baseline {
                try runBaseline(&row)
            } else {
                try await runTether(&row, verify: run == 0)
            }
        }
        return RowResult(seconds: row.durations.map(\.seconds), peakBytes: row.peakBytes, peakIsPerPass: resettable)
    }

    func load(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }

    /// The payload the measured pass imports, and the one imported before it (not measured).
    var measuredFile: String {
        switch request.pass {
        case "update": request.update ?? request.first
        case "unchanged": request.update ?? request.first
        case "delete-missing": request.missing ?? request.first
        default: request.first
        }
    }

    var setupFile: String? {
        switch request.pass {
        case "update": request.first
        case "unchanged": request.update ?? request.first
        case "delete-missing": request.first
        default: nil
        }
    }

    /// The repositories stored after the measured pass.
    private var expectedStored: Int {
        request.pass == "delete-missing" ? request.size - request.size / 10 : request.size
    }

    private func runParse(_ row: inout Measurement) throws {
        let data = try load(request.first)
        let n = request.size
        switch kind {
        case .parseSerialization:
            let count = try row.time { (try JSONSerialization.jsonObject(with: data) as? [Any])?.count }
            guard count == n else { throw BenchmarkError("JSONSerialization read the wrong count") }
        case .parseDecoder:
            let count = try row.time { try Baseline.decoder().decode([Baseline.Repository].self, from: data).count }
            guard count == n else { throw BenchmarkError("JSONDecoder read the wrong count") }
        case .parseValidate:
            // The scan an import makes of a payload in memory: checked onto a tape a batch at a
            // time, no tree.
            try row.time { try JSONParser.validate(data) }
        default:
            let count = try row.time { try JSONParser.parse(data).arrayValue?.count }
            guard count == n else { throw BenchmarkError("JSONParser read the wrong count") }
        }
    }

    /// Four imports of the payload at once (into one store: one writes while three wait), and a
    /// task that sleeps 1 ms at a time on the cooperative pool; the row's time is the longest
    /// the heartbeat overslept, the stall other tasks of an app would see.
    private func runStall(_ row: inout Measurement) async throws {
        let directory = try TemporaryDirectory()
        let data = try load(request.first)
        let store: any Store = request.pass == "memory" ? InMemoryStore() : try SQLiteStore(path: directory.file("stall.sqlite"))
        let client = try TetherImport.client(store: store)
        let clock = ContinuousClock()
        let worst = Mutex(Duration.zero)
        let running = Mutex(true)
        let heartbeat = Task {
            var last = clock.now
            while running.withLock({ $0 }) {
                try await Task.sleep(for: .milliseconds(1))
                let now = clock.now
                worst.withLock { $0 = max($0, now - last - .milliseconds(1)) }
                last = now
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 { group.addTask { _ = try await TetherImport.importRepositories(data, into: client) } }
            try await group.waitForAll()
        }
        running.withLock { $0 = false }
        try await heartbeat.value
        row.durations.append(worst.withLock { $0 })
        let stored = try await client.count(Query("Repository"))
        if stored != request.size { throw BenchmarkError("stored \(stored) repositories, expected \(request.size)") }
    }

    /// The store of a live-results row, holding the first payload.
    private func liveClient(_ directory: TemporaryDirectory, sqlite: Bool) async throws -> Client {
        let store: any Store = sqlite ? try SQLiteStore(path: directory.file("live.sqlite")) : InMemoryStore()
        let client = try TetherImport.client(store: store)
        _ = try await TetherImport.importRepositories(load(request.first), into: client)
        await (store as? SQLiteStore)?.checkpoint()
        return client
    }

    /// 100 stored repositories (spread over the list) with new watcher counts: each run changes
    /// their place in the sort.
    private func changes(_ stored: [Object], run: Int) -> Data {
        let step = max(1, stored.count / 100)
        let rows = stride(from: 0, to: stored.count, by: step).prefix(100).map { i -> String in
            let id = stored[i]["id", as: Int64.self] ?? 0
            return #"{"id": \#(id), "watchers_count": \#((Int(id) * 7919 + run * 104_729) % 100_000)}"#
        }
        return Data(("[" + rows.joined(separator: ",") + "]").utf8)
    }

    private func runLive(_ row: inout Measurement) async throws {
        let directory = try TemporaryDirectory()
        let sqlite = request.pass.hasSuffix("sqlite")
        let client = try await liveClient(directory, sqlite: sqlite)
        let query = Query("Repository", sortedBy: [.descending("watchersCount")])
        let clock = ContinuousClock()
        if request.pass.hasPrefix("typed observer") {
            // The same observation, typed (issue 41: within 10% of the string form): each state's
            // models are read for the query's objects (depth 0: the attributes).
            var results = try client.observe(TypedFetch.Repository.self, sortedBy: [.descending(\.watchersCount)], depth: 0)
                .makeAsyncIterator()
            guard let first = try await results.next() else { throw BenchmarkError("no first state") }
            let stored = first.snapshot.objects
            for run in 0..<3 {
                _ = try await TetherImport.importRepositories(changes(stored, run: run), into: client)
                let start = clock.now
                guard let next = try await results.next() else { throw BenchmarkError("the observation ended") }
                let took = clock.now - start
                if run == 2 { row.durations.append(took) }
                if next.difference.isEmpty || next.models.count != request.size { throw BenchmarkError("an empty difference or a wrong count") }
            }
        } else if request.pass.hasPrefix("observer") {
            var results = client.observe(query).makeAsyncIterator()
            guard let first = try await results.next() else { throw BenchmarkError("no first snapshot") }
            let stored = first.objects
            for run in 0..<3 {
                _ = try await TetherImport.importRepositories(changes(stored, run: run), into: client)
                let start = clock.now
                guard let next = try await results.next() else { throw BenchmarkError("the observation ended") }
                let took = clock.now - start
                if run == 2 { row.durations.append(took) }
                if next.difference.isEmpty || next.count != request.size { throw BenchmarkError("an empty difference or a wrong count") }
            }
        } else {
            var previous = try await client.fetch(query)
            let stored = previous
            for run in 0..<3 {
                _ = try await TetherImport.importRepositories(changes(stored, run: run), into: client)
                let start = clock.now
                // What an app does without observation: fetch the query again and diff by hand.
                let next = try await client.fetch(query)
                var oldPosition: [ObjectID: Int] = [:]
                for (i, object) in previous.enumerated() { oldPosition[object.id] = i }
                var moved = 0, updated = 0, inserted = 0
                var newIDs = Set<ObjectID>()
                for (i, object) in next.enumerated() {
                    newIDs.insert(object.id)
                    guard let old = oldPosition[object.id] else { inserted += 1; continue }
                    if old != i { moved += 1 } else if previous[old].values != object.values { updated += 1 }
                }
                let deleted = previous.filter { !newIDs.contains($0.id) }.count
                let took = clock.now - start
                if run == 2 { row.durations.append(took) }
                if moved + updated + inserted + deleted == 0 { throw BenchmarkError("no change found by hand") }
                previous = next
            }
        }
    }

    /// The insert pass with an observer of a sorted window attached, consuming its snapshots.
    private func runObserved(_ row: inout Measurement) async throws {
        let directory = try TemporaryDirectory()
        let store: any Store = request.pass == "memory" ? InMemoryStore() : try SQLiteStore(path: directory.file("observed.sqlite"))
        let client = try TetherImport.client(store: store)
        let observation = client.observe(Query("Repository", sortedBy: [.descending("watchersCount")], limit: 50))
        let consumer = Task {
            var count = 0
            for try await _ in observation { count += 1 }
            return count
        }
        try await Task.sleep(for: .milliseconds(20))  // subscribed
        let data = try load(request.first)
        let result = try await row.time { try await TetherImport.importRepositories(data, into: client) }
        consumer.cancel()
        _ = try? await consumer.value
        if result.inserted.count < request.size { throw BenchmarkError("inserted \(result.inserted.count), expected \(request.size)") }
    }

    /// Every pass of the typed-fetch kind over one pair of databases: round r runs the passes in
    /// order when r is even and backwards when odd, so that no pass always follows the same one.
    private func runTypedFetch(peakIsPerPass: Bool) async throws -> RowResult {
        let n = request.size
        let databases = try await TypedFetch.prepare(payload: load(request.first), count: n)
        try await TypedFetch.verify(databases, count: n)
        var rows = TypedFetch.passes.map { Measurement(size: n, group: kind.group, pass: $0, objects: n, bytes: 0) }
        for round in 0..<request.runs {
            let order = round % 2 == 0 ? Array(rows.indices) : rows.indices.reversed()
            for index in order { try await TypedFetch.run(rows[index].pass, databases, count: n, into: &rows[index]) }
        }
        return RowResult(
            seconds: [], peakBytes: nil, peakIsPerPass: peakIsPerPass,
            passes: rows.map { RowResult.PassResult(pass: $0.pass, seconds: $0.durations.map(\.seconds), peakBytes: $0.peakBytes) })
    }

    /// The passes of the document-format kind: round r runs them in order when r is even and
    /// with plain and JSON:API swapped when odd; an insert pass always before its unchanged one.
    private func runDocumentFormats(peakIsPerPass: Bool) async throws -> RowResult {
        let n = request.size
        let bodies = try DocumentFormatFetch.bodies(plain: load(request.first))
        var rows = DocumentFormatFetch.passes.map { Measurement(size: n, group: kind.group, pass: $0, objects: n, bytes: 0) }
        var clients: [String: Client] = [:]
        for round in 0..<request.runs {
            let order = round % 2 == 0 ? [0, 1, 2, 3] : [1, 0, 3, 2]
            for index in order { try await DocumentFormatFetch.run(rows[index].pass, &clients, bodies, count: n, into: &rows[index]) }
        }
        return RowResult(
            seconds: [], peakBytes: nil, peakIsPerPass: peakIsPerPass,
            passes: rows.map { RowResult.PassResult(pass: $0.pass, seconds: $0.durations.map(\.seconds), peakBytes: $0.peakBytes) })
    }

    /// Every pass of the path-query kind on one store, alternating as the typed-fetch passes do.
    private func runPathQuery(peakIsPerPass: Bool) async throws -> RowResult {
        let n = request.size
        let databases = try await PathQuery.prepare(count: n)
        try await PathQuery.verify(databases)
        var rows = PathQuery.passes.map { Measurement(size: n, group: kind.group, pass: $0, objects: databases.expected, bytes: 0) }
        for round in 0..<request.runs {
            let order = round % 2 == 0 ? Array(rows.indices) : rows.indices.reversed()
            for index in order { try await PathQuery.run(rows[index].pass, databases, into: &rows[index]) }
        }
        return RowResult(
            seconds: [], peakBytes: nil, peakIsPerPass: peakIsPerPass,
            passes: rows.map { RowResult.PassResult(pass: $0.pass, seconds: $0.durations.map(\.seconds), peakBytes: $0.peakBytes) })
    }

    /// Every pass of the saves kind on one store, alternating as the typed-fetch passes do.
    private func runSaves(peakIsPerPass: Bool) async throws -> RowResult {
        let n = request.size
        let clients = try await Saves.prepare(payload: load(request.first), count: n)
        var rows = Saves.passes.map { Measurement(size: n, group: kind.group, pass: $0, objects: n, bytes: 0) }
        for round in 0..<request.runs {
            let order = round % 2 == 0 ? Array(rows.indices) : rows.indices.reversed()
            for index in order { try await Saves.run(rows[index].pass, round: round, clients, into: &rows[index]) }
        }
        return RowResult(
            seconds: [], peakBytes: nil, peakIsPerPass: peakIsPerPass,
            passes: rows.map { RowResult.PassResult(pass: $0.pass, seconds: $0.durations.map(\.seconds), peakBytes: $0.peakBytes) })
    }

    private func runBaseline(_ row: inout Measurement) throws {
        let directory = try TemporaryDirectory()
        let database = try Baseline.createDatabase(at: directory.file("baseline.sqlite"))
        if let setup = setupFile { try Baseline.importRepositories(load(setup), into: database) }
        let data = try load(measuredFile)
        let deleteMissing = request.pass == "delete-missing"
        try row.time { try Baseline.importRepositories(data, into: database, deletingMissing: deleteMissing) }
        let stored = try database.scalar("SELECT count(*) FROM repositories")
        if stored != expectedStored { throw BenchmarkError("baseline stored \(stored) repositories, expected \(expectedStored)") }
    }

    private func runTether(_ row: inout Measurement, verify: Bool) async throws {
        let n = request.size
        let directory = try TemporaryDirectory()
        let store: any Store = kind == .memory || kind == .streamMemory
            ? InMemoryStore() : try SQLiteStore(path: directory.file("tether.sqlite"))
        let client = try TetherImport.client(store: store)
        let batchSize = request.batchSize
        func importFile(_ path: String) async throws -> ImportResult {
            if kind.isStreaming {
                return try await TetherImport.importRepositories(file: path, batchSize: batchSize, into: client)
            }
            // The Data rows hold the payload in memory first (not timed), as after a download.
            return try await TetherImport.importRepositories(load(path), into: client)
        }
        if let setup = setupFile {
            _ = try await importFile(setup)
            // The setup's checkpoint (which SQLiteStore runs after a large write, in the
            // background) finishes before the clock starts, as the baseline's does inside its
            // setup's COMMIT. The timed import's own checkpoint runs after it returns, as for a user.
            await (store as? SQLiteStore)?.checkpoint()
        }
        let result: ImportResult
        if kind.isStreaming {
            let path = measuredFile
            result = try await row.time {
                try await TetherImport.importRepositories(file: path, batchSize: batchSize, into: client)
            }
        } else if request.pass == "delete-missing" {
            let data = try load(measuredFile)
            result = try await row.time { try await TetherImport.importRepositories(data, into: client, deletingMissing: true) }
            if result.deleted.count != n / 10 { throw BenchmarkError("Tether deleted \(result.deleted.count) repositories, expected \(n / 10)") }
        } else {
            let data = try load(measuredFile)
            result = try await row.time { try await TetherImport.importRepositories(data, into: client) }
        }
        switch request.pass {
        case "insert":
            if result.objects.count != n || result.inserted.count < n {
                throw BenchmarkError("Tether imported \(result.objects.count) repositories (inserted \(result.inserted.count)), expected \(n)")
            }
        case "delete-missing":
            if !result.inserted.isEmpty { throw BenchmarkError("a delete-missing pass inserted \(result.inserted.count) objects") }
        case "update":
            if request.update != nil, result.updated.count < n {
                throw BenchmarkError("Tether updated \(result.updated.count) objects, expected at least \(n)")
            }
        default:
            if !result.updated.isEmpty || !result.inserted.isEmpty {
                throw BenchmarkError("an unchanged re-import changed \(result.updated.count) and inserted \(result.inserted.count) objects")
            }
        }
        let stored = try await client.count(Query("Repository"))
        if stored != expectedStored { throw BenchmarkError("Tether stored \(stored) repositories, expected \(expectedStored)") }
        if verify { try await checkLinks(client, expected: expectedStored, both: n <= 10_000) }
    }

    /// The owners' inverse to-many lists hold every repository exactly once; with `both`, each
    /// repository's to-one owner is the user that lists it too.
    private func checkLinks(_ client: Client, expected n: Int, both: Bool) async throws {
        var seen = Set<ObjectID>()
        for user in try await client.fetch(Query("User")) {
            for repository in try await client.related("repositories", of: user.id) {
                guard seen.insert(repository.id).inserted else {
                    throw BenchmarkError("\(repository.id) is listed under two owners")
                }
                if both, try await client.related("owner", of: repository.id).map(\.id) != [user.id] {
                    throw BenchmarkError("\(repository.id) is listed under \(user.id) but its owner differs")
                }
            }
        }
        if seen.count != n { throw BenchmarkError("owners list \(seen.count) repositories, expected \(n)") }
    }
}

extension Duration {
    var seconds: Double {
        let c = components
        return Double(c.seconds) + Double(c.attoseconds) / 1e18
    }
}
