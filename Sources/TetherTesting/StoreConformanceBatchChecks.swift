import Foundation
import Tether

/// The checks of the import's batch paths: ``StoreWriter/insert(_:)``, ``StoreWriter/update(_:)`` and
/// ``StoreReader/find(_:identities:attributes:)``, which a store may implement itself.
extension Checks {
    func batchInsert() async throws {
        try prepared()
        let (first, second) = try await store.write { writer in
            (try writer.insert("Author", values: ["id": .int(1)]).id, try writer.insert("Author", values: ["id": .int(2)]).id)
        }
        let stream = store.changes()
        let posts = try await store.write { writer in
            var batch = InsertBatch(entity: "Post", attributes: ["id", "title"], relationships: ["author"])
            batch.append([.int(10), .string("a")], targets: [first])
            batch.append([.int(11), nil], targets: [nil])
            batch.append([.int(12), .string("c")], targets: [first])
            return try writer.insert(batch)
        }
        try expectEqual(posts.count, 3, "ids returned")
        try expectEqual(Set(posts).count, 3, "distinct ids")
        let objects = try await store.read { try $0.objects(posts) }
        try expectEqual(objects.map(\.values), [["id": .int(10), "title": .string("a")], ["id": .int(11)], ["id": .int(12), "title": .string("c")]],
                        "values in row order (nil leaves an attribute unset)")
        try await expectRelated("author", posts[0], [first])
        try await expectRelated("author", posts[1], [])
        try await expectRelated("posts", first, [posts[0], posts[2]])
        var iterator = stream.makeAsyncIterator()
        let changes = await iterator.next()
        try expect(changes.map { posts.allSatisfy($0.inserted.contains) } == true, "the change set lists the inserted objects: \(String(describing: changes))")
        try expect(changes?.updated.contains(first) == true, "the change set lists the linked target as updated: \(String(describing: changes))")

        // Every type, in an order of its own, and strings of every length in several columns: what a
        // store binds row after row must not leak from one row or column into the next.
        let long = String(repeating: "ü🐙x", count: 300)
        let when = Date(timeIntervalSinceReferenceDate: 12.25)
        let code = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
        let columns = ["site", "name", "extra", "id", "when", "flag", "price", "small", "blob", "code", "ratio", "score", "medium", "rank"]
        let rows: [[Value?]] = [
            [.url(URL(string: "https://example.com/a")!), .string(""), .string("t"), .int(100), .date(when), .bool(true),
             .decimal(Decimal(string: "19.99")!), .int(-7), .data(Data([0, 1])), .uuid(code), .double(0.5), .double(-1), .int(7), .int(Int64.max)],
            [nil, .string(long), nil, .int(101), nil, nil, nil, nil, nil, nil, nil, nil, nil, nil],
            [nil, .string("Zoë"), .int(3), .int(102), nil, .bool(false), nil, nil, .data(Data()), nil, nil, nil, nil, nil],
        ]
        let items = try await store.write { writer in
            var batch = InsertBatch(entity: "Item", attributes: columns)
            for row in rows { batch.append(row) }
            return try writer.insert(batch)
        }
        let storedItems = try await store.read { try $0.objects(items) }
        try expectEqual(storedItems.map(\.values), rows.map { row in
            var values: [String: Value] = [:]
            for (name, value) in zip(columns, row) { values[name] = value }
            return values
        }, "every type, in any column order, row after row")
        let people = try await store.write { writer in
            var batch = InsertBatch(entity: "Person", attributes: ["name", "code"])
            batch.append([.string(long), .string("a")])
            batch.append([.string(""), .string("b")])
            batch.append([nil, .string("c🐙")])
            return try writer.insert(batch)
        }
        try expectEqual(try await store.read { try $0.objects(people) }.map(\.values),
                        [["name": .string(long), "code": .string("a")], ["name": .string(""), "code": .string("b")], ["code": .string("c🐙")]],
                        "several string columns per row")

        // A batch larger than any statement a store may group rows into, with gaps and links
        // that change from row to row: each row keeps its own values, link and id.
        let many = try await store.write { writer in
            var batch = InsertBatch(entity: "Post", attributes: ["id", "title"], relationships: ["author"])
            for i in 0..<203 {
                batch.append([.int(Int64(1000 + i)), i % 3 == 0 ? nil : .string("t\(i)")],
                             targets: [i % 2 == 0 ? first : (i % 5 == 0 ? nil : second)])
            }
            return try writer.insert(batch)
        }
        try expectEqual(many.count, 203, "ids of a large batch")
        try expectEqual(Set(many + posts).count, 206, "distinct ids of a large batch")
        let expectedValues: [[String: Value]] = (0..<203).map { i in
            var values: [String: Value] = ["id": .int(Int64(1000 + i))]
            if i % 3 != 0 { values["title"] = .string("t\(i)") }
            return values
        }
        try expectEqual(try await store.read { try $0.objects(many) }.map(\.values), expectedValues, "values of a large batch in row order")
        let authors = try await store.read { try $0.related("author", of: many) }
        let expectedAuthors: [[ObjectID]] = (0..<203).map { i in i % 2 == 0 ? [first] : (i % 5 == 0 ? [] : [second]) }
        try expectEqual(many.map { authors[$0] ?? [] }, expectedAuthors, "links of a large batch")
        // Ids are not reused, even those of the last rows after they were deleted.
        try await store.write { writer in for id in many.suffix(3) { try writer.delete(id) } }
        let later = try await store.write { writer in
            var batch = InsertBatch(entity: "Post", attributes: ["id"])
            for i in 0..<60 { batch.append([.int(Int64(2000 + i))]) }
            return try writer.insert(batch)
        }
        try expect(Set(later).isDisjoint(with: many + posts), "a batch reused the id of a deleted object: \(later.filter(Set(many).contains))")
        // A duplicate deep inside a large batch (of a stored object, or of an earlier row of the
        // same batch) is reported for its row, and the write is rolled back.
        let stored = try await store.read { try $0.count(Query("Post")) }
        for (row, identity) in [(97, Int64(1005)), (70, Int64(3060))] {
            do {
                _ = try await store.write { writer in
                    var batch = InsertBatch(entity: "Post", attributes: ["id"])
                    for i in 0..<150 { batch.append([.int(i == row ? identity : Int64(3000 + i))]) }
                    return try writer.insert(batch)
                }
                throw ConformanceFailure(check: check, "a large batch repeating identity \(identity) in row \(row): nothing was thrown")
            } catch let error as StoreError {
                try expectEqual(error.kind, .duplicateIdentity, "a large batch repeating identity \(identity) in row \(row): error kind (\(error))")
                try expect(error.entity == "Post" && error.message.contains("\(identity)"), "the error names the entity and the identity of row \(row): \(error)")
            }
        }
        try expectEqual(try await store.read { try $0.count(Query("Post")) }, stored, "posts after a failed large batch")

        // A one-to-one target moves away from its previous partner, as with setRelated.
        let profile = try await insert("Profile", ["id": .int(1)])
        try await link("author", profile, [second])
        let moved = try await store.write { writer in
            var batch = InsertBatch(entity: "Profile", attributes: ["id"], relationships: ["author"])
            batch.append([.int(2)], targets: [second])
            return try writer.insert(batch)
        }
        try await expectRelated("profile", second, moved)
        try await expectRelated("author", profile, [])

        // Errors: the whole write is rolled back.
        let before = try await store.read { try $0.count(Query("Post")) }
        try await expectError(.duplicateIdentity, "a batch repeating an identity") {
            _ = try await store.write { writer in
                var batch = InsertBatch(entity: "Post", attributes: ["id"])
                batch.append([.int(20)])
                batch.append([.int(20)])
                return try writer.insert(batch)
            }
        }
        try await expectError(.duplicateIdentity, "a batch row with a stored identity") {
            _ = try await store.write { writer in
                var batch = InsertBatch(entity: "Post", attributes: ["id"])
                batch.append([.int(21)])
                batch.append([.int(10)])
                return try writer.insert(batch)
            }
        }
        // No import may store an object without its identity: a row that leaves it unset (in
        // the middle of a batch larger than a statement), or a batch without the identity column.
        try await expectError(.missingIdentity, "a batch row without its identity") {
            _ = try await store.write { writer in
                var batch = InsertBatch(entity: "Post", attributes: ["id", "title"])
                batch.identity = ["id"]
                for i in 0..<150 { batch.append([i == 120 ? nil : .int(Int64(4000 + i)), .string("t")]) }
                return try writer.insert(batch)
            }
        }
        try await expectError(.missingIdentity, "a batch without its identity attribute") {
            _ = try await store.write { writer in
                var batch = InsertBatch(entity: "Post", attributes: ["title"])
                batch.identity = ["id"]
                batch.append([.string("t")])
                return try writer.insert(batch)
            }
        }
        try await expectError(.unknownAttribute, "a batch naming an unknown attribute") {
            _ = try await store.write { writer in
                var batch = InsertBatch(entity: "Post", attributes: ["id", "nope"])
                batch.append([.int(22), .string("x")])
                return try writer.insert(batch)
            }
        }
        try await expectError(.typeMismatch, "a batch value of the wrong type") {
            _ = try await store.write { writer in
                var batch = InsertBatch(entity: "Post", attributes: ["id", "title"])
                batch.append([.int(23), .int(5)])
                return try writer.insert(batch)
            }
        }
        try await expectError(.typeMismatch, "a target of the wrong entity") {
            _ = try await store.write { writer in
                var batch = InsertBatch(entity: "Post", attributes: ["id"], relationships: ["author"])
                batch.append([.int(24)], targets: [profile])
                return try writer.insert(batch)
            }
        }
        try await expectError(.objectNotFound, "a target that is not stored") {
            _ = try await store.write { writer in
                var batch = InsertBatch(entity: "Post", attributes: ["id"], relationships: ["author"])
                batch.append([.int(25)], targets: [ObjectID(entity: "Author", rowID: first.rowID + second.rowID + 1000)])
                return try writer.insert(batch)
            }
        }
        try await expectError(.unknownEntity, "a batch of an unknown entity") {
            _ = try await store.write { writer in
                var batch = InsertBatch(entity: "Nope", attributes: [])
                batch.append([])
                return try writer.insert(batch)
            }
        }
        try expectEqual(try await store.read { try $0.count(Query("Post")) }, before, "posts after failed batches")
        let empty = try await store.write { try $0.insert(InsertBatch(entity: "Post", attributes: ["id"])) }
        try expectEqual(empty, [], "an empty batch")
    }

