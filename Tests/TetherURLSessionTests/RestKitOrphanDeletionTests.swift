import Foundation
import Testing
import Tether
import TetherTesting

/// RestKit's orphan deletion (`RKManagedObjectRequestOperation.deletesOrphanedObjects` with fetch
/// request blocks), as Tether's `deleteMissing` does it after a fetch; each test names the RestKit
/// test it follows (Tests/Logic/Network/RKManagedObjectRequestOperationTest.m).
@Suite struct RestKitOrphanDeletionTests {
    static let schema = try! Schema {
        Entity("Human") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Relationship.toMany("friends", "Human")
        }
    }

    let stub = StubTransport()

    func client() async throws -> Client {
        let client = try Client.Builder(schema: Self.schema).transport(stub).baseURL(stubBase).build()
        // Blake, Sarah, Monkey, Colin and an orphan, as the RestKit test creates them.
        _ = try await client.import(JSON.array([
            ["id": 1, "name": "Blake"], ["id": 2, "name": "Sarah"], ["id": 3, "name": "Monkey"], ["id": 4, "name": "Colin"],
            ["id": 5, "name": "Orphan"],
        ]), as: "Human")
        return client
    }

    func names(_ client: Client) async throws -> [String] {
        try await client.fetch(Query("Human", sortedBy: [.ascending("id")])).compactMap { $0["name", as: String.self] }
    }

    /// testThatObjectsOrphanedByRequestOperationAreDeletedAppropriately: nested and self-referential
    /// occurrences are held; Monkey, once `3` and once `"3"`, is one object.
    @Test func objectsOrphanedByTheResponseAreDeleted() async throws {
        let body = try Data(contentsOf: fixturesFolder.appendingPathComponent("restkit/self_referential.json"))
        stub.on(.get, "/humans", status: 200, headers: ["Content-Type": "application/json"], body: body)
        let client = try await client()
        let result = try await client.fetchObjects("Human", from: "/humans", options: ImportOptions(deleteMissing: .all))
        #expect(result.importResult.deleted.count == 1)
        #expect(try await names(client) == ["Blake", "Sarah", "Monkey", "Colin"])
        let colin = try #require(try await client.object("Human", identity: .int(4)))
        let sarah = try #require(try await client.object("Human", identity: .int(2)))
        #expect(try await client.related("friends", of: colin.id).map(\.id) == client.related("friends", of: sarah.id).map(\.id))
    }

    /// testThanAnEmptyResponseTriggersDeletionOfOrphanedObjects.
    @Test func anEmptyResponseDeletesEverythingInScope() async throws {
        stub.on(.get, "/humans", json: [])
        let client = try await client()
        _ = try await client.fetchObjects("Human", from: "/humans", options: ImportOptions(deleteMissing: .all))
        #expect(try await client.count(Query("Human")) == 0)
    }

    /// testThatErrorStatusCodeDoesNotTriggerDeletionOfOrphanedObjects.
    @Test func anErrorStatusDeletesNothing() async throws {
        stub.on(.get, "/humans", status: 500, json: ["error": "Internal Server Error"])
        let client = try await client()
        await #expect(throws: HTTPError.self) {
            _ = try await client.fetchObjects("Human", from: "/humans", options: ImportOptions(deleteMissing: .all))
        }
        #expect(try await client.count(Query("Human")) == 5)
    }

    /// testThatCorruptedBodyDoesNotTriggerDeletionOfOrphanedObjects.
    @Test func aCorruptedBodyDeletesNothing() async throws {
        stub.on(.get, "/humans", status: 200, headers: ["Content-Type": "application/json"], body: Data(#"[{"id": 1, "name": "#.utf8))
        let client = try await client()
        await #expect(throws: JSONParseError.self) {
            _ = try await client.fetchObjects("Human", from: "/humans", options: ImportOptions(deleteMissing: .all))
        }
        #expect(try await client.count(Query("Human")) == 5)
    }

    /// testThatDeletionOfOrphanedObjectsCanBeSuppressedByPredicate: a scope of a condition.
    @Test func aConditionNarrowsWhatMayBeDeleted() async throws {
        stub.on(.get, "/humans", json: [["id": 1, "name": "Blake"]])
        let client = try await client()
        _ = try await client.fetchObjects("Human", from: "/humans", options: ImportOptions(deleteMissing: .matching(.greater("id", .int(3)))))
        #expect(try await names(client) == ["Blake", "Sarah", "Monkey"])
    }
}
