import Foundation
import Testing
@testable import Tether

/// Parses UTF-8 text (a test convenience); `JSONParser.validate` must accept it too.
private func parse(_ text: String) throws(JSONParseError) -> JSON {
    let json = try JSONParser.parse(Data(text.utf8))
    #expect(throws: Never.self, "validate rejects what parse accepts: \(text)") { try JSONParser.validate(Data(text.utf8)) }
    return json
}

/// The error the parser throws for `bytes`, or nil when it parses. `JSONParser.validate` must
/// throw the same error (or none).
private func parseError(_ bytes: [UInt8]) -> JSONParseError? {
    var parsed: JSONParseError?
    do {
        _ = try JSONParser.parse(Data(bytes))
    } catch {
        parsed = error
    }
    var validated: JSONParseError?
    do {
        try JSONParser.validate(Data(bytes))
    } catch {
        validated = error
    }
    #expect(validated == parsed, "validate and parse disagree on \(bytes)")
    return parsed
}

private func parseError(_ text: String) -> JSONParseError? { parseError(Array(text.utf8)) }

@Suite("JSONParser")
struct JSONParserTests {
    // MARK: Value kinds

    @Test func literals() throws {
        #expect(try parse("null") == .null)
        #expect(try parse("true") == .bool(true))
        #expect(try parse("false") == .bool(false))
        #expect(try parse(#""text""#) == .string("text"))
    }

