#if canImport(SQLite3)
import SQLite3
#elseif canImport(CSQLite)
import CSQLite
#endif
import Foundation
import Testing
import Tether
import TetherTesting
@testable import TetherSQLite

@Suite struct SQLiteStoreTests {
    static let schema = try! Schema {
        Entity("Author", identity: "id") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Relationship.toMany("posts", "Post", inverse: "author")
        }
        Entity("Post", identity: "id") {
            Attribute("id", .int64)
            Attribute("title", .string)
            Attribute("published", .date)
            Relationship.toOne("author", "Author", inverse: "posts")
            Relationship.toMany("tags", "Tag", inverse: "posts", ordered: true)
        }
        Entity("Tag", identity: "name") {
            Attribute("name", .string)
            Relationship.toMany("posts", "Post", inverse: "tags")
        }
    }

    static let payload = #"""
    [{"id": 1, "title": "Hello", "published": "2024-05-01T10:00:00.250Z", "author": {"id": 7, "name": "Ada"},
      "tags": [{"name": "swift"}, {"name": "sqlite"}, {"name": "linux"}]},
     {"id": 2, "title": "Again", "author": {"id": 7}, "tags": [{"name": "linux"}, {"name": "swift"}]},
     {"id": 3, "title": "Other", "author": {"id": 8, "name": "Grace"}}]
    """#

    func client(_ store: SQLiteStore, schema: Schema = Self.schema) throws -> Client {
        try Client.Builder(schema: schema).store(store).build()
    }

    @Test func reopenedFileHasEverythingIncludingRelationships() async throws {
        let directory = try TemporaryDirectory()
        do {
            let store = try SQLiteStore(path: directory.path())
            _ = try await client(store).import(Data(Self.payload.utf8), as: "Post")
            store.close()
        }
        let store = try SQLiteStore(path: directory.path())
        let client = try client(store)
        let posts = try await client.fetch(Query("Post", sortedBy: [.ascending("id")]))
        #expect(posts.map { $0["title"] } == [.string("Hello"), .string("Again"), .string("Other")])
        #expect(posts[0]["published", as: Date.self] == ISO8601DateFormatter.fractional.date(from: "2024-05-01T10:00:00.250Z"))
        let tags = try await client.related("tags", of: posts[0].id).map { $0["name", as: String.self] }
        #expect(tags == ["swift", "sqlite", "linux"])
        #expect(try await client.related("tags", of: posts[1].id).map { $0["name", as: String.self] } == ["linux", "swift"])
        let ada = try #require(try await client.object("Author", identity: .int(7)))
        #expect(Set(try await client.related("posts", of: ada.id).map(\.id)) == [posts[0].id, posts[1].id])
        #expect(try await client.related("author", of: posts[2].id).first?["name"] == .string("Grace"))
    }

    @Test func theLogIsCheckpointedAfterLargeCommitsAndOnDemand() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path()
        let store = try SQLiteStore(path: path)
        let client = try client(store)
        func mainFileSize() throws -> Int {
            try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0
        }
        // A small commit leaves the log alone.
        _ = try await client.import(Data(Self.payload.utf8), as: "Post")
        store.waitForCheckpoint()
        let small = try mainFileSize()
        #expect(small < 200_000)
        // `checkpoint()` copies the log into the file on demand.
        await store.checkpoint()
        #expect(try mainFileSize() > small)
        // About 1,500 pages of 4 KiB: past the threshold.
        let title = String(repeating: "t", count: 1_000)
        let posts = (0..<6_000).map { JSON.object(["id": .int(Int64($0 + 10)), "title": .string("\(title) \($0)")]) }
        let result = try await client.import(.array(posts), as: "Post")
        #expect(result.inserted.count == 6_000)
        store.waitForCheckpoint()
        // The pages were copied from the log into the database file by the checkpointer (the
        // writing connection's automatic checkpoint is off).
        let size = try mainFileSize()
        #expect(size > 6_000_000, "main file \(size) bytes")
        #expect(try await client.count(Query("Post")) == 6_003)
        store.close()
        let reopened = try SQLiteStore(path: path)
        #expect(try await self.client(reopened).count(Query("Post")) == 6_003)
    }

    @Test func fileFormatIsOneTablePerEntityWithTypedColumns() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path())
        _ = try await client(store).import(Data(Self.payload.utf8), as: "Post")
        let objects = try await store.readSQL { db in
            try db.rows("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name")
                .map { "\($0["type"]!) \($0["name"]!)" }
        }
        #expect(objects == [
            #""index" "_tether_fk_Post.author""#, #""index" "_tether_identity_Author""#, #""index" "_tether_identity_Post""#,
            #""index" "_tether_identity_Tag""#, #""index" "_tether_identity__TetherOutbox""#, #""index" "_tether_identity__TetherOutboxState""#, #""index" "_tether_identity__TetherPendingSource""#,
            #""index" "_tether_identity__TetherPendingTarget""#, #""index" "_tether_join_Post.tags""#,
            #""table" "Author""#, #""table" "Post""#, #""table" "Post.tags""#, #""table" "Tag""#,
            #""table" "_TetherOutbox""#, #""table" "_TetherOutboxState""#, #""table" "_TetherPendingReference""#, #""table" "_TetherPendingSource""#, #""table" "_TetherPendingTarget""#,
            #""table" "_tether_records""#, #""table" "_tether_schema""#,
        ])
        let columns = try await store.readSQL { db in
            try db.rows(#"PRAGMA table_info("Post")"#).map { "\($0["name"]!) \($0["type"]!)" }
        }
        #expect(columns == [#""rowid" "INTEGER""#, #""id" "INTEGER""#, #""title" "TEXT""#, #""published" "REAL""#, #""author" "INTEGER""#])
        let journal = try await store.readSQL { try $0.rows("PRAGMA journal_mode").first?["journal_mode"] }
        #expect(journal == .string("wal"))
        // Plain SQL reads the data: the foreign key holds the author's rowid, the join table the order.
        let rows = try await store.readSQL { db in
            try db.rows(#"SELECT a."name" AS author, p."title" AS title FROM "Post" p JOIN "Author" a ON a."rowid" = p."author" WHERE a."id" = ? ORDER BY p."id""#, [.int(7)])
        }
        #expect(rows.map { $0["title"] } == [.string("Hello"), .string("Again")])
    }

    @Test func sqlEscapeHatchBindsArguments() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path())
        _ = try await client(store).import(Data(Self.payload.utf8), as: "Post")
        let posts = try await store.fetch("Post", sql: #"SELECT * FROM "Post" WHERE "title" = ? OR "id" > ? ORDER BY "id""#,
                                          arguments: [.string("Hello"), .int(2)])
        #expect(posts.map { $0["id"] } == [.int(1), .int(3)])
        #expect(posts[0]["published", as: Date.self] != nil)
        let hostile = try await store.fetch("Post", sql: #"SELECT * FROM "Post" WHERE "title" = ?"#, arguments: [.string("x' OR 1=1 --")])
        #expect(hostile.isEmpty)
        try await store.writeSQL { db in try db.execute(#"UPDATE "Post" SET "title" = ? WHERE "id" = ?"#, [.string("Changed"), .int(3)]) }
        #expect(try await store.fetch("Post", sql: #"SELECT "rowid", "title" FROM "Post" WHERE "id" = 3"#).first?["title"] == .string("Changed"))
        await #expect(throws: StoreError.self) { try await store.readSQL { try $0.execute(#"DELETE FROM "Post""#) } }
        await #expect(throws: StoreError.self) { try await store.fetch("Post", sql: #"SELECT "title" FROM "Post""#) }
        await #expect(throws: StoreError.self) { try await store.readSQL { try $0.rows("SELECT 1; SELECT 2") } }
        #expect(try await store.readSQL { try $0.rows(#"SELECT count(*) AS n FROM "Post""#) } == [["n": .int(3)]])
    }

    @Test func identifiersAreQuotedAndValuesBound() async throws {
        let schema = try Schema {
            Entity(#"Weird "Entity"; DROP TABLE x; --"#, identity: "select") {
                Attribute("select", .string)
                Attribute(#"a"b"#, .int64)
                Attribute("order by", .string)
            }
        }
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path())
        try store.prepare(for: schema)
        let entity = schema.entities[0].name
        try await store.write { writer in
            for (i, name) in [#"'); DROP TABLE "x"; --"#, "plain", #"""""#].enumerated() {
                try writer.insert(entity, values: ["select": .string(name), #"a"b"#: .int(Int64(i)), "order by": .string("%_\\")])
            }
        }
        let found = try await store.read { reader in
            try reader.fetch(Query(entity, where: .hasPrefix("select", "'") || .contains("order by", "%_"), sortedBy: [.descending(#"a"b"#)]))
        }
        #expect(found.map { $0["select"] } == [.string(#"""""#), .string("plain"), .string(#"'); DROP TABLE "x"; --"#)])
        let byIdentity = try await store.read { try $0.objects(entity, identities: [IdentityKey(.string("plain"))]) }
        #expect(byIdentity.count == 1)
        // LIKE wildcards mean nothing to hasPrefix and contains.
        #expect(try await store.read { try $0.count(Query(entity, where: .contains("select", "%"))) } == 0)
    }

    /// Authors with favorite posts, without an inverse: the first version of the migration tests.
    static let authorsWithFavorites = try! Schema {
        Entity("Author", identity: "id") {
            Attribute("id", .int64)
            Relationship.toMany("favorites", "Post")
        }
        Entity("Post", identity: "id") { Attribute("id", .int64) }
    }

    @Test func additiveMigrationKeepsData() async throws {
        let directory = try TemporaryDirectory()
        let v1 = Self.authorsWithFavorites
        let (author, post) = try await {
            let store = try SQLiteStore(path: directory.path())
            try store.prepare(for: v1)
            return try await store.write { writer in
                let author = try writer.insert("Author", values: ["id": .int(1)]).id
                let post = try writer.insert("Post", values: ["id": .int(10)]).id
                try writer.setRelated("favorites", of: author, to: [post])
                return (author, post)
            }
        }()
        let v2 = try Schema {
            Entity("Author", identity: "id") {
                Attribute("id", .int64)
                Attribute("name", .string)  // new attribute
                Relationship.toMany("favorites", "Post", inverse: "fans")
                Relationship.toOne("team", "Team", inverse: "members")  // new relationship
            }
            Entity("Post", identity: "id") {
                Attribute("id", .int64)
                Relationship.toMany("fans", "Author", inverse: "favorites")  // new inverse of an existing relationship
            }
            Entity("Team", identity: "id") {  // new entity
                Attribute("id", .int64)
                Relationship.toMany("members", "Author", inverse: "team")
            }
        }
        let store = try SQLiteStore(path: directory.path())
        try store.prepare(for: v2)
        try await store.write { writer in
            try writer.update(author, setting: ["name": .string("Ada")], clearing: [])
            let team = try writer.insert("Team", values: ["id": .int(5)]).id
            try writer.setRelated("members", of: team, to: [author])
        }
        #expect(try await store.read { try $0.object(author) }?.values == ["id": .int(1), "name": .string("Ada")])
        #expect(try await store.read { try $0.related("fans", of: post) } == [author])
        #expect(try await store.read { try $0.related("team", of: author) }.count == 1)
        // Dropping an entity, an attribute and a relationship keeps them in the file (retired), and
        // adding them back finds them again. (Dropping an inverse is an incompatible change.)
        let v3 = try Schema {
            Entity("Author", identity: "id") {
                Attribute("id", .int64)
                Relationship.toMany("favorites", "Post", inverse: "fans")
            }
            Entity("Post", identity: "id") {
                Attribute("id", .int64)
                Relationship.toMany("fans", "Author", inverse: "favorites")
            }
        }
        try store.prepare(for: v3)
        #expect(try await store.read { try $0.object(author) }?.values == ["id": .int(1)])
        try await store.write { try $0.delete(post) }
        #expect(throws: StoreError.self) { try store.prepare(for: v1) }
        try store.prepare(for: v2)
        #expect(try await store.read { try $0.related("team", of: author) }.count == 1)
        #expect(try await store.read { try $0.object(author) }?["name"] == .string("Ada"))
    }

    /// A relationship without an inverse gains an ordered one: its join table is rebuilt keyed by
    /// the new ordered side, each target's links in the order of their sources' rows, and both
    /// sides read and write as before.
    @Test func anOrderedInverseAddedLaterRebuildsTheJoinTable() async throws {
        let directory = try TemporaryDirectory()
        let v1 = Self.authorsWithFavorites
        let (authors, posts) = try await {
            let store = try SQLiteStore(path: directory.path())
            try store.prepare(for: v1)
            return try await store.write { writer in
                let authors = try (1...3).map { try writer.insert("Author", values: ["id": .int($0)]).id }
                let posts = try (10...11).map { try writer.insert("Post", values: ["id": .int($0)]).id }
                try writer.setRelated("favorites", of: authors[2], to: [posts[1], posts[0]])
                try writer.setRelated("favorites", of: authors[0], to: [posts[0]])
                try writer.setRelated("favorites", of: authors[1], to: [posts[0], posts[1]])
                return (authors, posts)
            }
        }()
        let v2 = try Schema {
            Entity("Author", identity: "id") {
                Attribute("id", .int64)
                Relationship.toMany("favorites", "Post", inverse: "fans")
            }
            Entity("Post", identity: "id") {
                Attribute("id", .int64)
                Relationship.toMany("fans", "Author", inverse: "favorites", ordered: true)
            }
        }
        let store = try SQLiteStore(path: directory.path())
        try store.prepare(for: v2)
        let table = try await store.readSQL { db in
            try db.rows(#"SELECT sql FROM sqlite_master WHERE name = 'Author.favorites'"#).first?["sql"]
        }
        #expect(table == .string(#"CREATE TABLE "Author.favorites" ("a" INTEGER NOT NULL, "b" INTEGER NOT NULL, "a_pos" INTEGER NOT NULL, "b_pos" INTEGER NOT NULL, PRIMARY KEY ("b", "b_pos")) WITHOUT ROWID"#))
        #expect(try await store.read { try $0.related("fans", of: [posts[0]]) } == [posts[0]: authors])
        #expect(try await store.read { try $0.related("fans", of: [posts[1]]) } == [posts[1]: [authors[1], authors[2]]])
        try await store.write { writer in
            try writer.setRelated("fans", of: posts[0], to: [authors[2], authors[0]])
            try writer.setRelated("favorites", of: authors[0], to: [posts[0], posts[1]])
        }
        let fans = try await store.read { try $0.related("fans", of: posts) }
        #expect(fans == [posts[0]: [authors[2], authors[0]], posts[1]: [authors[1], authors[2], authors[0]]])
        let favorites = try await store.read { try $0.related("favorites", of: authors) }
        #expect(favorites.mapValues(Set.init) == [authors[0]: [posts[0], posts[1]], authors[1]: [posts[1]], authors[2]: [posts[1], posts[0]]])
    }

    @Test(arguments: ["type", "identity", "kind", "destination", "inverse"])
    func incompatibleChangeIsAClearErrorAndLeavesTheFileUntouched(_ change: String) async throws {
        let directory = try TemporaryDirectory()
        do {
            let store = try SQLiteStore(path: directory.path())
            _ = try await client(store).import(Data(Self.payload.utf8), as: "Post")
            store.close()
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: directory.path()))
        var entities = Self.schema.entities
        let member: String
        switch change {
        case "type":
            entities[1].attributes[1] = Attribute("title", .int64)
            member = "title"
        case "identity":
            entities[1].identity = ["title"]
            member = "identity"
        case "kind":
            entities[1].relationships[1] = .toMany("tags", "Tag", inverse: "posts", ordered: false)
            member = "tags"
        case "destination":
            entities[0].relationships[0] = .toMany("posts", "Tag")
            entities[1].relationships[0] = .toOne("author", "Author")
            member = "posts"
        default:
            entities[1].relationships[0] = .toOne("author", "Author")
            entities[0].relationships[0] = .toMany("posts", "Post")
            member = "author"
        }
        let changed = try Schema(entities)
        let store = try SQLiteStore(path: directory.path())
        do {
            try store.prepare(for: changed)
            Issue.record("preparing with a changed \(change) succeeded")
        } catch let error as StoreError {
            #expect(error.kind == .incompatibleSchema)
            #expect(error.message.contains(member), "\(error.message)")
            #expect(error.message.contains("untouched"))
        }
        store.close()
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.path())) == before)
        let reopened = try SQLiteStore(path: directory.path())
        #expect(try await client(reopened).count(Query("Post")) == 3)
    }

    @Test func readOnlyFileGivesAClearErrorAndStaysUsable() async throws {
        let directory = try TemporaryDirectory()
        do {
            let store = try SQLiteStore(path: directory.path())
            _ = try await client(store).import(Data(Self.payload.utf8), as: "Post")
            store.close()
        }
        let store = try SQLiteStore(path: directory.path(), readOnly: true)
        let client = try client(store)
        do {
            _ = try await client.import(Data(#"{"id": 4, "title": "New"}"#.utf8), as: "Post")
            Issue.record("writing to a read-only database succeeded")
        } catch let error as StoreError {
            #expect(error.kind == .storage)
            #expect(error.message.contains("read-only"), "\(error.message)")
        }
        #expect(try await client.count(Query("Post")) == 3)
        // A schema that needs new tables cannot be applied to a read-only file.
        var entities = Self.schema.entities
        entities.append(Entity("Extra", identity: ["id"], attributes: [Attribute("id", .int64)]))
        #expect(throws: StoreError.self) { try store.prepare(for: try Schema(entities)) }
        #expect(try await client.count(Query("Post")) == 3)
    }

    @Test func pageCacheSizeAppliesToBothConnections() async throws {
        let directory = try TemporaryDirectory()
        let standard = try SQLiteStore(path: directory.path())
        #expect(try standard.cacheSizePragmas() == (-65536, -65536))  // 64 MiB, in KiB
        standard.close()
        // A tiny cache still imports and reads everything.
        let tiny = try SQLiteStore(path: directory.path(), cacheSize: 4096)
        #expect(try tiny.cacheSizePragmas() == (-4, -4))
        let client = try client(tiny)
        _ = try await client.import(Data(Self.payload.utf8), as: "Post")
        #expect(try await client.count(Query("Post")) == 3)
    }

    @Test func lockedDatabaseGivesAClearErrorAndStaysUsable() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path(), busyTimeout: .milliseconds(50))
        let client = try client(store)
        _ = try await client.import(Data(Self.payload.utf8), as: "Post")
        var other: OpaquePointer?
        #expect(sqlite3_open(directory.path(), &other) == SQLITE_OK)
        defer { sqlite3_close(other) }
        #expect(sqlite3_exec(other, "BEGIN EXCLUSIVE", nil, nil, nil) == SQLITE_OK)
        do {
            _ = try await client.import(Data(#"{"id": 4, "title": "New"}"#.utf8), as: "Post")
            Issue.record("writing to a locked database succeeded")
        } catch let error as StoreError {
            #expect(error.kind == .storage)
            #expect(error.message.contains("locked"), "\(error.message)")
        }
        #expect(try await client.count(Query("Post")) == 3)  // WAL: reads go on
        #expect(sqlite3_exec(other, "COMMIT", nil, nil, nil) == SQLITE_OK)
        _ = try await client.import(Data(#"{"id": 4, "title": "New"}"#.utf8), as: "Post")
        #expect(try await client.count(Query("Post")) == 4)
    }

    @Test func fullDiskGivesAClearErrorAndStaysUsable() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path())
        let client = try client(store)
        _ = try await client.import(Data(Self.payload.utf8), as: "Post")
        let pages = try await store.readSQL { try $0.rows("PRAGMA page_count").first?["page_count"] }
        guard case .int(let count)? = pages else { Issue.record("no page count"); return }
        try await store.writeSQL { try $0.execute("PRAGMA max_page_count = \(count + 2)") }
        let big = (0..<500).map { #"{"id": \#(100 + $0), "title": "\#(String(repeating: "x", count: 2000))"}"# }
        do {
            _ = try await client.import(Data(("[" + big.joined(separator: ",") + "]").utf8), as: "Post")
            Issue.record("an import larger than the database limit succeeded")
        } catch let error as StoreError {
            #expect(error.kind == .storage)
            #expect(error.message.contains("full"), "\(error.message)")
        }
        #expect(try await client.count(Query("Post")) == 3)
        _ = try await client.import(Data(#"{"id": 4, "title": "Small"}"#.utf8), as: "Post")
        #expect(try await client.count(Query("Post")) == 4)
        try await store.writeSQL { try $0.execute("PRAGMA max_page_count = 1073741823") }
        _ = try await client.import(Data(("[" + big.joined(separator: ",") + "]").utf8), as: "Post")
        #expect(try await client.count(Query("Post")) == 504)
    }

    @Test func closedStoreThrows() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path())
        try store.prepare(for: Self.schema)
        store.close()
        await #expect(throws: StoreError.self) { try await store.read { try $0.count(Query("Post")) } }
        await #expect(throws: StoreError.self) { try await store.write { try $0.insert("Post", values: [:]) } }
    }

    @Test func unopenableFileIsAStorageError() throws {
        let directory = try TemporaryDirectory()
        #expect(throws: StoreError.self) { try SQLiteStore(path: directory.path("missing/dir/store.sqlite")) }
        try Data("this is not a database, just some text that is long enough to be a header....".utf8)
            .write(to: URL(fileURLWithPath: directory.path("garbage.sqlite")))
        #expect(throws: StoreError.self) {
            let store = try SQLiteStore(path: directory.path("garbage.sqlite"))
            try store.prepare(for: Self.schema)
        }
    }
}

extension ISO8601DateFormatter {
    static var fractional: ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }
}

