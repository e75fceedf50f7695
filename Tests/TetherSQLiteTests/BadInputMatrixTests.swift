import Foundation
import Testing
import Tether
import TetherSQLite

/// Issue 18, "the suite that keeps them out": hostile and careless payloads imported into a SQLite
/// file that already holds data. Every case ends in a structured answer — a `JSONParseError` with
/// its byte offset, an `ImportError` with its JSON path, or a diagnostic with its path — and when
/// the import is rejected (or changes nothing) the database file is byte for byte what it was
/// (compared after `close()`, which checkpoints the log into the file).
///
/// Every case runs twice: from bytes (`import(_:as:)`) and streamed from a file
/// (`import(contentsOf:as:)`), and under both policies (`.report`, `.fail`).
@Suite struct BadInputMatrixTests {
    static let schema = try! Schema {
        Entity("Thing", identity: "id") {
            Attribute("id", .int64)
            Attribute("string", .string)
            Attribute("int16", .int16)
            Attribute("int32", .int32)
            Attribute("int64", .int64)
            Attribute("double", .double)
            Attribute("float", .float)
            Attribute("decimal", .decimal)
            Attribute("bool", .bool)
            Attribute("date", .date)
            Attribute("data", .data)
            Attribute("uuid", .uuid)
            Attribute("url", .url)
            Relationship.toOne("owner", "Person", inverse: "things")
        }
        Entity("Person", identity: "id") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Relationship.toMany("things", "Thing", inverse: "owner")
        }
    }

    /// What every file holds before the bad import: 20 things with every attribute set, 4 owners.
    static let seed: Data = {
        let things = (1...20).map { i in
            #"{"id": \#(i), "string": "thing \#(i)", "int16": \#(i), "int32": \#(i * 1000), "int64": \#(i * 1_000_000_000), "#
                + #""double": \#(Double(i) + 0.5), "float": 0.25, "decimal": "12.34", "bool": \#(i % 2 == 0), "#
                + #""date": "2011-01-26T19:01:12Z", "data": "AAEC", "uuid": "123E4567-E89B-12D3-A456-426614174000", "#
                + #""url": "https://example.com/\#(i)", "owner": {"id": \#(i % 4), "name": "owner \#(i % 4)"}}"#
        }
        return Data(("[" + things.joined(separator: ",\n") + "]").utf8)
    }()

    // MARK: The file

    /// A SQLite file holding the seed, closed, and its bytes at that point.
    struct SeededFile {
        let directory: TemporaryDirectory
        let bytes: Data
        var path: String { directory.path() }

        static func make() async throws -> SeededFile {
            let directory = try TemporaryDirectory()
            let store = try SQLiteStore(path: directory.path())
            let client = try Client.Builder(schema: BadInputMatrixTests.schema).store(store).build()
            let result = try await client.import(BadInputMatrixTests.seed, as: "Thing")
            precondition(result.diagnostics.isEmpty && result.inserted.count == 24, "the seed imports cleanly")
            store.close()
            return SeededFile(directory: directory, bytes: try Data(contentsOf: URL(fileURLWithPath: directory.path())))
        }

        /// Opens the file, runs `body` with a client over it, and closes the store (checkpointing
        /// the log into the file), whatever `body` did.
        func withClient<T>(_ body: (Client) async -> T) async throws -> T {
            let store = try SQLiteStore(path: path)
            let client = try Client.Builder(schema: BadInputMatrixTests.schema).store(store).build()
            let result = await body(client)
            store.close()
            return result
        }

        /// Whether the file is byte for byte what the seed left, with no log beside it.
        var isUnchanged: Bool {
            (try? Data(contentsOf: URL(fileURLWithPath: path))) == bytes
                && !FileManager.default.fileExists(atPath: path + "-wal")
        }

        /// The stored `Thing` with identity `id`, read from the closed file.
        func thing(_ id: Int64) async throws -> Object? {
            try await withClient { client in try? await client.object("Thing", identity: .int(id)) }
        }
    }

    enum Route: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// `client.import(data, as:)`.
        case bytes
        /// `client.import(contentsOf: file, as:)`, streamed.
        case file
        var testDescription: String { rawValue }
    }

    static func run(
        _ payload: Data, route: Route, policy: ImportOptions.Policy, on file: SeededFile
    ) async throws -> Result<ImportResult, any Error> {
        let scratch = try TemporaryDirectory()
        let payloadURL = scratch.url.appendingPathComponent("payload.json")
        if route == .file { try payload.write(to: payloadURL) }
        return try await file.withClient { client in
            do {
                switch route {
                case .bytes: return .success(try await client.import(payload, as: "Thing", options: ImportOptions(policy: policy)))
                case .file: return .success(try await client.import(contentsOf: payloadURL, as: "Thing", options: ImportOptions(policy: policy)))
                }
            } catch {
                return .failure(error)
            }
        }
    }

    // MARK: The cases

    enum Expected: Sendable {
        /// A `JSONParseError` at this byte offset (nil: somewhere in the payload).
        case parseError(Int?)
        /// An `ImportError` at this path, under either policy.
        case importError(String)
        /// Under `.report`, imported with exactly these diagnostics (paths) and nothing else to
        /// write; under `.fail`, an `ImportError` at the first. The file is unchanged either way.
        case skipped([String])
        /// Imported without diagnostics, and nothing changed.
        case unchanged
        /// Imported without diagnostics; the `Thing` `id` now has `value` for `attribute`.
        case stored(id: Int64, String, Value)

        var dependsOnPolicy: Bool {
            if case .skipped = self { return true }
            return false
        }
    }

    struct BadInput: Sendable, CustomTestStringConvertible {
        let name: String
        let payload: @Sendable () -> Data
        let expected: Expected
        /// Megabytes: run under one policy only, unless the policy matters.
        var huge = false
        var testDescription: String { name }

        /// `text` with `«EF BB BF»` standing for raw bytes (hex) and `¦` marking the offset a
        /// `JSONParseError` must report.
        init(_ name: String, _ text: String) {
            let (data, offset) = BadInput.bytes(text)
            self.name = name
            self.payload = { data }
            self.expected = .parseError(offset)
        }

        init(_ name: String, _ text: String, _ expected: Expected) {
            let (data, _) = BadInput.bytes(text)
            self.name = name
            self.payload = { data }
            self.expected = expected
        }

        init(_ name: String, expected: Expected, _ payload: @escaping @Sendable () -> Data) {
            self.name = name
            self.payload = payload
            self.expected = expected
            self.huge = true
        }

        static func bytes(_ text: String) -> (Data, Int?) {
            var bytes: [UInt8] = []
            var offset: Int?
            var hex: String?
            for character in text.unicodeScalars {
                if var digits = hex {
                    if character == "»" {
                        for pair in digits.split(separator: " ") { bytes.append(UInt8(pair, radix: 16)!) }
                        hex = nil
                    } else {
                        digits.unicodeScalars.append(character)
                        hex = digits
                    }
                } else if character == "«" {
                    hex = ""
                } else if character == "¦" {
                    offset = bytes.count
                } else {
                    bytes.append(contentsOf: String(character).utf8)
                }
            }
            return (Data(bytes), offset)
        }
    }

    /// Nested arrays (or objects) `depth` levels deep.
    static func nested(_ depth: Int, objects: Bool) -> String {
        objects
            ? String(repeating: #"{"a":"#, count: depth) + "1" + String(repeating: "}", count: depth)
            : String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
    }

    /// The offset of the first `[` or `{` (outside strings) that opens level 513.
    static func offsetPastMaximumDepth(_ data: Data) -> Int? {
        var depth = 0
        var inString = false
        var escaped = false
        for (i, byte) in data.enumerated() {
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > JSONParser.maximumDepth { return i }
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
        return nil
    }

    static func deep(_ name: String, _ prefix: String, _ depth: Int, objects: Bool, _ suffix: String, expected: Expected? = nil) -> BadInput {
        let data = Data((prefix + nested(depth, objects: objects) + suffix).utf8)
        return BadInput(name, expected: expected ?? .parseError(offsetPastMaximumDepth(data))) { data }
    }

    /// Tens of megabytes: large enough to cross every buffer and chunk (1 MiB), small enough for CI.
    static let hugeLength = 16 << 20

    static let cases: [BadInput] = [
        // Truncated
        BadInput("truncated in an object", #"[{"id":1,"string":"a"¦"#),
        BadInput("truncated in a string", #"[{"id":1,"string":¦"abc"#),
        BadInput("truncated in a literal", #"[{"id":1,"bool":¦tru"#),
        BadInput("truncated after a number", #"[{"id":1¦"#),
        BadInput("truncated in a unicode escape", #"[{"id":1,"string":"¦\u00"#),
        BadInput("truncated after a comma", #"[{"id":1},¦"#),
        BadInput("truncated in a UTF-8 sequence", #"[{"id":1,"string":"¦«C3»"#),
        BadInput("truncated after [", #"[¦"#),
        BadInput("truncated after a decimal point", #"[{"id":1,"double":1.¦"#),
        BadInput("truncated in an exponent", #"[{"id":1,"double":1e¦"#),
        BadInput("truncated after a minus", #"[{"id":1,"double":-¦"#),
        BadInput("truncated top-level object", #"{"id":1,"string":"a"¦"#),

        // Invalid UTF-8
        BadInput("invalid UTF-8 in a value", #"[{"id":1,"string":"a¦«FF»b"}]"#),
        BadInput("invalid UTF-8 in a key", #"[{"id":1,"str¦«FF»ing":"a"}]"#),
        BadInput("overlong UTF-8 NUL", #"[{"id":1,"string":"¦«C0 80»"}]"#),
        BadInput("UTF-8 encoded surrogate", #"[{"id":1,"string":"¦«ED A0 80»"}]"#),
        BadInput("UTF-8 beyond U+10FFFF", #"[{"id":1,"string":"¦«F4 90 80 80»"}]"#),
        BadInput("bare continuation byte", #"[{"id":1,"string":"¦«80»"}]"#),
        BadInput("invalid byte between elements", #"[{"id":1}¦«FF»]"#),
        BadInput("Latin-1 text", #"[{"id":1,"string":"caf¦«E9»"}]"#),
        BadInput("4-byte sequence cut short", #"[{"id":1,"string":"¦«F0 9F 98»"}]"#),

        // Nesting (JSONParser.maximumDepth is 512)
        deep("100k nested arrays in a value", #"[{"id":1,"string":"#, 100_000, objects: false, "}]"),
        deep("100k nested objects in a value", #"[{"id":1,"string":"#, 100_000, objects: true, "}]"),
        deep("100k nested arrays at the top", "", 100_000, objects: false, ""),
        deep("100k nested objects at the top", "", 100_000, objects: true, ""),
        BadInput("100k unclosed arrays", expected: .parseError(JSONParser.maximumDepth)) { Data(String(repeating: "[", count: 100_000).utf8) },
        deep("513 levels in an element", #"[{"id":1,"string":"#, 511, objects: false, "}]"),
        deep("512 levels in an element", #"[{"id":1,"string":"#, 510, objects: false, "}]", expected: .skipped(["$[0].string"])),

        // Numbers
        BadInput("1e400", #"[{"id":1,"double":¦1e400}]"#),
        BadInput("-1e400", #"[{"id":1,"double":¦-1e400}]"#),
        BadInput("a 400-digit integer", #"[{"id":1,"int64":¦1"# + String(repeating: "0", count: 400) + "}]"),
        BadInput("a 10 MB integer", expected: .parseError(17)) { Data((#"[{"id":1,"int64":"# + String(repeating: "9", count: 10 << 20) + "}]").utf8) },
        BadInput("1e-400 underflows to zero", #"[{"id":1,"double":1e-400}]"#, .stored(id: 1, "double", .double(0))),
        BadInput("an int64 beyond Int64", #"[{"id":1,"int64":99999999999999999999}]"#, .skipped(["$[0].int64"])),
        BadInput("an int16 beyond Int16", #"[{"id":1,"int16":70000}]"#, .skipped(["$[0].int16"])),
        BadInput("an identity of 2^63", #"[{"id":9223372036854775808,"string":"x"}]"#, .skipped(["$[0].id"])),
        BadInput("an identity below Int64.min", #"[{"id":-9223372036854775809,"string":"x"}]"#, .skipped(["$[0].id"])),
        BadInput("an identity of 2^53 + 1 as a double", #"[{"id":9007199254740993.0,"string":"x"}]"#, .skipped(["$[0].id"])),
        BadInput("an identity of 1.5", #"[{"id":1.5,"string":"x"}]"#, .skipped(["$[0].id"])),
        BadInput("an identity of true", #"[{"id":true,"string":"x"}]"#, .skipped(["$[0].id"])),
        BadInput("an identity of null", #"[{"id":null,"string":"x"}]"#, .skipped(["$[0].id"])),
        BadInput("an identity that is an array", #"[{"id":[1],"string":"x"}]"#, .skipped(["$[0].id"])),
        BadInput("an identity that is an object", #"[{"id":{"id":1},"string":"x"}]"#, .skipped(["$[0].id"])),
        BadInput("a numeric string identity", #"[{"id":"1","string":"thing 1"}]"#, .unchanged),
        BadInput("a nested object without identity", #"[{"id":1,"owner":{"name":"no id"}}]"#, .skipped(["$[0].owner.id"])),
        BadInput("a nested identity of the wrong type", #"[{"id":1,"owner":{"id":false}}]"#, .skipped(["$[0].owner.id"])),

        // Huge strings (tens of MB)
        BadInput("a 16 MB string", expected: .stored(id: 1, "string", .string(String(repeating: "x", count: hugeLength)))) {
            Data((#"[{"id":1,"string":""# + String(repeating: "x", count: hugeLength) + #""}]"#).utf8)
        },
        BadInput("a 16 MB string of escapes", expected: .stored(id: 2, "string", .string(String(repeating: "é\n", count: 2 << 20)))) {
            Data((#"[{"id":2,"string":""# + String(repeating: #"\u00e9\n"#, count: 2 << 20) + #""}]"#).utf8)
        },
        BadInput("an unterminated 16 MB string", expected: .parseError(18)) {
            Data((#"[{"id":1,"string":""# + String(repeating: "x", count: hugeLength)).utf8)
        },
        BadInput("a 16 MB string ending in an invalid byte", expected: .parseError(19 + hugeLength)) {
            Data((#"[{"id":1,"string":""# + String(repeating: "x", count: hugeLength)).utf8) + Data([0xFF]) + Data(#""}]"#.utf8)
        },
        BadInput("a 16 MB string for an int64", expected: .skipped(["$[0].int64"])) {
            Data((#"[{"id":1,"int64":""# + String(repeating: "7", count: hugeLength) + #""}]"#).utf8)
        },
        // An object of its identity and a key of no attribute: not in the mapping's shape (issue 39).
        BadInput("a 16 MB key", expected: .skipped(["$[0]"])) {
            Data((#"[{"id":1,""# + String(repeating: "k", count: hugeLength) + #"":1}]"#).utf8)
        },

        // Duplicate keys: the last occurrence wins
        BadInput("a duplicate key", #"[{"id":1,"string":"first","string":"second"}]"#, .stored(id: 1, "string", .string("second"))),
        BadInput("a duplicate key whose last value is wrong", #"[{"id":1,"int64":5,"int64":"bad"}]"#, .skipped(["$[0].int64"])),
        BadInput("a duplicate key whose first value is wrong", #"[{"id":1,"int64":"bad","int64":5}]"#, .stored(id: 1, "int64", .int(5))),
        BadInput("a duplicate identity key", #"[{"id":1,"id":2,"string":"dup"}]"#, .stored(id: 2, "string", .string("dup"))),
        BadInput("a repeated object", #"[{"id":1,"string":"a"},{"id":1,"string":"b"}]"#, .stored(id: 1, "string", .string("b"))),

        // Byte order marks: one leading UTF-8 BOM is skipped (RFC 8259 §8.1), nothing else
        BadInput("a leading BOM", #"«EF BB BF»[{"id":1,"string":"bom"}]"#, .stored(id: 1, "string", .string("bom"))),
        BadInput("two leading BOMs", #"«EF BB BF»¦«EF BB BF»[{"id":1}]"#),
        BadInput("a BOM after [", #"[¦«EF BB BF»{"id":1}]"#),
        BadInput("a BOM before the second element", #"[{"id":1},¦«EF BB BF»{"id":2}]"#),
        BadInput("a BOM after the array", #"[{"id":1}]¦«EF BB BF»"#),
        BadInput("a UTF-16 BOM and text", #"¦«FF FE»[«00»{«00»}«00»]«00»"#),
        BadInput("UTF-16 text without a BOM", #"¦«00»[«00»]"#),
        BadInput("a BOM inside a string", #"[{"id":1,"string":"«EF BB BF»x"}]"#, .stored(id: 1, "string", .string("\u{FEFF}x"))),

        // Empty bodies
        BadInput("an empty body", #"¦"#),
        BadInput("whitespace only", " \n\t ¦"),
        BadInput("a BOM only", #"«EF BB BF»¦"#),
        BadInput("an empty array", "[]", .unchanged),
        BadInput("an empty object", "{}", .importError("$")),  // not an object of the entity, nor a declared envelope
        BadInput("an array of an empty object", "[{}]", .skipped(["$[0].id"])),
        BadInput("null", "null", .unchanged),

        // Top-level scalars and elements that are not objects
        BadInput("a top-level number", "42", .importError("$")),
        BadInput("a top-level string", #""thing""#, .importError("$")),
        BadInput("a top-level true", "true", .importError("$")),
        BadInput("a top-level double", "-1.5e3", .importError("$")),
        BadInput("an array of a number", "[1]", .importError("$[0]")),
        BadInput("an array of an array", #"[[{"id":1}]]"#, .importError("$[0]")),
        BadInput("a colon in an array", #"[1¦:]"#),

        // NaN and Infinity are not JSON
        BadInput("NaN", #"[{"id":1,"double":¦NaN}]"#),
        BadInput("Infinity", #"[{"id":1,"double":¦Infinity}]"#),
        BadInput("-Infinity", #"[{"id":1,"double":-¦Infinity}]"#),
        BadInput("nan", #"[{"id":1,"double":¦nan}]"#),
        BadInput("inf", #"[{"id":1,"double":¦inf}]"#),
        BadInput("+1", #"[{"id":1,"double":¦+1}]"#),
        BadInput(".5", #"[{"id":1,"double":¦.5}]"#),
        BadInput("a leading zero", #"[{"id":1,"double":¦01}]"#),
        BadInput("a top-level NaN", #"¦NaN"#),

        // Lone surrogates
        BadInput("a lone high surrogate", #"[{"id":1,"string":"¦\ud800"}]"#),
        BadInput("a lone low surrogate", #"[{"id":1,"string":"¦\udc00"}]"#),
        BadInput("a high surrogate and a letter", #"[{"id":1,"string":"¦\ud800\u0041"}]"#),
        BadInput("two high surrogates", #"[{"id":1,"string":"¦\uD800\uD800"}]"#),
        BadInput("a high surrogate at the end", #"[{"id":1,"string":"¦\ud800"#),
        BadInput("a lone surrogate in a key", #"[{"¦\ud800":1,"id":1}]"#),
        BadInput("a surrogate pair", #"[{"id":1,"string":"\ud83d\ude00"}]"#, .stored(id: 1, "string", .string("😀"))),

        // Wrong values below the top level and after good elements
        BadInput("a wrong type in a nested object", #"[{"id":1,"owner":{"id":1,"name":true}}]"#, .skipped(["$[0].owner.name"])),
        BadInput("an array for a to-one relationship", #"[{"id":1,"owner":[{"id":1}]}]"#, .skipped(["$[0].owner"])),
        BadInput("a wrong type in the second element", #"[{"id":1,"string":"thing 1"},{"id":2,"int16":true}]"#, .skipped(["$[1].int16"])),
    ]

    @Test(arguments: cases, Route.allCases)
    func badInput(_ input: BadInput, route: Route) async throws {
        for policy in [ImportOptions.Policy.report, .fail] {
            // The policy changes nothing for a payload that does not parse or has no problem:
            // the huge ones of those run once.
            if input.huge, policy == .report, !input.expected.dependsOnPolicy { continue }
            try await check(input, route: route, policy: policy)
        }
    }

    func check(_ input: BadInput, route: Route, policy: ImportOptions.Policy) async throws {
        let file = try await SeededFile.make()
        let payload = input.payload()
        let outcome = try await Self.run(payload, route: route, policy: policy, on: file)
        let label = Comment(rawValue: "\(input.name), \(route), \(policy)")
        func failure<E: Error>(_ type: E.Type) -> E? {
            switch outcome {
            case .success(let result):
                Issue.record("\(label): imported (\(result.inserted.count) inserted, \(result.updated.count) updated, diagnostics \(result.diagnostics)), expected \(E.self)")
                return nil
            case .failure(let error as E):
                return error
            case .failure(let error):
                Issue.record("\(label): threw \(Swift.type(of: error)) \(error), expected \(E.self)")
                return nil
            }
        }
        func success() -> ImportResult? {
            switch outcome {
            case .success(let result): return result
            case .failure(let error):
                Issue.record("\(label): threw \(Swift.type(of: error)) \(error), expected an import")
                return nil
            }
        }
        switch input.expected {
        case .parseError(let offset):
            if let error = failure(JSONParseError.self) {
                if let offset {
                    #expect(error.offset == offset, "\(label): \(error)")
                } else {
                    #expect((0...payload.count).contains(error.offset), "\(label): \(error)")
                }
            }
            #expect(file.isUnchanged, "\(label): the file changed")
        case .importError(let path):
            if let error = failure(ImportError.self) {
                #expect(error.path.description == path, "\(label): \(error)")
                #expect(error.entity == "Thing" || error.entity == "Person", "\(label): \(error)")
            }
            #expect(file.isUnchanged, "\(label): the file changed")
        case .skipped(let paths):
            if policy == .fail {
                if let error = failure(ImportError.self) {
                    #expect(error.path.description == paths.first, "\(label): \(error)")
                }
            } else if let result = success() {
                #expect(result.diagnostics.map(\.path.description) == paths, "\(label): \(result.diagnostics.map { String($0.description.prefix(300)) })")
            }
            #expect(file.isUnchanged, "\(label): the file changed")
        case .unchanged:
            if let result = success() {
                #expect(result.diagnostics.isEmpty, "\(label): \(result.diagnostics)")
            }
            #expect(file.isUnchanged, "\(label): the file changed")
        case .stored(let id, let attribute, let value):
            if let result = success() {
                #expect(result.diagnostics.isEmpty, "\(label): \(result.diagnostics)")
            }
            let thing = try await file.thing(id)
            let stored = thing?[attribute]
            #expect(stored == value, "\(label): \(attribute) is \(String(String(describing: stored).prefix(100)))")
            #expect(try await file.withClient { try? await $0.count(Query("Thing")) } == 20, "\(label): no object was added")
        }
    }

    /// The deepest payload the parser accepts (512 levels: a chain of 171 things, each owned by a
    /// person who owns the next) imports on every route, with every link.
    @Test(arguments: Route.allCases)
    func theDeepestAcceptedNestingImports(route: Route) async throws {
        let count = 171
        var text = ""
        for k in 1..<count { text += #"{"id":\#(100 + k),"owner":{"id":\#(1000 + k),"things":["# }
        text += #"{"id":\#(100 + count),"string":"deepest"}"#
        text += String(repeating: "]}}", count: count - 1)
        let payload = Data(("[" + text + "]").utf8)
        #expect(Self.offsetPastMaximumDepth(payload) == nil)
        #expect(Self.offsetPastMaximumDepth(Data(("[[" + text + "]]").utf8)) != nil, "one more level is too deep")
        let file = try await SeededFile.make()
        let outcome = try await Self.run(payload, route: route, policy: .fail, on: file)
        let result = try outcome.get()
        #expect(result.inserted.count == 2 * count - 1)
        try await file.withClient { client in
            do {
                let deepest = try #require(try await client.object("Thing", identity: .int(Int64(100 + count))))
                #expect(deepest["string"] == .string("deepest"))
                let owner = try #require(try await client.related("owner", of: deepest.id).first)
                #expect(owner["id"] == .int(Int64(1000 + count - 1)))
                #expect(try await client.count(Query("Thing")) == 20 + count)
            } catch {
                Issue.record(error)
            }
        }
    }

    // MARK: Wrong types for every attribute type

    /// JSON values that no conversion (strict or lossless) accepts for each attribute type.
    static let wrongValues: [String: [String]] = [
        "string": ["true", "[1]", #"{"a":1}"#],
        "int16": [#""abc""#, "true", "[1]", "{}", "1.5", #""1.5""#, "32768", "-32769", #""70000""#],
        "int32": [#""abc""#, "false", "[]", "{}", "0.5", #""12 ""#, "2147483648", "-2147483649"],
        "int64": [#""abc""#, "true", "[]", "{}", "1.5", "1e19", "9223372036854775808", "-9223372036854775809", "9007199254740993.0", #""1e3""#],
        "double": [#""abc""#, "true", "[]", "{}", #""NaN""#, #""Infinity""#, #""-inf""#, #""1e400""#, #""0x10""#, #"" 1""#],
        "float": [#""abc""#, "false", "[1.5]", "{}", #""nan""#, #""infinity""#, #""1e400""#, "1e39", "-3.5e38", #""1e39""#],
        "decimal": ["true", "[]", "{}", #""abc""#, #""""#],
        "bool": [#""yes""#, "1", "0", #""TRUE""#, "[]", "{}", #""1""#],
        "date": ["true", "[]", "{}", #""not a date""#, "1e19", "-1e19", #""10000-01-01T00:00:00Z""#, #""2011-13-45T99:00:00Z""#],
        "data": ["1", "true", "[]", "{}", #""!!!""#],
        "uuid": ["1", "true", "[]", #""nope""#, #""123e4567-e89b-12d3-a456-42661417400""#],
        "url": ["1", "true", "[]", "{}", #""""#],
    ]

    static let attributeTypes = ["string", "int16", "int32", "int64", "double", "float", "decimal", "bool", "date", "data", "uuid", "url"]

    @Test(arguments: attributeTypes, [ImportOptions.Policy.report, .fail])
    func wrongType(_ attribute: String, policy: ImportOptions.Policy) async throws {
        let file = try await SeededFile.make()
        let before = try #require(try await file.thing(3))
        for value in Self.wrongValues[attribute]! {
            for route in Route.allCases {
                let payload = Data(#"[{"id":3,"\#(attribute)":\#(value)}]"#.utf8)
                let label = Comment(rawValue: "\(attribute) = \(value), \(route), \(policy)")
                let outcome = try await Self.run(payload, route: route, policy: policy, on: file)
                switch (policy, outcome) {
                case (.fail, .failure(let error as ImportError)):
                    #expect(error.path.description == "$[0].\(attribute)", label)
                    #expect(error.entity == "Thing", label)
                    #expect(error.attribute == attribute, label)
                case (.report, .success(let result)):
                    #expect(result.diagnostics.count == 1, "\(label): \(result.diagnostics)")
                    if let diagnostic = result.diagnostics.first {
                        #expect(diagnostic.path.description == "$[0].\(attribute)", label)
                        #expect(diagnostic.attribute == attribute, label)
                        #expect([ImportDiagnostic.Problem.typeMismatch, .invalidValue].contains(diagnostic.problem), label)
                        #expect(diagnostic.action == .valueSkipped, label)
                    }
                    #expect(result.updated.isEmpty && result.inserted.isEmpty, "\(label): \(result.updated.count) updated")
                default:
                    Issue.record("\(label): \(outcome)")
                }
                #expect(file.isUnchanged, "\(label): the file changed")
            }
        }
        #expect(try await file.thing(3) == before)
    }

    // MARK: Every truncation

    /// Every proper prefix of a payload that uses every kind of token is a `JSONParseError` with
    /// an offset inside the prefix, whatever the batch size and route, and leaves the file as it was.
    @Test(arguments: [1, 10_000], Route.allCases)
    func everyTruncation(batchSize: Int, route: Route) async throws {
        let text = #"[{"id":1,"string":"tab\t é \u00e9 \ud83d\ude00 😀","int16":-7,"double":-1.25e-3,"bool":true,"#
            + #""decimal":"1.5","date":"2011-01-26T19:01:12Z","owner":{"id":2,"name":null},"data":"AAEC"},"#
            + #"{"id":2,"int64":9223372036854775807,"float":0.5,"bool":false,"url":"https://example.com/a?b=c"},"#
            + #" {"id":3,"uuid":"123E4567-E89B-12D3-A456-426614174000","owner":{"id":1}} ]"#
        let full = Data(text.utf8)
        let file = try await SeededFile.make()
        let scratch = try TemporaryDirectory()
        let payloadURL = scratch.url.appendingPathComponent("prefix.json")
        let options = ImportOptions(policy: .fail, batchSize: batchSize)
        let problems = try await file.withClient { client -> [String] in
            var problems: [String] = []
            for length in 0..<full.count {
                let prefix = full.prefix(length)
                do {
                    switch route {
                    case .bytes: _ = try await client.import(prefix, as: "Thing", options: options)
                    case .file:
                        try prefix.write(to: payloadURL)
                        _ = try await client.import(contentsOf: payloadURL, as: "Thing", options: options)
                    }
                    problems.append("prefix \(length): imported")
                } catch let error as JSONParseError {
                    if !(0...length).contains(error.offset) { problems.append("prefix \(length): \(error)") }
                } catch {
                    problems.append("prefix \(length): \(type(of: error)) \(error)")
                }
            }
            return problems
        }
        #expect(problems.isEmpty, "\(problems)")
        #expect(file.isUnchanged, "the file changed")
    }
}
