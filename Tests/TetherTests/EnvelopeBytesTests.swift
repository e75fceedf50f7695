import Foundation
import Testing
import Tether

/// `import(data, as:)` reads a top-level object by the entity's response shape on the tape (no
/// `JSON` tree): for every shape and body, it must import exactly what `import(json, as:)` does,
/// and refuse exactly what it refuses, with the same message.
@Suite struct EnvelopeBytesTests {
    static let schema = try! Schema {
        Entity("Charge", identity: "id") {
            Attribute("id", .string)
            Attribute("amount", .int64)
            Relationship.toOne("customer", "Customer", inverse: "charges")
        }
        Entity("Customer", identity: "id") {
            Attribute("id", .string)
            Attribute("name", .string)
            Relationship.toMany("charges", "Charge", inverse: "customer")
        }
    }

    static let bodies: [String] = [
        #"{"object": "list", "data": [{"id": "ch_1", "amount": 100, "customer": {"id": "cu_1", "name": "Jenny"}}, {"id": "ch_2", "amount": 250}], "has_more": true}"#,
        #"{"object": "list", "data": [], "has_more": false}"#,
        #"{"data": {"id": "ch_3", "amount": 7}}"#,
        #"{"data": "nope"}"#,
        #"{"data": [1, 2]}"#,
        #"{"data": [{"object": "other"}]}"#,
        #"{"count": 2, "next": null, "results": [{"id": "ch_4", "amount": 1}, {"id": "ch_5", "amount": 2}]}"#,
        #"{"id": "ch_6", "amount": 9}"#,
        #"{"page": {"items": [{"id": "ch_7", "amount": 70}]}}"#,
        #"{"page": {"items": [{"id": "ch_8", "amount": 80}], "more": true}, "d\u0061ta": [{"id": "ch_9", "amount": 90}]}"#,
        #"{"object": "list", "url": "/v1/charges"}"#,
    ]

    static let shapes: [ResponseShape] = [.automatic, .keyPath("data"), .keyPath("page.items"), .object]

    /// What an import gives: the identities imported, in order, or the error's message.
    static func outcome(_ body: String, _ shape: ResponseShape, bytes: Bool) async -> String {
        do {
            let client = try Client.Builder(schema: schema).responseShape(shape, for: "Charge").build()
            let result = bytes
                ? try await client.import(Data(body.utf8), as: "Charge")
                : try await client.import(JSON(parsing: Data(body.utf8)), as: "Charge")
            var ids: [String] = []
            for id in result.objects {
                ids.append(try await client.object(id)?.values["id"]?.description ?? "?")
            }
            let customers = try await client.count(Query("Customer"))
            return "imported \(ids) (\(customers) customers, \(result.diagnostics.count) diagnostics)"
        } catch let error as ImportError {
            return "ImportError at \(error.path): \(error.message)"
        } catch {
            return "\(type(of: error)): \(error)"
        }
    }

    @Test(arguments: shapes)
    func bytesAndTreeImportTheSameOrRefuseTheSame(_ shape: ResponseShape) async throws {
        for body in Self.bodies {
            let fromBytes = await Self.outcome(body, shape, bytes: true)
            let fromTree = await Self.outcome(body, shape, bytes: false)
            #expect(fromBytes == fromTree, "\(shape), \(body)")
        }
    }

    @Test func anEnvelopedListIsImportedFromItsBytes() async throws {
        let client = try Client.Builder(schema: Self.schema).responseShape(.keyPath("data"), for: "Charge").build()
        let result = try await client.import(Data(Self.bodies[0].utf8), as: "Charge")
        #expect(result.objects.count == 2)
        #expect(result.inserted.count == 3)  // two charges and the customer
        let again = try await client.import(Data(Self.bodies[0].utf8), as: "Charge")
        #expect(again.inserted.isEmpty && again.updated.isEmpty)
        // An envelope without its key is refused, never an import of nothing.
        await #expect(throws: ImportError.self) { try await client.import(Data(Self.bodies.last!.utf8), as: "Charge") }
    }
}
