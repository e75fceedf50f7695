import Foundation
import Testing
import Tether
import TetherSQLite

/// Typed reads from `SQLiteStore` decode rows (the model's attributes by position, to-one
/// foreign keys in the same row), not `Object`s: they give exactly the models that the same reads
/// give from the in-memory store, which decodes objects, at every depth, for every relationship
/// kind, with conditions SQLite evaluates and conditions it leaves to Swift, and with the same
/// errors.
@Suite struct TypedRowReadTests {
    enum Kind: String, Codable, Sendable, CaseIterable { case small, large }
    enum StrictKind: String, Codable, Sendable, CaseIterable { case small }

    /// The entities, declared by hand; the models below are views of them (some partial).
    static let schema: Schema = {
        do {
            return try Schema {
                Entity("Owner", identity: "id") {
                    Attribute("id", .int64)
                    Attribute("login", .string)
                    Attribute("since", .date)
                    Attribute("score", .double)
                    Attribute("email", .string)
                    Relationship.toMany("crates", "Crate", inverse: "owner")
                    Relationship.toOne("passport", "Passport", inverse: "holder")
                }
                Entity("Crate", identity: "id") {
                    Attribute("id", .int64)
                    Attribute("label", .string)
                    Attribute("count", .int64)
                    Attribute("price", .decimal)
                    Attribute("kind", .string)
                    Attribute("fragile", .bool)
                    Attribute("note", .string)
                    Relationship.toOne("owner", "Owner", inverse: "crates")
                    Relationship.toMany("tags", "Tag", inverse: "crates", ordered: true)
                }
                Entity("Tag", identity: "id") {
                    Attribute("id", .int64)
                    Attribute("name", .string)
                    Relationship.toMany("crates", "Crate", inverse: "tags")
                }
                Entity("Passport", identity: "id") {
                    Attribute("id", .int64)
                    Attribute("number", .string)
                    Relationship.toOne("holder", "Owner", inverse: "passport")
                }
            }
        } catch {
            fatalError("the test schema is invalid: \(error)")
        }
    }()

    struct Crate: EntityModel, Equatable {
        static var entityName: String { "Crate" }
        var id: Int64
        var label: String
        var count: Int?
        var price: Decimal?
        var kind: Kind?
        var fragile: Bool?
        var owner: Owner?
        var tags: [Tag] = []
    }

    struct Owner: EntityModel, Equatable {
        static var entityName: String { "Owner" }
        var id: Int64
        var login: String
        var since: Date?
        var score: Double?
        var passport: Passport?
        var crates: [Crate] = []
    }

    struct Tag: EntityModel, Equatable {
        static var entityName: String { "Tag" }
        var id: Int64
        var name: String
        var crates: [Crate] = []
    }

    struct Passport: EntityModel, Equatable {
        static var entityName: String { "Passport" }
        var id: Int64
        var number: String
        var holder: Holder?
    }

    /// A partial view of Owner (a passport's holder cannot be an `Owner`, which holds a passport).
    struct Holder: EntityModel, Equatable {
        static var entityName: String { "Owner" }
        var login: String
        var id: Int64
    }

