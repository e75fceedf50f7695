import Foundation
import Testing
import Tether
import TetherTesting

/// What a document format reads but cannot place (``Document/diagnostics``) reaches the import's
/// result, for any format, and is the error under the fail policy.
@Suite struct DocumentDiagnosticsTests {
    /// Plain JSON, but a `kind` member the format does not understand is left out and reported.
    struct Fussy: DocumentFormat {
        func read(_ body: JSON, _ request: DocumentRequest) throws -> Document {
            var document = try PlainJSONFormat().read(body, request)
            for (i, object) in document.objects.enumerated() {
                guard case .object(var members) = object, let kind = members.removeValue(forKey: "kind") else { continue }
                document.objects[i] = .object(members)
                document.diagnostics.append(ImportDiagnostic(
                    path: JSONPath([.index(i), .key("kind")]), entity: request.entity.name, attribute: "kind", problem: .invalidValue,
                    action: .valueSkipped, message: "the kind \(kind.stringValue ?? "?") is not read"))
            }
            return document
        }
    }

    static let schema = try! Schema {
        Entity("Note") { Attribute("id", .int64); Attribute("title", .string) }
    }

    static func client(_ stub: StubTransport, policy: ImportOptions.Policy = .report) throws -> Client {
        try Client.Builder(schema: schema)
            .documentFormat(Fussy())
            .importOptions(ImportOptions(policy: policy))
            .transport(stub)
            .baseURL(URL(string: "https://api.example.com")!)
            .build()
    }

    @Test func aFormatsDiagnosticsJoinTheImportsAndFailUnderTheFailPolicy() async throws {
        let stub = StubTransport()
        stub.on(.get, "/notes", json: [["id": 1, "title": "a", "kind": "memo"], ["id": 2, "title": "b"]])
        stub.on(.get, "/notes/1", json: ["id": 1, "title": "a, again", "kind": "memo"])
        let client = try Self.client(stub)
        let result = try await client.fetchObjects("Note", from: "/notes")
        #expect(result.objects.count == 2)
        #expect(result.importResult.diagnostics.map(\.message) == ["the kind memo is not read"])
        #expect(result.importResult.diagnostics.first?.path.description == "$[0].kind")

        let strict = try Self.client(stub, policy: .fail)
        await #expect(throws: ImportError.self) { try await strict.fetchObjects("Note", from: "/notes") }
        await #expect(throws: ImportError.self) { try await strict.fetchObject("Note", from: "/notes/1") }
        #expect(try await strict.count(Query("Note")) == 0, "nothing written")
    }
}
