import Foundation
import Testing
@testable import Tether

/// Payloads a hostile or careless server may send (issue 18, items 2, 4 and 5): every one is
/// rejected with a diagnostic or imported exactly, never stored half-right, and nothing traps later.
@Suite struct HardeningTests {
    static let schema = try! Schema {
        Entity("Repository") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Attribute("createdAt", .date)
            Attribute("stars", .int32)
        }
        Entity("Tag") {
            Attribute("id", .int32)
            Attribute("name", .string)
        }
    }

    func makeClient(_ options: ImportOptions = ImportOptions()) throws -> Client {
        try Client.Builder(schema: Self.schema).importOptions(options).transport(NoTransport()).build()
    }

    struct NoTransport: Transport {
        func send(_ request: TransportRequest) async throws -> TransportResponse { TransportResponse(status: 500) }
    }

    /// Imports `text` both ways, as bytes and as a parsed tree, into fresh clients.
    func importBothWays(_ text: String, as entity: String = "Repository") async throws -> [(Client, ImportResult)] {
        var results: [(Client, ImportResult)] = []
        let bytes = try makeClient()
        results.append((bytes, try await bytes.import(Data(text.utf8), as: entity)))
        let tree = try makeClient()
        results.append((tree, try await tree.import(try JSON(parsing: Data(text.utf8)), as: entity)))
        return results
    }

    // MARK: Dates (item 2)

    @Test(arguments: ["1e19", "-1e19", "253402300800", "-62135596801", "1e300"])
    func aDateOutsideTheRepresentableRangeIsRejected(_ date: String) async throws {
        for (client, result) in try await importBothWays(#"[{"id":1000,"createdAt":\#(date),"name":"a"}]"#) {
            #expect(result.inserted.count == 1)
            let diagnostic = try #require(result.diagnostics.first)
            #expect(diagnostic.attribute == "createdAt")
            #expect(diagnostic.path.description == "$[0].createdAt")
            #expect(diagnostic.action == .valueSkipped)
            let stored = try #require(try await client.object(result.objects[0]))
            #expect(stored["createdAt"] == nil)
            #expect(stored["name"] == .string("a"))
            // Nothing traps afterwards.
            _ = try await client.export(result.objects[0])
        }
    }

    @Test func theEdgesOfTheRangeRoundTrip() async throws {
        for (client, result) in try await importBothWays(#"[{"id":1,"createdAt":"0001-01-01T00:00:00Z"},{"id":2,"createdAt":"9999-12-31T23:59:59Z"}]"#) {
            #expect(result.diagnostics.isEmpty)
            let first = try await client.export(result.objects[0])
            let last = try await client.export(result.objects[1])
            #expect(first["createdAt"] == "0001-01-01T00:00:00Z")
            #expect(last["createdAt"] == "9999-12-31T23:59:59Z")
        }
    }

    @Test func aDateOutsideTheRangeIsNeitherStoredNorWrittenAsADate() async throws {
        let client = try makeClient()
        for seconds in [1e19, -1e19, 3e11, -7e10, Double.infinity, Double.nan] {
            // Refused where it would be stored (issue 37: it was exported as a bare number).
            await #expect(throws: StoreError.self) {
                try await client.insertLocally("Repository", values: ["createdAt": .date(Date(timeIntervalSince1970: seconds))])
            }
            // One that reaches a body by other means (a file written before) never traps.
            let json = DateDecoding.default.json(from: Date(timeIntervalSince1970: seconds))
            #expect(json == (seconds.isFinite ? .double(seconds) : .null), "\(json)")
        }
        // The formatter itself writes years past 9999 in the expanded form instead of trapping.
        #expect(ISO8601.format(Date(timeIntervalSince1970: 3e11), fractionalSeconds: false) == "+11476-08-15T05:20:00Z")
        #expect(ISO8601.format(Date(timeIntervalSince1970: 1e19), fractionalSeconds: false) == "1e+19")
    }

    // MARK: Identities (items 4 and 5)

    @Test func aNumericStringIdentityIsOneObject() async throws {
        for text in [#"[{"id":"7000","name":"a"}]"#, #"[{"id":7000,"name":"a"}]"#] {
            let client = try makeClient()
            for _ in 0..<2 {
                _ = try await client.import(Data(#"[{"id":"7000","name":"a"}]"#.utf8), as: "Repository")
                _ = try await client.import(try JSON(parsing: Data(text.utf8)), as: "Repository")
            }
            let all = try await client.fetch(Query("Repository"))
            #expect(all.count == 1)
            #expect(all.first?["id"] == .int(7000), "the row has its identity")
        }
    }

    /// An identity strategy that normalises: the identity stored is the one looked up.
    struct LowercasedLogins: IdentityStrategy {
        func identityAttributes(for entity: Entity) -> [String] { ["name"] }
        func identityValue(from json: JSON, for attribute: Attribute) -> Value? { json.stringValue.map { .string($0.lowercased()) } }
    }

    @Test func aNormalisedIdentityIsStoredAsLookedUp() async throws {
        let client = try Client.Builder(schema: Self.schema).identity(LowercasedLogins()).build()
        _ = try await client.import(Data(#"[{"name":"OctoCat","id":1}]"#.utf8), as: "Repository")
        _ = try await client.import(try JSON(parsing: Data(#"[{"name":"octocat","id":2}]"#.utf8)), as: "Repository")
        let all = try await client.fetch(Query("Repository"))
        #expect(all.map { $0["name"] } == [.string("octocat")])
        #expect(all.first?["id"] == .int(2))
    }

    @Test(arguments: ["9007199254740993.0", "9007199254740993e0", "-9223372036854775809", "9223372036854775808", "1.5", "1e300"])
    func anInexactIdentityIsRejected(_ id: String) async throws {
        for (client, result) in try await importBothWays(#"[{"id":\#(id),"name":"a"}]"#) {
            #expect(result.inserted.isEmpty)
            let diagnostic = try #require(result.diagnostics.first)
            #expect(diagnostic.problem == .missingIdentity)
            #expect(diagnostic.path.description == "$[0].id")
            #expect(try await client.count(Query("Repository")) == 0)
        }
        let strict = try makeClient(ImportOptions(policy: .fail))
        await #expect(throws: ImportError.self) { _ = try await strict.import(Data(#"[{"id":\#(id)}]"#.utf8), as: "Repository") }
    }

    @Test func exactIntegersWrittenAsNumbersWithAFractionAreAccepted() async throws {
        for (client, result) in try await importBothWays(#"[{"id":12.0,"stars":1e3},{"id":9007199254740991.0}]"#) {
            #expect(result.diagnostics.isEmpty)
            let objects = try await client.fetch(Query("Repository", sortedBy: [.ascending("id")]))
            #expect(objects.map { $0["id"] } == [.int(12), .int(9_007_199_254_740_991)])
            #expect(objects[0]["stars"] == .int(1000))
        }
    }

    @Test func aNonIdentityIntegerThatLosesPrecisionIsRejected() async throws {
        for (client, result) in try await importBothWays(#"[{"id":1,"stars":3000000000},{"id":2,"stars":2147483648.0},{"id":3,"stars":9007199254740993.0}]"#) {
            #expect(result.diagnostics.count == 3)
            #expect(result.diagnostics.allSatisfy { $0.attribute == "stars" && $0.action == .valueSkipped })
            #expect(try await client.fetch(Query("Repository")).allSatisfy { $0["stars"] == nil })
        }
    }

    @Test func anIdentityOutOfItsAttributesRangeIsRejected() async throws {
        let client = try makeClient()
        let result = try await client.import(Data(#"[{"id":2147483648,"name":"big"},{"id":"-2147483649"},{"id":"12","name":"ok"}]"#.utf8), as: "Tag")
        #expect(result.inserted.count == 1)
        #expect(result.diagnostics.map(\.problem) == [.missingIdentity, .missingIdentity])
        #expect(try await client.fetch(Query("Tag")).map { $0["id"] } == [.int(12)])
    }
}
