import Foundation

/// Reads a JSON document from a file in fixed-size chunks and hands over the elements of a
/// top-level array one at a time, so memory stays bounded by the largest element, not the file.
///
/// Each element is parsed by ``JSONParser``; error offsets are from the start of the file. A
/// document that is not an array (an object, say) is read whole and handed over as one value.
public struct JSONStream: Sendable {
    public let url: URL
    public var chunkSize: Int

    public init(contentsOf url: URL, chunkSize: Int = 1 << 20) {
        self.url = url
        self.chunkSize = max(16, chunkSize)
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

    /// Calls `body` with the bytes of each top-level array element (not yet checked), their
    /// offset in the file and the element's index, or once with the whole document (index nil)
    /// when it is not an array. The bytes are valid only inside `body`.
    ///
    /// Each array element is first offered to `take`: the bytes from the element's start to the
    /// end of what is buffered, its offset in the file and its index. `take` returns the
    /// element's length when it parsed the element itself (then `body` is not called for it), or
    /// nil (the default) to have the element's end found and the element handed to `body`.
    func forEachElementBytes(
        take: (UnsafeBufferPointer<UInt8>, Int, Int) throws -> Int? = { _, _, _ in nil },
        _ body: (UnsafeBufferPointer<UInt8>, Int, Int?) throws -> Void
    ) throws {
        guard let handle = FileHandle(forReadingAtPath: url.path) else {
            throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: url.path])
        }
        defer { try? handle.close() }
        var splitter = Splitter()
        while true {
            let chunk = try handle.read(upToCount: chunkSize) ?? Data()
            let atEnd = chunk.isEmpty
            splitter.buffer.append(contentsOf: chunk)
            if try splitter.drain(atEnd: atEnd, take: take, body) { return }
            if atEnd { return }
        }
    }

    /// Incremental splitter: finds the byte ranges of top-level array elements.
    struct Splitter {
        enum Phase { case start, firstElementOrEnd, elementOrEnd, separatorOrEnd, done, whole }
        var buffer: [UInt8] = []
        /// Bytes of the file dropped from the front of `buffer`.
        var dropped = 0
        var position = 0
        var phase = Phase.start
        var index = 0
        // Resumable element scan.
        var elementStart: Int?
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
                    return true
                }
                if phase == .done {
                    while position < buffer.count, Self.isSpace(buffer[position]) { position += 1 }
                    if position < buffer.count { throw error(position, "unexpected data after the top-level array") }
                    return atEnd
                }
                if elementStart == nil {
                    while position < buffer.count, Self.isSpace(buffer[position]) { position += 1 }
                    guard position < buffer.count else {
                        if atEnd { throw error(position, phase == .start ? "empty input" : "unexpected end of input in the top-level array") }
                        return false
                    }
                    let byte = buffer[position]
                    switch phase {
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
                        guard byte == UInt8(ascii: ",") else { throw error(position, "expected ',' or ']' after an array element") }
                        position += 1
                        phase = .elementOrEnd
                        continue
                    case .elementOrEnd where byte == UInt8(ascii: "]"):
                        throw error(position, "trailing comma before ']'")
                    default:
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
                        depth = 0
                        inString = false
                        escaped = false
                    }
                }
                // Scan the element from `position`.
                guard let end = scanElement(atEnd: atEnd) else {
                    if atEnd { throw error(buffer.count, "unexpected end of input inside an array element") }
                    return false
                }
                try emit(elementStart!, end, index, body)
                index += 1
                elementStart = nil
                position = end
                phase = .separatorOrEnd
            }
        }

        /// The end (exclusive) of the element starting at `elementStart`, or nil if more bytes are needed.
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

        /// Drops consumed bytes from the front of the buffer.
        mutating func compact() {
            let keep = elementStart ?? position
            guard keep > 0, keep >= buffer.count / 2 || keep > (1 << 20) else { return }
            buffer.removeFirst(keep)
            dropped += keep
            position -= keep
            if let start = elementStart { elementStart = start - keep }
        }
    }
}
