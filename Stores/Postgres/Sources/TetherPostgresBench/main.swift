// tether-postgres-bench: 100k repositories (the benchmark's GitHub workload) into PostgreSQL with
// Tether's PostgresStore, against a hand-written postgres-nio importer (Codable, then one
// INSERT ... ON CONFLICT per row in one transaction) and Tether's SQLite store on the same data.
//
//     bash .ci/postgres.sh start && eval "$(bash .ci/postgres.sh env)"
//     swift run -c release tether-postgres-bench              # N = 100k, best of 3
//     swift run -c release tether-postgres-bench --count 10000 --runs 1
//
// Each run imports into a new namespace (or file): a first import, every row inserted.
import Foundation
import Logging
import PostgresNIO
import Tether
import TetherPostgres
import TetherSQLite

struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The benchmark's schema and key mapping (Benchmarks/Sources/TetherBench/TetherImport.swift).
enum TetherSide {
    static let schema = try! Schema {
        Entity("Repository", identity: "id") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Attribute("fullName", .string)
            Attribute("repositoryDescription", .string)
            Attribute("isPrivate", .bool)
            Attribute("isFork", .bool)
            Attribute("htmlURL", .string)
            Attribute("cloneURL", .string)
            Attribute("createdAt", .date)
            Attribute("updatedAt", .date)
            Attribute("pushedAt", .date)
            Attribute("forksCount", .int64)
            Attribute("watchersCount", .int64)
            Attribute("size", .int64)
            Attribute("language", .string)
            Attribute("openIssues", .int64)
            Relationship.toOne("owner", "User", inverse: "repositories")
        }
        Entity("User", identity: "id") {
            Attribute("id", .int64)
            Attribute("login", .string)
            Attribute("avatarURL", .string)
            Attribute("gravatarID", .string)
            Attribute("url", .string)
            Attribute("type", .string)
            Attribute("siteAdmin", .bool)
            Relationship.toMany("repositories", "Repository", inverse: "owner")
        }
    }

    static let keys = KeyOverrides([
        "Repository": [
            "fullName": "full_name", "repositoryDescription": "description", "isPrivate": "private",
            "isFork": "fork", "htmlURL": "html_url", "cloneURL": "clone_url", "createdAt": "created_at",
            "updatedAt": "updated_at", "pushedAt": "pushed_at", "forksCount": "forks_count",
            "watchersCount": "watchers_count", "openIssues": "open_issues",
        ],
        "User": ["avatarURL": "avatar_url", "gravatarID": "gravatar_id", "siteAdmin": "site_admin"],
    ])

    static func importRepositories(_ data: Data, store: any Store) async throws -> Int {
        let client = try Client.Builder(schema: schema).keyMapping(keys).store(store).build()
        if let postgres = store as? PostgresStore { try await postgres.migrate() }   // not timed
        let start = ContinuousClock.now
        let result = try await client.import(data, as: "Repository")
        if let first = result.diagnostics.first { throw BenchmarkError("Tether reported \(result.diagnostics.count) diagnostics, first: \(first)") }
        let elapsed = ContinuousClock.now - start
        if let postgres = store as? PostgresStore, ProcessInfo.processInfo.environment["TETHER_BENCH_VERBOSE"] != nil {
            print("    PostgresStore: \(postgres.counters)")
        }
        return Int(elapsed / .microseconds(1))
    }
}

/// The hand-written importer: what a careful developer writes with postgres-nio alone.
enum HandWritten {
    struct Owner: Decodable {
        let login: String
        let id: Int64
        let avatarUrl: String
        let gravatarId: String
        let url: String
        let type: String
        let siteAdmin: Bool
    }

    struct Repository: Decodable {
        let id: Int64
        let name: String
        let fullName: String
        let description: String?
        let `private`: Bool
        let fork: Bool
        let htmlUrl: String
        let cloneUrl: String
        let createdAt: Date
        let updatedAt: Date
        let pushedAt: Date
        let forksCount: Int64
        let watchersCount: Int64
        let size: Int64
        let language: String?
        let openIssues: Int64
        let owner: Owner
    }

    static func createTables(_ connection: PostgresConnection, _ schema: String, _ logger: Logger) async throws {
        try await connection.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA \(schema)"), logger: logger)
        try await connection.query(PostgresQuery(unsafeSQL: """
            CREATE TABLE \(schema).owners (id bigint PRIMARY KEY, login text NOT NULL, avatar_url text, gravatar_id text, url text,
                type text, site_admin boolean)
            """), logger: logger)
        try await connection.query(PostgresQuery(unsafeSQL: """
            CREATE TABLE \(schema).repositories (id bigint PRIMARY KEY, name text NOT NULL, full_name text, description text,
                private boolean, fork boolean, html_url text, clone_url text, created_at timestamptz, updated_at timestamptz,
                pushed_at timestamptz, forks_count bigint, watchers_count bigint, size bigint, language text, open_issues bigint,
                owner_id bigint REFERENCES \(schema).owners (id))
            """), logger: logger)
    }

