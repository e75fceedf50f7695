import Foundation

/// Reads a JSON document from a file in fixed-size chunks and hands over the elements of a
/// top-level array one at a time, so memory stays bounded by the largest element, not the file.
///
/// Each element is parsed by ``JSONParser``; error offsets are from the start of the file. A
/// document that is not an array (an object, say) is read whole and handed over as one value.
public struct JSONStream: Sendable {
    /// The file read.
    public let url: URL
    /// How many bytes are read at a time (1 MiB by default, at least 16). An element longer than a
    /// chunk is completed from the following chunks.
    public var chunkSize: Int

    /// A stream of the file at `url`, read `chunkSize` bytes at a time. Nothing is read until
    /// ``forEachElement(_:)`` is called.
    public init(contentsOf url: URL, chunkSize: Int = 1 << 20) {
        self.url = url
        self.chunkSize = max(16, chunkSize)
    }

    /// The file's size in bytes, nil when it cannot be read.
    public var size: Int? {
        (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.intValue
    }

    /// Calls `body` with each top-level array element (and its index), or once with the whole
    /// document (index nil) when it is not an array.
    public func forEachElement(_ body: (JSON, Int?) throws -> Void) throws {
        try forEachElementBytes { bytes, offset, index in
            let json: JSON
            do throws(JSONParseError) {
                json = try JSONParser.parse(bytes: bytes)
            } catch {
                throw JSONParseError(offset: offset + error.offset, message: error.message)
            }
            try body(json, index)
        }
    }

    /// Checks the whole file as ``JSONParser/validate(_:)`` checks bytes (the same errors at the
    /// same offsets), one element at a time.
    func validate() throws {
        try forEachElementBytes { bytes, offset, index in
            guard index == nil else { return }  // an array element: already checked
            do throws(JSONParseError) {
                _ = try JSONTape(parsing: bytes)
            } catch {
                throw JSONParseError(offset: offset + error.offset, message: error.message)
            }
        }
    }

    /// Calls `body` with the bytes of each top-level array element, their offset in the file and
    /// the element's index, or once with the whole document (index nil, not yet checked) when it
    /// is not an array. The bytes are valid only inside `body`.
    ///
    /// The file is checked exactly as ``JSONParser`` checks a document in memory (the same
    /// grammar, depth limit and byte order mark rule, the same errors at the same offsets): an
    /// element handed to `body` is a well-formed value (an element of the top-level array: its
    /// nesting counts from 2), and a malformed file throws the ``JSONParseError`` that
    /// ``JSONParser/parse(_:)`` throws for it, after `body` has had the elements before the error.
    ///
    /// Each array element is first offered to `take`: the bytes from the element's start to the
    /// end of what is buffered, its offset in the file and its index. `take` returns the
    /// element's length when it parsed the element itself (then `body` is not called for it), or
    /// nil (the default) to have the element checked and handed to `body`. `take` must accept
    /// only a well-formed element followed, after whitespace, by `,` or `]`, as
    /// ``JSONTape/appendElement(prefixOf:offset:)`` does.
    func forEachElementBytes(
        take: (UnsafeBufferPointer<UInt8>, Int, Int) throws -> Int? = { _, _, _ in nil },
        _ body: (UnsafeBufferPointer<UInt8>, Int, Int?) throws -> Void
    ) throws {
        guard let handle = FileHandle(forReadingAtPath: url.path) else {
            throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: url.path])
        }
        defer { try? handle.close() }
        try Self.forEachElementBytes(chunks: { try handle.read(upToCount: chunkSize) ?? Data() }, take: take, body)
    }

    /// ``forEachElementBytes(take:_:)`` over the chunks `next` returns (an empty one at the end):
    /// the file's, or any others (tests and fuzzing cut bytes in memory into chunks of any size).
    static func forEachElementBytes(
        chunks next: () throws -> Data,
        take: (UnsafeBufferPointer<UInt8>, Int, Int) throws -> Int? = { _, _, _ in nil },
        _ body: (UnsafeBufferPointer<UInt8>, Int, Int?) throws -> Void
    ) throws {
        var splitter = Splitter()
        while true {
            let chunk = try next()
            let atEnd = chunk.isEmpty
            splitter.buffer.append(contentsOf: chunk)
            if try splitter.drain(atEnd: atEnd, take: take, body) { return }
            if atEnd { return }
        }
    }

    /// Incremental splitter: finds and checks the top-level array elements as bytes arrive.
    ///
    /// Its errors are the parser's own: the separators between elements are checked here with
    /// the parser's messages, and each element is parsed by the tape parser from its start with
    /// what follows it buffered (its end and at least ``lookahead`` more bytes, or the end of the
    /// file), so the parser sees exactly the bytes it would see in the whole document.
    struct Splitter {
        enum Phase { case start, firstElementOrEnd, elementOrEnd, separatorOrEnd, done, whole }
        /// How far past the end of a value the parser may look before it decides (a `\uD800\uDC00`
        /// escape checked from its start).
        static let lookahead = 16
        var buffer: [UInt8] = []
        /// Bytes of the file dropped from the front of `buffer`.
        var dropped = 0
        var position = 0
        var phase = Phase.start
        var index = 0
        /// The file offset of the last comma between elements (a trailing comma is reported there).
        var comma = 0
        // Resumable scan for the end of an element: where it starts, and the end once found.
        var elementStart: Int?
        var elementEnd: Int?
        var depth = 0
        var inString = false
        var escaped = false

        static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 }

        func error(_ at: Int, _ message: String) -> JSONParseError {
            JSONParseError(offset: dropped + at, message: message)
        }

        /// Emits every complete element in the buffer; returns true when the document is done.
        mutating func drain(
            atEnd: Bool, take: (UnsafeBufferPointer<UInt8>, Int, Int) throws -> Int? = { _, _, _ in nil },
            _ body: (UnsafeBufferPointer<UInt8>, Int, Int?) throws -> Void
        ) throws -> Bool {
            defer { compact() }
            while true {
                if phase == .whole {
                    guard atEnd else { return false }
                    try emit(0, buffer.count, nil, body)
                    phase = .done
                    position = buffer.count
                    return true
                }
                if phase == .start, dropped == 0, position == 0 {
                    // A byte order mark is skipped at the start of the document only.
                    if buffer.count < 3, !atEnd { return false }
                    if buffer.count >= 3, buffer[0] == 0xEF, buffer[1] == 0xBB, buffer[2] == 0xBF { position = 3 }
                }
                if elementStart == nil {
                    while position < buffer.count, Self.isSpace(buffer[position]) { position += 1 }
                    guard position < buffer.count else {
                        guard atEnd else { return false }
                        switch phase {
                        case .done: return true
                        case .separatorOrEnd: throw error(position, "unexpected end of input in an array, expected ',' or ']'")
                        default: throw error(position, "unexpected end of input, expected a value")
                        }
                    }
                    let byte = buffer[position]
                    switch phase {
                    case .whole:
                        continue
                    case .done:
                        throw error(position, "unexpected \(JSONTape.describe(byte)) after the JSON value")
                    case .start:
                        if byte == UInt8(ascii: "[") {
                            position += 1
                            phase = .firstElementOrEnd
                        } else {
                            phase = .whole
                        }
                        continue
                    case .firstElementOrEnd where byte == UInt8(ascii: "]"), .separatorOrEnd where byte == UInt8(ascii: "]"):
                        position += 1
                        phase = .done
                        continue
                    case .separatorOrEnd:
                        guard byte == UInt8(ascii: ",") else {
                            throw error(position, "unexpected \(JSONTape.describe(byte)) in an array, expected ',' or ']'")
                        }
                        comma = dropped + position
                        position += 1
                        phase = .elementOrEnd
                        continue
                    case .elementOrEnd where byte == UInt8(ascii: "]"):
                        throw JSONParseError(offset: comma, message: "trailing comma before ']'")
                    case .firstElementOrEnd, .elementOrEnd:
                        let start = position
                        let taken = try buffer.withUnsafeBufferPointer { b in
                            try take(UnsafeBufferPointer(rebasing: b[start...]), dropped + start, index)
                        }
                        if let length = taken {
                            index += 1
                            position = start + length
                            phase = .separatorOrEnd
                            continue
                        }
                        elementStart = position
                        elementEnd = nil
                        depth = 0
                        inString = false
                        escaped = false
                    }
                }
                // Find where the element ends, then have it parsed with what follows it.
                if elementEnd == nil { elementEnd = scanElement(atEnd: atEnd) }
                guard atEnd || (elementEnd.map { $0 + Self.lookahead <= buffer.count } ?? false) else { return false }
                let start = elementStart!
                let length: Int
                do throws(JSONParseError) {
                    length = try buffer.withUnsafeBufferPointer { b throws(JSONParseError) in
                        try JSONTape.checkElement(UnsafeBufferPointer(rebasing: b[start...]))
                    }
                } catch {
                    throw self.error(start + error.offset, error.message)
                }
                try emit(start, start + length, index, body)
                index += 1
                elementStart = nil
                elementEnd = nil
                position = start + length
                phase = .separatorOrEnd
            }
        }

        /// The end (exclusive) of the element starting at `elementStart` as its brackets and
        /// quotes show it, or nil if more bytes are needed. For a well-formed element, its end;
        /// in a malformed one, the parser finds the error before this point.
        mutating func scanElement(atEnd: Bool) -> Int? {
            let start = elementStart!
            let first = buffer[start]
            let container = first == UInt8(ascii: "{") || first == UInt8(ascii: "[") || first == UInt8(ascii: "\"")
            if !container {
                // A scalar: up to a separator, a closing bracket or whitespace.
                var i = max(position, start)
                while i < buffer.count {
                    let b = buffer[i]
                    if b == UInt8(ascii: ",") || b == UInt8(ascii: "]") || Self.isSpace(b) { return i }
                    i += 1
                }
                position = i
                return atEnd ? i : nil
            }
            // The scan state lives in locals while the loop runs (stored properties would be
            // loaded and stored on every byte) and is saved when the buffer runs out.
            var i = max(position, start)
            var (inString, escaped, depth) = (self.inString, self.escaped, self.depth)
            let end = buffer.withUnsafeBufferPointer { b -> Int? in
                let count = b.count
                while i < count {
                    if inString {
                        if escaped {
                            escaped = false
                            i += 1
                            continue
                        }
                        // Skip ordinary string bytes in a tight loop.
                        while i < count, b[i] != UInt8(ascii: "\\"), b[i] != UInt8(ascii: "\"") { i += 1 }
                        guard i < count else { break }
                        if b[i] == UInt8(ascii: "\\") {
                            escaped = true
                        } else {
                            inString = false
                            if depth == 0 { return i + 1 }
                        }
                    } else {
                        let c = b[i]
                        if c == UInt8(ascii: "\"") {
                            inString = true
                        } else if c == UInt8(ascii: "{") || c == UInt8(ascii: "[") {
                            depth += 1
                        } else if c == UInt8(ascii: "}") || c == UInt8(ascii: "]") {
                            depth -= 1
                            if depth == 0 { return i + 1 }
                        }
                    }
                    i += 1
                }
                return nil
            }
            (self.inString, self.escaped, self.depth) = (inString, escaped, depth)
            if end == nil { position = i }
            return end
        }

        func emit(_ start: Int, _ end: Int, _ index: Int?, _ body: (UnsafeBufferPointer<UInt8>, Int, Int?) throws -> Void) throws {
            try buffer.withUnsafeBufferPointer { b in
                try body(UnsafeBufferPointer(rebasing: b[start..<end]), dropped + start, index)
            }
        }

        /// Drops consumed bytes from the front of the buffer (not before the document's first
        /// value is known not to be a whole document, which is parsed from the file's first byte).
        mutating func compact() {
            guard phase != .start, phase != .whole else { return }
            let keep = elementStart ?? position
            guard keep > 0, keep >= buffer.count / 2 || keep > (1 << 20) else { return }
            buffer.removeFirst(keep)
            dropped += keep
            position -= keep
            if let start = elementStart { elementStart = start - keep }
            if let end = elementEnd { elementEnd = end - keep }
        }
    }
}