    static let payload = Data(#"""
        [{"id": 1, "label": "A", "count": 3, "price": "12.30", "kind": "large", "fragile": true, "note": "n",
          "owner": {"id": 9, "login": "ada", "since": "2024-05-06T07:08:09Z", "score": 0.5,
                    "passport": {"id": 70, "number": "X1"}},
          "tags": [{"id": 3, "name": "c"}, {"id": 1, "name": "a"}, {"id": 2, "name": "b"}]},
         {"id": 2, "label": "B", "kind": "small", "owner": {"id": 9, "login": "ada"}, "tags": [{"id": 1, "name": "a"}]},
         {"id": 3, "label": "C", "count": 0, "price": "0.5", "fragile": false,
          "owner": {"id": 8, "login": "bob", "email": "b@example.com"}},
         {"id": 4, "label": "D", "count": 12, "kind": "small"}]
        """#.utf8)

    /// The same payload in a SQLite store and in the in-memory store.
    static func clients(_ directory: TemporaryDirectory) async throws -> (sqlite: Client, memory: Client) {
        let sqlite = try Client.Builder(schema: schema).store(try SQLiteStore(path: directory.path())).build()
        let memory = try Client.Builder(schema: schema).build()
        for client in [sqlite, memory] { _ = try await client.import(payload, as: "Crate") }
        return (sqlite, memory)
    }

    /// Unordered to-many relationships in id order (the stores may keep them in different orders).
    static func normalized(_ crates: [Crate]) -> [Crate] {
        crates.map { crate in
            var crate = crate
            crate.owner?.crates.sort { $0.id < $1.id }
            for i in crate.tags.indices { crate.tags[i].crates.sort { $0.id < $1.id } }
            return crate
        }
    }

    static func normalized(_ owners: [Owner]) -> [Owner] {
        owners.map { owner in
            var owner = owner
            owner.crates = normalized(owner.crates).sorted { $0.id < $1.id }
            return owner
        }
    }

    @Test func rowsGiveTheModelsObjectsGive() async throws {
        let directory = try TemporaryDirectory()
        let (sqlite, memory) = try await Self.clients(directory)
        for depth in 0...3 {
            let crates = try await sqlite.fetch(Crate.self, depth: depth)
            #expect(Self.normalized(crates) == Self.normalized(try await memory.fetch(Crate.self, depth: depth)), "depth \(depth)")
            #expect(crates.map(\.id) == [1, 2, 3, 4])
            let owners = try await sqlite.fetch(Owner.self, depth: depth)
            #expect(Self.normalized(owners) == Self.normalized(try await memory.fetch(Owner.self, depth: depth)), "depth \(depth)")
            let passports = try await sqlite.fetch(Passport.self, depth: depth)
            #expect(passports == (try await memory.fetch(Passport.self, depth: depth)), "depth \(depth)")
            let tags = try await sqlite.fetch(Tag.self, sortedBy: [.ascending(\.name)], depth: depth)
            #expect(tags.map { Self.normalized($0.crates).sorted { $0.id < $1.id } }
                == (try await memory.fetch(Tag.self, sortedBy: [.ascending(\.name)], depth: depth)).map { Self.normalized($0.crates).sorted { $0.id < $1.id } })
        }
        // What the rows carried: attributes of every type, nils, a to-one kept in the row (owner), a
        // to-one kept on the other side (passport), an ordered many-to-many (tags), an unordered
        // to-many (crates).
        let a = try #require(try await sqlite.fetch(Crate.self, where: .equal(\.id, 1), depth: 2).first)
        #expect(a.count == 3 && a.price == Decimal(string: "12.30") && a.kind == .large && a.fragile == true)
        #expect(a.owner?.login == "ada" && a.owner?.since == Date(timeIntervalSince1970: 1_714_979_289) && a.owner?.score == 0.5)
        #expect(a.owner?.passport?.number == "X1" && a.owner?.passport?.holder == nil)
        #expect(Set(a.owner?.crates.map(\.id) ?? []) == [1, 2])
        #expect(a.tags.map(\.name) == ["c", "a", "b"])
        let d = try #require(try await sqlite.fetch(Crate.self, where: .equal(\.id, 4)).first)
        #expect(d.owner == nil && d.tags.isEmpty && d.price == nil && d.fragile == nil)
        let passport = try #require(try await sqlite.fetch(Passport.self).first)
        #expect(passport.holder == Holder(login: "ada", id: 9))
    }

    @Test func conditionsSortsAndWindowsMatch() async throws {
        let directory = try TemporaryDirectory()
        let (sqlite, memory) = try await Self.clients(directory)
        let queries: [(ModelPredicate<Crate>?, [ModelSort<Crate>], Int?, Int)] = [
            (.equal(\.kind, .small), [], nil, 0),
            (.equal(\.count, nil), [.descending(\.label)], nil, 0),
            (.greater(\.count, 1) || .equal(\.fragile, false), [.ascending(\.count)], nil, 0),
            (nil, [.descending(\.label)], 2, 1),
            (nil, [], 10, 3),
            // A decimal condition and a decimal sort: evaluated in Swift, over objects.
            (.greater(\.price, Decimal(1)), [], nil, 0),
            (nil, [.descending(\.price)], 3, 0),
        ]
        for (i, (predicate, sort, limit, offset)) in queries.enumerated() {
            for depth in [0, 1] {
                let fromRows = try await sqlite.fetch(Crate.self, where: predicate, sortedBy: sort, limit: limit, offset: offset, depth: depth)
                let fromObjects = try await memory.fetch(Crate.self, where: predicate, sortedBy: sort, limit: limit, offset: offset, depth: depth)
                #expect(Self.normalized(fromRows) == Self.normalized(fromObjects), "query \(i), depth \(depth)")
            }
        }
        #expect(try await sqlite.fetch(Crate.self, where: .greater(\.price, Decimal(1))).map(\.id) == [1])
        #expect(try await sqlite.fetch(Crate.self, sortedBy: [.descending(\.label)], limit: 2, offset: 1).map(\.id) == [3, 2])
    }

    /// A non-optional property of an unset attribute, and a stored value no case of an enum takes.
    struct StrictCount: EntityModel {
        static var entityName: String { "Crate" }
        var id: Int64
        var count: Int
    }

    struct StrictKindCrate: EntityModel {
        static var entityName: String { "Crate" }
        var id: Int64
        var kind: StrictKind?
    }

    @Test func errorsNameTheEntityAndTheMember() async throws {
        let directory = try TemporaryDirectory()
        let (sqlite, memory) = try await Self.clients(directory)
        for client in [sqlite, memory] {
            do {
                _ = try await client.fetch(StrictCount.self)
                Issue.record("an unset attribute read as a non-optional Int")
            } catch let error as ModelError {
                #expect(error.kind == .unsetAttribute && error.entity == "Crate" && error.member == "count")
            }
            do {
                _ = try await client.fetch(StrictKindCrate.self)
                Issue.record("\"large\" read as a StrictKind")
            } catch let error as ModelError {
                #expect(error.kind == .unconvertibleValue && error.entity == "Crate" && error.member == "kind")
            }
        }
    }

    /// A hand-written `init(from:)` that asks out of the layout's order, twice for one key, and
    /// asks `contains` and `decodeNil` first.
    struct HandWritten: EntityModel, Equatable {
        static var entityName: String { "Crate" }
        var id: Int64
        var label: String
        var count: Int?
        var hasCount: Bool
        var owner: Owner?
        var hasOwner: Bool

        enum CodingKeys: String, CodingKey { case id, label, count, owner }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            hasOwner = container.contains(.owner)
            hasCount = try !container.decodeNil(forKey: .count)
            count = try container.decodeIfPresent(Int.self, forKey: .count)
            owner = try container.decodeIfPresent(Owner.self, forKey: .owner)
            label = try container.decode(String.self, forKey: .label)
            id = try container.decode(Int64.self, forKey: .id)
            label += try container.decode(String.self, forKey: .label)
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(label, forKey: .label)
            try container.encodeIfPresent(count, forKey: .count)
            try container.encodeIfPresent(owner, forKey: .owner)
        }
    }

    @Test func handWrittenDecodingReadsTheSame() async throws {
        let directory = try TemporaryDirectory()
        let (sqlite, memory) = try await Self.clients(directory)
        for depth in [0, 1] {
            let fromRows = try await sqlite.fetch(HandWritten.self, depth: depth)
            #expect(fromRows == (try await memory.fetch(HandWritten.self, depth: depth)))
            #expect(fromRows.map(\.label) == ["AA", "BB", "CC", "DD"])
            #expect(fromRows.map(\.hasCount) == [true, false, true, true])
            #expect(fromRows.map(\.hasOwner) == (depth == 0 ? [false, false, false, false] : [true, true, true, false]))
        }
    }
}