    func batchUpdate() async throws {
        try prepared()
        let (one, two, three) = try await store.write { writer in
            (try writer.insert("Item", values: ["id": .int(1), "name": .string("one"), "rank": .int(1)]).id,
             try writer.insert("Item", values: ["id": .int(2), "name": .string("two"), "rank": .int(2)]).id,
             try writer.insert("Item", values: ["id": .int(3), "name": .string("three")]).id)
        }
        let stream = store.changes()
        try await store.write { writer in
            var batch = UpdateBatch(entity: "Item", attributes: ["name", "rank"])
            batch.append(one, [.string("uno"), nil])
            batch.append(two, [nil, .int(20)])
            try writer.update(batch)
        }
        let objects = try await store.read { try $0.objects([one, two, three]) }
        try expectEqual(objects.map(\.values), [["id": .int(1), "name": .string("uno")], ["id": .int(2), "rank": .int(20)],
                                                ["id": .int(3), "name": .string("three")]], "values set and cleared, others kept")
        var iterator = stream.makeAsyncIterator()
        let changes = await iterator.next()
        try expectEqual(changes.map { Set($0.updated) }, [one, two], "the change set lists the updated objects")
        try await expectError(.objectNotFound, "a row for an object that is not stored") {
            try await store.write { writer in
                var batch = UpdateBatch(entity: "Item", attributes: ["name"])
                batch.append(three, [.string("x")])
                batch.append(ObjectID(entity: "Item", rowID: one.rowID + two.rowID + three.rowID + 1000), [.string("y")])
                try writer.update(batch)
            }
        }
        try await expectError(.duplicateIdentity, "a row taking another object's identity") {
            try await store.write { writer in
                var batch = UpdateBatch(entity: "Item", attributes: ["id"])
                batch.append(three, [.int(1)])
                try writer.update(batch)
            }
        }
        try await expectError(.typeMismatch, "a value of the wrong type") {
            try await store.write { writer in
                var batch = UpdateBatch(entity: "Item", attributes: ["rank"])
                batch.append(three, [.string("x")])
                try writer.update(batch)
            }
        }
        try await expectError(.unknownAttribute, "an unknown attribute") {
            try await store.write { writer in
                var batch = UpdateBatch(entity: "Item", attributes: ["nope"])
                batch.append(three, [.string("x")])
                try writer.update(batch)
            }
        }
        let after = try await store.read { try $0.object(three)?.values }
        try expectEqual(after, ["id": .int(3), "name": .string("three")], "failed batches change nothing")
    }

