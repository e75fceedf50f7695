public import Foundation

/// The one seam through which Tether turns bytes into ``JSON``.
///
/// Every import, transport response and fixture goes through `JSONParser.parse(_:)`.
///
/// The parser is Tether's own strict RFC 8259 parser working directly on the UTF-8 bytes:
/// - an integer literal (no fraction, no exponent) that fits in `Int64` becomes ``JSON/int(_:)``,
///   so ids above 2^53 survive; every other number becomes a correctly rounded
///   ``JSON/double(_:)`` (numbers beyond the range of `Double` are an error);
/// - strings are checked for valid UTF-8, raw control characters and escapes (`\uXXXX`
///   including surrogate pairs; a lone surrogate is an error);
/// - a repeated key in one object keeps its last value;
/// - nesting deeper than ``maximumDepth`` is an error, not a crash;
/// - anything but whitespace after the value is an error; trailing commas, comments,
///   unquoted keys, single quotes, `NaN` and leading zeros are errors. A leading UTF-8 byte
///   order mark is skipped (RFC 8259 §8.1 allows ignoring it).
///
/// ```swift
/// let json = try JSONParser.parse(Data(#"{"id": 1234567890123456789}"#.utf8))
/// json["id"]   // .int(1234567890123456789)
///
/// do {
///     _ = try JSONParser.parse(Data("[1, 2,]".utf8))
/// } catch {
///     print(error)   // malformed JSON at byte 5: trailing comma before ']'
/// }
/// ```
public enum JSONParser {
    /// The deepest nesting of arrays and objects the parser accepts.
    public static let maximumDepth = 512

    /// Parses a complete JSON document (RFC 8259). Malformed input throws a ``JSONParseError``
    /// carrying the byte offset of the problem.
    public static func parse(_ data: Data) throws(JSONParseError) -> JSON {
        let result: Result<JSON, JSONParseError> = data.withUnsafeBytes { raw in
            parse(raw.bindMemory(to: UInt8.self))
        }
        return try result.get()
    }

    /// Parses a complete JSON document held in a byte buffer.
    public static func parse(bytes: UnsafeBufferPointer<UInt8>) throws(JSONParseError) -> JSON {
        try parse(bytes).get()
    }

    /// Checks that `data` is a complete JSON document, exactly as ``parse(_:)`` does (the same
    /// errors at the same offsets), without building anything from it: the scan an import makes
    /// of its payload before mapping it. A document whose top level is an array is checked a
    /// batch of elements at a time, so memory stays small whatever its size.
    public static func validate(_ data: Data) throws(JSONParseError) {
        let result: Result<Void, JSONParseError> = data.withUnsafeBytes { raw in
            do throws(JSONParseError) {
                try validate(bytes: raw.bindMemory(to: UInt8.self))
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }

    /// ``validate(_:)`` for bytes in a buffer.
    static func validate(bytes: UnsafeBufferPointer<UInt8>) throws(JSONParseError) {
        if var reader = JSONTape.ArrayReader(bytes) {
            var tape = JSONTape()
            while try reader.read(10_000, into: &tape) > 0 {}
        } else {
            _ = try JSONTape(parsing: bytes)
        }
    }

    /// One parser for everything: the bytes are checked onto a ``JSONTape`` (which the import
    /// engine reads directly), and the tree is built from the tape.
    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Result<JSON, JSONParseError> {
        do throws(JSONParseError) {
            let tape = try JSONTape(parsing: bytes)
            return .success(tape.withRoots(bytes: bytes) { $0[0].materialize() })
        } catch {
            return .failure(error)
        }
    }
}

/// Malformed JSON: where (byte offset from the start of the input) and what.
public struct JSONParseError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Byte offset of the first byte that could not be parsed.
    public let offset: Int
    /// What is wrong there (`trailing comma before ']'`).
    public let message: String

    /// An error at byte `offset` of the input, described by `message`.
    public init(offset: Int, message: String) {
        self.offset = offset
        self.message = message
    }

    public var description: String { "malformed JSON at byte \(offset): \(message)" }
}
