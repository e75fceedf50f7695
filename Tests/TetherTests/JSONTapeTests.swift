import Foundation
import Testing
@testable import Tether
import TetherTestSupport

/// What the tape makes of `bytes`: the materialised root, or the error.
private func tapeResult(_ bytes: [UInt8]) -> Result<JSON, JSONParseError> {
    bytes.withUnsafeBufferPointer { buffer in
        do throws(JSONParseError) {
            let tape = try JSONTape(parsing: buffer)
            return .success(tape.withRoots(bytes: buffer) { $0[0].materialize() })
        } catch {
            return .failure(error)
        }
    }
}

private func parserResult(_ bytes: [UInt8]) -> Result<JSON, JSONParseError> {
    do throws(JSONParseError) {
        return .success(try JSONParser.parse(Data(bytes)))
    } catch {
        return .failure(error)
    }
}

/// What the array reader makes of `bytes`, `batch` elements at a time: the elements as an array,
/// or the error; nil when the document is not an array.
private func readerResult(_ bytes: [UInt8], batch: Int) -> Result<JSON, JSONParseError>? {
    bytes.withUnsafeBufferPointer { buffer in
        guard var reader = JSONTape.ArrayReader(buffer) else { return nil }
        var tape = JSONTape()
        var elements: [JSON] = []
        do throws(JSONParseError) {
            while case let count = try reader.read(batch, into: &tape), count > 0 {
                #expect(tape.roots.count == count && count <= batch)
                elements += tape.withRoots(bytes: buffer) { $0.map { $0.materialize() } }
            }
            return .success(.array(elements))
        } catch {
            return .failure(error)
        }
    }
}

/// The tape, whole and (for arrays) read a batch at a time, accepts exactly what the parser
/// accepts, with the same values and the same errors.
private func expectSameAsParser(_ bytes: [UInt8], _ comment: String = "", sourceLocation: SourceLocation = #_sourceLocation) {
    let parser = parserResult(bytes)
    let startsWithArray = bytes.drop { [0x20, 0x09, 0x0A, 0x0D].contains($0) }.first == UInt8(ascii: "[")
        || (bytes.starts(with: [0xEF, 0xBB, 0xBF]) && bytes.dropFirst(3).drop { [0x20, 0x09, 0x0A, 0x0D].contains($0) }.first == UInt8(ascii: "["))
    for batch in [1, 2, 7] {
        let reader = readerResult(bytes, batch: batch)
        #expect((reader != nil) == startsWithArray, "\(comment)", sourceLocation: sourceLocation)
        if let reader { expectSame(reader, parser, "\(comment), read \(batch) at a time", sourceLocation: sourceLocation) }
    }
    expectSame(tapeResult(bytes), parser, comment, sourceLocation: sourceLocation)
}

private func expectSame(
    _ tape: Result<JSON, JSONParseError>, _ parser: Result<JSON, JSONParseError>, _ comment: String, sourceLocation: SourceLocation
) {
    switch (tape, parser) {
    case (.success(let a), .success(let b)):
        // Compare serialised forms too, so -0.0 and 0 or NaN-free doubles are told apart.
        #expect(a == b, "\(comment)", sourceLocation: sourceLocation)
        #expect(a.serialized() == b.serialized(), "\(comment)", sourceLocation: sourceLocation)
    case (.failure(let a), .failure(let b)):
        #expect(a == b, "\(comment)", sourceLocation: sourceLocation)
    default:
        Issue.record("tape \(tape) but parser \(parser) for \(comment)", sourceLocation: sourceLocation)
    }
}

