import Foundation
import Synchronization
import Tether

struct Checks: Sendable {
    let store: any Store
    let check: StoreConformance.Check

    // MARK: Helpers

    func expect(_ condition: Bool, _ message: @autoclosure () -> String, line: Int = #line) throws {
        if !condition { throw ConformanceFailure(check: check, message(), line: line) }
    }

    func expectEqual<T: Equatable>(_ actual: T, _ expected: T, _ what: String, line: Int = #line) throws {
        if actual != expected {
            throw ConformanceFailure(check: check, "\(what): expected \(expected), got \(actual)", line: line)
        }
    }

    func expectError(_ kind: StoreError.Kind, _ what: String, line: Int = #line, _ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let error as StoreError {
            try expectEqual(error.kind, kind, "\(what): error kind (\(error))", line: line)
            return
        } catch {
            throw ConformanceFailure(check: check, "\(what): expected a StoreError(.\(kind)), got \(error)", line: line)
        }
        throw ConformanceFailure(check: check, "\(what): expected a StoreError(.\(kind)), nothing was thrown", line: line)
    }

    func prepared() throws { try store.prepare(for: StoreConformance.schema) }

    func insert(_ entity: String, _ values: [String: Value]) async throws -> ObjectID {
        try await store.write { try $0.insert(entity, values: values).id }
    }

    func insertMany(_ entity: String, _ rows: [[String: Value]]) async throws -> [ObjectID] {
        try await store.write { writer in try rows.map { try writer.insert(entity, values: $0).id } }
    }

    func related(_ name: String, _ id: ObjectID) async throws -> [ObjectID] {
        try await store.read { try $0.related(name, of: id) }
    }

    func link(_ name: String, _ id: ObjectID, _ targets: [ObjectID]) async throws {
        try await store.write { try $0.setRelated(name, of: id, to: targets) }
    }

    func expectRelated(_ name: String, _ id: ObjectID, _ expected: [ObjectID], ordered: Bool = false, line: Int = #line) async throws {
        let actual = try await related(name, id)
        if ordered {
            try expectEqual(actual, expected, "\(id).\(name)", line: line)
        } else {
            try expectEqual(Set(actual), Set(expected), "\(id).\(name)", line: line)
            try expectEqual(actual.count, expected.count, "\(id).\(name) count", line: line)
        }
    }

    func ids(_ n: Int, _ entity: String, from start: Int64 = 1) async throws -> [ObjectID] {
        try await insertMany(entity, (0..<n).map { ["id": .int(start + Int64($0))] })
    }

    // MARK: Checks

    func prepare() async throws {
        try await expectError(.notPrepared, "fetch before prepare") { _ = try await store.read { try $0.fetch(Query("Item")) } }
        try prepared()
        try prepared()  // preparing again with the same schema is harmless
        try expectEqual(try await store.read { try $0.fetch(Query("Item")) }, [], "an empty store's objects")
        try expectEqual(try await store.read { try $0.count(Query("Item")) }, 0, "an empty store's count")
        try await expectError(.unknownEntity, "fetch of an unknown entity") { _ = try await store.read { try $0.fetch(Query("Nope")) } }
        try await expectError(.unknownEntity, "insert into an unknown entity") { _ = try await insert("Nope", [:]) }
        try await expectError(.unknownAttribute, "condition on an unknown attribute") {
            _ = try await store.read { try $0.fetch(Query("Item", where: .equal("nope", .int(1)))) }
        }
        try await expectError(.unknownAttribute, "sort by an unknown attribute") {
            _ = try await store.read { try $0.count(Query("Item", sortedBy: [.ascending("nope")])) }
        }
        let item = try await insert("Item", ["id": .int(1)])
        try await expectError(.unknownRelationship, "an unknown relationship") { _ = try await related("nope", item) }
    }

    func insertUpdateClearDelete() async throws {
        try prepared()
        let values: [String: Value] = ["id": .int(1), "name": .string("a"), "score": .double(1.5)]
        let first = try await store.write { try $0.insert("Item", values: values) }
        try expectEqual(first.values, values, "inserted values")
        try expectEqual(try await store.read { try $0.object(first.id) }?.values, values, "stored values")
        let second = try await insert("Item", ["id": .int(2)])
        try expect(second != first.id, "two objects got the same id \(second)")
        try await store.write { try $0.update(first.id, setting: ["name": .string("b"), "rank": .int(3)], clearing: ["score"]) }
        try expectEqual(try await store.read { try $0.object(first.id) }?.values,
                        ["id": .int(1), "name": .string("b"), "rank": .int(3)], "values after update")
        try await store.write { try $0.update(first.id, setting: ["name": .string("c")], clearing: ["name", "rank"]) }
        try expectEqual(try await store.read { try $0.object(first.id) }?.values,
                        ["id": .int(1), "name": .string("c")], "setting wins over clearing the same attribute")
        try await store.write { try $0.update(first.id, setting: [:], clearing: []) }
        try await store.write { try $0.delete(first.id) }
        try expect(try await store.read { try $0.object(first.id) } == nil, "a deleted object is still readable")
        try expectEqual(try await store.read { try $0.objects("Item", identities: [IdentityKey(.int(1))]) }.count, 0,
                        "identity lookup of a deleted object")
        try expectEqual(try await store.read { try $0.count(Query("Item")) }, 1, "count after delete")
        let again = try await insert("Item", ["id": .int(1)])
        try expect(again != first.id && again != second, "an object id was reused: \(again)")
        try expectEqual(try await store.read { try $0.objects([again, first.id, second]) }.map(\.id), [again, second], "objects(ids)")
    }

    func writeErrors() async throws {
        try prepared()
        let first = try await insert("Item", ["id": .int(1)])
        let second = try await insert("Item", ["id": .int(2)])
        try await expectError(.duplicateIdentity, "inserting a duplicate identity") { _ = try await insert("Item", ["id": .int(1)]) }
        try await expectError(.duplicateIdentity, "updating to a duplicate identity") {
            try await store.write { try $0.update(second, setting: ["id": .int(1)], clearing: []) }
        }
        try await expectError(.unknownAttribute, "inserting an unknown attribute") { _ = try await insert("Item", ["id": .int(3), "nope": .int(1)]) }
        try await expectError(.typeMismatch, "inserting a string into an int64") { _ = try await insert("Item", ["id": .string("3")]) }
        try await expectError(.typeMismatch, "updating an int64 with a double") {
            try await store.write { try $0.update(first, setting: ["rank": .double(1)], clearing: []) }
        }
        try await expectError(.unknownAttribute, "clearing an unknown attribute") {
            try await store.write { try $0.update(first, setting: [:], clearing: ["nope"]) }
        }
        let missing = ObjectID(entity: "Item", rowID: 987_654_321)
        try await expectError(.objectNotFound, "updating a missing object") {
            try await store.write { try $0.update(missing, setting: ["name": .string("x")], clearing: []) }
        }
        try await expectError(.objectNotFound, "deleting a missing object") { try await store.write { try $0.delete(missing) } }
        try expect(try await store.read { try $0.object(missing) } == nil, "a missing object was found")
        // A failed operation inside a transaction leaves the transaction usable.
        let third = try await store.write { writer -> ObjectID in
            do {
                _ = try writer.insert("Item", values: ["id": .int(1)])
            } catch {}
            return try writer.insert("Item", values: ["id": .int(3), "name": .string("three")]).id
        }
        try expectEqual(try await store.read { try $0.count(Query("Item")) }, 3, "objects after a caught error")
        try expectEqual(try await store.read { try $0.object(third) }?["name"], .string("three"), "object inserted after a caught error")
        // Objects without identity values are not unique.
        _ = try await insertMany("Item", [["name": .string("anonymous")], ["name": .string("anonymous")]])
        try expectEqual(try await store.read { try $0.count(Query("Item", where: .isNull("id"))) }, 2, "objects without identity")
    }

    func identityLookupInt() async throws {
        try prepared()
        let ids = try await insertMany("Item", (0..<1500).map { ["id": .int(Int64($0)), "rank": .int(Int64($0 * 2))] })
        var keys = (0..<1800).map { IdentityKey(.int(Int64($0))) }
        keys += [IdentityKey(.string("5")), IdentityKey(.double(5)), IdentityKey(.int(7)), IdentityKey([.int(7), .int(7)])]
        let found = try await store.read { [keys] in try $0.objects("Item", identities: keys) }
        try expectEqual(found.count, 1500, "objects found among 1,800 int identities")
        for i in [0, 1, 499, 500, 501, 999, 1000, 1499] {
            let object = found[IdentityKey(.int(Int64(i)))]
            try expectEqual(object?.id, ids[i], "object with identity \(i)")
            try expectEqual(object?["rank"], .int(Int64(i * 2)), "rank of the object with identity \(i)")
        }
        try expectEqual(try await store.read { try $0.objects("Item", identities: []) }.count, 0, "lookup of no identities")
    }

    func identityLookupString() async throws {
        try prepared()
        let codes = (0..<1200).map { "p\($0)" } + ["", "ü", "名前", "with \"quotes\" and 'apostrophes'"]
        _ = try await insertMany("Person", codes.map { ["code": .string($0), "name": .string("name of \($0)")] })
        let keys = codes.map { IdentityKey(.string($0)) } + [IdentityKey(.string("P1")), IdentityKey(.string("p1 ")), IdentityKey(.int(1))]
        let found = try await store.read { try $0.objects("Person", identities: keys) }
        try expectEqual(found.count, codes.count, "objects found by string identity (case-sensitive)")
        for code in ["", "ü", "名前", "p1199", "with \"quotes\" and 'apostrophes'"] {
            try expectEqual(found[IdentityKey(.string(code))]?["name"], .string("name of \(code)"), "person '\(code)'")
        }
    }

    func identityLookupComposite() async throws {
        try prepared()
        let rows: [[String: Value]] = (0..<1200).map { ["left": .int(Int64($0 % 40)), "right": .string("r\($0)"), "note": .string("n\($0)")] }
        _ = try await insertMany("Pair", rows)
        try await expectError(.duplicateIdentity, "a duplicate composite identity") {
            _ = try await insert("Pair", ["left": .int(1), "right": .string("r1")])
        }
        _ = try await insert("Pair", ["left": .int(2), "right": .string("r1")])  // same right, other left: distinct
        var keys = (0..<1200).map { IdentityKey([.int(Int64($0 % 40)), .string("r\($0)")]) }
        keys += [IdentityKey([.int(3), .string("r1")]), IdentityKey([.int(1)]), IdentityKey([.string("r1"), .int(1)])]
        let found = try await store.read { [keys] in try $0.objects("Pair", identities: keys) }
        try expectEqual(found.count, 1200, "objects found by composite identity")
        try expectEqual(found[IdentityKey([.int(7), .string("r1047")])]?["note"], .string("n1047"), "pair (7, r1047)")
    }

    /// A small data set with unset values and every attribute kind, and the expected semantics of
    /// every condition (as ``Condition/matches(_:)`` defines them).
    static let conditionItems: [[String: Value]] = {
        let base = Date(timeIntervalSinceReferenceDate: 700_000_000.25)
        let uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
        return [
            ["id": .int(1), "name": .string("apple"), "score": .double(1.5), "rank": .int(1), "flag": .bool(true),
             "when": .date(base), "code": .uuid(uuid), "site": .url(URL(string: "https://a.example/x")!),
             "blob": .data(Data([1, 2])), "price": .decimal(Decimal(string: "10.5")!), "extra": .string("x")],
            ["id": .int(2), "name": .string("Apple"), "score": .double(2.5), "rank": .int(2), "flag": .bool(false),
             "when": .date(base.addingTimeInterval(0.5)), "price": .decimal(Decimal(string: "9.75")!), "extra": .int(3)],
            ["id": .int(3), "name": .string("pineapple"), "score": .double(3), "rank": .int(3),
             "when": .date(base.addingTimeInterval(-1)), "blob": .data(Data([1, 2, 3])), "price": .decimal(100)],
            ["id": .int(4), "name": .string("éclair"), "rank": .int(4), "flag": .bool(true)],
            ["id": .int(5), "score": .double(-1), "rank": .int(5), "site": .url(URL(string: "https://b.example/")!)],
            ["id": .int(6), "name": .string("banana split"), "score": .double(2.5), "extra": .string("y")],
            ["id": .int(7), "name": .string(""), "score": .double(0), "rank": .int(-3), "flag": .bool(false)],
            ["id": .int(8), "name": .string("zebra"), "rank": .int(2), "code": .uuid(UUID(uuidString: "00000000-0000-0000-0000-000000000001")!)],
        ]
    }()

    func fetchConditions() async throws {
        try prepared()
        _ = try await insertMany("Item", Self.conditionItems)
        let base = Date(timeIntervalSinceReferenceDate: 700_000_000.25)
        let cases: [(Condition?, Int?)] = [
            (.equal("name", .string("apple")), 1),
            (.equal("name", .int(5)), 0),
            (.notEqual("name", .string("apple")), 6),
            (.not(.equal("name", .string("apple"))), 7),
            (.less("rank", .int(3)), 4),
            (.lessOrEqual("score", .double(2.5)), 5),
            (.greater("score", .int(2)), 3),
            (.greaterOrEqual("rank", .double(2.5)), 3),
            (.in("rank", [.int(1), .int(3), .string("2")]), 2),
            (.in("rank", []), 0),
            (.isNull("name"), 1),
            (.isNotNull("name"), 7),
            (.hasPrefix("name", "ap"), 1),
            (.hasPrefix("name", "Ap"), 1),
            (.hasPrefix("name", ""), 7),
            (.contains("name", "pp"), 3),
            (.contains("name", "PP"), 0),
            (.contains("name", "é"), 1),
            (.contains("name", " "), 1),
            (.contains("name", ""), 7),
            (.hasPrefix("site", "https"), 0),
            (.equal("flag", .bool(true)), 2),
            (.not(.equal("flag", .bool(true))), 6),
            (.less("when", .date(base)), 1),
            (.greaterOrEqual("when", .date(base)), 2),
            (.equal("code", .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!)), 1),
            (.equal("site", .url(URL(string: "https://b.example/")!)), 1),
            (.equal("blob", .data(Data([1, 2]))), 1),
            (.greater("blob", .data(Data([1, 2]))), 1),
            (.greater("price", .decimal(10)), 2),
            (.equal("extra", .string("x")), 1),
            (.and([.greater("score", .double(0)), .isNotNull("name")]), 4),
            (.or([.equal("rank", .int(1)), .equal("rank", .int(5))]), 2),
            (.and([]), 8),
            (.or([]), 0),
            (.not(.or([.isNull("score"), .less("score", .double(2))])), 3),
            (.equal("name", .string("apple")) || .not(.isNotNull("rank")), 2),
            (nil, 8),
        ]
        for (condition, expectedCount) in cases {
            let objects = try await store.read { try $0.fetch(Query("Item", where: condition)) }
            let expected = Self.conditionItems.filter { condition?.matches($0) ?? true }.map { $0["id"]! }
            try expectEqual(objects.map { $0["id"]! }, expected, "ids matching \(condition.map { "\($0)" } ?? "nil") in id order")
            if let expectedCount {
                try expectEqual(expected.count, expectedCount, "reference count of \(condition.map { "\($0)" } ?? "nil")")
            }
            let count = try await store.read { try $0.count(Query("Item", where: condition, limit: 1, offset: 1)) }
            try expectEqual(count, expected.count, "count of \(condition.map { "\($0)" } ?? "nil") (ignoring limit and offset)")
        }
    }

    func sortLimitOffsetCount() async throws {
        try prepared()
        let ids = try await insertMany("Item", Self.conditionItems)
        let rowOf = Dictionary(uniqueKeysWithValues: zip(Self.conditionItems.map { $0["id"]! }, ids.map(\.rowID)))
        let sorts: [[Sort]] = [
            [.ascending("name")], [.descending("name")], [.ascending("score")], [.descending("score")],
            [.descending("score"), .ascending("name")], [.ascending("flag"), .descending("rank")],
            [.ascending("when")], [.descending("price")], [.ascending("blob")], [.ascending("code")], [],
        ]
        for sort in sorts {
            for (limit, offset) in [(nil, 0), (3, 0), (3, 2), (100, 6), (0, 0), (nil, 5), (2, 50)] as [(Int?, Int)] {
                let query = Query("Item", where: .not(.equal("rank", .int(5))), sortedBy: sort, limit: limit, offset: offset)
                let objects = try await store.read { try $0.fetch(query) }
                var expected = Self.conditionItems.filter { query.condition!.matches($0) }
                expected.sort { a, b in
                    if Sort.areInIncreasingOrder(a, b, by: sort) { return true }
                    if Sort.areInIncreasingOrder(b, a, by: sort) { return false }
                    return rowOf[a["id"]!]! < rowOf[b["id"]!]!
                }
                let start = min(offset, expected.count)
                let end = limit.map { min(expected.count, start + $0) } ?? expected.count
                try expectEqual(objects.map { $0["id"]! }, expected[start..<end].map { $0["id"]! },
                                "sorted by \(sort.map { "\($0.attribute)\($0.ascending ? "↑" : "↓")" }), limit \(limit.map(String.init) ?? "none"), offset \(offset)")
                try expectEqual(try await store.read { try $0.count(query) }, expected.count, "count ignoring limit and offset")
            }
        }
    }

    func toOne() async throws {
        try prepared()
        let authors = try await ids(2, "Author")
        let posts = try await ids(2, "Post")
        try await link("author", posts[0], [authors[0]])
        try await expectRelated("author", posts[0], [authors[0]])
        try await expectRelated("posts", authors[0], [posts[0]])
        try await link("author", posts[0], [authors[1]])  // moving the post to another author
        try await expectRelated("posts", authors[0], [])
        try await expectRelated("posts", authors[1], [posts[0]])
        try await link("author", posts[1], [authors[1]])
        try await expectRelated("posts", authors[1], [posts[0], posts[1]])
        try await link("author", posts[0], [])  // unlinking
        try await expectRelated("author", posts[0], [])
        try await expectRelated("posts", authors[1], [posts[1]])
        let all = try await store.read { try $0.related("author", of: posts) }
        try expectEqual(all, [posts[1]: [authors[1]]], "batched to-one read (objects without links are absent)")
    }

    func toMany() async throws {
        try prepared()
        let authors = try await ids(2, "Author")
        let posts = try await ids(3, "Post")
        try await link("posts", authors[0], [posts[0], posts[1], posts[0]])  // duplicates are ignored
        try await expectRelated("posts", authors[0], [posts[0], posts[1]])
        try await expectRelated("author", posts[1], [authors[0]])
        try await link("posts", authors[1], [posts[1], posts[2]])  // takes posts[1] away from authors[0]
        try await expectRelated("posts", authors[0], [posts[0]])
        try await expectRelated("author", posts[1], [authors[1]])
        try await link("posts", authors[0], [posts[0], posts[2]])
        try await expectRelated("posts", authors[1], [posts[1]])
        try await expectRelated("author", posts[2], [authors[0]])
        try await link("posts", authors[0], [])
        try await expectRelated("author", posts[0], [])
        try await expectRelated("author", posts[2], [])
        try await expectRelated("posts", authors[1], [posts[1]])
    }

    func orderedToMany() async throws {
        try prepared()
        let lists = try await ids(2, "Playlist")
        let songs = try await ids(4, "Song")
        try await link("songs", lists[0], [songs[2], songs[0], songs[1]])
        try await expectRelated("songs", lists[0], [songs[2], songs[0], songs[1]], ordered: true)
        try await expectRelated("playlist", songs[0], [lists[0]])
        try await link("songs", lists[0], [songs[1], songs[2]])
        try await expectRelated("songs", lists[0], [songs[1], songs[2]], ordered: true)
        try await expectRelated("playlist", songs[0], [])
        try await link("playlist", songs[3], [lists[0]])  // linking from the to-one side appends
        try await expectRelated("songs", lists[0], [songs[1], songs[2], songs[3]], ordered: true)
        try await link("songs", lists[1], [songs[2]])  // moves songs[2]
        try await expectRelated("songs", lists[0], [songs[1], songs[3]], ordered: true)
        try await link("songs", lists[0], [songs[3], songs[0], songs[1]])
        try await expectRelated("songs", lists[0], [songs[3], songs[0], songs[1]], ordered: true)
        // An ordered many-to-many keeps its order too.
        let post = try await insert("Post", ["id": .int(1)])
        let tags = try await ids(3, "Tag")
        try await link("tags", post, [tags[1], tags[2], tags[0]])
        try await expectRelated("tags", post, [tags[1], tags[2], tags[0]], ordered: true)
        try await link("tags", post, [tags[0], tags[1]])
        try await expectRelated("tags", post, [tags[0], tags[1]], ordered: true)
        try await expectRelated("posts", tags[2], [])
    }

    func quantifiedConditions() async throws {
        try prepared()
        let authors = try await insertMany("Author", ["ann", "bob", "cy"].enumerated().map { ["id": .int(Int64($0.offset + 1)), "name": .string($0.element)] })
        let posts = try await insertMany("Post", ["swift", "rust", "swift", "go"].enumerated().map { ["id": .int(Int64($0.offset + 1)), "title": .string($0.element)] })
        let tags = try await ids(2, "Tag")
        try await link("posts", authors[0], [posts[0], posts[1]])
        try await link("author", posts[2], [authors[1]])  // from the other side
        try await link("profile", authors[2], [try await insert("Profile", ["id": .int(1)])])
        try await link("pinned", authors[1], [posts[0]])
        try await link("starred", authors[2], [posts[1], posts[3]])
        try await link("tags", posts[0], [tags[1], tags[0]])
        try await link("posts", tags[1], [posts[0], posts[3]])
        func expectFound(_ entity: String, _ condition: Condition, _ expected: [ObjectID], line: Int = #line) async throws {
            let query = Query(entity, where: condition, sortedBy: [.descending("id")])
            let (fetched, ids, count) = try await store.read { reader in
                (try reader.fetch(query).map(\.id), try reader.ids(query), try reader.count(Query(entity, where: condition)))
            }
            let sorted = expected.sorted { $0.rowID > $1.rowID }
            try expectEqual(fetched.map { $0.rowID }, sorted.map { $0.rowID }, "fetch of \(condition)", line: line)
            try expectEqual(ids.map { $0.rowID }, sorted.map { $0.rowID }, "ids of \(condition)", line: line)
            try expectEqual(count, expected.count, "count of \(condition)", line: line)
        }
        let swift = Condition.equal("title", .string("swift"))
        try await expectFound("Author", .any("posts", swift), [authors[0], authors[1]])
        try await expectFound("Author", .all("posts", swift), [authors[1], authors[2]])  // cy has none: all holds
        try await expectFound("Author", .all("posts", swift) && .any("posts", .and([])), [authors[1]])
        try await expectFound("Author", !.any("posts", swift), [authors[2]])
        try await expectFound("Author", .any("profile", .isNotNull("id")), [authors[2]])
        try await expectFound("Author", .any("pinned", .hasPrefix("title", "sw")), [authors[1]])
        try await expectFound("Author", .any("starred", .equal("title", .string("go"))) || .equal("name", .string("ann")), [authors[0], authors[2]])
        try await expectFound("Post", .any("author", .equal("name", .string("ann"))), [posts[0], posts[1]])
        try await expectFound("Post", .all("author", .equal("name", .string("ann"))), [posts[0], posts[1], posts[3]])
        try await expectFound("Post", .any("tags", .equal("id", .int(2))), [posts[0], posts[3]])
        try await expectFound("Tag", .any("posts", .any("author", .equal("name", .string("ann")))), [tags[0], tags[1]])
        try await expectFound("Tag", .all("posts", .any("author", .and([]))), [tags[0]])
        try await expectFound("Author", .any("posts", .equal("author.name", .string("ann"))), [authors[0]])
        try await expectError(.unknownRelationship, "any over an unknown relationship") {
            _ = try await store.read { try $0.fetch(Query("Author", where: .any("nope", .and([])))) }
        }
        try await expectError(.unknownAttribute, "a condition inside any on an unknown attribute") {
            _ = try await store.read { try $0.count(Query("Author", where: .any("posts", .equal("nope", .int(1))))) }
        }
    }

    func manyToMany() async throws {
        try prepared()
        let groups = try await ids(2, "Group")
        let members = try await ids(3, "Member")
        try await link("members", groups[0], [members[0], members[1]])
        try await link("members", groups[1], [members[1], members[2]])
        try await expectRelated("groups", members[1], [groups[0], groups[1]])
        try await expectRelated("members", groups[0], [members[0], members[1]])
        try await link("groups", members[1], [groups[1]])  // from the other side
        try await expectRelated("members", groups[0], [members[0]])
        try await expectRelated("members", groups[1], [members[1], members[2]])
        try await link("groups", members[0], [groups[0], groups[1]])
        try await expectRelated("members", groups[1], [members[0], members[1], members[2]])
        try await link("members", groups[1], [])
        for member in members { try await expectRelated("groups", member, member == members[0] ? [groups[0]] : []) }
    }

    func oneToOne() async throws {
        try prepared()
        let authors = try await ids(2, "Author")
        let profiles = try await ids(2, "Profile")
        try await link("profile", authors[0], [profiles[0]])
        try await expectRelated("author", profiles[0], [authors[0]])
        try await link("profile", authors[1], [profiles[0]])  // takes the profile away from authors[0]
        try await expectRelated("profile", authors[0], [])
        try await expectRelated("author", profiles[0], [authors[1]])
        try await link("author", profiles[1], [authors[1]])  // from the other side: authors[1] changes profile
        try await expectRelated("profile", authors[1], [profiles[1]])
        try await expectRelated("author", profiles[0], [])
    }

    func withoutInverse() async throws {
        try prepared()
        let authors = try await ids(2, "Author")
        let posts = try await ids(2, "Post")
        try await link("pinned", authors[0], [posts[0]])
        try await link("pinned", authors[1], [posts[0]])  // no inverse: both may pin the same post
        try await expectRelated("pinned", authors[0], [posts[0]])
        try await expectRelated("pinned", authors[1], [posts[0]])
        try await link("starred", authors[0], [posts[1], posts[0]])
        try await link("starred", authors[1], [posts[0]])
        try await expectRelated("starred", authors[0], [posts[1], posts[0]])
        try await link("pinned", authors[0], [posts[1]])
        try await expectRelated("pinned", authors[0], [posts[1]])
    }

    func deleteRemovesLinks() async throws {
        try prepared()
        let authors = try await ids(2, "Author")
        let posts = try await ids(3, "Post")
        let tags = try await ids(2, "Tag")
        let profile = try await insert("Profile", ["id": .int(1)])
        try await link("posts", authors[0], [posts[0], posts[1]])
        try await link("pinned", authors[1], [posts[0]])
        try await link("starred", authors[1], [posts[0], posts[2]])
        try await link("tags", posts[0], [tags[0], tags[1]])
        try await link("profile", authors[0], [profile])
        try await store.write { try $0.delete(posts[0]) }
        try await expectRelated("posts", authors[0], [posts[1]])
        try await expectRelated("pinned", authors[1], [])
        try await expectRelated("starred", authors[1], [posts[2]])
        try await expectRelated("posts", tags[0], [])
        try await store.write { try $0.delete(authors[0]) }
        try await expectRelated("author", posts[1], [])
        try await expectRelated("author", profile, [])
        let remaining = try await store.read { try $0.related("author", of: posts + [posts[1]]) }
        try expectEqual(remaining.count, 0, "links left after deleting")
    }

    func relationshipErrors() async throws {
        try prepared()
        let author = try await insert("Author", ["id": .int(1)])
        let posts = try await ids(2, "Post")
        let tag = try await insert("Tag", ["id": .int(1)])
        try await expectError(.typeMismatch, "linking an object of the wrong entity") { try await link("posts", author, [tag]) }
        try await expectError(.objectNotFound, "linking a missing object") {
            try await link("posts", author, [ObjectID(entity: "Post", rowID: 987_654_321)])
        }
        try await expectError(.typeMismatch, "two objects for a to-one relationship") { try await link("author", posts[0], posts) }
        try await expectError(.unknownRelationship, "an unknown relationship") { try await link("nope", author, []) }
        try await expectError(.objectNotFound, "linking from a missing object") {
            try await link("posts", ObjectID(entity: "Author", rowID: 987_654_321), [])
        }
        try await expectRelated("posts", author, [])
    }

    func relatedBatch() async throws {
        try prepared()
        let authors = try await ids(10, "Author")
        let posts = try await ids(1200, "Post")
        try await store.write { writer in
            for (i, post) in posts.enumerated() where i % 7 != 0 {
                try writer.setRelated("author", of: post, to: [authors[i % 10]])
            }
        }
        let byPost = try await store.read { try $0.related("author", of: posts) }
        try expectEqual(byPost.count, posts.indices.filter { $0 % 7 != 0 }.count, "posts with an author")
        try expectEqual(byPost[posts[13]], [authors[3]], "the author of post 13")
        try expect(byPost[posts[14]] == nil, "a post without an author is in the result")
        let byAuthor = try await store.read { try $0.related("posts", of: authors) }
        try expectEqual(byAuthor.values.reduce(0) { $0 + $1.count }, byPost.count, "posts counted from the authors")
        try expectEqual(Set(byAuthor[authors[3]] ?? []), Set(posts.indices.filter { $0 % 10 == 3 && $0 % 7 != 0 }.map { posts[$0] }), "posts of author 3")
        // Row by row: one row per source, in order, with what related(_:of:) says.
        for (relationship, sources, expected) in [("author", posts, byPost), ("posts", authors, byAuthor)] {
            let rows = try await store.read { try $0.links(relationship, of: sources) }
            try expectEqual(rows.sources, sources, "the rows of links(\"\(relationship)\", of:)")
            try expectEqual(rows.relationship, relationship, "the relationship of links(\"\(relationship)\", of:)")
            for (row, source) in sources.enumerated() {
                try expectEqual(Array(rows.targets(row: row)), expected[source] ?? [], "links(\"\(relationship)\", of:) of \(source)")
            }
        }
        try expectEqual(try await store.read { try $0.links("author", of: []) }.count, 0, "links of no objects")
        try await expectError(.typeMismatch, "links of objects of two entities") {
            _ = try await store.read { try $0.links("author", of: [posts[0], authors[0]]) }
        }
    }

    func deleteRules() async throws {
        try prepared()
        let schema = StoreConformance.schema
        let department = try await insert("Department", ["id": .int(1)])
        let employees = try await ids(2, "Employee")
        let manager = try await insert("Manager", ["id": .int(1)])
        try await link("employees", department, employees)
        try await link("manager", department, [manager])
        try await expectError(.deleteDenied, "deleting while a deny relationship links an object") {
            try await store.write { try DeleteRules.delete(department, schema: schema, in: $0) }
        }
        try expectEqual(try await store.read { try $0.count(Query("Employee")) }, 2, "employees after a denied delete")
        try await link("manager", department, [])
        try await store.write { try DeleteRules.delete(department, schema: schema, in: $0) }
        try expectEqual(try await store.read { try $0.count(Query("Employee")) }, 0, "employees after a cascading delete")
        try expectEqual(try await store.read { try $0.count(Query("Department")) }, 0, "departments after delete")
        try expectEqual(try await store.read { try $0.count(Query("Manager")) }, 1, "managers after delete")
    }

    struct Abort: Error {}

    func rollback() async throws {
        try prepared()
        let author = try await insert("Author", ["id": .int(1), "name": .string("before")])
        let post = try await insert("Post", ["id": .int(1)])
        try await link("posts", author, [post])
        do {
            try await store.write { writer in
                let other = try writer.insert("Author", values: ["id": .int(2)])
                try writer.update(author, setting: ["name": .string("after")], clearing: [])
                try writer.setRelated("posts", of: other.id, to: [post])
                try writer.delete(author)
                throw Abort()
            }
            throw ConformanceFailure(check: check, "the throwing write did not rethrow")
        } catch is Abort {}
        try expectEqual(try await store.read { try $0.count(Query("Author")) }, 1, "authors after a rolled-back write")
        try expectEqual(try await store.read { try $0.object(author) }?["name"], .string("before"), "name after a rolled-back write")
        try await expectRelated("author", post, [author])
        let value = try await store.write { writer in try writer.count(Query("Author")) * 10 }
        try expectEqual(value, 10, "the value a write returns")
    }

    func versions() async throws {
        try prepared()
        let first = try await store.write { $0.version }
        guard let first else {
            // A store that reports no version reports none ever (an import then remembers nothing
            // between imports).
            let later = try await store.write { writer in
                _ = try writer.insert("Item", values: ["id": .int(1)])
                return writer.version
            }
            try expect(later == nil, "a store that reported no version reported \(later!)")
            return
        }
        let inserted = try await store.write { writer in
            let start = writer.version
            _ = try writer.insert("Item", values: ["id": .int(1)])
            return (start, writer.version)
        }
        try expectEqual(inserted.0, first.next, "the version after a write that changed nothing")
        try expectEqual(inserted.1, inserted.0, "the version at the end of a write's body")
        _ = try await store.read { try $0.count(Query("Item")) }
        let afterRead = try await store.write { $0.version }
        try expectEqual(afterRead, first.next.next, "the version after a write and a read")
    }

    func readDuringWrite() async throws {
        try prepared()
        _ = try await insert("Item", ["id": .int(1)])
        let seen = Mutex<Int?>(nil)
        let store = self.store
        let reader = Task {
            // Waits until the write below has inserted, then reads while it is still open.
            while seen.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(1)) }
            let count = try await store.read { try $0.count(Query("Item")) }
            seen.withLock { $0 = count }
        }
        try await store.write { writer in
            _ = try writer.insert("Item", values: ["id": .int(2)])
            seen.withLock { $0 = -1 }
            // Hold the transaction open until the read is done (a store runs its transactions off
            // the cooperative pool: see `waitingOffThePool`).
            // (Two minutes: in a test run the pool's threads may be busy with other tests for a while.)
            let deadline = Date().addingTimeInterval(120)
            while seen.withLock({ $0 }) == -1 && Date() < deadline { usleep(1000) }
        }
        try await reader.value
        try expectEqual(seen.withLock { $0 }, 1, "objects a read saw during a write (the last committed state)")
        try expectEqual(try await store.read { try $0.count(Query("Item")) }, 2, "objects after the write")
    }

    /// A transaction, and a writer waiting for another, hold no thread of the cooperative pool:
    /// eight writes, the first blocked until a task of the pool lets it go. A store that blocks
    /// pool threads starves that task (the pool has one thread per core), and the check fails
    /// after two minutes instead of hanging (other tests may keep the pool busy for a while).
    func waitingOffThePool() async throws {
        try prepared()
        let gate = DispatchSemaphore(value: 0)
        final class Flag: Sendable { let value = Atomic(false) }
        let started = Flag()
        let store = self.store
        let writes = (0..<8).map { i in
            Task {
                try await store.write { writer in
                    // The first transaction to begin waits for the gate; the others insert.
                    if !started.value.exchange(true, ordering: .sequentiallyConsistent) {
                        guard gate.wait(timeout: .now() + 120) == .success else { throw Abort() }
                        return
                    }
                    _ = try writer.insert("Item", values: ["id": .int(Int64(i))])
                }
            }
        }
        // On the cooperative pool: waits for the first transaction to begin, then opens the gate.
        let opener = Task {
            while !started.value.load(ordering: .sequentiallyConsistent) { try await Task.sleep(for: .milliseconds(1)) }
            gate.signal()
        }
        for (i, write) in writes.enumerated() {
            do {
                try await write.value
            } catch is Abort {
                throw ConformanceFailure(check: check, "write \(i) waited 120 s for a task of the cooperative pool: the store's transactions (or writers waiting for one) hold its threads")
            }
        }
        try await opener.value
        try expectEqual(try await store.read { try $0.count(Query("Item")) }, 7, "objects after eight writes")
    }

    func changeSets() async throws {
        try prepared()
        let stream = store.changes()
        let (author, post) = try await store.write { writer in
            (try writer.insert("Author", values: ["id": .int(1)]).id, try writer.insert("Post", values: ["id": .int(1)]).id)
        }
        try? await store.write { writer in
            _ = try writer.insert("Author", values: ["id": .int(2)])
            throw Abort()
        }
        _ = try await store.read { try $0.count(Query("Author")) }
        try await store.write { _ = try $0.count(Query("Author")) }  // a write that changes nothing
        try await store.write { writer in
            try writer.update(author, setting: ["name": .string("x")], clearing: [])
            try writer.setRelated("posts", of: author, to: [post])
        }
        let temporary = try await store.write { writer -> ObjectID in
            let temporary = try writer.insert("Author", values: ["id": .int(3)]).id
            try writer.setRelated("posts", of: temporary, to: [post])
            try writer.delete(temporary)
            try writer.delete(author)
            return temporary
        }
        let marker = try await insert("Tag", ["id": .int(1)])
        var iterator = stream.makeAsyncIterator()
        var received: [ChangeSet] = []
        for _ in 0..<4 {
            guard let next = await iterator.next() else { break }
            received.append(next)
        }
        let expected = [
            ChangeSet(inserted: [author, post]),
            ChangeSet(updated: [author, post]),
            ChangeSet(updated: [post], deleted: [author]),
            ChangeSet(inserted: [marker]),
        ]
        try expectEqual(received, expected, "change sets (none for a rolled-back or empty write; \(temporary) inserted and deleted in one transaction is in neither)")
        // What changed on each updated object: its attributes set or cleared, and its relationships
        // (on both sides); nothing else, so an observer of other properties can skip the change.
        try expectEqual(received[1].changedProperties(of: author), ["name", "posts"], "the changed properties of the updated author")
        try expectEqual(received[1].changedProperties(of: post), ["author"], "the changed properties of the linked post")
        try expect(!received[1].mayHaveChanged(post, properties: ["title"]), "a change of the post's author does not touch its title")
        try expect(received[1].mayHaveChanged(author, properties: ["name"]), "a change of the author's name touches its name")
        try expect(received[0].mayHaveChanged(author, properties: []), "an inserted object has changed")
        try expectEqual(received[2].changedProperties(of: post), ["author"], "the post unlinked by a deletion")
        try expectEqual(received[2].changedProperties(of: author), nil, "a deleted object has no updated properties")
        try expect(received[2].mayHaveChanged(author, properties: []), "a deleted object has changed")
    }

    static let roundTripRows: [[String: Value]] = {
        let uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
        return [
            ["id": .int(Int64.max), "name": .string("héllo wörld 👩‍👩‍👧 日本語"), "score": .double(.pi), "rank": .int(Int64.min),
             "small": .int(Int64(Int16.min)), "medium": .int(Int64(Int32.max)), "ratio": .double(Double(Float(0.1))),
             "price": .decimal(Decimal(string: "12345678901234567890.123456789")!), "flag": .bool(true),
             "when": .date(Date(timeIntervalSinceReferenceDate: 123_456_789.123_456_789)), "blob": .data(Data((0...255).map { UInt8($0) })),
             "code": .uuid(uuid), "site": .url(URL(string: "https://example.com/a/b?q=1&r=%20#frag")!), "extra": .string("transformed")],
            ["id": .int(Int64.min), "name": .string(""), "score": .double(-0.0), "rank": .int(0), "small": .int(Int64(Int16.max)),
             "medium": .int(Int64(Int32.min)), "price": .decimal(Decimal(string: "-0.000001")!), "flag": .bool(false),
             "when": .date(Date(timeIntervalSince1970: 1_700_000_000.001)), "blob": .data(Data()),
             "site": .url(URL(string: "file:///tmp/x%20y")!), "extra": .int(Int64.min)],
            ["id": .int(0), "name": .string("quote \" apostrophe ' backslash \\ nul \u{0} end"), "score": .double(.infinity),
             "when": .date(Date(timeIntervalSince1970: -1.5)), "price": .decimal(0), "extra": .date(Date(timeIntervalSinceReferenceDate: 1.000_001))],
            ["id": .int(1), "score": .double(-.greatestFiniteMagnitude), "extra": .decimal(Decimal(string: "3.14159265358979323846")!)],
            ["id": .int(2), "score": .double(.leastNonzeroMagnitude), "extra": .data(Data([0, 1]))],
            ["id": .int(3), "extra": .uuid(uuid)],
            ["id": .int(4), "extra": .url(URL(string: "https://example.com")!)],
            ["id": .int(5), "extra": .bool(true)],
            ["id": .int(6), "extra": .double(-2.5)],
            ["id": .int(7)],
        ]
    }()

    func valuesRoundTrip() async throws {
        try prepared()
        let rows = Self.roundTripRows
        let ids = try await insertMany("Item", rows)
        for (id, row) in zip(ids, rows) {
            try expectEqual(try await store.read { try $0.object(id) }?.values, row, "values of \(id) read by id")
        }
        let byIdentity = try await store.read { try $0.objects("Item", identities: rows.map { IdentityKey($0["id"]!) }) }
        for row in rows {
            try expectEqual(byIdentity[IdentityKey(row["id"]!)]?.values, row, "values read by identity \(row["id"]!)")
        }
        let fetched = try await store.read { try $0.fetch(Query("Item")) }
        try expectEqual(fetched.map(\.values), rows, "values read by fetch")
        for row in rows {
            for (name, value) in row {
                let count = try await store.read { try $0.count(Query("Item", where: .equal(name, value))) }
                try expect(count >= 1, "no object matches \(name) == \(value)")
            }
        }
        // Updating with the extreme values keeps them too.
        try await store.write { writer in
            try writer.update(ids[9], setting: rows[0].filter { $0.key != "id" }, clearing: [])
        }
        var expected = rows[0]
        expected["id"] = rows[9]["id"]
        try expectEqual(try await store.read { try $0.object(ids[9]) }?.values, expected, "values after update")
    }
}

