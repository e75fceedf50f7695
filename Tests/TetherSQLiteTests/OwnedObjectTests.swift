import Foundation
import Testing
import Tether
import TetherSQLite

/// Owned objects (objects of an entity without identity, nested in a parent) are values of their
/// parent: a re-import matches them to the parent's stored ones by position, writes only what
/// differs, and deletes the ones the payload no longer gives. Nothing piles up, on both stores,
/// at any batch size (issue 37, items 1 to 3).
@Suite struct OwnedObjectTests {
    static let schema = try! Schema {
        Entity("Account") {
            Attribute("id", .string)
            Attribute("username", .string)
            Relationship.toMany("fields", "Field", inverse: "account", ordered: true)
            Relationship.toMany("emojis", "Emoji", inverse: "account")
            Relationship.toOne("card", "Card", inverse: "account")
        }
        Entity("Field") {
            Attribute("name", .string)
            Attribute("value", .string)
            Relationship.toOne("account", "Account", inverse: "fields")
        }
        Entity("Emoji") {
            Attribute("shortcode", .string)
            Relationship.toOne("account", "Account", inverse: "emojis")
        }
        Entity("Card") {
            Attribute("url", .string)
            Attribute("title", .string)
            Relationship.toOne("account", "Account", inverse: "card")
        }
        Entity("Charge") {
            Attribute("id", .string)
            Attribute("amount", .int64)
            Relationship.toOne("billing", "BillingDetails", inverse: "charge")
            Relationship.toOne("details", "PaymentDetails", inverse: "charge")
        }
        Entity("BillingDetails") {
            Attribute("name", .string)
            Relationship.toOne("charge", "Charge", inverse: "billing")
            Relationship.toOne("address", "Address", inverse: "billing")
        }
        Entity("Address") {
            Attribute("city", .string)
            Attribute("line1", .string)
            Relationship.toOne("billing", "BillingDetails", inverse: "address")
        }
        Entity("PaymentDetails") {
            Attribute("type", .string)
            Relationship.toOne("charge", "Charge", inverse: "details")
            Relationship.toOne("card", "CardDetails", inverse: "details")
            Relationship.toOne("sepa", "SepaDetails", inverse: "details")
        }
        Entity("CardDetails") {
            Attribute("brand", .string)
            Relationship.toOne("details", "PaymentDetails", inverse: "card")
        }
        Entity("SepaDetails") {
            Attribute("bank", .string)
            Relationship.toOne("details", "PaymentDetails", inverse: "sepa")
        }
    }

    static let stores = ["memory", "sqlite"]

    static func client(_ kind: String, _ folder: TemporaryDirectory, batchSize: Int = 10_000) throws -> Client {
        let store: any Store = kind == "memory" ? InMemoryStore() : try SQLiteStore(path: folder.path())
        return try Client.Builder(schema: schema).store(store).importOptions(ImportOptions(batchSize: batchSize)).build()
    }

    static func count(_ client: Client, _ entity: String) async throws -> Int { try await client.count(Query(entity)) }

    static let account = #"{"id": "a1", "username": "ada", "fields": [{"name": "web", "value": "ada.dev"}, {"name": "pronouns", "value": "she"}], "emojis": [{"shortcode": "blob"}], "card": {"url": "https://ada.dev", "title": "Ada"}}"#

