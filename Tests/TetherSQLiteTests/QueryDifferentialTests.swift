import Foundation
import Testing
import Tether
import TetherSQLite
import TetherTestSupport

/// Queries answered by both stores must find the same objects in the same order: a seeded
/// differential test of `Condition`, `Sort`, `limit` and `offset` (and of typed key-path
/// predicates), `InMemoryStore` (which evaluates conditions in Swift) against `SQLiteStore` (which
/// translates them to SQL).
///
/// Every attribute type, all optional, with adversarial values (nil often; strings with `%`, `_`,
/// `\`, `*`, `?`, `[`, quotes, NUL, composed and decomposed accents, emoji, CJK, prefixes of one
/// another; integers near the limits of `Int64` and of a double's 53 bits; -0.0, infinities;
/// dates around the reference date; long decimals; a transformable attribute holding any kind).
/// Queries use every `Condition` case with operands of the column's kind and sometimes of another
/// (an integer against a double column, a double against an integer column, a string against a
/// number), nested 1–3 deep, 0–3 sort keys and a window. Ties are broken by row id in both stores
/// (`Query.sort`), and rows are inserted in the same order, so ids are compared in order.
///
/// `TETHER_QUERY_DIFF_SEEDS` (comma-separated) and `TETHER_QUERY_DIFF_QUERIES` (per seed) run it
/// longer; `TETHER_QUERY_DIFF_OBJECTS` sets the objects per seed.
@Suite struct QueryDifferentialTests {
    static let environment = ProcessInfo.processInfo.environment
    static let seeds: [UInt64] = environment["TETHER_QUERY_DIFF_SEEDS"]
        .map { $0.split(separator: ",").compactMap { UInt64($0.trimmingCharacters(in: .whitespaces)) } } ?? [0x5EED_0001]
    static let queries = environment["TETHER_QUERY_DIFF_QUERIES"].flatMap { Int($0) } ?? 800
    static let objects = environment["TETHER_QUERY_DIFF_OBJECTS"].flatMap { Int($0) } ?? 300

    // MARK: The schema

    static let attributes: [(String, AttributeType)] = [
        ("i16", .int16), ("i32", .int32), ("i64", .int64), ("d", .double), ("f", .float), ("dec", .decimal),
        ("b", .bool), ("dt", .date), ("s", .string), ("s2", .string), ("bin", .data), ("u", .uuid), ("url", .url),
        ("t", .transformable("Any")),
    ]
    /// Arrays, a map and a JSON value: in conditions (`.includes`, and comparisons, which see no
    /// collection), never sort keys (both stores refuse them).
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
            // Paths through to-one relationships: a foreign key on this table (`parent`), its
            // to-many inverse, and a one-to-one whose foreign key is on the other table (`tag`).
            Relationship.toOne("parent", "Thing", inverse: "children")
            Relationship.toMany("children", "Thing", inverse: "parent")
            Relationship.toOne("tag", "Tag", inverse: "thing")
            // Many-to-many, in a join table: for `any` and `all`.
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

