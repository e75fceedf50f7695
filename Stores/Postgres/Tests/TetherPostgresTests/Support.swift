import Foundation
import Logging
import PostgresNIO
import Synchronization
import Tether
import TetherPostgres
import TetherPostgresTestSupport

/// The PostgreSQL server of the tests: `TETHER_POSTGRES_URL` (for example
/// `postgres://tether@127.0.0.1:55432/tether`, as `.ci/postgres.sh start` makes). Without it the
/// tests are skipped with a message, unless `TETHER_REQUIRE_SERVERS=1` (CI), when they fail.
enum TestDatabase {
    static let environment = ProcessInfo.processInfo.environment
    static let url = environment["TETHER_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    static let required = environment["TETHER_REQUIRE_SERVERS"] == "1"

    /// Whether the server tests run (the `.enabled(if:)` of every suite): with a URL, or when
    /// servers are required (the tests then fail for the missing URL).
    static let enabled: Bool = {
        if url == nil && !required {
            print("TetherPostgresTests: TETHER_POSTGRES_URL is not set; the PostgreSQL tests are skipped (bash .ci/postgres.sh start; eval \"$(bash .ci/postgres.sh env)\")")
        }
        return url != nil || required
    }()

    struct Missing: Error, CustomStringConvertible {
        var description: String { "TETHER_REQUIRE_SERVERS=1 but TETHER_POSTGRES_URL is not set (bash .ci/postgres.sh start)" }
    }

    /// The connection settings of `url`.
    static func configuration(maximumConnections: Int = 40, applicationName: String? = nil) throws -> PostgresClient.Configuration {
        guard let url, let configuration = Payloads.configuration(url: url, maximumConnections: maximumConnections, applicationName: applicationName)
        else { throw Missing() }
        return configuration
    }

    /// The pools' logger: errors only (a pool whose `run()` has not started yet when it is first
    /// asked for a connection warns, and then serves it).
    static var logger: Logger {
        var logger = Logger(label: "tether.tests.postgres")
        logger.logLevel = .error
        return logger
    }

    /// The tests' pool, shared by every test of the process and running for its lifetime.
    static let shared: Result<PostgresClient, any Error> = Result {
        let client = PostgresClient(configuration: try configuration(), backgroundLogger: logger)
        Task.detached { await client.run() }
        return client
    }

    static func client() throws -> PostgresClient { try shared.get() }

    /// A pool of its own, running until `body` returns: an independent "instance". Its
    /// connections name themselves `applicationName` to the server when given (so that a test
    /// can terminate them: ``terminate(applicationName:)``).
    static func withClient<T: Sendable>(maximumConnections: Int = 8, applicationName: String? = nil,
                                        _ body: (PostgresClient) async throws -> T) async throws -> T {
        let client = PostgresClient(configuration: try configuration(maximumConnections: maximumConnections, applicationName: applicationName),
                                    backgroundLogger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }

    /// Terminates the server's backends of every connection named `applicationName` (as the
    /// server does when an administrator or a failover ends them); returns how many.
    @discardableResult
    static func terminate(applicationName: String) async throws -> Int {
        try await client().withConnection { connection in
            let rows = try await connection.query(
                "SELECT count(pg_terminate_backend(pid))::bigint FROM pg_stat_activity WHERE application_name = \(applicationName)",
                logger: logger)
            var count = 0
            for try await n in rows.decode(Int64.self) { count = Int(n) }
            return count
        }
    }

    /// Waits until `condition` holds, checking every 10 ms, for at most `timeout`; returns
    /// whether it held.
    static func eventually(within timeout: Duration, _ condition: () -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }

    /// A namespace no other test uses.
    static func namespace(_ label: String) -> String {
        "t_\(label.prefix(20))_\(UInt32.random(in: 0...UInt32.max))"
    }

    /// Removes a namespace and everything in it.
    static func drop(_ namespaces: [String]) async {
        guard let client = try? client() else { return }
        for namespace in namespaces {
            _ = try? await client.withConnection { connection in
                try await connection.query(PostgresQuery(unsafeSQL: "DROP SCHEMA IF EXISTS \"\(namespace)\" CASCADE"), logger: Logger(label: "tests")).get()
            }
        }
    }
}

/// Namespaces a test made, dropped at its end.
final class Namespaces: Sendable {
    private let made = Mutex<[String]>([])
    let label: String
    init(_ label: String) { self.label = label }

    func next() -> String {
        let name = TestDatabase.namespace(label)
        made.withLock { $0.append(name) }
        return name
    }

    func drop() async { await TestDatabase.drop(made.withLock { $0 }) }
}

/// A small deterministic generator (SplitMix64). A copy of Tests/TestSupport/SeededRandom.swift of
/// the Tether package, whose test support is not a product.
struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
