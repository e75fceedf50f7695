import Foundation
import Testing
import Tether
import TetherSQLite

/// Typed models on the SQLite store: every attribute type a model can hold survives a round trip
/// through the file (and a reopen), relationships come back at depth, and typed queries are
/// evaluated by SQLite.
@Suite struct TypedModelTests {
    enum Kind: String, Codable, Sendable, CaseIterable { case small, large }

    struct Owner: EntityModel {
        var id: Int64
        var login: String
        var crates: [Crate] = []
    }

    struct Crate: EntityModel {
        var id: Int64
        var label: String
        var count: Int?
        var small: Int16?
        var medium: Int32?
        var ratio: Double?
        var weight: Float?
        var price: Decimal?
        var fragile: Bool?
        var shippedAt: Date?
        var payload: Data?
        var token: UUID?
        var link: URL?
        var kind: Kind?
        var owner: Owner?
        var contents: [Item] = []

        static func describe(_ model: inout ModelDescription<Self>) {
            model.ordered(\.contents)
            model.jsonKey(\.shippedAt, "shipped_at")
        }
    }

    struct Item: EntityModel {
        var id: Int64
        var name: String
        var crate: Crate?
    }

    static let payload = Data(#"""
        [{"id": 1, "label": "A", "count": 3, "small": -7, "medium": 70000, "ratio": 0.25, "weight": 1.5,
          "price": "12.30", "fragile": true, "shipped_at": "2024-05-06T07:08:09Z", "payload": "AQID",
          "token": "E621E1F8-C36C-495A-93FC-0C247A3E6E5F", "link": "https://example.com/a", "kind": "large",
          "owner": {"id": 9, "login": "ada"},
          "contents": [{"id": 3, "name": "c"}, {"id": 1, "name": "a"}, {"id": 2, "name": "b"}]},
         {"id": 2, "label": "B", "owner": {"id": 9, "login": "ada"}}]
        """#.utf8)

    @Test func modelsRoundTripThroughTheFileAndAReopen() async throws {
        let directory = try TemporaryDirectory()
        func client() throws -> Client {
            try Client.Builder(models: [Owner.self, Crate.self, Item.self]).store(try SQLiteStore(path: directory.path())).build()
        }
        let first = try client()
        let imported = try await first.import(Self.payload, as: Crate.self)
        #expect(imported.map(\.label) == ["A", "B"])

        let reopened = try client()
        let a = try #require(try await reopened.model(Crate.self, identity: 1))
        #expect(a.count == 3 && a.small == -7 && a.medium == 70000 && a.ratio == 0.25 && a.weight == 1.5)
        #expect(a.price == Decimal(string: "12.30") && a.fragile == true)
        #expect(a.shippedAt == Date(timeIntervalSince1970: 1714979289))
        #expect(a.payload == Data([1, 2, 3]) && a.token == UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
        #expect(a.link?.absoluteString == "https://example.com/a" && a.kind == .large)
        #expect(a.owner?.login == "ada")
        #expect(a.contents.map(\.name) == ["c", "a", "b"])   // ordered, in payload order
        let b = try #require(try await reopened.model(Crate.self, identity: 2))
        #expect(b.count == nil && b.kind == nil && b.contents.isEmpty)

        // depth 2 reaches the owner's crates; depth 0 reads attributes only
        let deep = try #require(try await reopened.model(Crate.self, identity: 1, depth: 2))
        #expect(Set(deep.owner?.crates.map(\.label) ?? []) == ["A", "B"])
        let flat = try #require(try await reopened.model(Crate.self, identity: 1, depth: 0))
        #expect(flat.owner == nil && flat.contents.isEmpty && flat.label == "A")

        // typed predicates and sorts, evaluated by SQLite
        #expect(try await reopened.fetch(Crate.self, where: .equal(\.kind, .large)).map(\.id) == [1])
        #expect(try await reopened.fetch(Crate.self, where: .equal(\.count, nil)).map(\.id) == [2])
        #expect(try await reopened.fetch(Item.self, sortedBy: [.descending(\.name)]).map(\.name) == ["c", "b", "a"])
        #expect(try await reopened.count(Crate.self, where: .greater(\.shippedAt, Date(timeIntervalSince1970: 0))) == 1)

        // a local update through the model is stored
        var changed = a
        changed.count = 4
        changed.kind = nil
        try await reopened.updateLocally(changed)
        let again = try #require(try await reopened.model(Crate.self, identity: 1))
        #expect(again.count == 4 && again.kind == nil && again.contents.map(\.name) == ["c", "a", "b"])
    }
}
