import Foundation
import Testing
import Tether
import TetherPostgres

/// Queries answered by `InMemoryStore` (which evaluates conditions in Swift) and `PostgresStore`
/// (which translates them to SQL) must find the same objects in the same order: the seeded
/// differential test of `Condition`, `Sort`, `limit` and `offset` of the SQLite store, against
/// PostgreSQL, paths through to-one relationships (`parent.parent.s`, `tag.thing.i64`) and
/// conditions on arrays, maps and JSON values included. The schema, the adversarial values and the generator are a copy of
/// Tests/TetherSQLiteTests/QueryDifferentialTests.swift of the Tether package (its test targets
/// are not products); keep them in step.
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

    // MARK: The schema

    static let attributes: [(String, AttributeType)] = [
        ("i16", .int16), ("i32", .int32), ("i64", .int64), ("d", .double), ("f", .float), ("dec", .decimal),
        ("b", .bool), ("dt", .date), ("s", .string), ("s2", .string), ("bin", .data), ("u", .uuid), ("url", .url),
        ("t", .transformable("Any")),
    ]
    /// Arrays, a map and a JSON value: in conditions (`.includes`, and comparisons, which see no
    /// collection), never sort keys (every store refuses them).
    static let collections: [(String, AttributeType)] = [
        ("ai", .array(.int64)), ("as", .array(.string)), ("ad", .array(.double)), ("ab", .array(.bool)), ("adt", .array(.date)),
        ("m", .map(.string)), ("j", .json),
    ]

    static let schema = try! Schema {
        Entity("Thing", identity: "id") {
            Attribute("id", .int64)
            Attribute("i16", .int16)
            Attribute("i32", .int32)
            Attribute("i64", .int64)
            Attribute("d", .double)
            Attribute("f", .float)
            Attribute("dec", .decimal)
            Attribute("b", .bool)
            Attribute("dt", .date)
            Attribute("s", .string)
            Attribute("s2", .string)
            Attribute("bin", .data)
            Attribute("u", .uuid)
            Attribute("url", .url)
            Attribute("t", .transformable("Any"))
            for (name, type) in collections { Attribute(name, type) }
            // Paths through to-one relationships: a relationship whose links are on this table's
            // side a (`parent`), its to-many inverse, and a one-to-one stored from the other
            // entity's side (`tag`, the inverse of Tag.thing).
            Relationship.toOne("parent", "Thing", inverse: "children")
            Relationship.toMany("children", "Thing", inverse: "parent")
            Relationship.toOne("tag", "Tag", inverse: "thing")
            // Many-to-many: for `any` and `all`.
            Relationship.toMany("likes", "Tag", inverse: "likedBy")
        }
        Entity("Tag", identity: "id") {
            Attribute("id", .int64)
            Attribute("s", .string)
            Attribute("dec", .decimal)
            Relationship.toOne("thing", "Thing", inverse: "tag")
            Relationship.toMany("likedBy", "Thing", inverse: "likes")
        }
    }

    /// Paths a condition or sort key may name, with their attribute's type (up to three
    /// relationships: `tag.thing.parent.s`).
    static let paths: [(String, AttributeType)] = [
        ("parent.s", .string), ("parent.i64", .int64), ("parent.d", .double), ("parent.dt", .date), ("parent.b", .bool),
        ("parent.dec", .decimal), ("parent.parent.s", .string), ("parent.parent.i32", .int32), ("parent.as", .array(.string)),
        ("tag.s", .string), ("tag.dec", .decimal), ("tag.thing.i64", .int64), ("parent.tag.s", .string),
        ("tag.thing.parent.s", .string), ("parent.parent.parent.url", .url),
    ]

    // MARK: Adversarial values

    static let stringPieces = [
        "", "a", "A", "b", "Z", "z", "ab", "Ab", "aB", "abc", "%", "_", "\\", "*", "?", "[", "]", "'", "\"", "''",
        "\u{E9}", "e\u{301}", "e", "\u{301}", "😀", "👍🏽", "日本", "語", "\u{0}", "ß", "\u{FFFD}", "\u{10FFFF}", " ", "\t",
        "a%", "%a", "a_b", "[a-z]", "a*b?", "\\%", "Ω", "\u{7F}", "\u{80}",
    ]
    static let fixedStrings = [
        "", "a", "ab", "abc", "abcd", "A", "AB", "Abc", "%", "100%", "a_c", "abc\\", "\\", "*", "?", "[abc]", "it's",
        "\"q\"", "\u{E9}", "e\u{301}", "\u{E9}a", "e\u{301}a", "caf\u{E9}", "cafe\u{301}", "😀", "a😀b", "日本", "日本語",
        "\u{0}", "a\u{0}b", "a\u{0}", "\u{0}a", "ß", "SS", "ss", "Z", "z", "\u{10FFFF}",
    ]
    static let bigInts: [Int64] = [
        0, 1, -1, 2, -2, 7, 100, -100, Int64.max, Int64.min, Int64.max - 1, Int64.min + 1,
        1 << 53, (1 << 53) + 1, (1 << 53) - 1, -(1 << 53) - 1, -(1 << 53), (1 << 62) + 1, 9_223_372_036_854_775_000,
    ]
    static let doubles: [Double] = [
        0, -0.0, 1, -1, 0.5, -0.5, 1.5, 2.5, 0.1, 1.0 / 3, 7, 100, -100, 9007199254740992, 9007199254740994,
        9.223372036854775807e18, -9.223372036854775808e18, 1e300, -1e300, .infinity, -.infinity,
        .leastNonzeroMagnitude, .greatestFiniteMagnitude, 32767.5, -32768.5, 2147483647.5,
    ]
    static let decimals: [Decimal] = [
        "0", "1", "-1", "0.1", "-0.1", "1.10", "12345678901234567890123456789012345678", "-12345678901234567890.123456789",
        "0.00000000000000000000000000000000000001", "3.14159265358979323846264338327950288", "100", "99.999999999999999999",
    ].map { Decimal(string: $0, locale: Locale(identifier: "en_US_POSIX"))! }
    static let dates: [Date] = [0, -0.0, 0.001, -0.001, 1, -1, 0.5, 1e9, -1e9, 123456.789, 978307200, -978307200, 1e-9]
        .map { Date(timeIntervalSinceReferenceDate: $0) }
    static let datas: [Data] = [Data(), Data([0]), Data([0, 0]), Data([1]), Data([1, 2, 3]), Data([255]), Data([0x80]), Data([1, 255]), Data("abc".utf8)]
    static let uuids: [UUID] = [
        "00000000-0000-0000-0000-000000000000", "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", "E621E1F8-C36C-495A-93FC-0C247A3E6E5F",
        "e621e1f8-c36c-495a-93fc-0c247a3e6e60", "10000000-0000-0000-0000-000000000000", "0A000000-0000-0000-0000-000000000000",
    ].map { UUID(uuidString: $0)! }
    static let urls: [URL] = [
        "https://example.com", "https://example.com/", "https://example.com/a", "https://Example.com/a", "http://example.com",
        "https://example.com/a%20b", "https://example.com/?q=%25", "file:///tmp/x", "mailto:a@b.c", "a/b", "https://example.com/~x",
        "https://example.com/a_b", "HTTPS://EXAMPLE.COM",
    ].compactMap { URL(string: $0) }

    struct Generator {
        var random: SeededRandom

        mutating func int(_ n: Int) -> Int { Int.random(in: 0..<n, using: &random) }
        mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &random) < p }
        mutating func pick<T>(_ xs: [T]) -> T { xs[int(xs.count)] }

        mutating func string() -> String {
            if chance(0.5) { return pick(PostgresQueryDifferentialTests.fixedStrings) }
            return (0..<int(4)).map { _ in pick(PostgresQueryDifferentialTests.stringPieces) }.joined()
        }

        mutating func integer(_ type: AttributeType) -> Int64 {
            let range: ClosedRange<Int64> = switch type {
            case .int16: Int64(Int16.min)...Int64(Int16.max)
            case .int32: Int64(Int32.min)...Int64(Int32.max)
            default: Int64.min...Int64.max
            }
            switch int(4) {
            case 0: return Int64.random(in: -5...5, using: &random)
            case 1: return pick([range.lowerBound, range.upperBound, range.lowerBound + 1, range.upperBound - 1])
            case 2: if case let v = pick(PostgresQueryDifferentialTests.bigInts), range.contains(v) { return v } else { return 3 }
            default: return Int64.random(in: range, using: &random)
            }
        }

        mutating func double() -> Double {
            switch int(3) {
            case 0: return pick(PostgresQueryDifferentialTests.doubles)
            case 1: return Double(Int.random(in: -6...6, using: &random)) / 2
            default: return Double.random(in: -1e6...1e6, using: &random)
            }
        }

        /// A value of `type`'s kind (what the attribute holds).
        mutating func value(_ type: AttributeType) -> Value {
            switch type {
            case .int16, .int32, .int64: return .int(integer(type))
            case .double: return .double(double())
            case .float: return .double(Double(Float(double())))
            case .decimal: return .decimal(chance(0.7) ? pick(PostgresQueryDifferentialTests.decimals) : Decimal(Int.random(in: -50...50, using: &random)) / 4)
            case .bool: return .bool(chance(0.5))
            case .date: return .date(chance(0.7) ? pick(PostgresQueryDifferentialTests.dates) : Date(timeIntervalSinceReferenceDate: Double(int(2001) - 1000) / 8))
            case .string: return .string(string())
            case .data: return .data(pick(PostgresQueryDifferentialTests.datas))
            case .uuid: return .uuid(pick(PostgresQueryDifferentialTests.uuids))
            case .url: return .url(pick(PostgresQueryDifferentialTests.urls))
            case .transformable: return anyValue()
            // Conditions on collections are evaluated in Swift by the PostgreSQL store.
            case .array(let element): return .array((0..<int(4)).map { _ in storable(element) })
            case .map(let element): return .map(Dictionary((0..<int(3)).map { _ in (string(), storable(element)) }, uniquingKeysWith: { a, _ in a }))
            case .json: return .json(chance(0.5) ? .array((0..<int(3)).map { _ in .int(integer(.int64)) }) : .string(string()))
            }
        }

        /// An element a collection can hold (a finite number: JSON has no other).
        mutating func storable(_ type: AttributeType) -> Value {
            let v = value(type)
            if case .double(let d) = v, !d.isFinite { return .double(0) }
            return v
        }

        mutating func anyValue() -> Value {
            value(pick([.int64, .double, .decimal, .bool, .date, .string, .data, .uuid, .url] as [AttributeType]))
        }

        /// An operand: usually of the column's kind, sometimes a number of the other kind (an
        /// integer against a double column, a double against an integer column), sometimes any kind.
        mutating func operand(_ type: AttributeType) -> Value {
            switch int(10) {
            case 0: return chance(0.1) ? .double(.nan) : anyValue()
            case 1:
                switch type {
                case .int16, .int32, .int64, .float: return .double(double())
                case .double: return .int(integer(.int64))
                default: return value(type)
                }
            case 2:
                switch type {
                case .int16, .int32, .int64, .double, .float: return .int(pick(PostgresQueryDifferentialTests.bigInts))
                default: return value(type)
                }
            default: return value(type)
            }
        }

        mutating func object() -> [String: Value] {
            var values: [String: Value] = [:]
            for (name, type) in PostgresQueryDifferentialTests.attributes + PostgresQueryDifferentialTests.collections where !chance(0.3) {
                values[name] = value(type)
            }
            return values
        }

        mutating func condition(depth: Int = 0) -> Condition {
            let (name, type) = chance(0.25)
                ? pick(PostgresQueryDifferentialTests.paths)
                : pick(PostgresQueryDifferentialTests.attributes + PostgresQueryDifferentialTests.collections)
            let leaf = depth >= 3 || chance(0.6)
            if !leaf {
                switch int(3) {
                case 0: return .and((0..<int(4)).map { _ in condition(depth: depth + 1) })
                case 1: return .or((0..<int(4)).map { _ in condition(depth: depth + 1) })
                default: return .not(condition(depth: depth + 1))
                }
            }
            switch int(15) {
            case 13 where depth < 3, 14 where depth < 3:
                // `any`/`all` over each kind of relationship.
                let relationship = pick(["children", "parent", "tag", "likes"])
                let inner = relationship == "tag" || relationship == "likes" ? tagCondition(depth: depth + 1) : condition(depth: depth + 1)
                return chance(0.5) ? .any(relationship, inner) : .all(relationship, inner)
            case 11, 12, 13, 14: // (13 and 14 at depth 3)
                // Mostly an array's element type; sometimes any attribute (false but for arrays).
                let (n, t) = chance(0.8) ? pick(PostgresQueryDifferentialTests.collections) : (name, type)
                if case .array(let element) = t { return .includes(n, operand(element)) }
                return .includes(n, operand(t == .json ? .int64 : t))
            case 0: return .equal(name, operand(type))
            case 1: return .notEqual(name, operand(type))
            case 2: return .less(name, operand(type))
            case 3: return .lessOrEqual(name, operand(type))
            case 4: return .greater(name, operand(type))
            case 5: return .greaterOrEqual(name, operand(type))
            case 6: return .in(name, (0..<int(5)).map { _ in operand(type) })
            case 7: return .isNull(name)
            case 8: return .isNotNull(name)
            case 9: return .hasPrefix(chance(0.8) ? pick(["s", "s2", "parent.s", "tag.s"]) : name, chance(0.2) ? "" : pattern())
            default: return .contains(chance(0.8) ? pick(["s", "s2", "parent.parent.s", "tag.thing.parent.s"]) : name, chance(0.2) ? "" : pattern())
            }
        }

        /// A condition on a Tag: its attributes, a path back, and `any`/`all` over who likes it.
        mutating func tagCondition(depth: Int) -> Condition {
            switch int(depth >= 3 ? 6 : 8) {
            case 0: return .equal("s", operand(.string))
            case 1: return .hasPrefix("s", pattern())
            case 2: return .greater("dec", operand(.decimal))
            case 3: return .isNull("s")
            case 4: return .less("thing.i64", operand(.int64))
            case 5: return .not(tagCondition(depth: depth + 1))
            case 6: return .any("likedBy", condition(depth: depth + 1))
            default: return .all("likedBy", condition(depth: depth + 1))
            }
        }

        mutating func pattern() -> String {
            let s = string()
            guard !s.isEmpty, chance(0.5) else { return s }
            let bytes = Array(s.unicodeScalars)
            let a = int(bytes.count), b = a + int(bytes.count - a + 1)
            var view = String.UnicodeScalarView()
            view.append(contentsOf: bytes[a..<b])
            return String(view)
        }

        mutating func query() -> Query {
            let condition: Condition? = chance(0.1) ? nil : self.condition()
            let sortable = PostgresQueryDifferentialTests.attributes + PostgresQueryDifferentialTests.paths.filter { !$0.1.isCollection }
            let sort = (0..<int(4)).map { _ in Sort(pick(sortable).0, ascending: chance(0.5)) }
            let limit: Int? = chance(0.6) ? nil : (chance(0.05) ? Int.max : int(60))
            let offset = chance(0.6) ? 0 : (chance(0.02) ? Int.max : int(80))
            return Query("Thing", where: condition, sortedBy: sort, limit: limit, offset: offset)
        }
    }

    // MARK: The comparison

    /// The links of the rows: each row's parent (a row id, or none) and tag (values of a Tag, or none).
    struct Links: Sendable {
        var parents: [Int64?] = []
        var tags: [[String: Value]?] = []
        /// The tags each row likes (by their row's index; a tag exists where `tags` has one).
        var likes: [[Int]] = []

        init() {}

        init(count: Int, _ generator: inout Generator) {
            for i in 0..<count {
                parents.append(generator.chance(0.25) || i == 0 ? nil : Int64(generator.int(count) + 1))  // cycles too
                tags.append(generator.chance(0.4) ? nil : [
                    "s": generator.value(.string), "dec": generator.value(.decimal),
                ].filter { _ in !generator.chance(0.2) })
            }
            for _ in 0..<count {
                var liked: [Int] = []
                for _ in 0..<generator.int(4) {
                    let tag = generator.int(count)
                    if tags[tag] != nil, !liked.contains(tag) { liked.append(tag) }
                }
                likes.append(liked)
            }
        }
    }

    static func stores(_ rows: [[String: Value]], links: Links = Links(), namespace: String) async throws -> (InMemoryStore, PostgresStore) {
        let memory = InMemoryStore()
        let postgres = PostgresStore(client: try TestDatabase.client(), namespace: namespace)
        for store in [memory, postgres] as [any Store] {
            try store.prepare(for: schema)
            try await store.write { writer in
                var ids: [ObjectID] = []
                for (i, row) in rows.enumerated() {
                    var values = row
                    values["id"] = .int(Int64(i + 1))
                    ids.append(try writer.insert("Thing", values: values).id)
                }
                for (i, parent) in links.parents.enumerated() {
                    if let parent { try writer.setRelated("parent", of: ids[i], to: [ids[Int(parent) - 1]]) }
                }
                var tagIDs: [Int: ObjectID] = [:]
                for (i, tag) in links.tags.enumerated() {
                    guard var tag else { continue }
                    tag["id"] = .int(Int64(i + 1))
                    let inserted = try writer.insert("Tag", values: tag)
                    tagIDs[i] = inserted.id
                    try writer.setRelated("thing", of: inserted.id, to: [ids[i]])
                }
                for (i, liked) in links.likes.enumerated() where !liked.isEmpty {
                    try writer.setRelated("likes", of: ids[i], to: liked.map { tagIDs[$0]! })
                }
            }
        }
        return (memory, postgres)
    }

    struct Answer: Equatable, Sendable {
        var ids: [Int64]
        var count: Int
        var idsCall: [Int64]
    }

    static func answer(_ store: any Store, _ query: Query) async throws -> Answer {
        try await store.read { reader in
            var whole = query
            whole.sort = []; whole.limit = nil; whole.offset = 0
            return Answer(ids: try reader.fetch(query).map(\.id.rowID), count: try reader.count(whole),
                          idsCall: try reader.ids(query).map(\.rowID))
        }
    }

    @Test func randomQueriesFindTheSameObjectsInTheSameOrder() async throws {
        let namespaces = Namespaces("querydiff")
        var failures: [String] = []
        var queriesRun = 0
        for seed in Self.seeds {
            var generator = Generator(random: SeededRandom(seed: seed))
            let rows = (0..<Self.objects).map { _ in generator.object() }
            let links = Links(count: rows.count, &generator)
            let (memory, postgres) = try await Self.stores(rows, links: links, namespace: namespaces.next())

            // What was stored reads back the same (Value ==: strings by bytes, -0.0 == 0).
            let all = Query("Thing")
            let a = try await memory.read { try $0.fetch(all) }, b = try await postgres.read { try $0.fetch(all) }
            #expect(a.count == b.count)
            for (x, y) in zip(a, b) where x.values != y.values || x.id.rowID != y.id.rowID - b[0].id.rowID + 1 {
                failures.append("seed \(seed): stored values differ for \(x.id): \(x.values) vs \(y.values)")
            }

            for index in 0..<Self.queries {
                let query = generator.query()
                queriesRun += 1
                let expected = try await Self.answer(memory, query)
                let actual = try await Self.answer(postgres, query)
                if expected != actual {
                    failures.append("seed \(seed) query \(index): \(query)\n  memory: \(expected)\n  postgres: \(actual)")
                    if failures.count >= 20 { break }
                }
            }
            if failures.count >= 20 { break }
        }
        await namespaces.drop()
        #expect(queriesRun > 0)
        if !failures.isEmpty {
            Issue.record(Comment(rawValue: "\(failures.count) differences in \(queriesRun) queries:\n" + failures.joined(separator: "\n")))
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
