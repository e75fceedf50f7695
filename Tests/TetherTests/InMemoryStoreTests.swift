import Foundation
import Synchronization
import Testing
import Tether

/// Behaviour specific to the core's store and delete rules (the shared store behaviour is in the
/// conformance suite of TetherTesting).
@Suite struct InMemoryStoreTests {
    static let schema = try! Schema {
        Entity("Department", identity: "id") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Relationship.toMany("employees", "Employee", inverse: "department", deleteRule: .cascade)
            Relationship.toOne("manager", "Manager", inverse: "department", deleteRule: .deny)
        }
        Entity("Employee", identity: "id") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Relationship.toOne("department", "Department", inverse: "employees")
        }
        Entity("Manager", identity: "id") {
            Attribute("id", .int64)
            Relationship.toOne("department", "Department", inverse: "manager")
        }
    }

    @Test func oneChangeSetPerCommittedTransaction() async throws {
        let store = InMemoryStore()
        let client = try Client.Builder(schema: Self.schema).store(store).build()
        let changes = store.changes()
        let first = try await client.import(JSON(parsing: #"{"id": 1, "name": "R&D", "employees": [{"id": 1}, {"id": 2}]}"#), as: "Department")
        _ = try await client.import(JSON(parsing: #"{"id": 1, "name": "Research"}"#), as: "Department")
        _ = try await client.import(JSON(parsing: #"{"id": 1, "name": "Research"}"#), as: "Department")  // no change: no announcement
        try await client.deleteLocally(first.objects[0])
        var iterator = changes.makeAsyncIterator()
        let insert = try #require(await iterator.next())
        #expect(insert.inserted.count == 3)
        #expect(insert.updated.isEmpty)
        let update = try #require(await iterator.next())
        #expect(update.updated == [first.objects[0]])
        let delete = try #require(await iterator.next())
        #expect(delete.deleted.count == 3)  // cascade to both employees
        #expect(delete.entities == ["Department", "Employee"])
    }

    @Test func cascadeAndDenyDeleteRules() async throws {
        let client = try Client.Builder(schema: Self.schema).build()
        let department = try await client.import(
            JSON(parsing: #"{"id": 1, "employees": [{"id": 1}, {"id": 2}], "manager": {"id": 9}}"#), as: "Department"
        ).objects[0]
        let error = await #expect(throws: StoreError.self) { try await client.deleteLocally(department) }
        #expect(error?.kind == .deleteDenied)
        #expect(error?.member == "manager")
        #expect(try await client.count(Query("Employee")) == 2)  // nothing deleted

        let manager = try #require(try await client.object("Manager", identity: .int(9)))
        try await client.deleteLocally(manager.id)  // nullify: the department stays
        #expect(try await client.object(department) != nil)
        try await client.deleteLocally(department)
        #expect(try await client.count(Query("Employee")) == 0)
        #expect(try await client.count(Query("Department")) == 0)
    }

    @Test func readsDuringAWriteSeeTheLastCommittedState() async throws {
        let store = InMemoryStore()
        let client = try Client.Builder(schema: Self.schema).store(store).build()
        _ = try await client.import(JSON(parsing: #"{"id": 1, "name": "before"}"#), as: "Department")
        let flags = Flags()
        let writer = Task.detached {
            try await store.write { writer in
                let id = try writer.objects("Department", identities: [IdentityKey(.int(1))]).values.first!.id
                try writer.update(id, setting: ["name": .string("after")], clearing: [])
                flags.entered.store(true, ordering: .releasing)
                // Hold the transaction open (bounded) until the reader has looked.
                let deadline = ContinuousClock.now + .seconds(120)
                while !flags.released.load(ordering: .acquiring) && ContinuousClock.now < deadline { usleep(1_000) }
            }
        }
        while !flags.entered.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(1)) }
        let during = try await client.object("Department", identity: .int(1))
        flags.released.store(true, ordering: .releasing)
        try await writer.value
        #expect(during?["name"] == .string("before"))
        #expect(try await client.object("Department", identity: .int(1))?["name"] == .string("after"))
    }

    final class Flags: Sendable {
        let entered = Atomic(false)
        let released = Atomic(false)
    }

    @Test func fetchFiltersSortsAndPages() async throws {
        let client = try Client.Builder(schema: Self.schema).build()
        _ = try await client.import(
            JSON(parsing: #"[{"id": 1, "name": "Bob"}, {"id": 2, "name": "alice"}, {"id": 3}, {"id": 4, "name": "Alan"}, {"id": 5, "name": "Carol"}]"#),
            as: "Employee")
        let names = { (objects: [Object]) in objects.map { $0["name", as: String.self] ?? "-" } }
        #expect(names(try await client.fetch(Query("Employee", sortedBy: [.ascending("name")]))) == ["-", "Alan", "Bob", "Carol", "alice"])
        #expect(names(try await client.fetch(Query("Employee", where: .hasPrefix("name", "A")))) == ["Alan"])
        #expect(names(try await client.fetch(Query("Employee", where: .contains("name", "o"), sortedBy: [.descending("name")]))) == ["Carol", "Bob"])
        #expect(names(try await client.fetch(Query("Employee", where: .isNull("name")))) == ["-"])
        #expect(names(try await client.fetch(Query("Employee", where: .in("id", [.int(1), .int(5)]) || .greater("id", .int(3)), sortedBy: [.ascending("id")]))) == ["Bob", "Alan", "Carol"])
        #expect(names(try await client.fetch(Query("Employee", where: !.equal("name", .string("Bob")), sortedBy: [.ascending("id")], limit: 2, offset: 1))) == ["-", "Alan"])
        #expect(try await client.count(Query("Employee", where: .isNotNull("name"), limit: 1)) == 4)
        await #expect(throws: StoreError.self) { try await client.fetch(Query("Employee", where: .equal("salary", .int(1)))) }
    }

    /// Rows are kept by position in chunks: objects across many chunks, deletes that leave holes
    /// (row ids are never reused), and changes to one object after a big insert.
    @Test func rowsAcrossChunksDeletesAndReuse() async throws {
        let client = try Client.Builder(schema: Self.schema).build()
        let employees = JSON.array((1...1_000).map { i in ["id": .int(Int64(i)), "name": .string("e\(i)"), "department": ["id": .int(Int64(i % 3))]] })
        let first = try await client.import(employees, as: "Employee")
        #expect(first.inserted.count == 1_003)
        let e700 = try #require(try await client.object("Employee", identity: .int(700)))
        #expect(e700["name", as: String.self] == "e700")
        #expect(try await client.related("department", of: e700.id).first?["id", as: Int64.self] == 1)
        #expect(try await client.related("employees", of: try #require(try await client.object("Department", identity: .int(1))).id).count == 334)

        try await client.deleteLocally(e700.id)
        #expect(try await client.object("Employee", identity: .int(700)) == nil)
        #expect(try await client.count(Query("Employee")) == 999)
        #expect(try await client.count(Query("Employee", where: .hasPrefix("name", "e70"))) == 10)  // e70, e700...e709 less e700
        #expect(try await client.related("employees", of: try #require(try await client.object("Department", identity: .int(1))).id).count == 333)

        // Re-created: a new row id; the others keep theirs and their values.
        let again = try await client.import(JSON(parsing: #"{"id": 700, "name": "back"}"#), as: "Employee")
        #expect(again.inserted.count == 1 && again.objects[0].rowID == 1_001)
        _ = try await client.import(JSON(parsing: #"{"id": 256, "name": "changed"}"#), as: "Employee")
        let names = try await client.fetch(Query("Employee", where: .in("id", [.int(255), .int(256), .int(257), .int(700)]), sortedBy: [.ascending("id")]))
        #expect(names.map { $0["name", as: String.self] } == ["e255", "changed", "e257", "back"])
    }

    /// A second client over the same store (preparing it again) finds the objects and their links;
    /// so does a schema with another attribute. A relationship whose kind changed starts empty.
    @Test func preparingAgainKeepsTheLinks() async throws {
        let store = InMemoryStore()
        let first = try Client.Builder(schema: Self.schema).store(store).build()
        _ = try await first.import(JSON(parsing: #"""
            {"id": 1, "name": "R&D", "employees": [{"id": 10}, {"id": 11}], "manager": {"id": 20}}
            """#), as: "Department")
        func links(_ client: Client) async throws -> (employees: [Value?], manager: [Value?], department: [Value?]) {
            let department = try #require(try await client.object("Department", identity: .int(1)))
            let employee = try #require(try await client.object("Employee", identity: .int(11)))
            return (try await client.related("employees", of: department.id).map { $0["id"] }.sorted { "\($0!)" < "\($1!)" },
                    try await client.related("manager", of: department.id).map { $0["id"] },
                    try await client.related("department", of: employee.id).map { $0["id"] })
        }
        let second = try Client.Builder(schema: Self.schema).store(store).build()
        var found = try await links(second)
        #expect(found.employees == [.int(10), .int(11)] && found.manager == [.int(20)] && found.department == [.int(1)])

        // Another attribute: the same links. The manager side becomes to-many: its links go.
        let changed = try Schema {
            Entity("Department", identity: "id") {
                Attribute("id", .int64)
                Attribute("name", .string)
                Attribute("budget", .int64)
                Relationship.toMany("employees", "Employee", inverse: "department")
                Relationship.toMany("manager", "Manager", inverse: "department")
            }
            Entity("Employee", identity: "id") {
                Attribute("id", .int64)
                Relationship.toOne("department", "Department", inverse: "employees")
            }
            Entity("Manager", identity: "id") {
                Attribute("id", .int64)
                Relationship.toOne("department", "Department", inverse: "manager")
            }
        }
        let third = try Client.Builder(schema: changed).store(store).build()
        found = try await links(third)
        #expect(found.employees == [.int(10), .int(11)] && found.manager.isEmpty && found.department == [.int(1)])

        // The same entities, declared from the other side first: the same links, seen from that side.
        let reordered = try Schema([changed["Employee"]!, changed["Department"]!, changed["Manager"]!])
        found = try await links(try Client.Builder(schema: reordered).store(store).build())
        #expect(found.employees == [.int(10), .int(11)] && found.department == [.int(1)])
    }

    /// Preparing again for a schema with other attributes keeps the rows, matched by name.
    @Test func preparingForAChangedSchemaKeepsTheRows() async throws {
        let store = InMemoryStore()
        let before = try Schema {
            Entity("Tag", identity: "id") {
                Attribute("id", .int64)
                Attribute("label", .string)
                Attribute("color", .string)
            }
        }
        _ = try await Client.Builder(schema: before).store(store).build()
            .import(JSON(parsing: #"[{"id": 1, "label": "a", "color": "red"}, {"id": 2, "label": "b"}]"#), as: "Tag")
        let after = try Schema {
            Entity("Tag", identity: "id") {
                Attribute("weight", .int64)
                Attribute("label", .string)
                Attribute("id", .int64)
            }
        }
        let client = try Client.Builder(schema: after).store(store).build()
        let tag = try #require(try await client.object("Tag", identity: .int(1)))
        #expect(tag.values == ["id": .int(1), "label": .string("a")])
        let result = try await client.import(JSON(parsing: #"{"id": 2, "weight": 5}"#), as: "Tag")
        #expect(result.updated.count == 1)
        #expect(try await client.object("Tag", identity: .int(2))?.values == ["id": .int(2), "label": .string("b"), "weight": .int(5)])
    }
}

/// The in-memory store's identity index is split into shards so that a transaction copies only
/// what it changes; these check that it still behaves as one map across transactions, failed
/// ones and readers' snapshots, with enough objects to fill every shard.
@Suite struct InMemoryIdentityIndexTests {
    static let schema = try! Schema {
        Entity("Tag", identity: "name") {
            Attribute("name", .string)
            Attribute("rank", .int64)
        }
        Entity("Item", identity: "id") {
            Attribute("id", .int64)
        }
    }

    @Test func everyIdentityIsFoundAfterManyTransactionsAndNoneFromAFailedOne() async throws {
        let store = InMemoryStore()
        try store.prepare(for: Self.schema)
        // 10,000 integer and 10,000 string identities, over 10 transactions.
        for chunk in 0..<10 {
            try await store.write { writer in
                for i in (chunk * 1_000)..<((chunk + 1) * 1_000) {
                    _ = try writer.insert("Item", values: ["id": .int(Int64(i))])
                    _ = try writer.insert("Tag", values: ["name": .string("tag-\(i)"), "rank": .int(Int64(i))])
                }
            }
        }
        let before = try await store.read { try $0.count(Query("Item")) }
        // A transaction that inserts new identities and re-keys old ones, then fails.
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            try await store.write { writer in
                for i in 10_000..<12_000 { _ = try writer.insert("Item", values: ["id": .int(Int64(i))]) }
                let tag = try #require(try writer.objects("Tag", identities: [IdentityKey(.string("tag-5"))]).values.first)
                try writer.update(tag.id, setting: ["name": .string("renamed")], clearing: [])
                throw Refused()
            }
        }
        try await store.read { reader in
            #expect(try reader.count(Query("Item")) == before)
            let items = try reader.objects("Item", identities: (0..<12_000).map { IdentityKey(.int(Int64($0))) })
            #expect(items.count == 10_000)
            #expect(items.keys.allSatisfy { if case .int(let i)? = $0.single { i < 10_000 } else { false } })
            let tags = try reader.objects("Tag", identities: (0..<10_000).map { IdentityKey(.string("tag-\($0)")) } + [IdentityKey(.string("renamed"))])
            #expect(tags.count == 10_000)
            #expect(tags[IdentityKey(.string("renamed"))] == nil)
        }
        // Re-keying and deleting in a committed transaction move and drop exactly those keys.
        try await store.write { writer in
            let found = try writer.objects("Tag", identities: [IdentityKey(.string("tag-7")), IdentityKey(.string("tag-8"))])
            try writer.update(try #require(found[IdentityKey(.string("tag-7"))]).id, setting: ["name": .string("seven")], clearing: [])
            try writer.delete(try #require(found[IdentityKey(.string("tag-8"))]).id)
            // A duplicate identity is still refused.
            #expect(throws: StoreError.self) { _ = try writer.insert("Tag", values: ["name": .string("tag-9")]) }
        }
        try await store.read { reader in
            let tags = try reader.objects("Tag", identities: ["tag-7", "tag-8", "seven", "tag-9"].map { IdentityKey(.string($0)) })
            #expect(Set(tags.keys) == [IdentityKey(.string("seven")), IdentityKey(.string("tag-9"))])
            #expect(tags[IdentityKey(.string("seven"))]?.values["rank"] == .int(7))
        }
    }

    @Test func anUnsortedLimitedFetchIsTheFirstMatchesInInsertionOrder() async throws {
        let store = InMemoryStore()
        try store.prepare(for: Self.schema)
        try await store.write { writer in
            for i in 0..<300 { _ = try writer.insert("Tag", values: ["name": .string("t\(i)"), "rank": .int(Int64(i % 7))]) }
        }
        try await store.read { reader in
            let all = try reader.fetch(Query("Tag", where: .equal("rank", .int(3))))
            for (offset, limit) in [(0, 1), (0, 5), (4, 10), (40, 10), (0, 0), (-3, 2), (0, 1_000), (1, Int.max), (Int.max, 1)] {
                let query = Query("Tag", where: .equal("rank", .int(3)), limit: limit, offset: offset)
                let page = try reader.fetch(query)
                let start = min(max(0, offset), all.count)
                #expect(page.map(\.id) == Array(all[start..<(start + min(all.count - start, max(0, limit)))]).map(\.id), "offset \(offset), limit \(limit)")
                #expect(try reader.ids(query) == page.map(\.id))
            }
        }
    }
}
