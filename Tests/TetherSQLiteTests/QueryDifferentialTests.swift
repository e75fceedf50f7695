import Foundation
import Testing
import Tether
import TetherSQLite
import TetherTestSupport
import TetherTesting

/// Queries answered by both stores must find the same objects in the same order:
/// TetherTesting's seeded `QueryDifferential` (every attribute type with adversarial values,
/// every `Condition` case, paths, `any`/`all`, sort keys and windows), `InMemoryStore` (which
/// evaluates conditions in Swift) against `SQLiteStore` (which translates them to SQL); then the
/// minimal cases it found, and typed key-path predicates.
///
/// `TETHER_QUERY_DIFF_SEEDS` (comma-separated) and `TETHER_QUERY_DIFF_QUERIES` (per seed) run it
/// longer; `TETHER_QUERY_DIFF_OBJECTS` sets the objects per seed.
@Suite struct QueryDifferentialTests {
    static let environment = ProcessInfo.processInfo.environment
    static let seeds: [UInt64] = environment["TETHER_QUERY_DIFF_SEEDS"]
        .map { $0.split(separator: ",").compactMap { UInt64($0.trimmingCharacters(in: .whitespaces)) } } ?? [0x5EED_0001]
    static let queries = environment["TETHER_QUERY_DIFF_QUERIES"].flatMap { Int($0) } ?? 800
    static let objects = environment["TETHER_QUERY_DIFF_OBJECTS"].flatMap { Int($0) } ?? 300

    typealias Generator = QueryDifferential.Generator
    typealias Links = QueryDifferential.Links

    /// An in-memory store and an SQLite store holding `rows` (ids 1, 2, … in order) and `links`.
    static func stores(_ rows: [[String: Value]], links: Links = Links(), in directory: TemporaryDirectory) async throws -> (InMemoryStore, SQLiteStore) {
        let memory = InMemoryStore()
        let sqlite = try SQLiteStore(path: directory.path())
        let graph = QueryDifferential.Graph(rows: rows, links: links)
        try await graph.write(to: memory)
        try await graph.write(to: sqlite)
        return (memory, sqlite)
    }

    static func answer(_ store: any Store, _ query: Query) async throws -> QueryDifferential.Answer {
        try await QueryDifferential.answer(store, query)
    }

    /// The generator and the comparison are TetherTesting's `QueryDifferential` (which the
    /// PostgreSQL store's tests run too).
    @Test func randomQueriesFindTheSameObjectsInTheSameOrder() async throws {
        var directories: [TemporaryDirectory] = []
        let found = try await QueryDifferential.differences(seeds: Self.seeds, objects: Self.objects, queries: Self.queries) { graph in
            let directory = try TemporaryDirectory()
            directories.append(directory)
            let (memory, sqlite) = try await Self.stores(graph.rows, links: graph.links, in: directory)
            return (memory, sqlite)
        }
        if !found.differences.isEmpty {
            Issue.record(Comment(rawValue: "\(found.differences.count) differences in \(found.queries) queries:\n" + found.differences.joined(separator: "\n")))
        }
        #expect(found.queries == Self.seeds.count * Self.queries)
    }

    // MARK: Minimal cases of what the random test found

    /// The ids `query` finds in each store holding `rows` (ids 1, 2, … in order), and its count.
    static func both(_ rows: [[String: Value]], _ query: Query) async throws -> (memory: [Int64], sqlite: [Int64], counts: [Int]) {
        let directory = try TemporaryDirectory()
        let (memory, sqlite) = try await stores(rows, in: directory)
        let a = try await answer(memory, query), b = try await answer(sqlite, query)
        return (a.ids, b.ids, [a.count, b.count])
    }

    /// A prefix with a NUL character: SQLite's `length()` stops at the NUL, so `substr` took
    /// fewer characters than the pattern has and nothing matched.
    @Test func prefixContainingNUL() async throws {
        let rows: [[String: Value]] = [["s": .string("a\u{0}b")], ["s": .string("a")], ["s": .string("\u{0}")], ["s": .string("ab")]]
        for (pattern, expected) in [("a\u{0}", [1] as [Int64]), ("\u{0}", [3]), ("a", [1, 2, 4]), ("", [1, 2, 3, 4])] {
            let result = try await Self.both(rows, Query("Thing", where: .hasPrefix("s", pattern)))
            #expect(result.memory == expected, "memory, prefix \(pattern.debugDescription)")
            #expect(result.sqlite == expected, "sqlite, prefix \(pattern.debugDescription)")
        }
        // An empty string: the fix's substr() on an empty blob is NULL, and NOT of it was NULL too.
        let empty = try await Self.both([["s": .string("")], ["s": .string("a")]], Query("Thing", where: .not(.hasPrefix("s", "a"))))
        #expect(empty.memory == [1] && empty.sqlite == [1])
    }

