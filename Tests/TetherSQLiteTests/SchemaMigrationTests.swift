import Foundation
import Testing
import Tether
import TetherSQLite

/// Declared migration steps on the SQLite store: each kind keeps the data, a failing step leaves
/// the file as it was, a step runs once per file, and earlier files and formats still open.
@Suite struct SchemaMigrationTests {
    /// Release 1: users own repositories (a foreign key), repositories have labels (a join table).
    static let v1 = try! Schema {
        Entity("User", identity: "id") {
            Attribute("id", .int64)
            Attribute("login", .string)
            Attribute("age", .string)
            Relationship.toMany("repos", "Repo", inverse: "owner")
        }
        Entity("Repo", identity: "id") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Relationship.toOne("owner", "User", inverse: "repos")
            Relationship.toMany("labels", "Label", inverse: "repos", ordered: true)
        }
        Entity("Label", identity: "id") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Relationship.toMany("repos", "Repo", inverse: "labels")
        }
    }

    /// `v1` with `change` applied to its entities.
    static func schema(_ change: (inout [Entity]) -> Void) throws -> Schema {
        var entities = v1.entities
        change(&entities)
        return try Schema(entities)
    }

    /// A file of release 1 with two users, three repositories, labels and a remote record; closed.
    static func seed(_ path: String, ages: [String] = ["42", "7"], labelNames: [String] = ["bug", "ui", "docs"]) async throws {
        let store = try SQLiteStore(path: path)
        try store.prepare(for: v1)
        try await store.write { writer in
            let users = try zip([1, 2], ages).map { id, age in
                try writer.insert("User", values: ["id": .int(Int64(id)), "login": .string("user\(id)"), "age": .string(age)]).id
            }
            let repos = try (1...3).map { try writer.insert("Repo", values: ["id": .int(Int64($0)), "name": .string("repo\($0)")]).id }
            let labels = try labelNames.enumerated().map { try writer.insert("Label", values: ["id": .int(Int64($0.offset + 1)), "name": .string($0.element)]).id }
            try writer.setRelated("repos", of: users[0], to: [repos[0], repos[1]])
            try writer.setRelated("repos", of: users[1], to: [repos[2]])
            try writer.setRelated("labels", of: repos[0], to: [labels[2], labels[0]])
            try writer.setRelated("labels", of: repos[2], to: [labels[1]])
            try writer.setRemoteRecord(Data(#"{"etag":"\"r1\""}"#.utf8), of: repos[0])
            try writer.setRemoteRecord(Data(#"{"confirmed":{"login":"user0"},"etag":"\"u1\""}"#.utf8), of: users[0])
        }
        store.close()
    }

    static func bytes(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }

    static func layoutJSON(_ store: SQLiteStore) async throws -> String {
        try await store.readSQL { db in
            guard case .string(let json)? = try db.rows("SELECT value FROM _tether_schema WHERE key = 'layout'").first?["value"] else { return "" }
            return json
        }
    }

    /// The id attribute of each object `relationship` leads to from the object of `entity` with `id`.
    static func related(_ store: SQLiteStore, _ entity: String, _ id: Int64, _ relationship: String) async throws -> [Value?] {
        try await store.read { reader in
            guard let object = try reader.objects(entity, identities: [IdentityKey(.int(id))]).values.first else { return [] }
            let ids = try reader.related(relationship, of: [object.id])[object.id] ?? []
            return try ids.map { try reader.object($0)?["id"] }
        }
    }

    @Test func renamingAnAttributeKeepsItsValuesAndRunsOnce() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path()
        try await Self.seed(path)
        let v2 = try Self.schema { $0[0].attributes[1].name = "handle" }
        let migrations = [SchemaMigration("2-handle", [.renameAttribute(entity: "User", from: "login", to: "handle")])]
        for _ in 0..<2 {  // the second time, the step is not applied again
            let store = try SQLiteStore(path: path)
            try store.prepare(for: v2, migrations: migrations)
            let handles = try await store.read { try $0.fetch(Query("User", sortedBy: [.ascending("id")])).map { $0["handle"] } }
            #expect(handles == [.string("user1"), .string("user2")])
            #expect(try await Self.layoutJSON(store).contains(#""appliedMigrations":["2-handle"]"#))
            #expect(try await Self.related(store, "User", 1, "repos").count == 2)
            store.close()
        }
        // What the server last confirmed is kept by property name: the record follows the rename.
        let record = try await {
            let store = try SQLiteStore(path: path)
            try store.prepare(for: v2, migrations: migrations)
            defer { store.close() }
            return try await store.read { reader -> String? in
                let user = try #require(try reader.objects("User", identities: [IdentityKey(.int(1))]).values.first)
                return try reader.remoteRecord(of: user.id).map { String(decoding: $0, as: UTF8.self) }
            }
        }()
        #expect(record?.contains(#""confirmed":{"handle":"user0"}"#) == true, "\(record ?? "none")")
        #expect(record?.contains(#""etag":"\"u1\""#) == true, "\(record ?? "none")")
        // A later release adds an attribute with the old name: a new, empty column.
        let v3 = try Self.schema { $0[0].attributes[1].name = "handle"; $0[0].attributes.append(Attribute("login", .string)) }
        let store = try SQLiteStore(path: path)
        try store.prepare(for: v3, migrations: migrations)
        let users = try await store.read { try $0.fetch(Query("User", sortedBy: [.ascending("id")])) }
        #expect(users.map { $0["handle"] } == [.string("user1"), .string("user2")])
        #expect(users.map { $0["login"] } == [nil, nil])
    }

    @Test func renamingAnEntityKeepsItsObjectsLinksAndRemoteRecords() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path()
        try await Self.seed(path)
        // Repo becomes Repository; a new entity takes the old name in the same release.
        let v2 = try Self.schema { entities in
            entities[1].name = "Repository"
            entities[0].relationships[0].destination = "Repository"
            entities[2].relationships[0].destination = "Repository"
            entities.append(Entity("Repo", identity: ["id"], attributes: [Attribute("id", .int64)]))
        }
        let store = try SQLiteStore(path: path)
        try store.prepare(for: v2, migrations: [SchemaMigration("2-repository", [.renameEntity(from: "Repo", to: "Repository")])])
        let names = try await store.read { try $0.fetch(Query("Repository", sortedBy: [.ascending("id")])).map { $0["name"] } }
        #expect(names == [.string("repo1"), .string("repo2"), .string("repo3")])
        #expect(try await Self.related(store, "Repository", 1, "labels") == [.int(3), .int(1)])
        #expect(try await Self.related(store, "Repository", 1, "owner") == [.int(1)])
        #expect(try await Self.related(store, "User", 1, "repos").count == 2)
        #expect(try await Self.related(store, "Label", 2, "repos") == [.int(3)])
        let record = try await store.read { reader -> Data? in
            let repo = try #require(try reader.objects("Repository", identities: [IdentityKey(.int(1))]).values.first)
            return try reader.remoteRecord(of: repo.id)
        }
        #expect(record == Data(#"{"etag":"\"r1\""}"#.utf8))
        // The identity index moved with the table, and the new Repo has its own.
        try await store.write { writer in
            try writer.insert("Repo", values: ["id": .int(1)])
            #expect(throws: StoreError.self) { try writer.insert("Repository", values: ["id": .int(1)]) }
            let repo = try writer.insert("Repository", values: ["id": .int(4)])
            try writer.setRelated("labels", of: repo.id, to: [])
        }
        let tables = try await store.readSQL { db in
            try db.rows("SELECT name FROM sqlite_master WHERE name LIKE '%Repo%' ORDER BY name").compactMap { row -> String? in
                if case .string(let name)? = row["name"] { return name }
                return nil
            }
        }
        #expect(tables == ["Repo", "Repository", "Repository.labels", "_tether_fk_Repository.owner", "_tether_identity_Repo",
                           "_tether_identity_Repository", "_tether_join_Repository.labels"], "\(tables)")
    }

    @Test func renamingRelationshipsKeepsTheirLinks() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path()
        try await Self.seed(path)
        let v2 = try Self.schema { entities in
            entities[0].relationships[0].inverse = "author"
            entities[1].relationships[0].name = "author"
            entities[1].relationships[1].name = "tags"
            entities[2].relationships[0].inverse = "tags"
        }
        let store = try SQLiteStore(path: path)
        try store.prepare(for: v2, migrations: [SchemaMigration("2-author-tags", [
            .renameRelationship(entity: "Repo", from: "owner", to: "author"),
            .renameRelationship(entity: "Repo", from: "labels", to: "tags"),
        ])])
        #expect(try await Self.related(store, "Repo", 1, "author") == [.int(1)])
        #expect(try await Self.related(store, "Repo", 3, "author") == [.int(2)])
        #expect(try await Self.related(store, "User", 1, "repos") .count == 2)
        #expect(try await Self.related(store, "Repo", 1, "tags") == [.int(3), .int(1)])
        #expect(try await Self.related(store, "Label", 1, "repos") == [.int(1)])
        let found = try await store.read { reader in
            try reader.fetch(Query("Repo", where: .equal("author.login", .string("user2")))).map { $0["id"] }
        }
        #expect(found == [.int(3)])
    }

    @Test func changingATypeConvertsEveryValue() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path()
        try await Self.seed(path)
        let v2 = try Self.schema { $0[0].attributes[2].type = .int64 }
        let store = try SQLiteStore(path: path)
        try store.prepare(for: v2, migrations: [SchemaMigration("2-age", [.changeType(entity: "User", attribute: "age", to: .int64)])])
        let ages = try await store.read { try $0.fetch(Query("User", sortedBy: [.ascending("age")])).map { $0["age"] } }
        #expect(ages == [.int(7), .int(42)])
        let older = try await store.read { try $0.count(Query("User", where: .greater("age", .int(10)))) }
        #expect(older == 1)
    }

    @Test func aValueThatDoesNotConvertNamesTheRowsAndLeavesTheFileUntouched() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path()
        try await Self.seed(path, ages: ["42", "old"])
        let before = try Self.bytes(path)
        // With additive changes and a rename in the same release: all of it is rolled back.
        let v2 = try Self.schema { entities in
            entities[0].attributes[1].name = "handle"
            entities[0].attributes[2].type = .int64
            entities[0].attributes.append(Attribute("bio", .string))
            entities.append(Entity("Team", identity: ["id"], attributes: [Attribute("id", .int64)]))
        }
        let steps: [MigrationStep] = [.renameAttribute(entity: "User", from: "login", to: "handle"),
                                      .changeType(entity: "User", attribute: "age", to: .int64)]
        let store = try SQLiteStore(path: path)
        do {
            try store.prepare(for: v2, migrations: [SchemaMigration("2", steps)])
            Issue.record("a conversion that fails was applied")
        } catch let error as StoreError {
            #expect(error.kind == .invalidValue)
            #expect(error.entity == "User")
            #expect(error.member == "age")
            #expect(error.message.contains("1 value of User.age"), "\(error.message)")
            #expect(error.message.contains(#"row 2 (id = 2): "old" ('old' is not the text of an integer)"#), "\(error.message)")
            #expect(error.message.contains("untouched"))
        }
        store.close()
        #expect(try Self.bytes(path) == before)
        // Release 1 still opens it as it was.
        let reopened = try SQLiteStore(path: path)
        try reopened.prepare(for: Self.v1)
        #expect(try await reopened.read { try $0.fetch(Query("User", sortedBy: [.ascending("id")])).map { $0["login"] } } == [.string("user1"), .string("user2")])
        reopened.close()
        // Clearing what does not convert is explicit.
        let nullifying = try SQLiteStore(path: path)
        try nullifying.prepare(for: v2, migrations: [SchemaMigration("2", [
            steps[0], .changeType(entity: "User", attribute: "age", to: .int64, conversion: .standard.nullifyingFailures),
        ])])
        let users = try await nullifying.read { try $0.fetch(Query("User", sortedBy: [.ascending("id")])) }
        #expect(users.map { $0["age"] } == [.int(42), nil])
        #expect(users.map { $0["handle"] } == [.string("user1"), .string("user2")])
        #expect(try await nullifying.read { try $0.count(Query("Team")) } == 0)
    }

    @Test func aCustomConversion() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path()
        try await Self.seed(path, ages: ["forty-two", "seven"])
        let v2 = try Self.schema { $0[0].attributes[2].type = .int16 }
        let words: [String: Int64] = ["forty-two": 42, "seven": 7]
        let store = try SQLiteStore(path: path)
        try store.prepare(for: v2, migrations: [SchemaMigration("2-age", [
            .changeType(entity: "User", attribute: "age", to: .int16, conversion: .custom { value in
                guard case .string(let text) = value, let number = words[text] else { throw MigrationConversion.Failure("not a number word") }
                return .int(number)
            }),
        ])])
        #expect(try await store.read { try $0.fetch(Query("User", sortedBy: [.ascending("id")])).map { $0["age"] } } == [.int(42), .int(7)])
    }

    @Test func changingTheIdentityReKeysTheObjects() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path()
        try await Self.seed(path)
        let v2 = try Self.schema { $0[2].identity = ["name"] }
        let store = try SQLiteStore(path: path)
        try store.prepare(for: v2, migrations: [SchemaMigration("2-label-name", [.changeIdentity(entity: "Label", to: ["name"])])])
        let found = try await store.read { try $0.objects("Label", identities: [IdentityKey(.string("ui"))]).values.map { $0["id"] } }
        #expect(found == [.int(2)])
        try await store.write { writer in
            #expect(throws: StoreError.self) { try writer.insert("Label", values: ["id": .int(9), "name": .string("bug")]) }
            try writer.insert("Label", values: ["id": .int(1), "name": .string("new")])
        }
        #expect(try await Self.related(store, "Label", 2, "repos") == [])  // (by id: no longer an identity)
        #expect(try await store.read { reader in
            let label = try #require(try reader.objects("Label", identities: [IdentityKey(.string("ui"))]).values.first)
            return try reader.related("repos", of: [label.id])[label.id]?.count
        } == 1)
    }

    @Test func duplicatesOfTheNewIdentityAreRefusedByName() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path()
        try await Self.seed(path, labelNames: ["bug", "ui", "bug"])
        let before = try Self.bytes(path)
        let v2 = try Self.schema { $0[2].identity = ["name"] }
        let store = try SQLiteStore(path: path)
        do {
            try store.prepare(for: v2, migrations: [SchemaMigration("2-label-name", [.changeIdentity(entity: "Label", to: ["name"])])])
            Issue.record("an identity with duplicates was applied")
        } catch let error as StoreError {
            #expect(error.kind == .duplicateIdentity)
            #expect(error.entity == "Label")
            #expect(error.message.contains("name = 'bug' (rows 1, 3)"), "\(error.message)")
            #expect(error.message.contains("untouched"))
        }
        store.close()
        #expect(try Self.bytes(path) == before)
        let reopened = try SQLiteStore(path: path)
        try reopened.prepare(for: Self.v1)
        #expect(try await reopened.read { try $0.count(Query("Label")) } == 3)
    }

    @Test func aNewFileRecordsEveryMigrationWithoutRunningIt() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path()
        let v2 = try Self.schema { $0[0].attributes[1].name = "handle" }
        let migrations = [SchemaMigration("2-handle", [.renameAttribute(entity: "User", from: "login", to: "handle")])]
        for _ in 0..<2 {
            let store = try SQLiteStore(path: path)
            try store.prepare(for: v2, migrations: migrations)
            #expect(try await Self.layoutJSON(store).contains(#""appliedMigrations":["2-handle"]"#))
            store.close()
        }
    }

    @Test func aFileWrittenBeforeMigrationStepsOpens() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path()
        try await Self.seed(path)
        // Its record has no applied migrations (as every file written before them).
        let store = try SQLiteStore(path: path)
        try store.prepare(for: Self.v1)
        #expect(try await !Self.layoutJSON(store).contains("appliedMigrations"))
        try store.prepare(for: Self.v1, migrations: [])
        #expect(try await !Self.layoutJSON(store).contains("appliedMigrations"))
        store.close()
        // Steps mistaken about the file are refused clearly.
        let wrong = try SQLiteStore(path: path)
        #expect {
            try wrong.prepare(for: Self.v1, migrations: [SchemaMigration("x", [.renameAttribute(entity: "User", from: "nick", to: "login")])])
        } throws: { error in
            guard let error = error as? StoreError else { return false }
            return error.kind == .incompatibleSchema && error.message.contains("no attribute User.nick")
        }
        #expect(throws: StoreError.self) {
            try wrong.prepare(for: Self.v1, migrations: [SchemaMigration("x", []), SchemaMigration("x", [])])
        }
    }

    @Test(arguments: [1, 2]) func migratingAFileOfAnEarlierFormat(format: Int) async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path()
        try await Self.seed(path)
        do {
            let store = try SQLiteStore(path: path)
            try store.prepare(for: Self.v1)
            try await store.writeSQL { db in
                // The join table as formats 1 and 2 keyed it.
                let table = "Repo.labels"
                try db.execute(#"CREATE TABLE "old" ("a" INTEGER NOT NULL, "b" INTEGER NOT NULL, "a_pos" INTEGER NOT NULL, "b_pos" INTEGER NOT NULL, PRIMARY KEY ("a", "b")) WITHOUT ROWID"#)
                try db.execute(#"INSERT INTO "old" SELECT "a", "b", "a_pos", "b_pos" FROM "\#(table)""#)
                try db.execute("DROP TABLE \"\(table)\"")
                try db.execute("ALTER TABLE \"old\" RENAME TO \"\(table)\"")
                try db.execute("CREATE INDEX \"_tether_join_\(table)\" ON \"\(table)\" (\"b\"\(format == 2 ? ", \"b_pos\"" : ""))")
                if format == 2 { try db.execute("CREATE INDEX \"_tether_join_a_\(table)\" ON \"\(table)\" (\"a\", \"a_pos\")") }
                guard case .string(let layout)? = try db.rows("SELECT value FROM _tether_schema WHERE key = 'layout'").first?["value"] else { return }
                try db.execute("UPDATE _tether_schema SET value = ? WHERE key = 'layout'",
                               [.string(layout.replacingOccurrences(of: "\"format\":3", with: "\"format\":\(format)"))])
            }
            store.close()
        }
        let v2 = try Self.schema { entities in
            entities[1].name = "Repository"
            entities[1].relationships[1].name = "tags"
            entities[0].relationships[0].destination = "Repository"
            entities[2].relationships[0] = .toMany("repos", "Repository", inverse: "tags")
            entities[0].attributes[2].type = .int64
        }
        let store = try SQLiteStore(path: path)
        try store.prepare(for: v2, migrations: [
            SchemaMigration("2-repository", [.renameEntity(from: "Repo", to: "Repository")]),
            SchemaMigration("3-tags-age", [.renameRelationship(entity: "Repository", from: "labels", to: "tags"),
                                           .changeType(entity: "User", attribute: "age", to: .int64)]),
        ])
        #expect(try await Self.related(store, "Repository", 1, "tags") == [.int(3), .int(1)])
        #expect(try await Self.related(store, "Label", 1, "repos") == [.int(1)])
        #expect(try await Self.layoutJSON(store).contains(#""format":3"#))
        let indexes = try await store.readSQL { db in
            try db.rows("SELECT name FROM sqlite_master WHERE tbl_name = 'Repository.tags' ORDER BY name").compactMap { row -> String? in
                if case .string(let name)? = row["name"] { return name }
                return nil
            }
        }
        #expect(indexes.filter { !$0.hasPrefix("sqlite_autoindex") } == ["Repository.tags", "_tether_join_Repository.tags"], "\(indexes)")
    }

    /// The outbox's entries, by key: entity, relationship, target entity and local changes.
    static func outbox(_ store: SQLiteStore) async throws -> [String: [String]] {
        try await store.readSQL { db in
            var entries: [String: [String]] = [:]
            for row in try db.rows(#"SELECT "key", "entity", "relationship", "targetEntity", "local" FROM "_TetherOutbox""#) {
                func text(_ name: String) -> String {
                    if case .string(let value)? = row[name] { return value }
                    return "-"
                }
                entries[text("key").replacingOccurrences(of: "\u{1F}", with: "|")] = [text("entity"), text("relationship"), text("targetEntity"), text("local")]
            }
            return entries
        }
    }

    @Test func renamesRewriteTheOutboxAndOtherStepsWaitForIt() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path()
        do {
            let store = try SQLiteStore(path: path)
            _ = try Client.Builder(schema: Self.v1).store(store).build()
            try await store.writeSQL { db in
                try db.execute(#"INSERT INTO "User" ("id", "login", "age") VALUES (1, 'ada', '36')"#)
                try db.execute(#"INSERT INTO "Repo" ("id", "owner") VALUES (1, 1)"#)
                // An update of User 1 keeping its local login and repositories, and a link of Repo 1 to its owner.
                try db.execute("""
                    INSERT INTO "_TetherOutbox" ("key", "seq", "entity", "row", "operation", "state", "attempts", "local")
                    VALUES ('o' || char(31) || 'User' || char(31) || '1', 1, 'User', 1, 'update', 'pending', 0,
                            '{"values":{"login":["s","ada"]},"related":{"repos":[["Repo",1]]}}')
                    """)
                try db.execute("""
                    INSERT INTO "_TetherOutbox" ("key", "seq", "entity", "row", "operation", "relationship", "targetEntity", "targetRow", "state", "attempts")
                    VALUES ('l' || char(31) || 'Repo' || char(31) || '1' || char(31) || 'owner' || char(31) || 'User' || char(31) || '1',
                            2, 'Repo', 1, 'add', 'owner', 'User', 1, 'pending', 0)
                    """)
            }
            store.close()
        }
        // A type change of an entity the outbox names waits until it has sent its changes.
        let retyped = try Self.schema { $0[0].attributes[2].type = .int64 }
        do {
            _ = try Client.Builder(schema: retyped).store(try SQLiteStore(path: path))
                .migrations([SchemaMigration("2-age", [.changeType(entity: "User", attribute: "age", to: .int64)])]).build()
            Issue.record("a type change was applied under an unsent change")
        } catch let error as ConfigurationError {
            #expect(error.message.contains("2 of Tether's unsent changes in the outbox (_TetherOutbox) name User"), "\(error.message)")
        }
        // Renames rewrite the entries.
        let v2 = try Self.schema { entities in
            entities[0].attributes[1].name = "handle"
            entities[0].relationships[0] = .toMany("repositories", "Repository", inverse: "author")
            entities[1].name = "Repository"
            entities[1].relationships[0] = .toOne("author", "User", inverse: "repositories")
            entities[2].relationships[0].destination = "Repository"
        }
        let store = try SQLiteStore(path: path)
        _ = try Client.Builder(schema: v2).store(store).migrations([SchemaMigration("2", [
            .renameAttribute(entity: "User", from: "login", to: "handle"),
            .renameRelationship(entity: "User", from: "repos", to: "repositories"),
            .renameEntity(from: "Repo", to: "Repository"),
            .renameRelationship(entity: "Repository", from: "owner", to: "author"),
        ])]).build()
        let entries = try await Self.outbox(store)
        #expect(Set(entries.keys) == ["o|User|1", "l|Repository|1|author|User|1"], "\(entries)")
        let update = try #require(entries["o|User|1"])
        #expect(update[0] == "User")
        #expect(update[3].contains(#""handle":["s","ada"]"#) && !update[3].contains("login"), "\(update[3])")
        #expect(update[3].contains(#""repositories":[["Repository",1]]"#), "\(update[3])")
        #expect(entries["l|Repository|1|author|User|1"]?.prefix(3) == ["Repository", "author", "User"])
        // Renames rewrite the pending references too; an identity change waits for them.
        try await store.writeSQL { db in
            try db.execute(#"INSERT INTO "_TetherPendingTarget" ("key", "references") VALUES ('Label' || char(31) || 'i9', '[["Repository","1","labels","0"]]')"#)
            try db.execute(#"INSERT INTO "_TetherPendingSource" ("key", "targets") VALUES ('Repository' || char(31) || '1' || char(31) || 'labels', '[["Label\u001fi9"]]')"#)
        }
        store.close()
        let v3 = try Schema(v2.entities.map { entity in
            var entity = entity
            if entity.name == "Label" { entity.name = "Tag"; entity.relationships[0].inverse = "tags" }
            if entity.name == "Repository" { entity.relationships[1] = .toMany("tags", "Tag", inverse: "repos", ordered: true) }
            return entity
        })
        #expect {
            _ = try Client.Builder(schema: v2).store(try SQLiteStore(path: path))
                .migrations([SchemaMigration("3-name", [.changeIdentity(entity: "Label", to: ["name"])])]).build()
        } throws: { error in
            (error as? ConfigurationError)?.message.contains("1 of Tether's pending references (_TetherPendingTarget) name Label") == true
        }
        let renamed = try SQLiteStore(path: path)
        _ = try Client.Builder(schema: v3).store(renamed).migrations([SchemaMigration("3-tag", [
            .renameEntity(from: "Label", to: "Tag"),
            .renameRelationship(entity: "Repository", from: "labels", to: "tags"),
        ])]).build()
        let pending = try await renamed.readSQL { db in
            try db.rows(#"SELECT "key", "references" AS "list" FROM "_TetherPendingTarget" UNION ALL SELECT "key", "targets" FROM "_TetherPendingSource""#)
                .map { row -> String in
                    guard case .string(let key)? = row["key"], case .string(let list)? = row["list"] else { return "?" }
                    return key.replacingOccurrences(of: "\u{1F}", with: "|") + " " + list.replacingOccurrences(of: "\u{1F}", with: "|")
                }
        }
        #expect(pending == [#"Tag|i9 [["Repository","1","tags","0"]]"#, #"Repository|1|tags [["Tag\u001fi9"]]"#], "\(pending)")
    }

    @Test func identityAttributesCanBeRenamedAndRetyped() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path()
        try await Self.seed(path)
        let v2 = try Self.schema { entities in
            entities[0].attributes[0] = Attribute("id", .string)
            entities[2].attributes[0].name = "number"
            entities[2].identity = ["number"]
        }
        let store = try SQLiteStore(path: path)
        try store.prepare(for: v2, migrations: [SchemaMigration("2", [
            .changeType(entity: "User", attribute: "id", to: .string),
            .renameAttribute(entity: "Label", from: "id", to: "number"),
        ])])
        try await store.write { writer in
            let user = try #require(try writer.objects("User", identities: [IdentityKey(.string("2"))]).values.first)
            #expect(user["login"] == .string("user2"))
            let label = try #require(try writer.objects("Label", identities: [IdentityKey(.int(3))]).values.first)
            #expect(label["name"] == .string("docs"))
            #expect(throws: StoreError.self) { try writer.insert("User", values: ["id": .string("1")]) }
            #expect(throws: StoreError.self) { try writer.insert("Label", values: ["number": .int(1)]) }
        }
    }

    /// The example of Docs/Stores.md, "Migration steps", on a file of release 1.
    @Test func theGuideExampleMigratesARelease1File() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path()
        let release1 = try Schema {
            Entity("User", identity: "id") {
                Attribute("id", .int64)
                Attribute("login", .string)
                Attribute("age", .string)
                Relationship.toMany("repos", "Repo", inverse: "owner")
            }
            Entity("Repo", identity: "id") {
                Attribute("id", .int64)
                Relationship.toOne("owner", "User", inverse: "repos")
            }
            Entity("Label", identity: "id") {
                Attribute("id", .int64)
                Attribute("name", .string)
                Attribute("createdOn", .string)
            }
        }
        do {
            let client = try Client.Builder(schema: release1).store(try SQLiteStore(path: path)).build()
            _ = try await client.import(Data(#"[{"id": 1, "login": "ada", "age": "36", "repos": [{"id": 10}, {"id": 11}]}]"#.utf8), as: "User")
            _ = try await client.import(Data(#"[{"id": 1, "name": "bug", "createdOn": "01/05/2024"}]"#.utf8), as: "Label")
        }
        let schema = try Schema {
            Entity("User", identity: "id") {
                Attribute("id", .int64)
                Attribute("handle", .string)
                Attribute("age", .int64)
                Relationship.toMany("repositories", "Repository", inverse: "owner")
            }
            Entity("Repository", identity: "id") {
                Attribute("id", .int64)
                Relationship.toOne("owner", "User", inverse: "repositories")
            }
            Entity("Label", identity: "name") {
                Attribute("name", .string)
                Attribute("createdOn", .date)
            }
        }
        let migrations = [
            SchemaMigration("2024-06-handle-age", [
                .renameAttribute(entity: "User", from: "login", to: "handle"),
                .changeType(entity: "User", attribute: "age", to: .int64),
                .renameRelationship(entity: "User", from: "repos", to: "repositories"),
            ]),
            SchemaMigration("2024-09-repository-labels", [
                .renameEntity(from: "Repo", to: "Repository"),
                .changeIdentity(entity: "Label", to: ["name"]),
                .changeType(entity: "Label", attribute: "createdOn", to: .date, conversion: .dateFormat("dd/MM/yyyy")),
            ]),
        ]
        for _ in 0..<2 {
            let client = try Client.Builder(schema: schema).store(try SQLiteStore(path: path)).migrations(migrations).build()
            let user = try #require(try await client.object("User", identity: .int(1)))
            #expect(user["handle"] == .string("ada"))
            #expect(user["age"] == .int(36))
            #expect(try await client.related("repositories", of: user.id).map { $0["id"] } == [.int(10), .int(11)])
            let repository = try #require(try await client.object("Repository", identity: .int(11)))
            #expect(try await client.related("owner", of: repository.id).map { $0["id"] } == [.int(1)])
            let label = try #require(try await client.object("Label", identity: .string("bug")))
            #expect(label["createdOn"] == .date(Date(timeIntervalSince1970: 1_714_521_600)))
        }
    }

    @Test func releasesMigrateOneAfterTheOther() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path()
        try await Self.seed(path)
        let a = SchemaMigration("2-handle", [.renameAttribute(entity: "User", from: "login", to: "handle")])
        let b = SchemaMigration("3-nick", [.renameAttribute(entity: "User", from: "handle", to: "nick")])
        let v2 = try Self.schema { $0[0].attributes[1].name = "handle" }
        let v3 = try Self.schema { $0[0].attributes[1].name = "nick" }
        do {
            let store = try SQLiteStore(path: path)
            try store.prepare(for: v2, migrations: [a])
            store.close()
        }
        let store = try SQLiteStore(path: path)
        try store.prepare(for: v3, migrations: [a, b])  // a again would find no User.login
        #expect(try await store.read { try $0.fetch(Query("User", sortedBy: [.ascending("id")])).map { $0["nick"] } } == [.string("user1"), .string("user2")])
        #expect(try await Self.layoutJSON(store).contains(#""appliedMigrations":["2-handle","3-nick"]"#))
    }

    @Test func namesThatAreTakenAndReadOnlyFilesAreRefused() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path()
        try await Self.seed(path)
        let before = try Self.bytes(path)
        let cases: [(MigrationStep, String)] = [
            (.renameAttribute(entity: "User", from: "login", to: "AGE"), "already has a member or column named like AGE"),
            (.renameAttribute(entity: "User", from: "login", to: "repos"), "already has a member or column named like repos"),
            (.renameRelationship(entity: "Repo", from: "owner", to: "name"), "already has a member or column named like name"),
            (.renameEntity(from: "Repo", to: "label"), "already has a table named like label"),
            (.renameEntity(from: "User", to: "repo.LABELS"), "already has a table named like repo.LABELS"),
            (.renameEntity(from: "Nope", to: "Other"), "the file has no entity Nope"),
            (.changeType(entity: "User", attribute: "nope", to: .int64), "no attribute User.nope"),
            (.changeIdentity(entity: "User", to: ["nope"]), "User has no attribute nope"),
        ]
        for (step, message) in cases {
            let store = try SQLiteStore(path: path)
            #expect {
                try store.prepare(for: Self.v1, migrations: [SchemaMigration("2", [step])])
            } throws: { error in
                guard let error = error as? StoreError else { return false }
                return error.kind == .incompatibleSchema && error.message.contains(message) && error.message.contains("migration '2'")
            }
            store.close()
        }
        #expect(try Self.bytes(path) == before)
        let readOnly = try SQLiteStore(path: path, readOnly: true)
        #expect {
            try readOnly.prepare(for: Self.v1, migrations: [SchemaMigration("2", [.renameAttribute(entity: "User", from: "login", to: "handle")])])
        } throws: { error in
            (error as? StoreError)?.kind == .storage
        }
    }

    @Test func aNewIdentityMayNameAnAttributeTheReleaseAddsOrNone() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path()
        try await Self.seed(path)
        let v2 = try Self.schema { entities in
            entities[2].attributes.append(Attribute("slug", .string))
            entities[2].identity = ["slug"]
            entities[1].identity = []
        }
        let store = try SQLiteStore(path: path)
        try store.prepare(for: v2, migrations: [SchemaMigration("2", [
            .changeIdentity(entity: "Label", to: ["slug"]),
            .changeIdentity(entity: "Repo", to: []),
        ])])
        try await store.write { writer in
            try writer.insert("Label", values: ["id": .int(1), "slug": .string("bug")])
            #expect(throws: StoreError.self) { try writer.insert("Label", values: ["slug": .string("bug")]) }
            try writer.insert("Repo", values: ["id": .int(1)])  // no identity: a second Repo 1
        }
        #expect(try await store.read { try $0.count(Query("Repo")) } == 4)
        #expect(try await store.read { try $0.count(Query("Label")) } == 4)
    }
}