/// What the server last confirmed survives a restart: a save after reopening the file sends only
/// what changed before it was closed (issue 20).
@Suite struct RemoteRecordFileTests {
    static let schema = try! Schema {
        Entity("Note") {
            Attribute("id", .int64)
            Attribute("title", .string)
            Attribute("body", .string)
        }
    }

    static func client(_ store: SQLiteStore, _ stub: StubTransport) throws -> Client {
        try Client.Builder(schema: schema).store(store).transport(stub).baseURL(URL(string: "https://notes.test")!).resource("/notes", for: "Note").build()
    }

    @Test func pendingChangesAndETagsSurviveARestart() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path()
        let stub = StubTransport()
        stub.on(.get, "/notes/1", headers: ["ETag": "\"v1\""], json: ["id": 1, "title": "First", "body": "hello"])
        stub.on(.patch, "/notes/1", headers: ["ETag": "\"v2\""], json: ["id": 1, "title": "Mine", "body": "hello"])
        do {
            let store = try SQLiteStore(path: path)
            let client = try Self.client(store, stub)
            let note = try await client.fetchObject("Note", at: "/notes/:id", values: ["id": .int(1)])
            try await client.updateLocally(note.id, setting: ["title": .string("Mine")])
            store.close()
        }
        let store = try SQLiteStore(path: path)
        let client = try Self.client(store, stub)
        let note = try #require(try await client.object("Note", identity: .int(1)))
        _ = try await client.save(note.id)
        let patch = try #require(stub.requests(.patch).first)
        #expect(try JSON(parsing: try #require(patch.body)) == .object(["title": "Mine"]))
        #expect(patch.headers["If-Match"] == "\"v1\"")
        store.close()
    }
}
