import Foundation
import Testing
@testable import Tether

/// One rule everywhere (issue 18, item 8): strings compare by their UTF-8 bytes in every store and
/// in both import paths; a syntax error is a ``JSONParseError`` whatever the batch size; a
/// streamed file is accepted and rejected exactly as the same bytes in memory.
@Suite struct ConsistencyTests {
    static let composed = "\u{E9}"  // é, one scalar: C3 A9
    static let decomposed = "e\u{301}"  // e + combining acute: 65 CC 81

    static let schema = try! Schema {
        Entity("Tag", identity: "name") {
            Attribute("name", .string)
            Attribute("note", .string)
        }
        Entity("Repository") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Attribute("caf\u{E9}", .string)
        }
    }

    func makeClient(_ options: ImportOptions = ImportOptions()) throws -> Client {
        try Client.Builder(schema: Self.schema).importOptions(options).build()
    }

    // MARK: Strings compare by bytes (a)

    @Test func canonicallyEquivalentStringsAreTwoValues() {
        let a = Value.string(Self.composed), b = Value.string(Self.decomposed)
        #expect(Self.composed == Self.decomposed, "Swift's String equality is canonical equivalence")
        #expect(a != b)
        #expect(Set([a, b]).count == 2)
        #expect(IdentityKey(a) != IdentityKey(b))
        #expect(Value.compare(a, b) == .orderedDescending, "0xC3 sorts after 0x65")
        #expect(Value.compare(b, a) == .orderedAscending)
        #expect(Value.compare(a, .string(Self.composed)) == .orderedSame)
        #expect(a == .string(String(decoding: [0xC3, 0xA9], as: UTF8.self)))
        #expect(a.hashValue == Value.string(String(decoding: [0xC3, 0xA9], as: UTF8.self)).hashValue)
        // Byte order is code point order, also past the BMP and for prefixes.
        #expect(Value.compare(.string("\u{FFFF}"), .string("\u{10000}")) == .orderedAscending)
        #expect(Value.compare(.string("ab"), .string("abc")) == .orderedAscending)
        #expect(Value.compare(.string(""), .string("")) == .orderedSame)
        // The other kinds are unchanged.
        #expect(Value.double(0) == .double(-0.0))
        #expect(Value.double(.nan) != .double(.nan))
        #expect(Value.int(1) != .double(1))
        #expect(Set<Value>([.int(1), .int(1), .bool(true), .string("1")]).count == 3)
    }

    @Test(arguments: [false, true])
    func canonicallyEquivalentIdentitiesAreTwoObjects(tree: Bool) async throws {
        let client = try makeClient()
        let text = #"[{"name":"\u00e9","note":"composed"},{"name":"e\u0301","note":"decomposed"}]"#
        let result = tree
            ? try await client.import(try JSON(parsing: text), as: "Tag")
            : try await client.import(Data(text.utf8), as: "Tag")
        #expect(result.inserted.count == 2)
        #expect(try await client.count(Query("Tag")) == 2)
        let found = try await client.fetch(Query("Tag", where: .equal("name", .string(Self.decomposed))))
        #expect(found.map { $0["note"] } == [.string("decomposed")])
        let sorted = try await client.fetch(Query("Tag", sortedBy: [Sort("name")]))
        #expect(sorted.map { $0["note"] } == [.string("decomposed"), .string("composed")], "by bytes, as SQLite sorts")
        #expect(try await client.count(Query("Tag", where: .in("name", [.string(Self.composed)]))) == 1)
        #expect(try await client.count(Query("Tag", where: .greater("name", .string("e")))) == 2)
    }

    @Test(arguments: [false, true])
    func anotherNormalizationFormIsAChange(tree: Bool) async throws {
        let client = try makeClient()
        func run(_ text: String) async throws -> ImportResult {
            tree ? try await client.import(try JSON(parsing: text), as: "Repository")
                : try await client.import(Data(text.utf8), as: "Repository")
        }
        _ = try await run(#"[{"id":1,"name":"caf\u00e9"}]"#)
        let again = try await run(#"[{"id":1,"name":"caf\u00e9"}]"#)
        #expect(again.unchanged.count == 1)
        let other = try await run(#"[{"id":1,"name":"cafe\u0301"}]"#)
        #expect(other.updated.count == 1)
        let stored = try #require(try await client.fetch(Query("Repository")).first)
        #expect(stored["name"] == .string("cafe\u{301}"))
        if case .string(let s)? = stored["name"] { #expect(Array(s.utf8) == Array("cafe\u{301}".utf8)) }
    }

    /// The attribute `café` is mapped to the key `café` with a composed é: a key written
    /// decomposed is another key, for bytes and for a tree alike.
    @Test(arguments: [false, true])
    func keysMatchByBytes(tree: Bool) async throws {
        let client = try makeClient()
        let text = #"[{"id":1,"caf\u00e9":"composed"},{"id":2,"cafe\u0301":"decomposed"}]"#
        let result = tree
            ? try await client.import(try JSON(parsing: text), as: "Repository")
            : try await client.import(Data(text.utf8), as: "Repository")
        // The second object has its identity and no key of the mapping: reported, not stored as
        // an object of its id alone (issue 39).
        #expect(result.inserted.count == 1)
        #expect(result.diagnostics.map(\.problem) == [.unmappedObject])
        #expect(result.diagnostics.first?.message.contains("cafe\u{301}") == true)
        let objects = try await client.fetch(Query("Repository", sortedBy: [Sort("id")]))
        #expect(objects.map { $0["caf\u{E9}"] } == [.string("composed")])
        // A key in another form is not given: the stored value stays (not cleared, not replaced).
        let again = #"[{"id":1,"cafe\u0301":"other"},{"id":1,"cafe\u0301":null}]"#
        let second = tree
            ? try await client.import(try JSON(parsing: again), as: "Repository")
            : try await client.import(Data(again.utf8), as: "Repository")
        #expect(second.diagnostics.map(\.problem) == [.unmappedObject, .unmappedObject])
        #expect(second.updated.isEmpty && second.inserted.isEmpty)
        #expect(try await client.fetch(Query("Repository", where: .equal("id", .int(1)))).first?["caf\u{E9}"] == .string("composed"))
    }

    @Test func aTreeMemberIsFoundByBytes() {
        let object: JSON = .object(["cafe\u{301}": 1])
        #expect(object.member(ImportKey("cafe\u{301}")) == .int(1))
        #expect(object.member(ImportKey("caf\u{E9}")) == JSON?.none)
        let table = KeyTable([ImportKey("caf\u{E9}"), ImportKey("cafe\u{301}")])
        var found = [JSON?](repeating: nil, count: 2)
        object.members(table, into: &found, at: 0)
        #expect(found == [JSON?.none, .int(1)])
        // On a tape: an escaped key is decoded and compared by bytes too.
        let bytes = Array(#"{"caf\u00e9":1,"cafe\u0301":2}"#.utf8)
        bytes.withUnsafeBufferPointer { buffer in
            let tape = try! JSONTape(parsing: buffer)
            tape.withRoots(bytes: buffer) { roots in
                #expect(roots[0].member(ImportKey("caf\u{E9}"))?.materialize() == .int(1))
                #expect(roots[0].member(ImportKey("cafe\u{301}"))?.materialize() == .int(2))
            }
        }
    }

    // MARK: A syntax error is a JSONParseError whatever the batch size (b)

    static let malformed: [(text: String, offset: Int)] = [
        ("[1:]", 2),
        (#"[{"id":1},{"id":2},{"id":3},{"id":4},{"id":5} {"id":6}]"#, 46),
        (#"["x",{"id":1},{"id":2},{"id":3},{"id":4},{"id":5},]"#, 49),
        (#"[{"id":1,"name":[5]},{"id":2},{"id":3},{"id":4},{"id":5},{"id":6"#, 64),
    ]

    @Test(arguments: [1, 2, 3, 8, 10_000])
    func aSyntaxErrorIsAParseErrorAtEveryBatchSize(batchSize: Int) async throws {
        for (text, offset) in Self.malformed {
            for policy in [ImportOptions.Policy.report, .fail] {
                let client = try makeClient(ImportOptions(policy: policy, batchSize: batchSize))
                _ = try await client.import(Data(#"[{"id":100,"name":"kept"}]"#.utf8), as: "Repository")
                let expected = #expect(throws: JSONParseError.self) { try JSONParser.validate(Data(text.utf8)) }
                #expect(expected?.offset == offset, "\(text)")
                let error = await #expect(throws: JSONParseError.self, "\(text), \(policy), \(batchSize)") {
                    try await client.import(Data(text.utf8), as: "Repository")
                }
                #expect(error == expected)
                let url = try write(text)
                defer { try? FileManager.default.removeItem(at: url) }
                let streamed = await #expect(throws: JSONParseError.self, "streamed \(text), \(policy), \(batchSize)") {
                    try await client.import(contentsOf: url, as: "Repository")
                }
                #expect(streamed == expected)
                #expect(try await client.fetch(Query("Repository")).map { $0["id"] } == [.int(100)], "nothing written")
            }
        }
    }

    /// A well-formed payload with a shape error keeps its ImportError at every batch size.
    @Test(arguments: [1, 8, 10_000])
    func aShapeErrorStaysAnImportError(batchSize: Int) async throws {
        let client = try makeClient(ImportOptions(batchSize: batchSize))
        let error = await #expect(throws: ImportError.self) {
            try await client.import(Data(#"[{"id":1},2]"#.utf8), as: "Repository")
        }
        #expect(error?.path.description == "$[1]")
    }

    // MARK: A streamed file is checked as bytes in memory (c)

    func write(_ text: String) throws -> URL {
        try write(Data(text.utf8))
    }

    func write(_ data: Data) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("tether-consistency-\(UUID().uuidString).json")
        try data.write(to: url)
        return url
    }

    /// What the stream makes of `data` at a chunk size: the elements, or the error.
    func streamed(_ data: Data, chunkSize: Int) throws -> Result<[JSON], JSONParseError> {
        let url = try write(data)
        defer { try? FileManager.default.removeItem(at: url) }
        var elements: [JSON] = []
        do {
            try JSONStream(contentsOf: url, chunkSize: chunkSize).forEachElement { json, index in
                if index == nil { elements.append(contentsOf: json.arrayValue ?? [json]) } else { elements.append(json) }
            }
            return .success(elements)
        } catch let error as JSONParseError {
            return .failure(error)
        }
    }

    static let bom = "\u{FEFF}"
    static func nested(_ depth: Int) -> String { String(repeating: "[", count: depth) + String(repeating: "]", count: depth) }

    static let streamCases: [String] = [
        "[\(bom){\"id\":1}]",
        "[{\"id\":1},\(bom){\"id\":2}]",
        "[{\"id\":1}, \(bom) {\"id\":2}]",
        "\(bom)[{\"id\":1}]",
        "\(bom) [{\"id\":1}]",
        "\(bom)\(bom)[{\"id\":1}]",
        " \(bom)[{\"id\":1}]",
        "\(bom)",
        "\(bom){\"id\":1}",
        "[\(nested(511))]",
        "[\(nested(512))]",
        "[1,\(nested(511))]",
        "[1,\(nested(512))]",
        "[{\"a\":\(nested(510))}]",
        "[{\"a\":\(nested(511))}]",
        nested(512), nested(513),
        "", " ", "[", "[ ", "[1", "[1,", "[1, ", "[1,]", "[1 ,]", "[,1]", "[1 2]", "[1]x", "[1] ]", "[]]",
        "[-]", "[1x]", "[tru]", "[nul, 1]", "[1.]", "[1e]", "[01]", "[1e400]",
        #"["\u12"]"#, #"["\uD800"]"#, #"["\uD800\u12"]"#, #"["\uD800\uDC00"]"#, #"["\uDC00"]"#, #"["a"#, #"["a\"#,
        "[\"\u{01}\"]", "[{\"a\" 1}]", "[{\"a\":1,}]", "[{\"a\":1]", "[{]", "[[}]", "[\"é\"]", "x", "[1]\u{FEFF}",
    ]

    @Test func theStreamAcceptsAndRejectsWhatBytesDo() throws {
        var cases = Self.streamCases.map { Data($0.utf8) }
        cases.append(Data([0x5B, 0xEF, 0xBB]))  // a cut byte order mark
        cases.append(Data([0x5B, 0x22, 0xC3, 0x22, 0x5D]))  // a cut UTF-8 sequence
        cases.append(Data([0xEF, 0xBB]))
        for data in cases {
            let expected: Result<[JSON], JSONParseError>
            do {
                let json = try JSONParser.parse(data)
                expected = .success(json.arrayValue ?? [json])
            } catch {
                expected = .failure(error)
            }
            for chunkSize in [1, 2, 3, 5, 16, 64, 1 << 20] {
                let got = try streamed(data, chunkSize: chunkSize)
                #expect(got == expected, "\(String(decoding: data.prefix(60), as: UTF8.self)) at chunk size \(chunkSize)")
            }
        }
    }

    /// The import of a file takes exactly what the import of its bytes takes.
    @Test(arguments: Array(streamCases.prefix(17)))
    func aStreamedImportAgreesWithBytes(text: String) async throws {
        let options = ImportOptions(batchSize: 2)
        let bytes = try makeClient(options)
        let file = try makeClient(options)
        let url = try write(text)
        defer { try? FileManager.default.removeItem(at: url) }
        func outcome(_ body: () async throws -> ImportResult) async -> String {
            do {
                let result = try await body()
                return "ok \(result.objects.count) \(result.diagnostics.map(\.description))"
            } catch {
                return "\(type(of: error)) \(error)"
            }
        }
        let fromBytes = await outcome { try await bytes.import(Data(text.utf8), as: "Repository") }
        let fromFile = await outcome { try await file.import(contentsOf: url, as: "Repository") }
        #expect(fromFile == fromBytes)
    }
}
