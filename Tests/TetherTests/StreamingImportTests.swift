import Foundation
import Testing
import Tether

/// Streaming a file through the import: element splitting across chunk boundaries, error offsets
/// from the start of the file, and batches that behave as one import.
@Suite struct StreamingImportTests {
    func write(_ text: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("tether-stream-\(UUID().uuidString).json")
        try Data(text.utf8).write(to: url)
        return url
    }

    func elements(_ text: String, chunkSize: Int) throws -> [JSON] {
        let url = try write(text)
        defer { try? FileManager.default.removeItem(at: url) }
        var out: [JSON] = []
        try JSONStream(contentsOf: url, chunkSize: chunkSize).forEachElement { json, _ in out.append(json) }
        return out
    }

    static let document = #"""
         [ {"id": 1, "name": "a ] } [ {", "nested": {"list": [1, 2, {"x": "\"quoted\""}]}},
          "plain string", 42 , -1.5e3,true,null, [ [], {} ],
          {"id": 2, "emoji": "🐙 Zoë", "path": "C:\\dir\\", "q": "\\\""} ]
        """#

    /// Every chunk size up to 40 bytes puts a boundary at every kind of position (inside a
    /// string, right after a backslash, between brackets).
    @Test(arguments: Array(1...40) + [64, 1 << 20])
    func splitsElementsAcrossChunkBoundaries(chunkSize: Int) throws {
        let streamed = try elements(Self.document, chunkSize: chunkSize)
        let whole = try JSON(parsing: Self.document).arrayValue!
        #expect(streamed == whole)
        #expect(streamed.count == 8)
    }

    @Test func aDocumentThatIsNotAnArrayIsReadWhole() throws {
        #expect(try elements(#"{"id": 7}"#, chunkSize: 16) == [["id": 7]])
        #expect(try elements("[]", chunkSize: 16) == [])
    }

    @Test(arguments: [
        (#"[{"id": 1}, {"id": 2,}]"#, 20),
        (#"[{"id": 1},]"#, 10),  // the comma, as JSONParser reports it
        (#"[{"id": 1} {"id": 2}]"#, 11),
        (#"[{"id": 1}] x"#, 12),
        (#"[{"id": 1}, {"id": "#, 19),
    ])
    func errorsCarryTheFileOffset(text: String, offset: Int) throws {
        let error = #expect(throws: JSONParseError.self) { try elements(text, chunkSize: 16) }
        #expect(error?.offset == offset)
    }

    @Test func streamingImportBatchesBehaveAsOneImport() async throws {
        let schema = try Schema {
            Entity("User") { Attribute("id", .int64); Attribute("login", .string); Relationship.toMany("repositories", "Repository", inverse: "owner") }
            Entity("Repository") { Attribute("id", .int64); Attribute("name", .string); Relationship.toOne("owner", "User", inverse: "repositories") }
        }
        let client = try Client.Builder(schema: schema).importOptions(ImportOptions(batchSize: 3)).build()
        var repositories: [String] = []
        for i in 0..<10 {
            repositories.append(#"{"id": \#(i), "name": "r\#(i)", "owner": {"id": \#(i % 4), "login": "u\#(i % 4)"}}"#)
        }
        // Repository 2 repeats in a later batch with a new name: the last occurrence wins.
        repositories.append(#"{"id": 2, "name": "renamed", "owner_id": 3}"#)
        repositories.append(#"{"id": 99, "name": [5]}"#)
        let url = try write("[" + repositories.joined(separator: ",\n") + "]")
        defer { try? FileManager.default.removeItem(at: url) }

        let result = try await client.import(contentsOf: url, as: "Repository")
        #expect(result.objects.count == 11)
        #expect(result.inserted.count == 15)  // 11 repositories and 4 users
        #expect(result.updated.isEmpty)  // objects created by this import are reported as inserted
        #expect(result.diagnostics.map(\.path.description) == ["$[11].name"])
        #expect(try await client.count(Query("Repository")) == 11)
        #expect(try await client.count(Query("User")) == 4)
        let two = try #require(try await client.object("Repository", identity: .int(2)))
        #expect(two["name"] == .string("renamed"))
        #expect(try await client.related("owner", of: two.id).map { $0["id"] } == [.int(3)])

        let again = try await client.import(contentsOf: url, as: "Repository")
        #expect(again.inserted.isEmpty)
        #expect(again.objects == result.objects)
    }

    /// A file is read and mapped on a second thread while earlier batches are written: a syntax
    /// error near its end rolls back what was written, and the error's offset is from the start of
    /// the file.
    @Test func aSyntaxErrorInALaterBatchOfAFileWritesNothing() async throws {
        let schema = try Schema { Entity("User") { Attribute("id", .int64); Attribute("login", .string) } }
        let client = try Client.Builder(schema: schema).importOptions(ImportOptions(batchSize: 2)).build()
        let text = "[" + (1...9).map { #"{"id": \#($0), "login": "u\#($0)"}"# }.joined(separator: ", ") + ", {\"id\": 10} x]"
        let url = try write(text)
        defer { try? FileManager.default.removeItem(at: url) }
        let error = await #expect(throws: JSONParseError.self) { try await client.import(contentsOf: url, as: "User") }
        #expect(error?.offset == text.utf8.count - 2)
        #expect(try await client.count(Query("User")) == 0)
    }
}