    /// Paths a condition or sort key may name, with their attribute's type.
    static let paths: [(String, AttributeType)] = [
        ("parent.s", .string), ("parent.i64", .int64), ("parent.d", .double), ("parent.dt", .date), ("parent.b", .bool),
        ("parent.dec", .decimal), ("parent.parent.s", .string), ("parent.parent.i32", .int32), ("parent.as", .array(.string)),
        ("tag.s", .string), ("tag.dec", .decimal), ("tag.thing.i64", .int64), ("parent.tag.s", .string),
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
            if chance(0.5) { return pick(QueryDifferentialTests.fixedStrings) }
            return (0..<int(4)).map { _ in pick(QueryDifferentialTests.stringPieces) }.joined()
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
            case 2: if case let v = pick(QueryDifferentialTests.bigInts), range.contains(v) { return v } else { return 3 }
            default: return Int64.random(in: range, using: &random)
            }
        }

        mutating func double() -> Double {
            switch int(3) {
            case 0: return pick(QueryDifferentialTests.doubles)
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
            case .decimal: return .decimal(chance(0.7) ? pick(QueryDifferentialTests.decimals) : Decimal(Int.random(in: -50...50, using: &random)) / 4)
            case .bool: return .bool(chance(0.5))
            case .date: return .date(chance(0.7) ? pick(QueryDifferentialTests.dates) : Date(timeIntervalSinceReferenceDate: Double(int(2001) - 1000) / 8))
            case .string: return .string(string())
            case .data: return .data(pick(QueryDifferentialTests.datas))
            case .uuid: return .uuid(pick(QueryDifferentialTests.uuids))
            case .url: return .url(pick(QueryDifferentialTests.urls))
            case .transformable: return anyValue()
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
                case .int16, .int32, .int64, .double, .float: return .int(pick(QueryDifferentialTests.bigInts))
                default: return value(type)
                }
            default: return value(type)
            }
        }

        mutating func object() -> [String: Value] {
            var values: [String: Value] = [:]
            for (name, type) in QueryDifferentialTests.attributes + QueryDifferentialTests.collections where !chance(0.3) {
                values[name] = value(type)
            }
            return values
        }

        mutating func condition(depth: Int = 0) -> Condition {
            let (name, type) = chance(0.25) ? pick(QueryDifferentialTests.paths) : pick(QueryDifferentialTests.attributes + QueryDifferentialTests.collections)
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
                // `any`/`all` over each kind of relationship: a to-one by a foreign key here or
                // there, a to-many by the inverse's foreign key, a many-to-many join table.
                let relationship = pick(["children", "parent", "tag", "likes"])
                let inner = relationship == "tag" || relationship == "likes" ? tagCondition(depth: depth + 1) : condition(depth: depth + 1)
                return chance(0.5) ? .any(relationship, inner) : .all(relationship, inner)
            case 11, 12, 13, 14: // (13 and 14 at depth 3)
                // Mostly an array's element type; sometimes any attribute (false but for arrays).
                let (n, t) = chance(0.8) ? pick(QueryDifferentialTests.collections) : (name, type)
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
            default: return .contains(chance(0.8) ? pick(["s", "s2", "parent.parent.s"]) : name, chance(0.2) ? "" : pattern())
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
            let sortable = QueryDifferentialTests.attributes + QueryDifferentialTests.paths.filter { !$0.1.isCollection }
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

    static func stores(_ rows: [[String: Value]], links: Links = Links(), in directory: TemporaryDirectory) async throws -> (InMemoryStore, SQLiteStore) {
        let memory = InMemoryStore()
        let sqlite = try SQLiteStore(path: directory.path())
        for store in [memory, sqlite] as [any Store] {
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
        return (memory, sqlite)
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
        var failures: [String] = []
        var queriesRun = 0
        for seed in Self.seeds {
            var generator = Generator(random: SeededRandom(seed: seed))
            let rows = (0..<Self.objects).map { _ in generator.object() }
            let links = Links(count: rows.count, &generator)
            let directory = try TemporaryDirectory()
            let (memory, sqlite) = try await Self.stores(rows, links: links, in: directory)

            // What was stored reads back the same (Value ==: strings by bytes, -0.0 == 0).
            let all = Query("Thing")
            let a = try await memory.read { try $0.fetch(all) }, b = try await sqlite.read { try $0.fetch(all) }
            for (x, y) in zip(a, b) where x.values != y.values || x.id != y.id {
                failures.append("seed \(seed): stored values differ for \(x.id): \(x.values) vs \(y.values)")
            }

            for index in 0..<Self.queries {
                let query = generator.query()
                queriesRun += 1
                let expected = try await Self.answer(memory, query)
                let actual = try await Self.answer(sqlite, query)
                if expected != actual {
                    failures.append("seed \(seed) query \(index): \(query)\n  memory: \(expected)\n  sqlite: \(actual)")
                    if failures.count >= 20 { break }
                }
            }
            if failures.count >= 20 { break }
        }
        if !failures.isEmpty {
            Issue.record(Comment(rawValue: "\(failures.count) differences in \(queriesRun) queries:\n" + failures.joined(separator: "\n")))
        }
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
            case 5: return compare(\Probe.dec, some { $0.pick(QueryDifferentialTests.decimals) })
            case 6: return compare(\Probe.b, some { $0.chance(0.5) })
            case 7: return compare(\Probe.dt, some { $0.pick(QueryDifferentialTests.dates) })
            case 8: return compare(\Probe.s, some { $0.string() })
            case 9: return compare(\Probe.bin, some { $0.pick(QueryDifferentialTests.datas) })
            case 10: return compare(\Probe.u, some { $0.pick(QueryDifferentialTests.uuids) })
            case 11: return compare(\Probe.url, some { $0.pick(QueryDifferentialTests.urls) })
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
        var generator = TypedGenerator(g: Generator(random: SeededRandom(seed: seed ^ 0x7799)))
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
