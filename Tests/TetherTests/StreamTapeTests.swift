import Foundation
import Testing
@testable import Tether

/// The streamed import's one-pass path: elements parsed onto the tape straight from the file's
/// buffer (`JSONTape.appendElement(prefixOf:offset:)`), the others split first and parsed alone.
/// Both must give the same elements and the same errors as the whole document parsed at once.
@Suite struct StreamTapeTests {
    /// Streams `text` as the import does; returns the elements and how many were taken in one pass.
    func stream(_ text: String, chunkSize: Int) throws -> (elements: [JSON], taken: Int) {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("tether-tape-\(UUID().uuidString).json")
        try Data(text.utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        var tape = JSONTape()
        var bytes: [UInt8] = []
        var taken = 0
        try JSONStream(contentsOf: url, chunkSize: chunkSize).forEachElementBytes(take: { buffered, _, _ in
            guard let length = tape.appendElement(prefixOf: buffered, offset: bytes.count) else { return nil }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffered[..<length]))
            taken += 1
            return length
        }) { element, fileOffset, index in
            #expect(index != nil)
            try tape.append(element, offset: bytes.count, errorOffset: fileOffset)
            bytes.append(contentsOf: element)
        }
        let elements = bytes.withUnsafeBufferPointer { buffer in
            tape.withRoots(bytes: buffer) { roots in roots.map { $0.materialize() } }
        }
        return (elements, taken)
    }

    static let document = #"""
         [ {"id": 1, "name": "a ] } [ {", "nested": {"list": [1, 2, {"x": "\"quoted\""}]}},
          "plain string", 42 , -1.5e3,true,null, [ [], {} ],
          {"id": 2, "emoji": "🐙 Zoë", "path": "C:\\dir\\", "q": "\\\""}, 7 ]
        """#

    /// Every chunk size up to 40 bytes cuts an element at every kind of position (inside a
    /// string, a number or a literal, right after a backslash, between brackets).
    @Test(arguments: Array(1...40) + [64, 1 << 20])
    func sameElementsAtEveryChunkSize(chunkSize: Int) throws {
        let (elements, taken) = try stream(Self.document, chunkSize: chunkSize)
        #expect(elements == (try JSON(parsing: Self.document).arrayValue!))
        if chunkSize == 1 << 20 { #expect(taken == 9, "every element in one pass when the file is one chunk") }
    }

    /// The error of streaming `text` with every element split first (no one-pass parse).
    func splitError(_ text: String, chunkSize: Int) throws -> JSONParseError? {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("tether-tape-\(UUID().uuidString).json")
        try Data(text.utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        do {
            try JSONStream(contentsOf: url, chunkSize: chunkSize).forEachElement { _, _ in }
            return nil
        } catch let error as JSONParseError {
            return error
        }
    }

    @Test(arguments: [
        #"[{"id": 1}, {"id": 2,}]"#,
        #"[{"id": 1},]"#,
        #"[{"id": 1} {"id": 2}]"#,
        #"[{"id": 1}] x"#,
        #"[{"id": 1}, {"id": "#,
        #"[1, 2x, 3]"#,
        #"[1, tru, 3]"#,
        #"[{"a": "\u12"}, 1]"#,
        "[1, \"a\u{01}b\"]",
        "[1, \"a\u{FFFD}b\", [[[]]], {\"k\": [1, 2,]}]",
    ])
    func sameErrorsAsSplittingFirst(text: String) throws {
        for chunkSize in [1, 3, 7, 16, 1 << 20] {
            let expected = try #require(try splitError(text, chunkSize: chunkSize), "\(text) is malformed")
            let error = #expect(throws: JSONParseError.self) { try stream(text, chunkSize: chunkSize) }
            #expect(error == expected, "chunk size \(chunkSize)")
        }
    }
}