extension Checks {
    /// Live results through the store (``Client/observe(_:sectionedBy:reading:)``): after each
    /// write, the next snapshot is what a fresh fetch finds and its difference turns the snapshot
    /// before into it; a write of an attribute the observer does not read yields nothing. This
    /// needs the store's change sets (``Store/changes()``) to list every object a transaction
    /// touched, and its query order to be ``Query/apply(to:)``'s.
    /// The opaque record Tether keeps beside an object (ETag, confirmed values): stored and read
    /// back per object, rolled back with its transaction, removed with its object (and never
    /// inherited by an object inserted later). A store that keeps none says so with `.unsupported`
    /// from both methods.
    func remoteRecords() async throws {
        try prepared()
        let first = try await insert("Author", ["id": .int(1)])
        do {
            _ = try await store.read { try $0.remoteRecord(of: first) }
        } catch let error as StoreError where error.kind == .unsupported {
            do {
                try await store.write { try $0.setRemoteRecord(Data([1]), of: first) }
                throw ConformanceFailure(check: check, "remoteRecord(of:) is unsupported but setRemoteRecord(_:of:) is not")
            } catch let error as StoreError where error.kind == .unsupported {
                return
            }
        }
        let second = try await insert("Author", ["id": .int(2)])
        try expectEqual(try await store.read { try $0.remoteRecord(of: first) }, nil, "the record of an object that has none")
        let bytes = Data((0..<300).map { UInt8($0 % 256) })
        try await store.write { try $0.setRemoteRecord(bytes, of: first) }
        try expectEqual(try await store.read { try $0.remoteRecord(of: first) }, Optional(bytes), "a record read back")
        try expectEqual(try await store.read { try $0.remoteRecord(of: second) }, nil, "another object's record")
        do {
            try await store.write { writer in
                try writer.setRemoteRecord(Data([9]), of: first)
                try writer.setRemoteRecord(Data([8]), of: second)
                throw Abort()
            }
        } catch is Abort {}
        try expectEqual(try await store.read { try $0.remoteRecord(of: first) }, Optional(bytes), "a record after a rolled-back write")
        try expectEqual(try await store.read { try $0.remoteRecord(of: second) }, nil, "no record after a rolled-back write")
        try await store.write { try $0.setRemoteRecord(Data([7]), of: second) }
        try await store.write { try $0.setRemoteRecord(nil, of: second) }
        try expectEqual(try await store.read { try $0.remoteRecord(of: second) }, nil, "a removed record")

        // Deleted with its object, and not inherited by the next object (a store may reuse row ids).
        try await store.write { try $0.delete(first) }
        try await store.write { try $0.delete(second) }
        do {
            try await store.write { try $0.setRemoteRecord(Data([1]), of: first) }
            throw ConformanceFailure(check: check, "setting the record of a deleted object did not throw")
        } catch let error as StoreError where error.kind == .objectNotFound {}
        let third = try await insert("Author", ["id": .int(3)])
        try expectEqual(try await store.read { try $0.remoteRecord(of: third) }, nil, "the record of an object inserted after a deletion")
    }

