import Foundation
import Testing
import Tether
@testable import TetherSQLite

/// What an import remembers for the next (the nested objects it stored) on a SQLite file: not
/// read again while nothing commits in between, and trusted no more once anything has, through
/// this store or another connection to the same file.
@Suite struct RememberedObjectsSQLiteTests {
    static let schema = try! Schema {
        Entity("User", identity: "id") {
            Attribute("id", .int64)
            Attribute("login", .string)
            Relationship.toMany("repositories", "Repository", inverse: "owner")
        }
        Entity("Repository", identity: "id") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Relationship.toOne("owner", "User", inverse: "repositories")
        }
    }

    /// Two repositories owned by user 1 with this login.
    static func page(_ login: String) -> Data {
        Data(#"[{"id": 10, "name": "a", "owner": {"id": 1, "login": "\#(login)"}}, {"id": 11, "name": "b", "owner": {"id": 1, "login": "\#(login)"}}]"#.utf8)
    }

    func client(_ store: SQLiteStore) throws -> Client {
        try Client.Builder(schema: Self.schema).store(store).build()
    }

    /// The statements that read the users' table since the meter was started.
    func userReads(_ store: SQLiteStore) -> Int {
        store.meteredStatements { $0.hasPrefix("SELECT") && $0.contains("\"User\"") }
    }

    func login(_ client: Client) async throws -> Value? {
        try await client.object("User", identity: .int(1))?["login"]
    }

    @Test func theSamePageAgainReadsNoUser() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path())
        let client = try client(store)
        store.meterWrites(true)
        defer { store.meterWrites(false) }
        _ = try await client.import(Self.page("a"), as: "Repository")
        let first = userReads(store)
        #expect(first > 0)
        let again = try await client.import(Self.page("a"), as: "Repository")
        #expect(again.unchanged.count == 3)
        #expect(userReads(store) == first)
        #expect(try await login(client) == .string("a"))
    }

    /// A commit by another connection to the file (another store, or another process) changes
    /// the file's data version: the next import looks the owner up and applies it again.
    @Test func aCommitByAnotherConnectionIsNotTrusted() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path())
        let client = try client(store)
        _ = try await client.import(Self.page("a"), as: "Repository")
        let other = try SQLiteStore(path: directory.path())
        try other.prepare(for: Self.schema)
        try await other.writeSQL { try $0.execute(#"UPDATE "User" SET "login" = 'x'"#) }
        #expect(try await login(client) == .string("x"))
        _ = try await client.import(Self.page("a"), as: "Repository")
        #expect(try await login(client) == .string("a"))
    }

    /// SQL of the app's through this store counts as a commit like any other.
    @Test func sqlOfTheAppsBetweenImportsIsNotTrusted() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path())
        let client = try client(store)
        _ = try await client.import(Self.page("a"), as: "Repository")
        try await store.writeSQL { try $0.execute(#"DELETE FROM "User""#) }
        _ = try await client.import(Self.page("a"), as: "Repository")
        #expect(try await login(client) == .string("a"))
        let owner = try #require(try await client.object("User", identity: .int(1))).id
        for repository in try await client.fetch(Query("Repository")) {
            #expect(try await client.related("owner", of: repository.id).map(\.id) == [owner])
        }
    }

    /// A migration (the file prepared for another schema) counts as a commit.
    @Test func aMigrationIsNotTrusted() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path())
        let client = try client(store)
        _ = try await client.import(Self.page("a"), as: "Repository")
        let before = try await store.writeSQL { $0.version }
        try store.prepare(for: Self.schema)
        let after = try await store.writeSQL { $0.version }
        #expect(after != before?.next)
    }
}
