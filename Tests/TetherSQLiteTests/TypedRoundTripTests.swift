import Foundation
import Testing
import Tether
import TetherSQLite
import TetherTestSupport

/// Seeded property test: random `EntityModel` structs (every documented property kind, with edge
/// values; arrays and string-keyed maps of values, and `JSON`) are written through the typed API (a JSON import, then `updateLocally`) and fetched
/// back typed at depth 1; the fetched structs must equal the originals, on the in-memory store,
/// on SQLite, and on SQLite after a reopen.
///
/// `TETHER_TYPED_SEED=<n>` runs one seed; `TETHER_TYPED_SEEDS=<count>` runs more seeds (default 6);
/// `TETHER_TYPED_PRINT=1` prints each sample payload.
/// Not compared: the sign of a zero on SQLite (Docs/Stores.md: "-0.0 reads back as 0.0").
@Suite struct TypedRoundTripTests {
    enum Mood: String, Codable, Sendable, CaseIterable { case calm, naïve = "naïve", loud = "LOUD 🔊" }
    enum Level: Int, Codable, Sendable, CaseIterable { case low = -9_223_372_036_854_775_807, zero = 0, high = 9_223_372_036_854_775_807 }
    /// A wrapper that codes as one value.
    struct Celsius: Codable, Sendable, Equatable {
        var value: Double
        init(_ value: Double) { self.value = value }
        init(from decoder: any Decoder) throws { value = try decoder.singleValueContainer().decode(Double.self) }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.singleValueContainer()
            try c.encode(value)
        }
    }

    struct Owner: EntityModel, Equatable {
        var id: String
        var name: String?
        var samples: [Sample] = []
    }

    struct Sample: EntityModel, Equatable {
        var id: Int64
        var int: Int
        var i8: Int8
        var i16: Int16
        var i32: Int32
        var i64: Int64
        var u8: UInt8
        var u16: UInt16
        var u32: UInt32
        var double: Double
        var float: Float
        var bool: Bool
        var string: String
        var date: Date
        var data: Data
        var uuid: UUID
        var url: URL
        var decimal: Decimal
        var mood: Mood
        var level: Level
        var temperature: Celsius
        var oInt: Int?
        var oI16: Int16?
        var oI32: Int32?
        var oI64: Int64?
        var oU32: UInt32?
        var oDouble: Double?
        var oFloat: Float?
        var oBool: Bool?
        var oString: String?
        var oDate: Date?
        var oData: Data?
        var oUUID: UUID?
        var oURL: URL?
        var oDecimal: Decimal?
        var oMood: Mood?
        var oLevel: Level?
        var oTemperature: Celsius?
        // arrays and maps of values, and JSON kept as it came
        var topics: [String]
        var votes: [Int]
        var flags: [Bool]
        var oRatios: [Double]?
        var oStamps: [Date]?
        var metadata: [String: String]
        var oCounts: [String: Int64]?
        var oRaw: JSON?
        var owner: Owner?
        var tags: [Tag] = []

        static func describe(_ model: inout ModelDescription<Self>) {
            model.ordered(\.tags)
        }

        var stripped: Sample {
            var s = self
            s.owner = nil
            s.tags = []
            return s
        }
    }

    struct Tag: EntityModel, Equatable {
        var id: Int64
        var label: String?
        var sample: Sample?
    }

    // MARK: Generation

    struct Generator {
        var rng: SeededRandom
        /// Dates in JSON are written in the default formats (ISO 8601 or Unix seconds); a
        /// direct write (`updateLocally`) may hold any date.
        var jsonSafe = true

        mutating func pick<T>(_ values: [T]) -> T { values[Int.random(in: 0..<values.count, using: &rng)] }
        mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &rng) < p }
        mutating func maybe<T>(_ make: (inout Generator) -> T) -> T? { chance(0.3) ? nil : make(&self) }

        mutating func int64() -> Int64 {
            chance(0.4) ? pick([Int64.min, Int64.max, 0, -1, 1, Int64(Int32.max) + 1, 1 << 53, (1 << 53) + 1])
                : Int64.random(in: .min ... .max, using: &rng)
        }
        mutating func fixed<T: FixedWidthInteger>(_: T.Type) -> T {
            chance(0.4) ? pick([T.min, T.max, 0, 1]) : T.random(in: .min ... .max, using: &rng)
        }
        mutating func double() -> Double {
            if chance(0.5) {
                return pick([0.0, -0.0, 0.1, -1.5, .pi, 1e-300, 1e300, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
                             .leastNonzeroMagnitude, .leastNormalMagnitude, 9007199254740992, 123456789.12345679, Double(bitPattern: 1)])
            }
            while true {
                let d = Double(bitPattern: UInt64.random(in: .min ... .max, using: &rng))
                if d.isFinite { return d }
            }
        }
        mutating func float() -> Float {
            if chance(0.5) {
                return pick([0, -0.0, 0.1, 16777216, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
                             .leastNonzeroMagnitude, .leastNormalMagnitude, 3.4028235e38, Float(bitPattern: 0x0080_0000)])
            }
            while true {
                let f = Float(bitPattern: UInt32.random(in: .min ... .max, using: &rng))
                if f.isFinite { return f }
            }
        }
        mutating func string() -> String {
            if chance(0.5) {
                return pick(["", " ", "a", "héllo", "日本語テキスト", "🏳️‍🌈👨‍👩‍👧", "e\u{301}", "\u{E9}", "nul\u{0}inside",
                             "line\nbreak\t\"quoted\"\\ /", "\u{FEFF}bom", "\u{10FFFF}", "Ω≈ç√∫", String(repeating: "x", count: 300)])
            }
            let scalars: [Unicode.Scalar] = ["a", "Z", "0", " ", "é", "ß", "中", "\u{1F600}", "\u{301}", "\"", "\\", "\n", "\u{7F}", "\u{1}"]
            var s = ""
            for _ in 0..<Int.random(in: 0...12, using: &rng) { s.unicodeScalars.append(pick(scalars)) }
            return s
        }
        mutating func date() -> Date {
            if jsonSafe {
                // Unix seconds with a fraction, within years 1...9999 (DateDecoding.representableRange).
                if chance(0.3) {
                    return pick([Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: -62_135_596_800),
                                 Date(timeIntervalSince1970: 253_402_300_799.5), Date(timeIntervalSince1970: 1714979289.123456)])
                }
                if chance(0.5) {   // whole milliseconds: written as ISO 8601 with a fraction
                    return Date(timeIntervalSince1970: Double(Int64.random(in: -62_135_596_800_000 ... 253_402_300_799_999, using: &rng)) / 1000)
                }
                return Date(timeIntervalSince1970: Double.random(in: -62_135_596_800 ... 253_402_300_799, using: &rng))
            }
            if chance(0.3) {
                // (Stores refuse dates outside years 1 to 9999, as `.distantPast` is: LocalWriteValueTests.)
                return pick([Date(timeIntervalSinceReferenceDate: 0), Date(timeIntervalSinceReferenceDate: -0.000_001),
                             Date(timeIntervalSinceReferenceDate: 1e-9), .distantFuture,
                             DateDecoding.representableRange.lowerBound, DateDecoding.representableRange.upperBound])
            }
            return Date(timeIntervalSinceReferenceDate: Double.random(in: -6.3e10 ... 2.5e11, using: &rng))
        }
        mutating func data() -> Data {
            if chance(0.3) { return pick([Data(), Data([0]), Data([0xFF, 0x00, 0xFE])]) }
            return Data((0..<Int.random(in: 0...40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        }
        mutating func uuid() -> UUID {
            var bytes = [UInt8](repeating: 0, count: 16)
            for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255, using: &rng) }
            if chance(0.1) { bytes = [UInt8](repeating: 0, count: 16) }
            return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                               bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
        }
        mutating func url() -> URL {
            URL(string: pick(["https://example.com/", "https://example.com/a%20b?q=%C3%BC&x=1#frag", "http://[::1]:8080/p",
                              "mailto:someone@example.com", "file:///tmp/x%20y", "urn:isbn:0451450523", "tether:a",
                              "https://user:pw@host.example:1/\(Int.random(in: 0...999, using: &rng))"]))!
        }
        mutating func decimal() -> Decimal {
            if chance(0.5) {
                return Decimal(string: pick(["0", "12.30", "-0.000001", "99999999999999999999999999999999999999",
                                             "-12345678901234567890.123456789", "1e100", "1e-100", "0.1", "3.14159265358979323846"]),
                               locale: Locale(identifier: "en_US_POSIX"))!
            }
            return Decimal(Int64.random(in: -1_000_000_000_000 ... 1_000_000_000_000, using: &rng))
                / Decimal(sign: .plus, exponent: Int.random(in: 0...12, using: &rng), significand: 1)
        }

        mutating func list<T>(_ make: (inout Generator) -> T) -> [T] {
            (0..<(chance(0.2) ? 0 : Int.random(in: 1...5, using: &rng))).map { _ in make(&self) }
        }
        /// Map keys: none canonically equivalent to another (a Swift dictionary would merge them).
        mutating func keyed<T>(_ make: (inout Generator) -> T) -> [String: T] {
            var map: [String: T] = [:]
            for _ in 0..<Int.random(in: 0...4, using: &rng) {
                map[pick(["", "a", "order_id", "ü", "日本", "key with space", "😀", "q\"uote", "nul\u{0}"])] = make(&self)
            }
            return map
        }
        mutating func json(depth: Int = 0) -> JSON {
            switch Int.random(in: 0...(depth > 2 ? 4 : 6), using: &rng) {
            case 0: return .null
            case 1: return .bool(chance(0.5))
            case 2: return .int(int64())
            case 3: return .double(double())
            case 4: return .string(string())
            case 5: return .array((0..<Int.random(in: 0...3, using: &rng)).map { _ in json(depth: depth + 1) })
            default: return .object(keyed { $0.json(depth: depth + 1) })
            }
        }

        mutating func sample(id: Int64) -> Sample {
            Sample(
                id: id, int: Int(int64()), i8: fixed(Int8.self), i16: fixed(Int16.self), i32: fixed(Int32.self), i64: int64(),
                u8: fixed(UInt8.self), u16: fixed(UInt16.self), u32: fixed(UInt32.self),
                double: double(), float: float(), bool: chance(0.5), string: string(), date: date(), data: data(),
                uuid: uuid(), url: url(), decimal: decimal(), mood: pick(Mood.allCases), level: pick(Level.allCases),
                temperature: Celsius(double()),
                oInt: maybe { Int($0.int64()) }, oI16: maybe { $0.fixed(Int16.self) }, oI32: maybe { $0.fixed(Int32.self) },
                oI64: maybe { $0.int64() }, oU32: maybe { $0.fixed(UInt32.self) }, oDouble: maybe { $0.double() },
                oFloat: maybe { $0.float() }, oBool: maybe { $0.chance(0.5) }, oString: maybe { $0.string() },
                oDate: maybe { $0.date() }, oData: maybe { $0.data() }, oUUID: maybe { $0.uuid() }, oURL: maybe { $0.url() },
                oDecimal: maybe { $0.decimal() }, oMood: maybe { $0.pick(Mood.allCases) }, oLevel: maybe { $0.pick(Level.allCases) },
                oTemperature: maybe { Celsius($0.double()) },
                topics: list { $0.string() }, votes: list { Int($0.int64()) }, flags: list { $0.chance(0.5) },
                oRatios: maybe { $0.list { $0.double() } }, oStamps: maybe { $0.list { $0.date() } },
                metadata: keyed { $0.string() }, oCounts: maybe { $0.keyed { $0.int64() } },
                oRaw: maybe { g in
                    // A top-level null is no value (it clears the attribute).
                    let value = g.json()
                    return value == .null ? .object([:]) : value
                })
        }
    }

    /// One generated data set: owners, samples (attributes only), and who links to whom.
    struct World {
        var owners: [Owner] = []          // attributes only
        var samples: [Sample] = []        // attributes only
        var ownerOf: [Int64: String] = [:]
        var tagsOf: [Int64: [Tag]] = [:]  // attributes only, in order

        init(seed: UInt64) {
            var g = Generator(rng: SeededRandom(seed: seed))
            let ownerCount = Int.random(in: 0...5, using: &g.rng)
            var ownerIDs = Set<String>()
            while ownerIDs.count < ownerCount { ownerIDs.insert(g.chance(0.3) ? g.pick(["ö", "🦆", "id 1", "x"]) + "\(ownerIDs.count)" : "o\(Int.random(in: 0...999_999, using: &g.rng))") }
            owners = ownerIDs.sorted().map { Owner(id: $0, name: g.maybe { $0.string() }) }
            var sampleIDs = Set<Int64>()
            let sampleCount = Int.random(in: 1...12, using: &g.rng)
            while sampleIDs.count < sampleCount { sampleIDs.insert(g.chance(0.3) ? g.pick([Int64.min, Int64.max, 0, -1]) : Int64.random(in: -1000...1000, using: &g.rng)) }
            var nextTag: Int64 = Int64.random(in: -100...100, using: &g.rng)
            for id in sampleIDs.sorted() {
                samples.append(g.sample(id: id))
                if !owners.isEmpty, g.chance(0.7) { ownerOf[id] = g.pick(owners).id }
                var tags: [Tag] = []
                for _ in 0..<(g.chance(0.3) ? 0 : Int.random(in: 1...4, using: &g.rng)) {
                    nextTag += Int64.random(in: 1...5, using: &g.rng)
                    tags.append(Tag(id: nextTag, label: g.maybe { $0.string() }))
                }
                tags.shuffle(using: &g.rng)   // payload order is not identity order
                tagsOf[id] = tags
            }
        }

        func owner(_ id: String) -> Owner { owners.first { $0.id == id }! }

        /// What a depth-1 fetch of each entity should give, in identity order.
        var expectedSamples: [Sample] {
            samples.map { s in
                var s = s
                s.owner = ownerOf[s.id].map(owner)
                s.tags = tagsOf[s.id] ?? []
                return s
            }
        }
        var expectedSamplesDepth2: [Sample] {
            samples.map { s in
                var s = s
                s.owner = ownerOf[s.id].map { o in
                    var o = owner(o)
                    o.samples = samples.filter { ownerOf[$0.id] == o.id }
                    return o
                }
                s.tags = (tagsOf[s.id] ?? []).map { t in var t = t; t.sample = samples.first { $0.id == s.id }; return t }
                return s
            }
        }
        var expectedOwners: [Owner] {
            owners.map { o in
                var o = o
                o.samples = samples.filter { ownerOf[$0.id] == o.id }   // samples are in id order
                return o
            }
        }
        var expectedTags: [Tag] {
            samples.flatMap { s in (tagsOf[s.id] ?? []).map { t in var t = t; t.sample = s; return t } }.sorted { $0.id < $1.id }
        }

        // MARK: JSON

        func json(_ owner: Owner) -> String {
            var fields = [#""id":\#(quote(owner.id))"#]
            if let name = owner.name { fields.append(#""name":\#(quote(name))"#) }
            return "{" + fields.joined(separator: ",") + "}"
        }

        func json(_ s: Sample) -> String {
            var f: [String] = []
            func put(_ key: String, _ value: String?) { f.append("\"\(key)\":\(value ?? "null")") }
            put("id", "\(s.id)"); put("int", "\(s.int)"); put("i8", "\(s.i8)"); put("i16", "\(s.i16)"); put("i32", "\(s.i32)")
            put("i64", "\(s.i64)"); put("u8", "\(s.u8)"); put("u16", "\(s.u16)"); put("u32", "\(s.u32)")
            put("double", "\(s.double)"); put("float", "\(s.float)"); put("bool", "\(s.bool)"); put("string", quote(s.string))
            put("date", date(s.date)); put("data", quote(s.data.base64EncodedString())); put("uuid", quote(s.uuid.uuidString))
            put("url", quote(s.url.absoluteString)); put("decimal", quote("\(s.decimal)")); put("mood", quote(s.mood.rawValue))
            put("level", "\(s.level.rawValue)"); put("temperature", "\(s.temperature.value)")
            put("oInt", s.oInt.map { "\($0)" }); put("oI16", s.oI16.map { "\($0)" }); put("oI32", s.oI32.map { "\($0)" })
            put("oI64", s.oI64.map { "\($0)" }); put("oU32", s.oU32.map { "\($0)" }); put("oDouble", s.oDouble.map { "\($0)" })
            put("oFloat", s.oFloat.map { "\($0)" }); put("oBool", s.oBool.map { "\($0)" }); put("oString", s.oString.map(quote))
            put("oDate", s.oDate.map(date)); put("oData", s.oData.map { quote($0.base64EncodedString()) })
            put("oUUID", s.oUUID.map { quote($0.uuidString) }); put("oURL", s.oURL.map { quote($0.absoluteString) })
            put("oDecimal", s.oDecimal.map { quote("\($0)") }); put("oMood", s.oMood.map { quote($0.rawValue) })
            put("oLevel", s.oLevel.map { "\($0.rawValue)" }); put("oTemperature", s.oTemperature.map { "\($0.value)" })
            func array<T>(_ values: [T], _ element: (T) -> String) -> String { "[" + values.map(element).joined(separator: ",") + "]" }
            func object<T>(_ values: [String: T], _ element: (T) -> String) -> String {
                "{" + values.map { quote($0.key) + ":" + element($0.value) }.joined(separator: ",") + "}"
            }
            put("topics", array(s.topics, quote)); put("votes", array(s.votes) { "\($0)" }); put("flags", array(s.flags) { "\($0)" })
            put("oRatios", s.oRatios.map { array($0) { "\($0)" } }); put("oStamps", s.oStamps.map { array($0, date) })
            put("metadata", object(s.metadata, quote)); put("oCounts", s.oCounts.map { object($0) { "\($0)" } })
            put("oRaw", s.oRaw.map(\.description))
            if let o = ownerOf[s.id] { put("owner", json(owner(o))) }
            put("tags", "[" + (tagsOf[s.id] ?? []).map { t in
                "{\"id\":\(t.id)" + (t.label.map { ",\"label\":\(quote($0))" } ?? "") + "}"
            }.joined(separator: ",") + "]")
            return "{" + f.joined(separator: ",") + "}"
        }

        /// A date as DateDecoding.default reads it: ISO 8601 with milliseconds when the date is a
        /// whole number of them, Unix seconds otherwise.
        func date(_ d: Date) -> String {
            let ms = (d.timeIntervalSince1970 * 1000).rounded()
            guard Date(timeIntervalSince1970: ms / 1000) == d, let whole = Int64(exactly: ms) else { return "\(d.timeIntervalSince1970)" }
            return quote(Self.iso8601(milliseconds: whole))
        }

        /// Proleptic Gregorian ISO 8601 (UTC) of a count of milliseconds since 1970.
        static func iso8601(milliseconds: Int64) -> String {
            func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }
            let seconds = floorDiv(milliseconds, 1000), fraction = milliseconds - seconds * 1000
            let days = floorDiv(seconds, 86400), secondOfDay = seconds - days * 86400
            let z = days + 719_468
            let era = floorDiv(z, 146_097)
            let doe = z - era * 146_097
            let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
            let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
            let mp = (5 * doy + 2) / 153
            let day = doy - (153 * mp + 2) / 5 + 1
            let month = mp < 10 ? mp + 3 : mp - 9
            let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
            func pad(_ v: Int64, _ n: Int) -> String { String(repeating: "0", count: max(0, n - String(v).count)) + String(v) }
            return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2)).\(pad(fraction, 3))Z"
        }

        func quote(_ s: String) -> String { String(decoding: try! JSONEncoder().encode(s), as: UTF8.self) }
    }

    // MARK: Checks

    static var seeds: [UInt64] {
        let env = ProcessInfo.processInfo.environment
        if let one = env["TETHER_TYPED_SEED"].flatMap(UInt64.init) { return [one] }
        return Array(1...UInt64(env["TETHER_TYPED_SEEDS"].flatMap(Int.init) ?? 6))
    }

    static let models: [any EntityModel.Type] = [Owner.self, Sample.self, Tag.self]

    /// Fetches all three entities at depth 1 and compares them with the world; also compares the
    /// sign of zeros (which `==` does not see).
    static func check(_ client: Client, _ world: World, _ label: String, seed: UInt64, keepsZeroSign: Bool) async throws {
        let samples = try await client.fetch(Sample.self, sortedBy: [.ascending(\.id)])
        let expected = world.expectedSamples
        #expect(samples.count == expected.count, "seed \(seed) \(label): sample count")
        for (got, want) in zip(samples, expected) {
            #expect(got == want, "seed \(seed) \(label): sample \(want.id)\n\(diff(got, want))")
            // String == is canonical equivalence; the stores keep the exact scalars.
            #expect(Array(got.string.utf8) == Array(want.string.utf8) && got.oString.map { Array($0.utf8) } == want.oString.map { Array($0.utf8) },
                    "seed \(seed) \(label): string bytes of sample \(want.id)")
            // Docs/Stores.md: on SQLite "-0.0 reads back as 0.0 (equal to it)".
            #expect(!keepsZeroSign || (got.double.sign == want.double.sign && got.float.sign == want.float.sign),
                    "seed \(seed) \(label): sign of zero in sample \(want.id): \(got.double)/\(want.double) \(got.float)/\(want.float)")
        }
        var owners = try await client.fetch(Owner.self, sortedBy: [.ascending(\.id)])
        for i in owners.indices { owners[i].samples.sort { $0.id < $1.id } }   // unordered to-many
        #expect(owners == world.expectedOwners.sorted { $0.id < $1.id }, "seed \(seed) \(label): owners")
        let tags = try await client.fetch(Tag.self, sortedBy: [.ascending(\.id)])
        #expect(tags == world.expectedTags, "seed \(seed) \(label): tags")

        // depth 0: attributes only; depth 2: the related models' relationships too
        let flat = try await client.fetch(Sample.self, sortedBy: [.ascending(\.id)], depth: 0)
        #expect(flat == world.samples, "seed \(seed) \(label): depth 0")
        var deep = try await client.fetch(Sample.self, sortedBy: [.ascending(\.id)], depth: 2)
        for i in deep.indices { deep[i].owner?.samples.sort { $0.id < $1.id } }
        #expect(deep == world.expectedSamplesDepth2, "seed \(seed) \(label): depth 2")

        // by identity (extreme integers, non-ASCII strings)
        for want in expected.prefix(4) {
            let got = try await client.model(Sample.self, identity: want.id)
            #expect(got == want, "seed \(seed) \(label): model(identity: \(want.id))")
        }
        for want in world.expectedOwners.prefix(3) {
            var got = try await client.model(Owner.self, identity: want.id)
            got?.samples.sort { $0.id < $1.id }
            #expect(got == want, "seed \(seed) \(label): model(identity: \(want.id))")
        }
    }

    /// The properties that differ, for the failure message.
    static func diff(_ a: Sample, _ b: Sample) -> String {
        let ma = Mirror(reflecting: a).children, mb = Mirror(reflecting: b).children
        func show(_ v: Any) -> String {
            if let d = v as? Date { return "\(d.timeIntervalSinceReferenceDate) (\(d))" }
            if let d = v as? Date? { return d.map { "\($0.timeIntervalSinceReferenceDate) (\($0))" } ?? "nil" }
            return "\(v)"
        }
        return zip(ma, mb).compactMap { x, y in
            show(x.value) == show(y.value) ? nil : "  \(x.label ?? "?"): got \(show(x.value)) want \(show(y.value))"
        }.joined(separator: "\n")
    }

    /// Imports the world as JSON, checks; then writes new attribute values with `updateLocally`
    /// (dates anywhere, nil clearing optionals), checks again.
    static func roundTrip(_ make: () throws -> Client, reopen: (() throws -> Client)?, seed: UInt64) async throws {
        let zeros = reopen == nil
        var world = World(seed: seed)
        let client = try make()
        if !world.owners.isEmpty {
            try await client.import(Data(("[" + world.owners.map(world.json).joined(separator: ",") + "]").utf8), as: Owner.self)
        }
        let payload = "[" + world.samples.map(world.json).joined(separator: ",") + "]"
        if ProcessInfo.processInfo.environment["TETHER_TYPED_PRINT"] != nil { print(payload) }
        let imported = try await client.import(Data(payload.utf8), as: Sample.self)
        #expect(imported == world.expectedSamples, "seed \(seed): models returned by import")
        try await check(client, world, "after import", seed: seed, keepsZeroSign: zeros)

        var g = Generator(rng: SeededRandom(seed: seed ^ 0xA5A5_A5A5), jsonSafe: false)
        for i in world.samples.indices {
            world.samples[i] = g.sample(id: world.samples[i].id)
            var model = world.samples[i]
            model.owner = world.ownerOf[model.id].map(world.owner)
            try await client.updateLocally(model)
        }
        try await check(client, world, "after updateLocally", seed: seed, keepsZeroSign: zeros)
        if let reopen { try await check(try reopen(), world, "after reopen", seed: seed, keepsZeroSign: zeros) }
    }

    @Test func inMemoryStore() async throws {
        for seed in Self.seeds {
            try await Self.roundTrip({ try Client.Builder(models: Self.models).build() }, reopen: nil, seed: seed)
        }
    }

    @Test func sqliteStoreAndReopen() async throws {
        for seed in Self.seeds {
            let directory = try TemporaryDirectory()
            let make = { try Client.Builder(models: Self.models).store(try SQLiteStore(path: directory.path())).build() }
            try await Self.roundTrip(make, reopen: make, seed: seed)
        }
    }
}

