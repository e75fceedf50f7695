import Foundation
import Tether

/// A seeded differential test of queries, for stores: random objects over every attribute type
/// with adversarial values, random links over every kind of relationship, and random queries
/// using every `Condition` case (paths through to-one relationships, `any`/`all` over to-many
/// ones), sort keys and windows. A store answers them as the reference (an `InMemoryStore`) does,
/// or ``differences(seeds:objects:queries:limit:stores:)`` lists where it does not.
///
/// ```swift
/// let found = try await QueryDifferential.differences(seeds: [1], objects: 300, queries: 800) { graph in
///     let reference = InMemoryStore(), store = try MyStore()
///     for store in [reference, store] as [any Store] { try await graph.write(to: store) }
///     return (reference, store)
/// }
/// #expect(found.differences.isEmpty)
/// ```
///
/// Ties are broken by row id in every store (`Query.sort`), and rows are inserted in the same
/// order, so ids are compared in order.
public enum QueryDifferential {
    /// A SplitMix64 generator: the same numbers from the same seed, everywhere.
    public struct Random: RandomNumberGenerator, Sendable {
        private var state: UInt64

        /// The numbers of `seed`.
        public init(seed: UInt64) { state = seed }

        /// The next number.
        public mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    // MARK: The schema

    /// The attributes of `Thing` (every scalar type), all optional, by name.
    public static let attributes: [(String, AttributeType)] = [
        ("i16", .int16), ("i32", .int32), ("i64", .int64), ("d", .double), ("f", .float), ("dec", .decimal),
        ("b", .bool), ("dt", .date), ("s", .string), ("s2", .string), ("bin", .data), ("u", .uuid), ("url", .url),
        ("t", .transformable("Any")),
    ]
    /// Arrays, a map and a JSON value: in conditions (`.includes`, and comparisons, which see no
    /// collection), never sort keys (both stores refuse them).
    public static let collections: [(String, AttributeType)] = [
        ("ai", .array(.int64)), ("as", .array(.string)), ("ad", .array(.double)), ("ab", .array(.bool)), ("adt", .array(.date)),
        ("m", .map(.string)), ("j", .json),
    ]