    /// Item 1: an account listed k times in one payload, imported twice, keeps 2 fields and 1 card.
    @Test(arguments: stores, [1, 2, 3])
    func anOwnerRepeatedInAPayloadKeepsOneSetOfOwnedObjects(_ kind: String, _ repeats: Int) async throws {
        for batchSize in [10_000, 1] {
            let folder = try TemporaryDirectory()
            let client = try Self.client(kind, folder, batchSize: batchSize)
            let payload = Data(("[" + Array(repeating: Self.account, count: repeats).joined(separator: ",") + "]").utf8)
            for round in 1...3 {
                let result = try await client.import(payload, as: "Account")
                #expect(result.diagnostics.isEmpty, "\(result.diagnostics)")
                #expect(try await Self.count(client, "Field") == 2, "k=\(repeats), batch \(batchSize), import \(round)")
                #expect(try await Self.count(client, "Emoji") == 1, "k=\(repeats), batch \(batchSize), import \(round)")
                #expect(try await Self.count(client, "Card") == 1, "k=\(repeats), batch \(batchSize), import \(round)")
                if round > 1 {
                    #expect(result.inserted.isEmpty && result.updated.isEmpty && result.deleted.isEmpty,
                            "an unchanged re-import changes nothing: \(result.inserted) \(result.updated) \(result.deleted)")
                }
            }
            let account = try #require(try await client.object("Account", identity: .string("a1")))
            let fields = try await client.related("fields", of: account.id)
            #expect(fields.map { $0["name"] } == [.string("web"), .string("pronouns")])
        }
    }

    /// Item 1: occurrences that differ: the last one's owned objects are the ones kept.
    @Test(arguments: stores)
    func theLastOccurrencesOwnedObjectsWin(_ kind: String) async throws {
        for batchSize in [10_000, 1] {
            let folder = try TemporaryDirectory()
            let client = try Self.client(kind, folder, batchSize: batchSize)
            _ = try await client.import(Data(#"""
                [{"id": "a1", "fields": [{"name": "a"}, {"name": "b"}, {"name": "c"}], "card": {"title": "one"}},
                 {"id": "a1", "fields": [{"name": "x"}], "card": {"title": "two"}}]
                """#.utf8), as: "Account")
            let account = try #require(try await client.object("Account", identity: .string("a1")))
            #expect(try await client.related("fields", of: account.id).map { $0["name"] } == [.string("x")])
            #expect(try await Self.count(client, "Field") == 1, "batch \(batchSize)")
            #expect(try await Self.count(client, "Card") == 1, "batch \(batchSize)")
            #expect(try await client.related("card", of: account.id).map { $0["title"] } == [.string("two")])
        }
    }

    /// Item 3: an owned list that changes writes the difference and keeps the list's order; one
    /// that does not change writes nothing; `[]` and `null` delete the owned objects.
    @Test(arguments: stores)
    func anOwnedListIsComparedNotRewritten(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let client = try Self.client(kind, folder)
        _ = try await client.import(Data(#"[{"id": "a1", "fields": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}]"#.utf8), as: "Account")
        let account = try #require(try await client.object("Account", identity: .string("a1")))
        let before = try await client.related("fields", of: account.id).map(\.id)

        let unchanged = try await client.import(Data(#"[{"id": "a1", "fields": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}]"#.utf8),
                                                as: "Account")
        #expect(unchanged.inserted.isEmpty && unchanged.updated.isEmpty && unchanged.deleted.isEmpty)
        #expect(try await client.related("fields", of: account.id).map(\.id) == before, "the same objects")

        let shorter = try await client.import(Data(#"[{"id": "a1", "fields": [{"name": "a"}, {"name": "x"}]}]"#.utf8), as: "Account")
        #expect(shorter.inserted.isEmpty)
        #expect(Set(shorter.updated) == [account.id, before[1]], "the account (one field fewer) and the field that changed")
        #expect(shorter.deleted == [before[2]])
        #expect(try await client.related("fields", of: account.id).map { $0["name"] } == [.string("a"), .string("x")])
        #expect(try await Self.count(client, "Field") == 2)

        let longer = try await client.import(Data(#"[{"id": "a1", "fields": [{"name": "a"}, {"name": "x"}, {"name": "y"}]}]"#.utf8),
                                             as: "Account")
        #expect(longer.inserted.count == 1)
        #expect(try await Self.count(client, "Field") == 3)

        _ = try await client.import(Data(#"[{"id": "a1", "fields": []}]"#.utf8), as: "Account")
        #expect(try await Self.count(client, "Field") == 0, "an empty list deletes the owned objects, it does not only unlink them")

        _ = try await client.import(Data(#"[{"id": "a1", "card": {"title": "t"}}]"#.utf8), as: "Account")
        _ = try await client.import(Data(#"[{"id": "a1", "card": null}]"#.utf8), as: "Account")
        #expect(try await Self.count(client, "Card") == 0, "null deletes the owned object")
    }

    /// Item 2: an owned object inside an owned object is matched in place too.
    @Test(arguments: stores)
    func anOwnedObjectInsideAnOwnedObjectIsNotInsertedAgain(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let client = try Self.client(kind, folder)
        let payload = Data(#"[{"id": "ch_1", "amount": 100, "billing": {"name": "Jenny", "address": {"city": "Berlin"}}}]"#.utf8)
        _ = try await client.import(payload, as: "Charge")
        for _ in 0..<2 {
            let again = try await client.import(payload, as: "Charge")
            #expect(again.inserted.isEmpty, "\(again.inserted)")
            #expect(again.updated.isEmpty, "\(again.updated)")
        }
        #expect(try await Self.count(client, "BillingDetails") == 1)
        #expect(try await Self.count(client, "Address") == 1)

        let moved = try await client.import(
            Data(#"[{"id": "ch_1", "billing": {"name": "Jenny", "address": {"city": "Paris"}}}]"#.utf8), as: "Charge")
        #expect(moved.inserted.isEmpty)
        #expect(moved.updated.count == 1)
        #expect(try await client.fetch(Query("Address")).map { $0["city"] } == [.string("Paris")])
    }

    /// Item 2: when an owned object changes kind (card details to SEPA details), the old kind's
    /// object goes: an owned object the payload gives is given whole.
    @Test(arguments: stores)
    func anOwnedObjectGivenAgainIsGivenWhole(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let client = try Self.client(kind, folder)
        _ = try await client.import(Data(#"""
            [{"id": "ch_1", "details": {"type": "card", "card": {"brand": "visa"}},
              "billing": {"name": "Jenny", "address": {"city": "Berlin", "line1": "Hauptstr. 1"}}}]
            """#.utf8), as: "Charge")
        _ = try await client.import(Data(#"""
            [{"id": "ch_1", "details": {"type": "sepa_debit", "sepa": {"bank": "GLS"}}, "billing": {"name": "Jenny", "address": {"city": "Berlin"}}}]
            """#.utf8), as: "Charge")
        #expect(try await Self.count(client, "CardDetails") == 0)
        #expect(try await Self.count(client, "SepaDetails") == 1)
        #expect(try await Self.count(client, "PaymentDetails") == 1)
        let details = try #require(try await client.fetch(Query("PaymentDetails")).first)
        #expect(details["type"] == .string("sepa_debit"))
        #expect(try await client.related("card", of: details.id).isEmpty)
        let address = try #require(try await client.fetch(Query("Address")).first)
        #expect(address["line1"] == nil, "a key an owned object given again does not give is cleared")

        // The owner without the key keeps its owned object: only an owned object given is replaced.
        _ = try await client.import(Data(#"[{"id": "ch_1", "amount": 5}]"#.utf8), as: "Charge")
        #expect(try await Self.count(client, "SepaDetails") == 1)
        #expect(try await Self.count(client, "Address") == 1)
    }
}

/// An object repeated across batch boundaries (issue 37, item 4; the fuzz harness's former known
/// issue): the graph does not depend on the batch size. An earlier occurrence's links are applied
/// too, in payload order, where linking takes targets from other objects (a to-one inverse).
@Suite struct RepeatsAcrossBatchesTests {
    static let schema = try! Schema {
        Entity("Repo") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Relationship.toOne("parent", "Repo", inverse: "forks")
            Relationship.toMany("forks", "Repo", inverse: "parent")
        }
    }

    static func graph(_ kind: String, batchSize: Int, _ payloads: [String]) async throws -> [String] {
        let folder = try TemporaryDirectory()
        let store: any Store = kind == "memory" ? InMemoryStore() : try SQLiteStore(path: folder.path())
        let client = try Client.Builder(schema: schema).store(store).importOptions(ImportOptions(batchSize: batchSize)).build()
        for payload in payloads { _ = try await client.import(Data(payload.utf8), as: "Repo") }
        var lines: [String] = []
        for repo in try await client.fetch(Query("Repo", sortedBy: [.ascending("id")])) {
            let parent = try await client.related("parent", of: repo.id).first?["id"]
            let forks = try await client.related("forks", of: repo.id).compactMap { $0["id"] }
            lines.append("\(repo["id"].map { "\($0)" } ?? "?") parent \(parent.map { "\($0)" } ?? "-") forks \(forks.map { "\($0)" })")
        }
        return lines
    }

    @Test(arguments: ["memory", "sqlite"])
    func theGraphDoesNotDependOnTheBatchSize(_ kind: String) async throws {
        let setup = #"[{"id": 1, "forks": [{"id": 2}, {"id": 3}]}]"#
        let payloads = [
            #"[{"id": 2, "forks": [{"id": 2}, {"id": 3}]}, {"id": 2, "forks": []}]"#,
            #"[{"id": 2, "forks": [{"id": 3}]}, {"id": 1, "name": "x"}, {"id": 2, "forks": [{"id": 4}]}, {"id": 5, "forks": [{"id": 3}]}]"#,
            #"[{"id": 4, "parent": {"id": 1}}, {"id": 1, "forks": [{"id": 2}]}, {"id": 4, "parent": {"id": 2}}]"#,
        ]
        for payload in payloads {
            let whole = try await Self.graph(kind, batchSize: 10_000, [setup, payload])
            let one = try await Self.graph(kind, batchSize: 1, [setup, payload])
            let two = try await Self.graph(kind, batchSize: 2, [setup, payload])
            #expect(whole == one, "\(payload)")
            #expect(whole == two, "\(payload)")
        }
        // As importing the occurrences one at a time: 2 and 3 leave 1, then 2 lets them go.
        let first = try await Self.graph(kind, batchSize: 10_000, [setup, payloads[0]])
        #expect(first == ["1 parent - forks []", "2 parent - forks []", "3 parent - forks []"])
    }
}