    func observedResults() async throws {
        struct Unused: AttributeTransformer {
            func value(from json: JSON) throws -> Value { .string("\(json)") }
            func json(from value: Value) -> JSON { .null }
        }
        let client = try Client.Builder(schema: StoreConformance.schema).store(store).transformer(Unused(), named: "any").build()
        let query = Query("Item", where: .greater("rank", .int(0)), sortedBy: [.descending("score"), .ascending("name")])
        var results = client.observe(query, sectionedBy: "flag", reading: ["name"]).makeAsyncIterator()
        guard var previous = try await results.next() else { throw ConformanceFailure(check: check, "no first snapshot") }
        try expectEqual(previous.objects, [], "the first snapshot of an empty store")
        let sorted = Query("Item", where: query.condition, sortedBy: [.ascending("flag")] + query.sort)

        func step(_ what: String, line: Int = #line, _ body: @escaping @Sendable (any StoreWriter) throws -> Void) async throws {
            try await store.write { try body($0) }
            let read: Set<String> = ["name", "score", "rank", "flag"]
            let expected = try await store.read { try $0.fetch(sorted) }
                .map { Object(id: $0.id, values: $0.values.filter { read.contains($0.key) }) }
            guard let next = try await results.next() else { throw ConformanceFailure(check: check, "\(what): the observation ended", line: line) }
            try expectEqual(next.objects.map(\.id), expected.map(\.id), "\(what): the snapshot's objects", line: line)
            try expectEqual(next.objects, expected, "\(what): the snapshot's values", line: line)
            try expectEqual(next.difference.applied(to: previous.sectionedIDs, from: next.sectionedIDs), next.sectionedIDs,
                            "\(what): the difference \(next.difference) applied to the snapshot before", line: line)
            previous = next
        }
        try await step("inserting") { writer in
            for row in Self.conditionItems { try writer.insert("Item", values: row) }
        }
        let ids = previous.objects.map(\.id)
        try await step("an update that moves an object across sections") { writer in
            try writer.update(ids[0], setting: ["flag": .bool(true), "score": .double(-5)], clearing: [])
        }
        try await step("an update in place and a deletion") { writer in
            try writer.update(ids[1], setting: ["name": .string("renamed")], clearing: [])
            try writer.delete(ids[2])
        }
        try await store.write { writer in try writer.update(ids[1], setting: ["price": .decimal(1)], clearing: []) }  // not read
        try await step("an update that makes an object match") { writer in
            let hidden = try writer.fetch(Query("Item", where: .lessOrEqual("rank", .int(0))))
            try writer.update(hidden[0].id, setting: ["rank": .int(9)], clearing: [])
        }
        try expectEqual(previous.difference.inserted.count, 1, "the difference after a write of an attribute not read and one that adds an object (\(previous.difference))")
    }
}