    /// An integer compared with a double: exactly, not after rounding the integer to a double
    /// (2^63 - 1 becomes 2^63, 2^53 + 1 becomes 2^53).
    @Test func integersAndDoublesCompareExactly() async throws {
        let rows: [[String: Value]] = [
            ["d": .double(9223372036854775808.0), "i64": .int(Int64.max)],
            ["d": .double(9007199254740992.0), "i64": .int(9007199254740993)],
        ]
        let cases: [(Condition, [Int64])] = [
            (.equal("d", .int(Int64.max)), []),
            (.lessOrEqual("d", .int(Int64.max - 1)), [2]),
            (.in("d", [.int(Int64.max)]), []),
            (.greater("d", .int(Int64.max)), [1]),
            (.equal("d", .int(9007199254740993)), []),
            (.less("d", .int(9007199254740993)), [2]),
            (.equal("i64", .double(9223372036854775808.0)), []),
            (.less("i64", .double(9223372036854775808.0)), [1, 2]),
            (.equal("i64", .double(9007199254740992.0)), []),
            (.greater("i64", .double(9007199254740992.0)), [1, 2]),
            (.equal("i64", .double(-9223372036854775808.0)), []),
        ]
        for (condition, expected) in cases {
            let result = try await Self.both(rows, Query("Thing", where: condition))
            #expect(result.memory == expected, "memory: \(condition)")
            #expect(result.sqlite == expected, "sqlite: \(condition)")
        }
    }

    /// A NaN operand: every comparison with it is false (SQLite binds NaN as NULL, so the SQL was
    /// NULL, and NOT of it NULL too; `Value.compare` called NaN equal to every number).
    @Test func nanOperandsMatchNothing() async throws {
        let rows: [[String: Value]] = [["d": .double(1), "i64": .int(1)], [:]]
        let cases: [(Condition, [Int64])] = [
            (.equal("d", .double(.nan)), []), (.notEqual("d", .double(.nan)), []), (.lessOrEqual("d", .double(.nan)), []),
            (.greaterOrEqual("i64", .double(.nan)), []), (.in("d", [.double(.nan)]), []),
            (.not(.equal("d", .double(.nan))), [1, 2]), (.not(.notEqual("i64", .double(.nan))), [1, 2]),
        ]
        for (condition, expected) in cases {
            let result = try await Self.both(rows, Query("Thing", where: condition))
            #expect(result.memory == expected, "memory: \(condition)")
            #expect(result.sqlite == expected, "sqlite: \(condition)")
        }
    }

    /// `limit: Int.max` with an offset: `start + limit` overflowed in `Query.apply` (a crash of
    /// the in-memory store; SQLite answered).
    @Test func largestLimitWithAnOffset() async throws {
        let rows: [[String: Value]] = [["i64": .int(1)], ["i64": .int(2)], ["i64": .int(3)]]
        let result = try await Self.both(rows, Query("Thing", limit: Int.max, offset: 1))
        #expect(result.memory == [2, 3])
        #expect(result.sqlite == [2, 3])
    }

    // MARK: Typed key-path predicates

    struct Probe: EntityModel {
        var id: Int64
        var i16: Int16?
        var i32: Int32?
        var i64: Int64?
        var d: Double?
        var f: Float?
        var dec: Decimal?
        var b: Bool?
        var dt: Date?
        var s: String?
        var bin: Data?
        var u: UUID?
        var url: URL?
    }

    struct TypedGenerator {
        var g: Generator

        mutating func compare<V: Encodable & Sendable>(_ keyPath: any KeyPath<Probe, V?> & Sendable, _ value: V?) -> ModelPredicate<Probe> {
            switch g.int(7) {
            case 0: return .equal(keyPath, value)
            case 1: return .notEqual(keyPath, value)
            case 2 where value != nil: return .less(keyPath, value)
            case 3 where value != nil: return .lessOrEqual(keyPath, value)
            case 4 where value != nil: return .greater(keyPath, value)
            case 5 where value != nil: return .greaterOrEqual(keyPath, value)
            default: return .in(keyPath, [value, value == nil ? nil : value])
            }
        }

        mutating func some<V>(_ make: (inout Generator) -> V) -> V? { g.chance(0.15) ? nil : make(&g) }

