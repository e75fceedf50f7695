// TetherPostgresExample: the recorded GitHub issues mirrored into PostgreSQL by two processes at
// once, then read back: what two instances of a service behind a load balancer do when both
// mirror the same API into one database.
//
//     bash .ci/postgres.sh start && eval "$(bash .ci/postgres.sh env)"    # a throwaway server
//     cd Stores/Postgres && swift run TetherPostgresExample
//
// The recording is octokit/fixtures' paginate-issues scenario (Tests/Fixtures of the repository:
// 13 issues of one user in 5 pages of GitHub's API, with their Link headers), replayed without a
// network. This process starts two copies of itself ("mirrors"), each with its own pool and
// PostgresStore on one namespace; once both are ready they are told to go at the same moment, and
// each GETs every page and imports them in one transaction. This process listens meanwhile as a
// third instance, then reads everything back, and exits 1 unless every identity is stored once.
//
// Options: --database URL (default TETHER_POSTGRES_URL, else postgres://tether@127.0.0.1:55432/tether),
// --namespace NAME (default a new one, dropped at the end), --keep (keep the namespace),
// --recording PATH (another nock recording of GitHub issues), --help.

import Foundation
import Logging
import PostgresNIO
import Synchronization
import Tether
import TetherPostgres
import TetherRails
import TetherTesting

/// The example's fixed parts.
enum Example {
    static let usage = """
        usage: swift run TetherPostgresExample [--database URL] [--namespace NAME] [--keep] [--recording PATH]
          Mirrors the recorded GitHub issues into PostgreSQL from two processes at once, reads them back,
          and checks that every issue and user is stored once.
          --database URL     the server (default: TETHER_POSTGRES_URL, else postgres://tether@127.0.0.1:55432/tether)
          --namespace NAME   the PostgreSQL schema to mirror into (default: a new one, dropped at the end)
          --keep             keep the namespace at the end
          --recording PATH   a nock recording of GET .../issues pages (default: octokit/fixtures paginate-issues)
        """

    /// The models of the GitHub issues, with Rails naming (`created_at` <-> `createdAt`, `id` <->
    /// `identifier`, `html_url` <-> `htmlURL`).
    static let schema = try! Schema {
        Entity("User", identity: "identifier") {
            Attribute("identifier", .int64)
            Attribute("login", .string)
            Attribute("avatarURL", .url)
            Relationship.toMany("issues", "Issue", inverse: "user")
        }
        Entity("Issue", identity: "number") {
            Attribute("number", .int64)
            Attribute("title", .string)
            Attribute("state", .string)
            Attribute("comments", .int32)
            Attribute("createdAt", .date)
            Attribute("htmlURL", .url)
            Relationship.toOne("user", "User", inverse: "issues")
        }
    }
    /// Where the recording's first page is (the later ones follow its Link headers).
    static let issuesPath: URLTemplate = "/repos/octokit-fixture-org/paginate-issues/issues?per_page=3"
}

struct Options {
    var database = ProcessInfo.processInfo.environment["TETHER_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
        ?? "postgres://tether@127.0.0.1:55432/tether"
    var namespace: String?
    var keep = false
    /// The repository's Tests/Fixtures, found from this file's place in the checkout.
    var recording = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../../../Tests/Fixtures/octokit-fixtures/api.github.com/paginate-issues/normalized-fixture.json")
        .standardizedFileURL.path
    /// The child processes: their name, and the file whose existence says go.
    var mirror: String?
    var go: String?

    init(_ arguments: [String]) throws {
        var index = 0
        func value() throws -> String {
            index += 1
            guard index < arguments.count else { throw Failure("\(arguments[index - 1]) needs a value\n\(Example.usage)", status: 2) }
            return arguments[index]
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--help", "-h": throw Failure(Example.usage, status: 0)
            case "--database": database = try value()
            case "--namespace": namespace = try value()
            case "--keep": keep = true
            case "--recording": recording = try value()
            case "--mirror": mirror = try value()
            case "--go": go = try value()
            default: throw Failure("unknown option \(arguments[index])\n\(Example.usage)", status: 2)
            }
            index += 1
        }
    }
}

struct Failure: Error, CustomStringConvertible {
    var description: String
    var status: Int32 = 1
    init(_ description: String, status: Int32 = 1) {
        self.description = description
        self.status = status
    }
}