    func findByIdentity() async throws {
        try prepared()
        let (one, two) = try await store.write { writer in
            (try writer.insert("Item", values: ["id": .int(1), "name": .string("one"), "rank": .int(7)]).id,
             try writer.insert("Item", values: ["id": .int(2), "name": .string("two")]).id)
        }
        let rows = try await store.read { reader in
            try reader.find("Item", identities: [IdentityKey(.int(2)), IdentityKey(.int(3)), IdentityKey(.int(1)), IdentityKey(.int(2))],
                            attributes: ["rank", "name"])
        }
        try expectEqual(rows, [StoredRow(id: two, values: [nil, .string("two")]), nil,
                               StoredRow(id: one, values: [.int(7), .string("one")]), StoredRow(id: two, values: [nil, .string("two")])],
                        "rows in the order asked, values in the order of the attributes")
        let wrongType = try await store.read { try $0.find("Item", identities: [IdentityKey(.string("1"))], attributes: []) }
        try expectEqual(wrongType, [nil], "an identity of the wrong type finds nothing")
        let pair = try await insert("Pair", ["left": .int(1), "right": .string("a"), "note": .string("n")])
        _ = try await insert("Pair", ["left": .int(1), "right": .string("b")])
        let pairs = try await store.read { reader in
            try reader.find("Pair", identities: [IdentityKey([.int(1), .string("a")]), IdentityKey([.int(2), .string("a")])], attributes: ["note"])
        }
        try expectEqual(pairs, [StoredRow(id: pair, values: [.string("n")]), nil], "composite identities")
        // Many keys (a store may look them up in chunks): every third one stored, some asked twice,
        // a composite key of the wrong arity and keys of the wrong type in between.
        let stored = try await store.write { writer in
            try (100..<1_300).filter { $0 % 3 == 0 }.map { n in
                (n, try writer.insert("Item", values: ["id": .int(Int64(n)), "name": .string("item \(n)")]).id)
            }
        }
        let byNumber = Dictionary(uniqueKeysWithValues: stored)
        var keys: [IdentityKey] = []
        var expected: [StoredRow?] = []
        for n in (100..<1_300).reversed() {
            keys.append(IdentityKey(.int(Int64(n))))
            expected.append(byNumber[n].map { StoredRow(id: $0, values: [.string("item \(n)")]) })
            if n % 97 == 0 {
                keys.append(IdentityKey(.string("\(n)")))
                expected.append(nil)
                keys.append(IdentityKey([.int(Int64(n)), .int(0)]))
                expected.append(nil)
                keys.append(IdentityKey(.int(Int64(n))))
                expected.append(expected[expected.count - 3])
            }
        }
        for count in [1, 2, 9, 65, 501, keys.count] {
            let asked = Array(keys[..<count])
            let found = try await store.read { try $0.find("Item", identities: asked, attributes: ["name"]) }
            try expectEqual(found.count, count, "\(count) identities: one answer each")
            if let wrong = (0..<count).first(where: { found[$0] != expected[$0] }) {
                try expectEqual(found[wrong], expected[wrong], "\(count) identities: the answer at position \(wrong), for key \(asked[wrong])")
            }
        }
        let none = try await store.read { try $0.find("Item", identities: [], attributes: ["name"]) }
        try expectEqual(none, [], "no identities")
        try await expectError(.unknownEntity, "an unknown entity") {
            _ = try await store.read { try $0.find("Nope", identities: [IdentityKey(.int(1))], attributes: []) }
        }
    }