    @Test func containers() throws {
        #expect(try parse("[]") == .array([]))
        #expect(try parse("{}") == .object([:]))
        #expect(try parse("[1, [2, []], {}]") == .array([.int(1), .array([.int(2), .array([])]), .object([:])]))
        let json = try parse(#"{"a": {"b": [true, null, "x"]}, "c": 1.5, "d": {}}"#)
        #expect(json == .object([
            "a": .object(["b": .array([.bool(true), .null, .string("x")])]),
            "c": .double(1.5),
            "d": .object([:]),
        ]))
    }

    @Test func whitespaceAroundTheValue() throws {
        #expect(try parse(" \t\r\n {\n\t\"a\" :\r\n [ 1 , 2 ] } \n\t") == .object(["a": [1, 2]]))
        #expect(try parse("\n42\n") == .int(42))
    }

    @Test func byteOrderMarkIsSkipped() throws {
        #expect(try JSONParser.parse(Data([0xEF, 0xBB, 0xBF] + Array("[1]".utf8))) == .array([1]))
    }

    @Test func duplicateKeysKeepTheLastValue() throws {
        #expect(try parse(#"{"a": 1, "b": 2, "a": 3}"#) == .object(["a": 3, "b": 2]))
    }

    @Test func manyKeysAndElements() throws {
        let keys = (0..<300).map { "key_number_\($0)" }
        let text = "{" + keys.enumerated().map { #""\#($1)": [\#($0), "\#($1)"]"# }.joined(separator: ",") + "}"
        let json = try parse(text)
        #expect(json.objectValue?.count == 300)
        #expect(json["key_number_299"] == .array([.int(299), .string("key_number_299")]))
        // Keys longer than the key cache holds, and keys colliding in it, still decode correctly.
        let long = String(repeating: "k", count: 100)
        #expect(try parse(#"[{"\#(long)": 1}, {"\#(long)": 2}]"#) == .array([[long: 1], [long: 2]]))
    }

    // MARK: Numbers

    @Test func integers() throws {
        #expect(try parse("0") == .int(0))
        #expect(try parse("-0") == .int(0))
        #expect(try parse("7") == .int(7))
        #expect(try parse("-123") == .int(-123))
        #expect(try parse("9223372036854775807") == .int(.max))
        #expect(try parse("-9223372036854775808") == .int(.min))
    }

    @Test func integersAbove2To53StayExact() throws {
        #expect(try parse("1234567890123456789") == .int(1_234_567_890_123_456_789))
        #expect(try parse("9007199254740993") == .int(9_007_199_254_740_993))
        #expect(try parse(#"{"id": 44029179364253696}"#)["id"] == .int(44_029_179_364_253_696))
    }

    @Test func integersBeyondInt64BecomeDoubles() throws {
        #expect(try parse("9223372036854775808") == .double(9_223_372_036_854_775_808.0))
        #expect(try parse("-9223372036854775809") == .double(-9_223_372_036_854_775_809.0))
        #expect(try parse("123456789012345678901234567890") == .double(1.2345678901234568e29))
    }

    @Test func fractionsAndExponents() throws {
        #expect(try parse("1.5") == .double(1.5))
        #expect(try parse("-0.25") == .double(-0.25))
        #expect(try parse("1e3") == .double(1000))
        #expect(try parse("1E+3") == .double(1000))
        #expect(try parse("25e-2") == .double(0.25))
        #expect(try parse("0.1") == .double(0.1))
        #expect(try parse("1.0") == .double(1.0))
        #expect(try parse("-0.0") == .double(-0.0))
        #expect(try parse("1e-400") == .double(0))
        // Correct rounding: these are the shortest texts of their doubles.
        #expect(try parse("2.2250738585072014e-308") == .double(2.2250738585072014e-308))
        #expect(try parse("1.7976931348623157e308") == .double(.greatestFiniteMagnitude))
        #expect(try parse("0.30000000000000004") == .double(0.1 + 0.2))
        #expect(try parse("[1.5,2e1]") == .array([.double(1.5), .double(20)]))
    }

    @Test(arguments: [
        ("01", 0, "leading zeros"),
        ("-01", 1, "leading zeros"),
        ("1.", 2, "digit after the decimal point"),
        ("1.e5", 2, "digit after the decimal point"),
        (".5", 0, "unexpected character '.'"),
        ("-", 1, "end of input"),
        ("-a", 1, "unexpected character 'a'"),
        ("+1", 0, "unexpected character '+'"),
        ("1e", 2, "exponent"),
        ("1e+", 3, "exponent"),
        ("0x10", 1, "after the JSON value"),
        ("1e400", 0, "out of range"),
        ("-1e400", 0, "out of range"),
        ("NaN", 0, "unexpected character 'N'"),
        ("Infinity", 0, "unexpected character 'I'"),
    ])
    func invalidNumbers(text: String, offset: Int, message: String) throws {
        let error = try #require(parseError(text))
        #expect(error.offset == offset)
        #expect(error.message.contains(message), "\(error)")
    }

    // MARK: Strings

    @Test func escapes() throws {
        #expect(try parse(#""a\"b\\c\/d\be\ff\ng\rh\ti""#) == .string("a\"b\\c/d\u{8}e\u{C}f\ng\rh\ti"))
        #expect(try parse(#""\u0041\u00e9\u20AC\u0000""#) == .string("Aé€\u{0}"))
        #expect(try parse(#""prefix \n suffix é""#) == .string("prefix \n suffix é"))
    }

    @Test func surrogatePairs() throws {
        #expect(try parse(#""\uD83D\uDE00""#) == .string("😀"))
        #expect(try parse(#""x\ud834\udd1ey""#) == .string("x𝄞y"))
    }

    @Test func unicodeAndEmojiAsRawUTF8() throws {
        let text = "ñandú 日本語 😀👩‍👩‍👧 e\u{301}"
        #expect(try parse("\"\(text)\"") == .string(text))
        #expect(try parse(#"{"ключ": "значение"}"#) == .object(["ключ": "значение"]))
        // Long strings exercise the eight-bytes-at-a-time scan, with a multibyte scalar at every
        // position relative to the word boundary.
        for padding in 0..<9 {
            let long = String(repeating: "a", count: padding) + "é" + String(repeating: "b", count: 20) + "😀"
            #expect(try parse("\"\(long)\"") == .string(long))
        }
    }

    @Test(arguments: [
        (#""\uD83D""#, 1, "lone high surrogate"),
        (#""\uD83Dx""#, 1, "lone high surrogate"),
        (#""\uD83D\u0041""#, 1, "not followed by a low surrogate"),
        (#""ab\uDE00""#, 3, "lone low surrogate"),
        (#""\x""#, 1, #"invalid escape sequence '\x'"#),
        (#""\u12G4""#, 1, "not a hex digit"),
        (#""\u12""#, 1, "truncated"),
        (#""abc"#, 0, "unterminated string"),
        (#""abc\"#, 4, "unterminated escape"),
        ("'single'", 0, "unexpected character '''"),
    ])
    func invalidStrings(text: String, offset: Int, message: String) throws {
        let error = try #require(parseError(text))
        #expect(error.offset == offset)
        #expect(error.message.contains(message), "\(error)")
    }

    @Test func rawControlCharactersAreErrors() throws {
        for byte: UInt8 in [0x00, 0x09, 0x0A, 0x1F] {
            let error = try #require(parseError([0x22, 0x61, byte, 0x22]))
            #expect(error.offset == 2)
            #expect(error.message.contains("control character"))
        }
        // Also after an escape (the slow path) and after sixteen plain bytes (the word scan).
        #expect(parseError(Array(#""\n"#.utf8) + [0x0A, 0x22])?.offset == 3)
        #expect(parseError([0x22] + Array(repeating: 0x61, count: 16) + [0x0A, 0x22])?.offset == 17)
    }

    @Test(arguments: [
        ([0x22, 0xFF, 0x22], 1),  // never valid
        ([0x22, 0x80, 0x22], 1),  // lone continuation byte
        ([0x22, 0xC3, 0x22], 1),  // truncated two-byte sequence
        ([0x22, 0xC0, 0xAF, 0x22], 1),  // overlong '/'
        ([0x22, 0xE0, 0x80, 0xAF, 0x22], 1),  // overlong three-byte
        ([0x22, 0xED, 0xA0, 0x80, 0x22], 1),  // an encoded surrogate
        ([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], 1),  // beyond U+10FFFF
        ([0x22, 0x61, 0xE2, 0x82], 2),  // input ends inside a sequence
        ([0x22, 0x5C, 0x6E, 0xE2, 0x28, 0xA1, 0x22], 3),  // bad continuation after an escape
    ] as [([UInt8], Int)])
    func invalidUTF8(bytes: [UInt8], offset: Int) throws {
        let error = try #require(parseError(bytes))
        #expect(error.offset == offset)
        #expect(error.message.contains("UTF-8"), "\(error)")
    }

    // MARK: Structure errors

    @Test(arguments: [
        ("", 0, "end of input"),
        ("   ", 3, "end of input"),
        ("[1, 2,]", 5, "trailing comma before ']'"),
        (#"{"a": 1,}"#, 7, "trailing comma before '}'"),
        (#"{"a": 1 , }"#, 8, "trailing comma before '}'"),
        ("[1 2]", 3, "expected ',' or ']'"),
        (#"{"a" 1}"#, 5, "expected ':'"),
        (#"{"a": 1 "b": 2}"#, 8, "expected ',' or '}'"),
        ("{a: 1}", 1, "expected a string key"),
        ("[1] [2]", 4, "after the JSON value"),
        ("{} x", 3, "after the JSON value"),
        ("[", 1, "end of input"),
        ("[1,", 3, "end of input"),
        (#"{"a":"#, 5, "end of input"),
        ("tru", 0, "expected 'true'"),
        ("nul", 0, "expected 'null'"),
        ("[fals]", 1, "expected 'false'"),
        ("[,1]", 1, "expected a value"),
        ("// c\n1", 0, "unexpected character '/'"),
    ])
    func structureErrors(text: String, offset: Int, message: String) throws {
        let error = try #require(parseError(text))
        #expect(error.offset == offset)
        #expect(error.message.contains(message), "\(error)")
        #expect(error.description.hasPrefix("malformed JSON at byte \(offset): "))
    }

    @Test func validateChecksALargeArrayBatchByBatch() throws {
        // More elements than one batch of the validator (10,000), with the error in a later one.
        var text = "[" + Array(repeating: #"{"id": 1, "name": "x"}"#, count: 25_000).joined(separator: ",")
        try JSONParser.validate(Data((text + "]").utf8))
        text += #", {"id": 2,}]"#
        let error = try #require(parseError(text))
        #expect(error.offset == text.utf8.count - 3)  // the comma
        #expect(error.message.contains("trailing comma"))
    }

    @Test func depthLimit() throws {
        let limit = JSONParser.maximumDepth
        let deepest = String(repeating: "[", count: limit) + String(repeating: "]", count: limit)
        var json = try parse(deepest)
        var depth = 0
        while case .array(let elements) = json, let first = elements.first {
            json = first
            depth += 1
        }
        #expect(depth == limit - 1)

        let tooDeep = String(repeating: "[", count: limit + 1) + String(repeating: "]", count: limit + 1)
        let error = try #require(parseError(tooDeep))
        #expect(error.offset == limit)
        #expect(error.message.contains("nesting deeper than \(limit)"))

        // Far deeper input fails the same way instead of exhausting the stack.
        let hostile = String(repeating: #"{"a":["#, count: 100_000)
        #expect(parseError(hostile)?.message.contains("nesting deeper") == true)
    }

    // MARK: Round trip

    @Test func roundTripThroughSerialized() throws {
        let text = #"""
            {"array":[1,-2,1.5,1e-7,1234567890123456789,"x",null,true,false,[],{}],
             "escapes":"quote \" backslash \\ slash / control \u0001 tab \t newline \n",
             "unicode":"ñ 日本 😀","nested":{"deeper":{"deepest":[{"k":-0.5}]}},"empty":""}
            """#
        let json = try parse(text)
        let reparsed = try JSONParser.parse(json.serialized())
        #expect(reparsed == json)
        #expect(try JSONParser.parse(reparsed.serialized()) == json)
    }

    // MARK: Fixtures

    @Test func bundledFixtures() throws {
        let root = try #require(Bundle.module.url(forResource: "Fixtures", withExtension: nil))
            .appendingPathComponent("JSONParser")

        let repository = try JSONParser.parse(Data(contentsOf: root.appendingPathComponent("octokit/get-repository.json")))
        try expectSameAsFoundation(repository, root.appendingPathComponent("octokit/get-repository.json"))

        let timeline = try JSONParser.parse(Data(contentsOf: root.appendingPathComponent("restkit/twitter-timeline.json")))
        try expectSameAsFoundation(timeline, root.appendingPathComponent("restkit/twitter-timeline.json"))
        let firstTweet = try #require(timeline[0])
        #expect(firstTweet["id"] == .int(44_029_179_364_253_696))
        #expect(firstTweet["id_str"] == .string("44029179364253696"))

        let camel = try JSONParser.parse(Data(contentsOf: root.appendingPathComponent("sync/camelcase.json")))
        try expectSameAsFoundation(camel, root.appendingPathComponent("sync/camelcase.json"))

        // Not strict JSON: a trailing comma, unquoted keys.
        let failures: [(String, Int, String)] = [
            ("sync/users_c.json", 477, "trailing comma before '}'"),
            ("restkit/error.json", 1, "unexpected character 'e' in an object, expected a string key"),
            ("restkit/Foursquare.json", 6, "unexpected character 'm' in an object, expected a string key"),
        ]
        for (file, offset, message) in failures {
            do {
                _ = try JSONParser.parse(Data(contentsOf: root.appendingPathComponent(file)))
                Issue.record("\(file) should not parse")
            } catch let error as JSONParseError {
                #expect(error.offset == offset, "\(file)")
                #expect(error.message == message, "\(file)")
            }
        }
    }

    /// Every JSON file of the recorded fixture collection in `Tests/Fixtures` (octokit/fixtures,
    /// Sync, RestKit; see its README): the strict ones parse to the same structure as Foundation's
    /// parser, the twelve known non-strict ones fail.
    @Test func fixtureCollection() throws {
        let nonStrict: Set<String> = [
            "sync/DataFilter/simple.json", "sync/DataFilter/users-with-null.json", "sync/DataFilter/users.json",
            "sync/JSONs/280.json", "sync/JSONs/3ca82a0.json",
            "sync/JSONs/453-to-many-ordered-relationship-objects-update.json", "sync/JSONs/bug-179-places.json",
            "sync/JSONs/notes_for_user_a.json", "sync/JSONs/numbers.json", "sync/JSONs/users_c.json",
            "restkit/JSON/Foursquare.json", "restkit/JSON/error.json",
        ]
        let enumerator = try #require(FileManager.default.enumerator(atPath: fixtureCollectionFolder.path))
        var parsed = 0
        var failed = Set<String>()
        for case let relative as String in enumerator where relative.hasSuffix(".json") {
            let url = fixtureCollectionFolder.appendingPathComponent(relative)
            let data = try Data(contentsOf: url)
            if nonStrict.contains(relative) {
                do {
                    _ = try JSONParser.parse(data)
                    Issue.record("\(relative) is not strict JSON but parsed")
                } catch {
                    failed.insert(relative)
                    let expected = relative.hasPrefix("sync/") ? "trailing comma" : "expected a string key"
                    #expect(error.message.contains(expected), "\(relative): \(error)")
                }
            } else {
                let json = try JSONParser.parse(data)
                try expectSameAsFoundation(json, url)
                parsed += 1
            }
        }
        #expect(failed == nonStrict)
        #expect(parsed == 162)
    }
}

/// `Tests/Fixtures` of this repository (this file is `Tests/TetherTests/JSONParserTests.swift`).
private let fixtureCollectionFolder: URL = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures")

/// Checks that `json` has exactly the structure JSONSerialization reads from the same file.
private func expectSameAsFoundation(_ json: JSON, _ url: URL, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let foundation = try JSONSerialization.jsonObject(with: Data(contentsOf: url), options: [.fragmentsAllowed])
    var path = "$"
    #expect(matches(json, foundation, path: &path), "\(url.lastPathComponent) differs at \(path)", sourceLocation: sourceLocation)
}

private func matches(_ json: JSON, _ any: Any, path: inout String) -> Bool {
    switch json {
    case .null:
        return any is NSNull
    case .bool(let bool):
        guard let number = any as? NSNumber, String(cString: number.objCType) == "c" else { return false }
        return number.boolValue == bool
    case .int(let int):
        guard let number = any as? NSNumber, String(cString: number.objCType) != "c" else { return false }
        return number.int64Value == int
    case .double(let double):
        guard let number = any as? NSNumber, String(cString: number.objCType) != "c" else { return false }
        return number.doubleValue == double
    case .string(let string):
        return (any as? String) == string
    case .array(let elements):
        guard let others = any as? [Any], others.count == elements.count else { return false }
        for (index, element) in elements.enumerated() {
            let saved = path
            path += "[\(index)]"
            guard matches(element, others[index], path: &path) else { return false }
            path = saved
        }
        return true
    case .object(let members):
        guard let others = any as? [String: Any], others.count == members.count else { return false }
        for (key, value) in members {
            let saved = path
            path += ".\(key)"
            guard let other = others[key], matches(value, other, path: &path) else { return false }
            path = saved
        }
        return true
    }
}