/// Prints a line at once (a child's standard output is a file, buffered otherwise).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// The pool's settings for `postgres://user[:password]@host[:port]/database` (no TLS: loopback).
func configuration(_ url: String) throws -> PostgresClient.Configuration {
    guard let components = URLComponents(string: url), let host = components.host, components.scheme?.hasPrefix("postgres") == true else {
        throw Failure("--database: not a postgres:// URL: \(url)", status: 2)
    }
    var configuration = PostgresClient.Configuration(
        host: host, port: components.port ?? 5432, username: components.user ?? "postgres",
        password: components.password, database: String(components.path.dropFirst()), tls: .disable)
    configuration.options.maximumConnections = 4
    return configuration
}

/// Runs `body` with a pool of its own (postgres-nio's `run()` beside it, as a service runs it).
func withPool<T: Sendable>(_ url: String, _ body: (PostgresClient) async throws -> T) async throws -> T {
    var logger = Logger(label: "tether.example")
    logger.logLevel = .error
    let pool = PostgresClient(configuration: try configuration(url), backgroundLogger: logger)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await pool.run() }
        defer { group.cancelAll() }
        return try await body(pool)
    }
}

/// A mirror (a child process): GETs every page of the recorded issues and imports them into the
/// namespace in one transaction, when told to go.
func mirror(_ name: String, _ options: Options) async throws {
    guard let namespace = options.namespace, let go = options.go else { throw Failure("--mirror needs --namespace and --go") }
    try await withPool(options.database) { pool in
        let store = PostgresStore(client: pool, namespace: namespace)
        defer { store.close() }
        let client = try Client.Builder(schema: Example.schema)
            .rails(conventions: ["identifier": "id", "URL": "url"])
            .store(store)
            .transport(try ReplayTransport(nockRecording: URL(fileURLWithPath: options.recording)))
            .baseURL(URL(string: "https://api.github.com")!)
            .build()
        try await store.migrate()
        say("ready")
        let deadline = ContinuousClock.now + .seconds(60)
        while !FileManager.default.fileExists(atPath: go) {
            guard ContinuousClock.now < deadline else { throw Failure("mirror \(name): never told to go") }
            try await Task.sleep(for: .milliseconds(1))
        }
        let fetched = try await client.fetchObjects("Issue", from: Example.issuesPath)
        let result = fetched.importResult
        let retries = store.counters.retries
        say("mirror \(name): GET \(fetched.pages) pages, \(fetched.objects.count) issues; imported \(result.inserted.count) new, "
            + "\(result.updated.count) updated, \(result.unchanged.count) unchanged; "
            + "\(retries == 0 ? "committed at the first attempt" : "ran again \(retries) time\(retries == 1 ? "" : "s") after the other mirror's commit")")
        say("inserted \(result.inserted.count)")
    }
}

/// Everything a change stream delivered, gathered by a task of its own.
final class Gathered: Sendable {
    private final class Storage: Sendable { let all = Mutex<[ChangeSet]>([]) }
    private let storage: Storage
    private let task: Task<Void, Never>

    init(_ stream: AsyncStream<ChangeSet>) {
        let storage = Storage()
        self.storage = storage
        task = Task { for await changes in stream { storage.all.withLock { $0.append(changes) } } }
    }

    deinit { task.cancel() }

    var changes: [ChangeSet] { storage.all.withLock { $0 } }
    /// The objects inserted, over every change set.
    var inserted: Int { changes.reduce(into: ObjectIDSet()) { $0.formUnion($1.inserted) }.count }
}

/// The example: two mirrors at once, then the read-back and the checks. Returns the problems found.
func run(_ options: Options) async throws -> [String] {
    guard FileManager.default.fileExists(atPath: options.recording) else {
        throw Failure("the recording \(options.recording) is missing (--recording PATH)")
    }
    let namespace = options.namespace ?? "github_example_\(UInt32.random(in: 0...UInt32.max))"
    say("Mirroring the recorded GitHub issues (\(URL(fileURLWithPath: options.recording).deletingLastPathComponent().lastPathComponent)) into PostgreSQL from two processes at once.")
    say("Database: \(options.database), namespace \"\(namespace)\" (\(options.keep || options.namespace != nil ? "kept" : "dropped at the end"))")
    return try await withPool(options.database) { pool in
        let store = PostgresStore(client: pool, namespace: namespace)
        defer { store.close() }
        let client = try Client.Builder(schema: Example.schema).store(store).build()
        try await store.migrate()
        // This process is a third instance: it listens to the mirrors' commits.
        let gathered = Gathered(store.changes())
        try await store.listen()

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tether-postgres-example-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let go = folder.appendingPathComponent("go").path
        let executable = Bundle.main.executablePath ?? CommandLine.arguments[0]
        let mirrors = try ["A", "B"].map { name in
            (name, try ChildProcess(executable, ["--mirror", name, "--namespace", namespace, "--database", options.database,
                                                 "--recording", options.recording, "--go", go],
                                    output: folder.appendingPathComponent("mirror-\(name).log").path))
        }
        var problems: [String] = []
        for (name, child) in mirrors {
            guard try await child.waitForLine("ready", timeout: .seconds(60)) else { throw Failure("mirror \(name) did not start: \(child.printed)") }
        }
        guard FileManager.default.createFile(atPath: go, contents: nil) else { throw Failure("cannot create \(go)") }
        say("Mirrors A (pid \(mirrors[0].1.pid)) and B (pid \(mirrors[1].1.pid)) are ready and were told to go at the same moment:")
        var inserted = 0
        for (name, child) in mirrors {
            let termination = try await child.wait(timeout: .seconds(60))
            let lines = child.printed.split(separator: "\n").map(String.init)
            for line in lines where line.hasPrefix("mirror ") { say("  " + line) }
            inserted += lines.compactMap { $0.hasPrefix("inserted ") ? Int($0.dropFirst(9)) : nil }.first ?? 0
            if termination != .exited(0) { problems.append("mirror \(name) ended \(termination): \(child.printed)") }
        }

        // The mirrors' commits reach this instance through LISTEN/NOTIFY.
        let deadline = ContinuousClock.now + .seconds(5)
        while gathered.inserted < inserted, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        say("This process, listening as a third instance, was told of \(gathered.inserted) new objects "
            + "(\(gathered.changes.count) change set\(gathered.changes.count == 1 ? "" : "s") from the mirrors' commits).")
        if gathered.inserted != inserted { problems.append("the listener was told of \(gathered.inserted) new objects, the mirrors inserted \(inserted)") }

        say("Read back from PostgreSQL:")
        for user in try await client.fetch(Query("User", sortedBy: [.ascending("login")])) {
            let login = user["login", as: String.self] ?? "?"
            let issues = try await client.fetch(Query("Issue", where: .equal("user.login", .string(login)), sortedBy: [.descending("number")]))
            say("  \(login) (user \(user["identifier", as: Int64.self] ?? 0)): \(issues.count) issues (Issue where user.login = \"\(login)\")")
            for issue in issues {
                say("    #\(issue["number", as: Int64.self] ?? 0) [\(issue["state", as: String.self] ?? "")] \(issue["title", as: String.self] ?? "")")
            }
        }
        let quoted = "\"\(namespace)\""
        let counts = try await store.readSQL { sql in
            try [("Issue", "number"), ("User", "identifier")].map { entity, identity in
                let row = try sql.rows("SELECT count(*) AS n, count(DISTINCT \"\(identity)\") AS d FROM \(quoted).\"\(entity)\"")[0]
                func int(_ value: Value?) -> Int64 { if case .int(let n)? = value { n } else { -1 } }
                return (entity, identity, int(row["n"]), int(row["d"]))
            }
        }
        let expected: [String: Int64] = ["Issue": 13, "User": 1]
        for (entity, identity, rows, distinct) in counts {
            say("  \(entity): \(rows) row\(rows == 1 ? "" : "s"), \(distinct) distinct \(identity)\(distinct == 1 ? "" : "s")")
            if rows != distinct { problems.append("\(entity) holds \(rows - distinct) duplicate identities") }
            if options.recording.hasSuffix("paginate-issues/normalized-fixture.json"), let count = expected[entity], rows != count {
                problems.append("\(entity) holds \(rows) rows, the recording \(count)")
            }
        }
        if inserted != Int(counts.map(\.3).reduce(0, +)) {
            problems.append("the mirrors inserted \(inserted) objects in all, the namespace holds \(counts.map(\.3).reduce(0, +))")
        }
        if !options.keep && options.namespace == nil {
            _ = try? await pool.withConnection { connection in
                try await connection.query(PostgresQuery(unsafeSQL: "DROP SCHEMA IF EXISTS \(quoted) CASCADE"), logger: Logger(label: "tether.example")).get()
            }
        }
        return problems
    }
}

do {
    let options = try Options(Array(CommandLine.arguments.dropFirst()))
    if let name = options.mirror {
        try await mirror(name, options)
        exit(0)
    }
    let problems = try await run(options)
    if problems.isEmpty {
        say("OK: every issue and user is stored once, though two processes mirrored them at the same moment.")
        exit(0)
    }
    for problem in problems { say("FAILED: \(problem)") }
    exit(1)
} catch let failure as Failure {
    if failure.status == 0 {
        say(failure.description)
    } else {
        FileHandle.standardError.write(Data("TetherPostgresExample: \(failure.description)\n".utf8))
    }
    exit(failure.status)
} catch {
    FileHandle.standardError.write(Data("TetherPostgresExample failed: \(error)\n".utf8))
    exit(1)
}