        mutating func leaf() -> ModelPredicate<Probe> {
            switch g.int(14) {
            case 0: return compare(\Probe.i16, some { Int16($0.integer(.int16)) })
            case 1: return compare(\Probe.i32, some { Int32($0.integer(.int32)) })
            case 2: return compare(\Probe.i64, some { $0.integer(.int64) })
            case 3: return compare(\Probe.d, some { $0.double() })
            case 4: return compare(\Probe.f, some { Float($0.double()) })
            case 5: return compare(\Probe.dec, some { $0.pick(QueryDifferential.decimals) })
            case 6: return compare(\Probe.b, some { $0.chance(0.5) })
            case 7: return compare(\Probe.dt, some { $0.pick(QueryDifferential.dates) })
            case 8: return compare(\Probe.s, some { $0.string() })
            case 9: return compare(\Probe.bin, some { $0.pick(QueryDifferential.datas) })
            case 10: return compare(\Probe.u, some { $0.pick(QueryDifferential.uuids) })
            case 11: return compare(\Probe.url, some { $0.pick(QueryDifferential.urls) })
            case 12: return .hasPrefix(\Probe.s, g.pattern())
            default: return .contains(\Probe.s, g.pattern())
            }
        }

        mutating func predicate(depth: Int = 0) -> ModelPredicate<Probe> {
            if depth >= 3 || g.chance(0.6) { return leaf() }
            switch g.int(3) {
            case 0: return predicate(depth: depth + 1) && predicate(depth: depth + 1)
            case 1: return predicate(depth: depth + 1) || predicate(depth: depth + 1)
            default: return !predicate(depth: depth + 1)
            }
        }

        mutating func sort() -> ModelSort<Probe> {
            let ascending = g.chance(0.5)
            func key<V: Encodable & Sendable>(_ keyPath: any KeyPath<Probe, V> & Sendable) -> ModelSort<Probe> {
                ascending ? .ascending(keyPath) : .descending(keyPath)
            }
            switch g.int(13) {
            case 0: return key(\Probe.i16)
            case 1: return key(\Probe.i32)
            case 2: return key(\Probe.i64)
            case 3: return key(\Probe.d)
            case 4: return key(\Probe.f)
            case 5: return key(\Probe.dec)
            case 6: return key(\Probe.b)
            case 7: return key(\Probe.dt)
            case 8: return key(\Probe.s)
            case 9: return key(\Probe.bin)
            case 10: return key(\Probe.u)
            case 11: return key(\Probe.url)
            default: return key(\Probe.id)
            }
        }
    }

    @Test func typedKeyPathQueriesAgree() async throws {
        for seed in Self.seeds { try await typedKeyPathQueriesAgree(seed: seed) }
    }

    func typedKeyPathQueriesAgree(seed: UInt64) async throws {
        var generator = TypedGenerator(g: Generator(seed: seed ^ 0x7799))
        let directory = try TemporaryDirectory()
        let memory = try Client.Builder(models: [Probe.self]).store(InMemoryStore()).build()
        let sqlite = try Client.Builder(models: [Probe.self]).store(try SQLiteStore(path: directory.path())).build()
        let names = Set(memory.schema["Probe"]!.attributes.map { $0.name })
        let rows: [[String: Value]] = (0..<Self.objects).map { i in
            var row = generator.g.object().filter { names.contains($0.key) }
            row["id"] = .int(Int64(i + 1))
            return row
        }
        for client in [memory, sqlite] {
            try await client.store.write { writer in
                for row in rows { _ = try writer.insert("Probe", values: row) }
            }
        }
        var failures: [String] = []
        for index in 0..<max(1, Self.queries / 5) {
            let predicate = generator.g.chance(0.1) ? nil : generator.predicate()
            let sort = (0..<generator.g.int(4)).map { _ in generator.sort() }
            let limit: Int? = generator.g.chance(0.6) ? nil : generator.g.int(60)
            let offset = generator.g.chance(0.6) ? 0 : generator.g.int(80)
            let a = try await memory.fetch(Probe.self, where: predicate, sortedBy: sort, limit: limit, offset: offset, depth: 0).map(\.id)
            let b = try await sqlite.fetch(Probe.self, where: predicate, sortedBy: sort, limit: limit, offset: offset, depth: 0).map(\.id)
            let ca = try await memory.count(Probe.self, where: predicate), cb = try await sqlite.count(Probe.self, where: predicate)
            if a != b || ca != cb {
                let query = try memory.query(Probe.self, where: predicate, sortedBy: sort, limit: limit, offset: offset)
                failures.append("seed \(seed) typed query \(index): \(query)\n  memory: \(a) (\(ca))\n  sqlite: \(b) (\(cb))")
                if failures.count >= 10 { break }
            }
        }
        if !failures.isEmpty { Issue.record(Comment(rawValue: "\(failures.count) typed differences:\n" + failures.joined(separator: "\n"))) }
    }
}