    /// `Thing` (every attribute type; a to-one to itself and its to-many inverse; a one-to-one to
    /// `Tag` stored from Tag's side; a many-to-many to `Tag`) and `Tag`.
    public static let schema = try! Schema {
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
    public static let paths: [(String, AttributeType)] = [
        ("parent.s", .string), ("parent.i64", .int64), ("parent.d", .double), ("parent.dt", .date), ("parent.b", .bool),
        ("parent.dec", .decimal), ("parent.parent.s", .string), ("parent.parent.i32", .int32), ("parent.as", .array(.string)),
        ("tag.s", .string), ("tag.dec", .decimal), ("tag.thing.i64", .int64), ("parent.tag.s", .string),
        ("tag.thing.parent.s", .string), ("parent.parent.parent.url", .url),
    ]

    // MARK: Adversarial values

    /// Pieces random strings are made of: wildcards of LIKE and GLOB, quotes, NUL, accents composed
    /// and decomposed, emoji, CJK.
    public static let stringPieces = [
        "", "a", "A", "b", "Z", "z", "ab", "Ab", "aB", "abc", "%", "_", "\\", "*", "?", "[", "]", "'", "\"", "''",
        "\u{E9}", "e\u{301}", "e", "\u{301}", "😀", "👍🏽", "日本", "語", "\u{0}", "ß", "\u{FFFD}", "\u{10FFFF}", " ", "\t",
        "a%", "%a", "a_b", "[a-z]", "a*b?", "\\%", "Ω", "\u{7F}", "\u{80}",
    ]
    /// Strings that are prefixes of one another, differ by case or normalisation, or hold NUL.
    public static let fixedStrings = [
        "", "a", "ab", "abc", "abcd", "A", "AB", "Abc", "%", "100%", "a_c", "abc\\", "\\", "*", "?", "[abc]", "it's",
        "\"q\"", "\u{E9}", "e\u{301}", "\u{E9}a", "e\u{301}a", "caf\u{E9}", "cafe\u{301}", "😀", "a😀b", "日本", "日本語",
        "\u{0}", "a\u{0}b", "a\u{0}", "\u{0}a", "ß", "SS", "ss", "Z", "z", "\u{10FFFF}",
    ]
    /// Integers near the limits of `Int64` and of a double's 53 bits.
    public static let bigInts: [Int64] = [
        0, 1, -1, 2, -2, 7, 100, -100, Int64.max, Int64.min, Int64.max - 1, Int64.min + 1,
        1 << 53, (1 << 53) + 1, (1 << 53) - 1, -(1 << 53) - 1, -(1 << 53), (1 << 62) + 1, 9_223_372_036_854_775_000,
    ]
    /// Doubles: -0.0, infinities, the largest and smallest, halves, integers a double holds exactly or not.
    public static let doubles: [Double] = [
        0, -0.0, 1, -1, 0.5, -0.5, 1.5, 2.5, 0.1, 1.0 / 3, 7, 100, -100, 9007199254740992, 9007199254740994,
        9.223372036854775807e18, -9.223372036854775808e18, 1e300, -1e300, .infinity, -.infinity,
        .leastNonzeroMagnitude, .greatestFiniteMagnitude, 32767.5, -32768.5, 2147483647.5,
    ]
    /// Decimals with many digits.
    public static let decimals: [Decimal] = [
        "0", "1", "-1", "0.1", "-0.1", "1.10", "12345678901234567890123456789012345678", "-12345678901234567890.123456789",
        "0.00000000000000000000000000000000000001", "3.14159265358979323846264338327950288", "100", "99.999999999999999999",
    ].map { Decimal(string: $0, locale: Locale(identifier: "en_US_POSIX"))! }
    /// Dates around the reference date and the Unix epoch.
    public static let dates: [Date] = [0, -0.0, 0.001, -0.001, 1, -1, 0.5, 1e9, -1e9, 123456.789, 978307200, -978307200, 1e-9]
        .map { Date(timeIntervalSinceReferenceDate: $0) }
    /// Byte strings that are prefixes of one another.
    public static let datas: [Data] = [Data(), Data([0]), Data([0, 0]), Data([1]), Data([1, 2, 3]), Data([255]), Data([0x80]), Data([1, 255]), Data("abc".utf8)]
    /// UUIDs in both cases, at the extremes.
    public static let uuids: [UUID] = [
        "00000000-0000-0000-0000-000000000000", "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", "E621E1F8-C36C-495A-93FC-0C247A3E6E5F",
        "e621e1f8-c36c-495a-93fc-0c247a3e6e60", "10000000-0000-0000-0000-000000000000", "0A000000-0000-0000-0000-000000000000",
    ].map { UUID(uuidString: $0)! }
    /// URLs differing by case, slash, escape and scheme.
    public static let urls: [URL] = [
        "https://example.com", "https://example.com/", "https://example.com/a", "https://Example.com/a", "http://example.com",
        "https://example.com/a%20b", "https://example.com/?q=%25", "file:///tmp/x", "mailto:a@b.c", "a/b", "https://example.com/~x",
        "https://example.com/a_b", "HTTPS://EXAMPLE.COM",
    ].compactMap { URL(string: $0) }

    // MARK: Random objects and queries

    /// Random values, conditions and queries over ``schema``, from a seed.
    public struct Generator: Sendable {
        /// The generator's random numbers.
        public var random: Random

        /// A generator of the random numbers of `seed`.
        public init(seed: UInt64) { random = Random(seed: seed) }

        /// A number in `0..<n`.
        public mutating func int(_ n: Int) -> Int { Int.random(in: 0..<n, using: &random) }
        /// True with probability `p`.
        public mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &random) < p }
        /// One of `xs`.
        public mutating func pick<T>(_ xs: [T]) -> T { xs[int(xs.count)] }

        /// A string: a fixed one, or pieces joined.
        public mutating func string() -> String {
            if chance(0.5) { return pick(QueryDifferential.fixedStrings) }
            return (0..<int(4)).map { _ in pick(QueryDifferential.stringPieces) }.joined()
        }

        /// An integer within `type`'s range, often at its limits.
        public mutating func integer(_ type: AttributeType) -> Int64 {
            let range: ClosedRange<Int64> = switch type {
            case .int16: Int64(Int16.min)...Int64(Int16.max)
            case .int32: Int64(Int32.min)...Int64(Int32.max)
            default: Int64.min...Int64.max
            }
            switch int(4) {
            case 0: return Int64.random(in: -5...5, using: &random)
            case 1: return pick([range.lowerBound, range.upperBound, range.lowerBound + 1, range.upperBound - 1])
            case 2: if case let v = pick(QueryDifferential.bigInts), range.contains(v) { return v } else { return 3 }
            default: return Int64.random(in: range, using: &random)
            }
        }