@Suite("JSONTape")
struct JSONTapeTests {
    static let documents: [String] = [
        "null", "true", "false", "0", "-0", "1", "-1", "9223372036854775807", "-9223372036854775808",
        "9223372036854775808", "-9223372036854775809", "123456789012345678901234567890", "1.5", "-0.0",
        "1e-400", "2.2250738585072014e-308", "1.7976931348623157e308", "0.30000000000000004", "1E+2", "1e-2",
        #""""#, #""abc""#, #""a\"b\\c\/d\be\ff\ng\rh\ti""#, #""\u00e9\u65e5\uD83D\uDE00""#, "\"ñ 日本 😀\"",
        "[]", "{}", "[[]]", "[{}]", #"{"a":{}}"#, " \t\r\n[ 1 , 2 ] \n", "\u{FEFF}[1]",
        #"{"a":1,"a":2}"#, #"{"a\u0062":1,"ab":2}"#, #"{"ab":1,"a\u0062":2}"#,
        #"{"array":[1,-2,1.5,1e-7,1234567890123456789,"x",null,true,false,[],{}],"n":{"d":{"e":[{"k":-0.5}]}}}"#,
        String(repeating: "a", count: 40).debugDescription,
        "[" + String(repeating: #"{"id":1,"name":"x","owner":{"login":"y"}},"#, count: 50) + "null]",
    ]

    /// Every error case of the parser's tests.
    static let invalid: [String] = [
        "01", "-01", "1.", "1.e5", ".5", "-", "-a", "+1", "1e", "1e+", "0x10", "1e400", "-1e400", "NaN", "Infinity",
        #""\uD83D""#, #""\uD83Dx""#, #""\uD83D\u0041""#, #""ab\uDE00""#, #""\x""#, #""\u12G4""#, #""\u12""#,
        #""abc"#, #""abc\"#, "'single'",
        "", "   ", "[1, 2,]", #"{"a": 1,}"#, #"{"a": 1 , }"#, "[1 2]", #"{"a" 1}"#, #"{"a": 1 "b": 2}"#, "{a: 1}",
        "[1] [2]", "{} x", "[", "[1,", #"{"a":"#, "tru", "nul", "[fals]", "[,1]", "// c\n1",
        "[1,2", #"{"a":1"#, #"{"a"#, "{", #"[" "#, "[tru]", "[nulll]", "[-]", #"{"a":01}"#,
    ]

    static let invalidBytes: [[UInt8]] = [
        [0x22, 0xFF, 0x22], [0x22, 0x80, 0x22], [0x22, 0xC3, 0x22], [0x22, 0xC0, 0xAF, 0x22],
        [0x22, 0xE0, 0x80, 0xAF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],
        [0x22, 0x61, 0xE2, 0x82], [0x22, 0x5C, 0x6E, 0xE2, 0x28, 0xA1, 0x22],
        [0x22, 0x61, 0x00, 0x22], [0x22, 0x61, 0x09, 0x22], [0x22, 0x61, 0x0A, 0x22], [0x22, 0x61, 0x1F, 0x22],
        Array(#""\n"#.utf8) + [0x0A, 0x22], [0x22] + Array(repeating: 0x61, count: 16) + [0x0A, 0x22],
        [0xEF, 0xBB], [0xEF, 0xBB, 0xBF],
    ]

    @Test func sameValuesAsTheParser() {
        for text in Self.documents { expectSameAsParser(Array(text.utf8), text) }
        // Runs of spaces of every length around the word-at-a-time skip, also at the very end.
        for n in 0..<20 {
            let spaces = String(repeating: " ", count: n)
            for text in ["[\n\(spaces)1,\(spaces)\t{\(spaces)\"a\"\(spaces):\(spaces)2}\(spaces)]\(spaces)", "\(spaces)7\(spaces)", "[1\(spaces)x"] {
                expectSameAsParser(Array(text.utf8), text)
            }
        }
    }

    @Test func sameErrorsAsTheParser() {
        for text in Self.invalid {
            #expect(tapeResult(Array(text.utf8)).isFailure, "\(text)")
            expectSameAsParser(Array(text.utf8), text)
        }
        for bytes in Self.invalidBytes {
            #expect(tapeResult(bytes).isFailure, "\(bytes)")
            expectSameAsParser(bytes, "\(bytes)")
        }
    }

    @Test func depthLimit() {
        let limit = JSONParser.maximumDepth
        for depth in [limit, limit + 1] {
            expectSameAsParser(Array((String(repeating: "[", count: depth) + String(repeating: "]", count: depth)).utf8), "\(depth)")
        }
        expectSameAsParser(Array(String(repeating: #"{"a":["#, count: 10_000).utf8), "hostile")
    }

    /// Generated documents, and every prefix and one-byte corruption of a few of them.
    @Test func generatedDocuments() {
        var rng = SeededRandom(seed: 42)
        func value(_ depth: Int) -> String {
            switch Int.random(in: 0..<(depth > 3 ? 6 : 8), using: &rng) {
            case 0: return "null"
            case 1: return Bool.random(using: &rng) ? "true" : "false"
            case 2: return String(Int64.random(in: .min ... .max, using: &rng) >> Int.random(in: 0..<63, using: &rng))
            case 3: return "\(Double.random(in: -1e6...1e6, using: &rng))"
            case 4, 5:
                let pieces = ["a", "é", "日", "😀", #"\n"#, #"\""#, #"\u0041"#, #"\uD83D\uDE00"#, " ", "~"]
                return "\"" + (0..<Int.random(in: 0..<12, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined() + "\""
            case 6:
                return "[" + (0..<Int.random(in: 0..<5, using: &rng)).map { _ in value(depth + 1) }.joined(separator: ", ") + "]"
            default:
                let keys = ["id", "name", "owner", "a\\u0062", "ab", "x"]
                return "{" + (0..<Int.random(in: 0..<6, using: &rng)).map { _ in
                    "\"\(keys.randomElement(using: &rng)!)\": \(value(depth + 1))"
                }.joined(separator: ",\n ") + "}"
            }
        }
        for round in 0..<300 {
            let text = value(0)
            let bytes = Array(text.utf8)
            expectSameAsParser(bytes, text)
            if round < 20 {
                for cut in stride(from: 0, to: bytes.count, by: max(1, bytes.count / 40)) {
                    expectSameAsParser(Array(bytes[..<cut]), "prefix \(cut) of \(text)")
                    var corrupted = bytes
                    corrupted[cut] = [0x22, 0x5C, 0x2C, 0x5D, 0x7D, 0x00, 0xC3][cut % 7]
                    expectSameAsParser(corrupted, "corrupted at \(cut): \(text)")
                }
            }
        }
    }

    @Test func fixtures() throws {
        let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        let enumerator = try #require(FileManager.default.enumerator(atPath: tests.path))
        var count = 0
        for case let relative as String in enumerator where relative.hasSuffix(".json") && relative.contains("Fixtures/") {
            expectSameAsParser(Array(try Data(contentsOf: tests.appendingPathComponent(relative))), relative)
            count += 1
        }
        #expect(count >= 10)
    }

    /// Several documents on one tape (a streamed batch): offsets into a shared buffer, errors
    /// reported at the offset the caller asks for.
    @Test func documentsAppendedAtOffsets() throws {
        let texts = [#"{"id": 1, "name": "a\"b"}"#, "[1, 2.5]", #""x""#]
        var buffer: [UInt8] = []
        var tape = JSONTape()
        for text in texts {
            let bytes = Array(text.utf8)
            try bytes.withUnsafeBufferPointer { try tape.append($0, offset: buffer.count) }
            buffer += bytes
        }
        let values = buffer.withUnsafeBufferPointer { buffer in tape.withRoots(bytes: buffer) { $0.map { $0.materialize() } } }
        #expect(values == texts.map { try! JSONParser.parse(Data($0.utf8)) })

        let bad = Array("[1,]".utf8)
        #expect(throws: JSONParseError(offset: 1002, message: "trailing comma before ']'")) {
            try bad.withUnsafeBufferPointer { try tape.append($0, offset: buffer.count, errorOffset: 1000) }
        }
        #expect(tape.roots.count == 3)
    }

    @Test func memberLookupAndDirectValues() throws {
        let bytes = Array(#"{"id": 7, "a\u0062": "one", "ab": "two", "date": "2011-01-26T19:01:12Z", "ok": true, "n": null}"#.utf8)
        try bytes.withUnsafeBufferPointer { buffer in
            let tape = try JSONTape(parsing: buffer)
            tape.withRoots(bytes: buffer) { roots in
                let object = roots[0]
                #expect(object.member(ImportKey("id"))?.materialize() == .int(7))
                #expect(object.member(ImportKey("ab"))?.materialize() == .string("two"))  // the last one wins
                #expect(object.member(ImportKey("missing")) == nil)
                #expect(object.member(ImportKey("n"))?.isNull == true)
                #expect(object.member(ImportKey("id"))?.directValue(DirectKind(.int16), iso8601Dates: true) == .int(7))
                #expect(object.member(ImportKey("id"))?.directValue(DirectKind(.string), iso8601Dates: true) == nil)
                #expect(object.member(ImportKey("ok"))?.directValue(DirectKind(.bool), iso8601Dates: true) == .bool(true))
                #expect(object.member(ImportKey("date"))?.directValue(DirectKind(.date), iso8601Dates: true)
                    == .date(Date(timeIntervalSince1970: 1_296_068_472)))
                #expect(object.member(ImportKey("date"))?.directValue(DirectKind(.date), iso8601Dates: false) == nil)
                #expect(object.member(ImportKey("ab"))?.directValue(DirectKind(.url), iso8601Dates: true) == nil)  // the general path
            }
        }
        // Repeated keys, the escaped one last; an empty object; a nested object's keys stay its own.
        let more = Array(#"[{"ab": "one", "x": {"ab": 0}, "a\u0062": "two"}, {}, {"": 1, "ab": 2, "": 3}]"#.utf8)
        try more.withUnsafeBufferPointer { buffer in
            let tape = try JSONTape(parsing: buffer)
            tape.withRoots(bytes: buffer) { roots in
                let elements = roots[0].elements
                #expect(elements[0].member(ImportKey("ab"))?.materialize() == .string("two"))
                #expect(elements[0].member(ImportKey("x"))?.member(ImportKey("ab"))?.materialize() == .int(0))
                #expect(elements[1].member(ImportKey("ab")) == nil)
                #expect(elements[2].member(ImportKey(""))?.materialize() == .int(3))
                #expect(elements[2].member(ImportKey("ab"))?.materialize() == .int(2))
            }
        }
    }
}

extension Result {
    fileprivate var isFailure: Bool { if case .failure = self { true } else { false } }
}
