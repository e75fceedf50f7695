import Foundation
import Testing
import Tether
import TetherPostgres
import TetherTesting

/// Queries answered by `InMemoryStore` (which evaluates conditions in Swift) and `PostgresStore`
/// (which translates them to SQL) must find the same objects in the same order: TetherTesting's
/// seeded `QueryDifferential` (the SQLite store's tests run it too), paths through to-one
/// relationships, `any`/`all` over every kind of relationship, and conditions on arrays, maps and
/// JSON values included.
///
/// `TETHER_QUERY_DIFF_SEEDS` (comma-separated) and `TETHER_QUERY_DIFF_QUERIES` (per seed) run it
/// longer; `TETHER_QUERY_DIFF_OBJECTS` sets the objects per seed.
@Suite(.enabled(if: TestDatabase.enabled, "TETHER_POSTGRES_URL is not set"))
struct PostgresQueryDifferentialTests {
    static let environment = ProcessInfo.processInfo.environment
    static let seeds: [UInt64] = environment["TETHER_QUERY_DIFF_SEEDS"]
        .map { $0.split(separator: ",").compactMap { UInt64($0.trimmingCharacters(in: .whitespaces)) } } ?? [0x5EED_0001]
    /// 300 by default (the SQLite test runs 800): in a debug build every query that is evaluated
    /// in Swift (decimals, transformables, collections) reads the whole table through
    /// postgres-nio's row decoding, about 0.1 s a query, and CI's time is bounded.
    static let queries = environment["TETHER_QUERY_DIFF_QUERIES"].flatMap { Int($0) } ?? 300
    static let objects = environment["TETHER_QUERY_DIFF_OBJECTS"].flatMap { Int($0) } ?? 300

    typealias Links = QueryDifferential.Links

    /// An in-memory store and a PostgreSQL store (in `namespace`) holding `rows` (ids 1, 2, … in
    /// order) and `links`.
    static func stores(_ rows: [[String: Value]], links: Links = Links(), namespace: String) async throws -> (InMemoryStore, PostgresStore) {
        let memory = InMemoryStore()
        let postgres = PostgresStore(client: try TestDatabase.client(), namespace: namespace)
        let graph = QueryDifferential.Graph(rows: rows, links: links)
        try await graph.write(to: memory)
        try await graph.write(to: postgres)
        return (memory, postgres)
    }

    static func answer(_ store: any Store, _ query: Query) async throws -> QueryDifferential.Answer {
        try await QueryDifferential.answer(store, query)
    }

    @Test func randomQueriesFindTheSameObjectsInTheSameOrder() async throws {
        let namespaces = Namespaces("querydiff")
        let found = try await QueryDifferential.differences(seeds: Self.seeds, objects: Self.objects, queries: Self.queries) { graph in
            try await Self.stores(graph.rows, links: graph.links, namespace: namespaces.next())
        }
        await namespaces.drop()
        #expect(found.queries == Self.seeds.count * Self.queries || !found.differences.isEmpty)
        if !found.differences.isEmpty {
            Issue.record(Comment(rawValue: "\(found.differences.count) differences in \(found.queries) queries:\n" + found.differences.joined(separator: "\n")))
        }
    }


    /// Integers and doubles compare exactly, beyond a double's 53 bits, in conditions on both kinds of column.
    @Test func integersAndDoublesCompareExactly() async throws {
        let namespaces = Namespaces("exact")
        let rows: [[String: Value]] = [
            ["i64": .int(Int64.max), "d": .double(9.223372036854775807e18)],
            ["i64": .int((1 << 53) + 1), "d": .double(9007199254740992)],
            ["i64": .int(Int64.min), "d": .double(-9.223372036854775808e18)],
            ["i64": .int(2), "d": .double(2.5)],
        ]
        let (memory, postgres) = try await Self.stores(rows, namespace: namespaces.next())
        let operands: [Value] = [.double(9.223372036854775807e18), .double(9007199254740992), .double(2.5), .double(-9.223372036854775808e18),
                                 .int(Int64.max), .int((1 << 53) + 1), .int(2), .int(Int64.min), .double(.infinity), .double(-.infinity)]
        for operand in operands {
            for condition: Condition in [.equal("i64", operand), .less("i64", operand), .greaterOrEqual("i64", operand), .notEqual("i64", operand),
                                         .equal("d", operand), .lessOrEqual("d", operand), .greater("d", operand), .in("i64", [operand]), .in("d", [operand])] {
                let query = Query("Thing", where: condition)
                let expected = try await Self.answer(memory, query), actual = try await Self.answer(postgres, query)
                #expect(expected == actual, "\(condition)")
            }
        }
        await namespaces.drop()
    }
}