        /// A double, often an adversarial one.
        public mutating func double() -> Double {
            switch int(3) {
            case 0: return pick(QueryDifferential.doubles)
            case 1: return Double(Int.random(in: -6...6, using: &random)) / 2
            default: return Double.random(in: -1e6...1e6, using: &random)
            }
        }

        /// A value of `type`'s kind (what the attribute holds).
        public mutating func value(_ type: AttributeType) -> Value {
            switch type {
            case .int16, .int32, .int64: return .int(integer(type))
            case .double: return .double(double())
            case .float: return .double(Double(Float(double())))
            case .decimal: return .decimal(chance(0.7) ? pick(QueryDifferential.decimals) : Decimal(Int.random(in: -50...50, using: &random)) / 4)
            case .bool: return .bool(chance(0.5))
            case .date: return .date(chance(0.7) ? pick(QueryDifferential.dates) : Date(timeIntervalSinceReferenceDate: Double(int(2001) - 1000) / 8))
            case .string: return .string(string())
            case .data: return .data(pick(QueryDifferential.datas))
            case .uuid: return .uuid(pick(QueryDifferential.uuids))
            case .url: return .url(pick(QueryDifferential.urls))
            case .transformable: return anyValue()
            case .array(let element): return .array((0..<int(4)).map { _ in storable(element) })
            case .map(let element): return .map(Dictionary((0..<int(3)).map { _ in (string(), storable(element)) }, uniquingKeysWith: { a, _ in a }))
            case .json: return .json(chance(0.5) ? .array((0..<int(3)).map { _ in .int(integer(.int64)) }) : .string(string()))
            }
        }

        /// An element a collection can hold (a finite number: JSON has no other).
        public mutating func storable(_ type: AttributeType) -> Value {
            let v = value(type)
            if case .double(let d) = v, !d.isFinite { return .double(0) }
            return v
        }

        /// A value of any kind.
        public mutating func anyValue() -> Value {
            value(pick([.int64, .double, .decimal, .bool, .date, .string, .data, .uuid, .url] as [AttributeType]))
        }