    /// Decodes `data` and upserts it row by row in one transaction; returns the microseconds taken.
    static func importRepositories(_ data: Data, client: PostgresClient, schema: String, logger: Logger) async throws -> Int {
        try await client.withConnection { connection in
            try await createTables(connection, schema, logger)
            let start = ContinuousClock.now
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            decoder.dateDecodingStrategy = .iso8601
            let repositories = try decoder.decode([Repository].self, from: data)
            try await connection.query("BEGIN", logger: logger)
            var seen = Set<Int64>()
            for repository in repositories where seen.insert(repository.owner.id).inserted {
                let o = repository.owner
                try await connection.query(PostgresQuery(unsafeSQL: """
                    INSERT INTO \(schema).owners (id, login, avatar_url, gravatar_id, url, type, site_admin) VALUES ($1, $2, $3, $4, $5, $6, $7)
                    ON CONFLICT (id) DO UPDATE SET login = EXCLUDED.login, avatar_url = EXCLUDED.avatar_url, gravatar_id = EXCLUDED.gravatar_id,
                        url = EXCLUDED.url, type = EXCLUDED.type, site_admin = EXCLUDED.site_admin
                    """, binds: try binds(o.id, o.login, o.avatarUrl, o.gravatarId, o.url, o.type, o.siteAdmin)), logger: logger)
            }
            for r in repositories {
                try await connection.query(PostgresQuery(unsafeSQL: """
                    INSERT INTO \(schema).repositories (id, name, full_name, description, private, fork, html_url, clone_url, created_at,
                        updated_at, pushed_at, forks_count, watchers_count, size, language, open_issues, owner_id)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
                    ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, full_name = EXCLUDED.full_name, description = EXCLUDED.description,
                        private = EXCLUDED.private, fork = EXCLUDED.fork, html_url = EXCLUDED.html_url, clone_url = EXCLUDED.clone_url,
                        created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at, pushed_at = EXCLUDED.pushed_at,
                        forks_count = EXCLUDED.forks_count, watchers_count = EXCLUDED.watchers_count, size = EXCLUDED.size,
                        language = EXCLUDED.language, open_issues = EXCLUDED.open_issues, owner_id = EXCLUDED.owner_id
                    """, binds: try binds(r.id, r.name, r.fullName, r.description, r.private, r.fork, r.htmlUrl, r.cloneUrl, r.createdAt,
                                          r.updatedAt, r.pushedAt, r.forksCount, r.watchersCount, r.size, r.language, r.openIssues, r.owner.id)),
                    logger: logger)
            }
            try await connection.query("COMMIT", logger: logger)
            return Int((ContinuousClock.now - start) / .microseconds(1))
        }
    }

    static func binds(_ values: (any PostgresThrowingDynamicTypeEncodable)?...) throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: values.count)
        for value in values {
            if let value { try bindings.append(value) } else { bindings.appendNull() }
        }
        return bindings
    }
}

// MARK: Run

let arguments = CommandLine.arguments
func option(_ name: String) -> Int? { arguments.firstIndex(of: name).flatMap { $0 + 1 < arguments.count ? Int(arguments[$0 + 1]) : nil } }
let count = option("--count") ?? 100_000
let runs = option("--runs") ?? 3
guard let url = ProcessInfo.processInfo.environment["TETHER_POSTGRES_URL"], let components = URLComponents(string: url), let host = components.host else {
    print("tether-postgres-bench: set TETHER_POSTGRES_URL (bash .ci/postgres.sh start; eval \"$(bash .ci/postgres.sh env)\")")
    exit(2)
}
var logger = Logger(label: "tether.bench")
logger.logLevel = .error
let configuration = PostgresClient.Configuration(host: host, port: components.port ?? 5432, username: components.user ?? "postgres",
                                                 password: components.password, database: String(components.path.dropFirst()), tls: .disable)
let postgres = PostgresClient(configuration: configuration, backgroundLogger: logger)
let runner = Task { await postgres.run() }

let data = try Workload(count: count, seed: 42, version: 1).data()
print("tether-postgres-bench: \(count) repositories (\(data.count / 1024) KiB of JSON), best of \(runs) runs, server \(host):\(components.port ?? 5432)")
var tether: [Int] = [], handWritten: [Int] = [], sqlite: [Int] = []
var namespaces: [String] = []
for run in 0..<runs {
    let suffix = "\(ProcessInfo.processInfo.processIdentifier)_\(run)"
    let namespace = "bench_tether_\(suffix)", baseline = "bench_nio_\(suffix)"
    namespaces += [namespace, baseline]
    tether.append(try await TetherSide.importRepositories(data, store: PostgresStore(client: postgres, namespace: namespace, logger: logger)))
    handWritten.append(try await HandWritten.importRepositories(data, client: postgres, schema: baseline, logger: logger))
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tether-postgres-bench-\(suffix)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    sqlite.append(try await TetherSide.importRepositories(data, store: try SQLiteStore(path: directory.appendingPathComponent("bench.sqlite").path)))
    try? FileManager.default.removeItem(at: directory)
    print("  run \(run + 1): Tether/PostgreSQL \(tether.last! / 1000) ms, postgres-nio by hand \(handWritten.last! / 1000) ms, Tether/SQLite \(sqlite.last! / 1000) ms")
}
for namespace in namespaces {
    _ = try? await postgres.withConnection { try await $0.query(PostgresQuery(unsafeSQL: "DROP SCHEMA IF EXISTS \(namespace) CASCADE"), logger: logger) }
}
let best = (tether.min()!, handWritten.min()!, sqlite.min()!)
print("| \(count) repositories (best of \(runs)) | time | per object | vs hand-written postgres-nio | vs Tether on SQLite |")
print("|---|---|---|---|---|")
func row(_ name: String, _ microseconds: Int) {
    let speedup = Double(best.1) / Double(microseconds), vsSQLite = Double(microseconds) / Double(best.2)
    print("| \(name) | \(microseconds / 1000) ms | \(String(format: "%.1f", Double(microseconds) / Double(count))) µs | \(String(format: "%.2f", speedup))× faster | \(String(format: "%.2f", vsSQLite))× the time |")
}
row("Tether, PostgresStore", best.0)
row("postgres-nio by hand (one INSERT … ON CONFLICT per row, one transaction)", best.1)
row("Tether, SQLiteStore", best.2)
runner.cancel()