    func compareByIdentity() async throws {
        try prepared()
        let when = Date(timeIntervalSinceReferenceDate: 12.25)
        let code = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
        let columns = ["id", "name", "score", "rank", "small", "medium", "ratio", "price", "flag", "when", "blob", "code", "site", "extra"]
        let full: [Value?] = [.int(1), .string("Zoë 🐙 café"), .double(0.5), .int(Int64.max), .int(-7), .int(70_000), .double(-1.5),
                              .decimal(Decimal(string: "19.99")!), .bool(true), .date(when), .data(Data([0, 1, 2])), .uuid(code),
                              .url(URL(string: "https://example.com/a?b=c")!), .string("any")]
        var byName: [String: Value] = [:]
        for (name, value) in zip(columns, full) { byName[name] = value }
        let values = byName
        let (one, two) = try await store.write { writer in
            (try writer.insert("Item", values: values).id, try writer.insert("Item", values: ["id": .int(2), "name": .string("plain")]).id)
        }
        func compare(_ rows: [(IdentityKey, [Value?]?, [Int])], attributes: [String] = columns) async throws -> [StoredDifference?] {
            try await store.read { reader in
                var batch = LookupBatch(entity: "Item", attributes: attributes)
                for (key, values, given) in rows {
                    if let values { batch.append(key, values: values, given: given) } else { batch.append(key) }
                }
                return try reader.compare(batch)
            }
        }
        let all = Array(columns.indices)
        let key1 = IdentityKey(.int(1)), key2 = IdentityKey(.int(2))
        try expectEqual(try await compare([(key1, full, all)]), [StoredDifference(id: one, changed: [])], "every type, unchanged")

        // Each attribute in turn: another value, then null; each is reported alone.
        let other: [Value?] = [.int(1), .string("Zoë 🐙 cafe"), .double(0.25), .int(Int64.min), .int(7), .int(-70_000), .double(1.5),
                               .decimal(Decimal(string: "19.98")!), .bool(false), .date(when.addingTimeInterval(0.001)), .data(Data([0, 1])),
                               .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5E")!), .url(URL(string: "https://example.com/a?b=d")!),
                               .int(3)]
        for a in columns.indices.dropFirst() {
            var changed = full
            changed[a] = other[a]
            var cleared = full
            cleared[a] = nil
            let found = try await compare([(key1, changed, all), (key1, cleared, all)])
            try expectEqual(found, [StoredDifference(id: one, changed: [a]), StoredDifference(id: one, changed: [a])],
                            "\(columns[a]): another value, then null")
        }
        // A value where nothing is stored, an empty string, and values the row does not give.
        try expectEqual(try await compare([(key2, [.int(2), .string("plain"), .double(1), nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil], all)]),
                        [StoredDifference(id: two, changed: [2])], "a value where nothing is stored")
        try expectEqual(try await compare([(key2, [.int(2), .string(""), nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil], all)]),
                        [StoredDifference(id: two, changed: [1])], "an empty string against a stored one")
        try expectEqual(try await compare([(key1, other, [0, 5])]), [StoredDifference(id: one, changed: [5])],
                        "only the given positions are compared")
        // Strings compare by their bytes (Docs/Stores.md): a decomposed spelling of the stored
        // precomposed text is a change, though Swift's `==` would call them equal.
        try expectEqual(try await compare([(key1, [.int(1), .string("Zoe\u{308} 🐙 cafe\u{301}")], [1])], attributes: ["id", "name"]),
                        [StoredDifference(id: one, changed: [1])], "a decomposed string against the stored precomposed one")
        // Order, repeats, unknown identities, rows that give nothing, a few attributes.
        let mixed = try await compare([(key2, nil, []), (IdentityKey(.int(9)), [.int(9), .string("x")], [0, 1]), (key1, [.int(1), .string("Zoë")], [1]),
                                       (key2, [.int(2), .string("plain")], [1]), (IdentityKey(.string("1")), nil, [])],
                                      attributes: ["id", "name"])
        try expectEqual(mixed, [StoredDifference(id: two, changed: []), nil, StoredDifference(id: one, changed: [1]),
                                StoredDifference(id: two, changed: []), nil], "rows in the order asked")
        let none = try await compare([])
        try expectEqual(none, [], "no identities")
        // Many keys (a store may look them up in chunks): every other one stored, half of those changed.
        let stored = try await store.write { writer in
            try (100..<1_300).filter { $0 % 2 == 0 }.map { n in
                (n, try writer.insert("Item", values: ["id": .int(Int64(n)), "name": .string("item \(n)")]).id)
            }
        }
        let byNumber = Dictionary(uniqueKeysWithValues: stored)
        let numbers = Array((100..<1_300).reversed())
        let found = try await compare(numbers.map { n in
            (IdentityKey(.int(Int64(n))), [.int(Int64(n)), .string(n % 4 == 0 ? "item \(n)" : "changed \(n)")], [0, 1])
        }, attributes: ["id", "name"])
        let expected = numbers.map { n in byNumber[n].map { StoredDifference(id: $0, changed: n % 4 == 0 ? [] : [1]) } }
        if let wrong = numbers.indices.first(where: { found[$0] != expected[$0] }) {
            try expectEqual(found[wrong], expected[wrong], "\(numbers.count) identities: the answer for \(numbers[wrong])")
        }
        try await expectError(.unknownEntity, "an unknown entity") {
            _ = try await store.read { try $0.compare(LookupBatch(entity: "Nope", attributes: [])) }
        }
        try await compareReadsToOneTargets()
    }

