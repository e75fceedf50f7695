// Fuzz target 1: the JSON parser. Compiled into one module with Tether's sources (Fuzz/build.sh),
// so it reaches internal API (the tape, the array reader, the stream's splitter).
//
// For any bytes, these agree: `JSONParser.parse`, `JSONParser.validate`, the array reader an
// import of bytes uses (batches of 1 to 4), the streamed reader over the same bytes cut into
// chunks (1 to 8 bytes, 9 to 64, and all the bytes; with and without the import's one-pass
// `take`; the sizes vary with the input), and the tree
// round trip (parse, serialize, parse gives the same tree). Same accept/reject, the same error
// (offset and message), the same values. A disagreement stops the fuzzer (fatalError).

import Foundation

enum ParserOracle {
    /// What a reader made of a document: its values (a top-level array's elements, or the one
    /// value of any other document), or the error.
    typealias Outcome = Result<[JSON], JSONParseError>

    static func check(_ bytes: UnsafeBufferPointer<UInt8>) {
        let data = Data(buffer: bytes)
        let parsed: Result<JSON, JSONParseError> = Result { () throws(JSONParseError) in try JSONParser.parse(data) }
        let expected: Outcome = parsed.map { $0.arrayValue ?? [$0] }

        // validate: the same verdict and error.
        let validated: Result<Void, JSONParseError> = Result { () throws(JSONParseError) in try JSONParser.validate(data) }
        switch (parsed, validated) {
        case (.success, .success): break
        case (.failure(let a), .failure(let b)) where a == b: break
        default: fail("parse and validate disagree", data, "\(parsed) vs \(validated)")
        }

        // The sizes of batches and chunks vary with the input (a hash of it, the same in every
        // run), so that every size is tried over the run while each input costs a few passes.
        let seed = UInt(bitPattern: KeyTable.hash(bytes))

        // The array reader of an import of bytes, in batches.
        let batch = 1 + Int(seed % 4)
        agree(expected, arrayReader(bytes, batch: batch), "array reader, batches of \(batch)", data)

        // The streamed reader, in chunks: small ones with and without the one-pass `take`, and
        // all the bytes in one chunk.
        let small = 1 + Int(seed / 4 % 8)
        let medium = 9 + Int(seed / 32 % 56)
        agree(expected, streamed(bytes, chunk: small, take: seed / 2048 % 2 == 0), "stream, chunks of \(small)", data)
        agree(expected, streamed(bytes, chunk: medium, take: true), "stream with take, chunks of \(medium)", data)
        agree(expected, streamed(bytes, chunk: max(1, bytes.count), take: true), "stream with take, one chunk", data)

        // The round trip.
        if case .success(let tree) = parsed {
            let text = tree.serialized()
            do {
                let again = try JSONParser.parse(text)
                if again != tree { fail("round trip changed the tree", data, "\(tree) vs \(again)") }
                if again.serialized() != text { fail("serializing is not stable", data, String(decoding: text, as: UTF8.self)) }
            } catch {
                fail("the serialized tree does not parse", data, "\(error): \(String(decoding: text, as: UTF8.self))")
            }
        }
    }

    static func agree(_ expected: Outcome, _ got: Outcome, _ what: String, _ data: Data) {
        if got != expected { fail("parse and \(what) disagree", data, "\(expected) vs \(got)") }
    }

    /// The elements as `JSONTape.ArrayReader` reads them for an import of bytes.
    static func arrayReader(_ bytes: UnsafeBufferPointer<UInt8>, batch: Int) -> Outcome {
        do throws(JSONParseError) {
            guard var reader = JSONTape.ArrayReader(bytes) else {
                let tape = try JSONTape(parsing: bytes)
                return .success(tape.withRoots(bytes: bytes) { [$0[0].materialize()] })
            }
            var tape = JSONTape()
            var elements: [JSON] = []
            while try reader.read(batch, into: &tape) > 0 {
                tape.withRoots(bytes: bytes) { roots in elements += roots.map { $0.materialize() } }
            }
            return .success(elements)
        } catch {
            return .failure(error)
        }
    }

    /// The elements as the streamed import reads them: with `take`, each element parsed onto a
    /// tape straight from the buffer when it can be (as `Importer` does), else handed over and
    /// parsed alone (as `JSONStream.forEachElement` does).
    static func streamed(_ bytes: UnsafeBufferPointer<UInt8>, chunk: Int, take useTake: Bool) -> Outcome {
        var offset = 0
        func next() -> Data {
            let end = min(bytes.count, offset + chunk)
            defer { offset = end }
            return Data(UnsafeBufferPointer(rebasing: bytes[offset..<end]))
        }
        var tape = JSONTape()
        var kept: [UInt8] = []
        var whole: [JSON] = []
        do {
            try JSONStream.forEachElementBytes(chunks: next, take: { buffered, _, _ in
                guard useTake, let length = tape.appendElement(prefixOf: buffered, offset: kept.count) else { return nil }
                kept.append(contentsOf: UnsafeBufferPointer(rebasing: buffered[..<length]))
                return length
            }) { element, fileOffset, index in
                if index == nil {
                    // Not an array: the whole document, parsed as the import parses it.
                    var document = JSONTape()
                    try document.append(element, offset: 0, errorOffset: fileOffset)
                    whole = document.withRoots(bytes: element) { [$0[0].materialize()] }
                    return
                }
                try tape.append(element, offset: kept.count, errorOffset: fileOffset)
                kept.append(contentsOf: element)
            }
        } catch let error as JSONParseError {
            return .failure(error)
        } catch {
            fail("the stream threw \(type(of: error))", Data(buffer: bytes), "\(error)")
        }
        if !whole.isEmpty { return .success(whole) }
        return .success(kept.withUnsafeBufferPointer { buffer in
            tape.withRoots(bytes: buffer) { roots in roots.map { $0.materialize() } }
        })
    }
}