        /// An operand: usually of the column's kind, sometimes a number of the other kind (an
        /// integer against a double column, a double against an integer column), sometimes any kind.
        public mutating func operand(_ type: AttributeType) -> Value {
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
                case .int16, .int32, .int64, .double, .float: return .int(pick(QueryDifferential.bigInts))
                default: return value(type)
                }
            default: return value(type)
            }
        }

        /// The values of a `Thing`, each attribute often unset.
        public mutating func object() -> [String: Value] {
            var values: [String: Value] = [:]
            for (name, type) in QueryDifferential.attributes + QueryDifferential.collections where !chance(0.3) {
                values[name] = value(type)
            }
            return values
        }

        /// A condition on a `Thing`, nested up to three deep: every `Condition` case.
        public mutating func condition(depth: Int = 0) -> Condition {
            let (name, type) = chance(0.25) ? pick(QueryDifferential.paths) : pick(QueryDifferential.attributes + QueryDifferential.collections)
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
                let (n, t) = chance(0.8) ? pick(QueryDifferential.collections) : (name, type)
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
        public mutating func tagCondition(depth: Int) -> Condition {
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

        /// A pattern for `hasPrefix` and `contains`: often a piece of a stored string.
        public mutating func pattern() -> String {
            let s = string()
            guard !s.isEmpty, chance(0.5) else { return s }
            let bytes = Array(s.unicodeScalars)
            let a = int(bytes.count), b = a + int(bytes.count - a + 1)
            var view = String.UnicodeScalarView()
            view.append(contentsOf: bytes[a..<b])
            return String(view)
        }

        /// A query of `Thing`: a condition, 0–3 sort keys, sometimes a window.
        public mutating func query() -> Query {
            let condition: Condition? = chance(0.1) ? nil : self.condition()
            let sortable = QueryDifferential.attributes + QueryDifferential.paths.filter { !$0.1.isCollection }
            let sort = (0..<int(4)).map { _ in Sort(pick(sortable).0, ascending: chance(0.5)) }
            let limit: Int? = chance(0.6) ? nil : (chance(0.05) ? Int.max : int(60))
            let offset = chance(0.6) ? 0 : (chance(0.02) ? Int.max : int(80))
            return Query("Thing", where: condition, sortedBy: sort, limit: limit, offset: offset)
        }
    }


    /// The links of the rows: each row's parent (a row id, or none) and tag (values of a Tag, or none).
    public struct Links: Sendable {
        /// Each row's parent (a row id), or none.
        public var parents: [Int64?] = []
        /// Each row's tag (its values), or none.
        public var tags: [[String: Value]?] = []
        /// The tags each row likes (by their row's index; a tag exists where `tags` has one).
        public var likes: [[Int]] = []

        /// No links.
        public init() {}

        /// Random links of `count` rows.
        public init(count: Int, _ generator: inout Generator) {
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


    /// Random objects and their links: what the stores compared hold.
    public struct Graph: Sendable {
        /// The values of each `Thing`, in insertion order (ids 1, 2, …).
        public var rows: [[String: Value]]
        /// Their links.
        public var links: Links

        /// `rows`, with `links`.
        public init(rows: [[String: Value]], links: Links = Links()) {
            self.rows = rows
            self.links = links
        }

        /// `objects` random rows and their links, from `generator`.
        public init(objects: Int, _ generator: inout Generator) {
            rows = (0..<objects).map { _ in generator.object() }
            links = Links(count: objects, &generator)
        }

        /// Prepares `store` for ``QueryDifferential/schema`` and writes the graph in one transaction.
        public func write(to store: any Store) async throws {
            try store.prepare(for: QueryDifferential.schema)
            let rows = rows, links = links
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
    }

    /// What a store answers to a query: the row ids `fetch` and `ids` find, and the `count` of
    /// the query without its sort and window.
    public struct Answer: Equatable, Sendable, CustomStringConvertible {
        /// The row ids of `fetch`, in order.
        public var ids: [Int64]
        /// `count` of the query's condition.
        public var count: Int
        /// The row ids of `ids`, in order.
        public var idsCall: [Int64]

        /// The three, on one line.
        public var description: String { "fetch \(ids), count \(count), ids \(idsCall)" }
    }

    /// What `store` answers to `query`.
    public static func answer(_ store: any Store, _ query: Query) async throws -> Answer {
        try await store.read { reader in
            var whole = query
            whole.sort = []; whole.limit = nil; whole.offset = 0
            return Answer(ids: try reader.fetch(query).map(\.id.rowID), count: try reader.count(whole),
                          idsCall: try reader.ids(query).map(\.rowID))
        }
    }

    /// For each seed, a random graph of `objects` rows written by `stores` into a reference store
    /// and the store under test, then `queries` random queries asked of both: the queries asked,
    /// and the differences (what was stored, or answered, differently), at most `limit`.
    public static func differences(
        seeds: [UInt64], objects: Int, queries: Int, limit: Int = 20,
        stores: (Graph) async throws -> (reference: any Store, store: any Store)
    ) async throws -> (queries: Int, differences: [String]) {
        var differences: [String] = []
        var asked = 0
        for seed in seeds {
            var generator = Generator(seed: seed)
            let graph = Graph(objects: objects, &generator)
            let (reference, store) = try await stores(graph)
            // What was stored reads back the same (Value ==: strings by bytes, -0.0 == 0).
            let all = Query("Thing")
            let a = try await reference.read { try $0.fetch(all) }, b = try await store.read { try $0.fetch(all) }
            if a.count != b.count { differences.append("seed \(seed): \(a.count) objects stored, \(b.count) read back") }
            for (x, y) in zip(a, b) where x.values != y.values || x.id.rowID - a[0].id.rowID != y.id.rowID - b[0].id.rowID {
                differences.append("seed \(seed): stored values differ for \(x.id): \(x.values) vs \(y.values)")
            }
            for index in 0..<queries {
                let query = generator.query()
                asked += 1
                let expected = try await answer(reference, query)
                let actual = try await answer(store, query)
                if expected != actual {
                    differences.append("seed \(seed) query \(index): \(query)\n  reference: \(expected)\n  store: \(actual)")
                    if differences.count >= limit { return (asked, differences) }
                }
            }
        }
        return (asked, differences)
    }
}