    /// The current targets of to-one relationships, read along with the lookup: many-to-one,
    /// one-to-one from either side, without inverse, and none.
    private func compareReadsToOneTargets() async throws {
        let ids = try await store.write { writer in
            let authors = try (1...2).map { try writer.insert("Author", values: ["id": .int(Int64($0))]).id }
            let posts = try (1...3).map { try writer.insert("Post", values: ["id": .int(Int64($0))]).id }
            let profile = try writer.insert("Profile", values: ["id": .int(1)]).id
            try writer.setRelated("author", of: posts[0], to: [authors[0]])
            try writer.setRelated("author", of: posts[2], to: [authors[0]])
            try writer.setRelated("profile", of: authors[0], to: [profile])
            try writer.setRelated("pinned", of: authors[0], to: [posts[2]])
            return (authors: authors, posts: posts, profile: profile)
        }
        func compare(_ entity: String, _ keys: [Int64], _ relationships: [String]) async throws -> [StoredDifference?] {
            try await store.read { reader in
                var batch = LookupBatch(entity: entity, attributes: ["id"], relationships: relationships)
                for key in keys { batch.append(IdentityKey(.int(key)), values: [.int(key)], given: [0]) }
                return try reader.compare(batch)
            }
        }
        let (authors, posts) = (ids.authors, ids.posts)
        try expectEqual(try await compare("Post", [1, 2, 9, 3], ["author"]),
                        [StoredDifference(id: posts[0], changed: [], targets: [authors[0]]), StoredDifference(id: posts[1], changed: [], targets: [nil]),
                         nil, StoredDifference(id: posts[2], changed: [], targets: [authors[0]])],
                        "many-to-one targets")
        try expectEqual(try await compare("Author", [2, 1], ["profile", "pinned"]),
                        [StoredDifference(id: authors[1], changed: [], targets: [nil, nil]),
                         StoredDifference(id: authors[0], changed: [], targets: [ids.profile, posts[2]])],
                        "one-to-one and no-inverse targets")
        try expectEqual(try await compare("Profile", [1], ["author"]), [StoredDifference(id: ids.profile, changed: [], targets: [authors[0]])],
                        "the other side of a one-to-one")
        try expectEqual(try await compare("Post", [1], []), [StoredDifference(id: posts[0], changed: [])], "no relationships, no targets")
        try await expectError(.unsupported, "a to-many relationship linking an object to several") {
            _ = try await compare("Author", [1], ["posts"])
        }
        try await expectError(.unknownRelationship, "an unknown relationship") {
            _ = try await compare("Post", [1], ["nope"])
        }
    }
}
