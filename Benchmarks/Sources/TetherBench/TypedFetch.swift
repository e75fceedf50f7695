import Foundation
import GRDB
import Tether
import TetherSQLite

/// Typed fetches against GRDB (issue 22): the N repositories of the workload, stored by Tether in
/// a `SQLiteStore` file and the same rows in a GRDB database beside it, read back as `Object`s, as
/// Tether's typed models (depth 0: attributes; depth 1: with their owners) and as GRDB `Decodable`
/// records (`fetchAll`; with `including(optional:)` for the owners), in one process, the passes
/// alternating round by round.
enum TypedFetch {
    /// The passes, in the order of the even rounds (odd rounds run them backwards).
    static let passes = ["Objects", "typed depth 0", "GRDB depth 0", "typed depth 1", "GRDB depth 1"]

    /// The typed model of a stored repository: 10 of the entity's 16 attributes (a model may be
    /// a partial view of an entity declared by hand) and its owner.
    struct Repository: EntityModel, Equatable {
        static var entityName: String { "Repository" }
        var id: Int64
        var name: String
        var fullName: String
        var repositoryDescription: String?
        var isPrivate: Bool
        var isFork: Bool
        var createdAt: Date
        var updatedAt: Date
        var watchersCount: Int
        var language: String?
        var owner: User?
    }

    struct User: EntityModel, Equatable {
        static var entityName: String { "User" }
        var id: Int64
        var login: String
        var avatarURL: String
        var type: String
        var siteAdmin: Bool
    }

    /// The same struct as GRDB reads it: `Decodable` and `FetchableRecord`, the owner decoded from
    /// the `owner` association's scope when the request includes it (nil otherwise). Dates are
    /// stored as Tether stores them (REAL seconds since 2001) and declared so.
    struct GRDBRepository: Decodable, FetchableRecord, TableRecord, Equatable, Sendable {
        static let databaseTableName = "repository"
        static let owner = belongsTo(GRDBUser.self, key: "owner")
        static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy {
            .timeIntervalSinceReferenceDate
        }

        var id: Int64
        var name: String
        var fullName: String
        var repositoryDescription: String?
        var isPrivate: Bool
        var isFork: Bool
        var createdAt: Date
        var updatedAt: Date
        var watchersCount: Int
        var language: String?
        var owner: GRDBUser?
    }

    struct GRDBUser: Decodable, FetchableRecord, TableRecord, Equatable, Sendable {
        static let databaseTableName = "user"
        var id: Int64
        var login: String
        var avatarURL: String
        var type: String
        var siteAdmin: Bool
    }

    /// The two databases, filled with the same rows.
    struct Databases {
        let client: Client
        let store: SQLiteStore
        let grdb: DatabasePool
        let directory: TemporaryDirectory
    }

    /// Imports `payload` into a Tether `SQLiteStore`, then copies the stored rows (all 16
    /// attributes of each repository, its owner, every user) into a GRDB database of equivalent
    /// tables with the same page cache size (64 MiB, `SQLiteStore.defaultCacheSize`).
    static func prepare(payload: Data, count: Int) async throws -> Databases {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.file("tether.sqlite"))
        let client = try TetherImport.client(store: store)
        _ = try await TetherImport.importRepositories(payload, into: client)
        await store.checkpoint()

        let repositories = try await client.fetch(Query("Repository"))
        let users = try await client.fetch(Query("User"))
        let ids = repositories.map(\.id)
        let owners = try await store.read { try $0.related("owner", of: ids) }
        guard repositories.count == count else { throw BenchmarkError("Tether stored \(repositories.count) repositories, expected \(count)") }

        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA cache_size = -\(SQLiteStore.defaultCacheSize / 1024)")
        }
        let grdb = try DatabasePool(path: directory.file("grdb.sqlite"), configuration: configuration)
        let repositoryAttributes = TetherImport.schema["Repository"]!.attributes.map(\.name)
        let userAttributes = TetherImport.schema["User"]!.attributes.map(\.name)
        try await grdb.write { db in
            try db.execute(sql: """
                CREATE TABLE "user" (
                    "id" INTEGER PRIMARY KEY, "login" TEXT, "avatarURL" TEXT, "gravatarID" TEXT, "url" TEXT,
                    "type" TEXT, "siteAdmin" INTEGER);
                CREATE TABLE "repository" (
                    "id" INTEGER PRIMARY KEY, "name" TEXT, "fullName" TEXT, "repositoryDescription" TEXT,
                    "isPrivate" INTEGER, "isFork" INTEGER, "htmlURL" TEXT, "cloneURL" TEXT, "createdAt" REAL,
                    "updatedAt" REAL, "pushedAt" REAL, "forksCount" INTEGER, "watchersCount" INTEGER, "size" INTEGER,
                    "language" TEXT, "openIssues" INTEGER, "ownerId" INTEGER REFERENCES "user"("id"));
                CREATE INDEX "repository_ownerId" ON "repository"("ownerId");
                """)
            let insertUser = try db.cachedStatement(sql: """
                INSERT INTO "user" (\(userAttributes.map { "\"\($0)\"" }.joined(separator: ", ")))
                VALUES (\(Array(repeating: "?", count: userAttributes.count).joined(separator: ", ")))
                """)
            var identity: [ObjectID: Int64] = [:]
            for user in users {
                identity[user.id] = user["id", as: Int64.self]
                let values: [(any DatabaseValueConvertible)?] = userAttributes.map { databaseValue(user[$0]) }
                try insertUser.execute(arguments: StatementArguments(values))
            }
            let insertRepository = try db.cachedStatement(sql: """
                INSERT INTO "repository" (\((repositoryAttributes + ["ownerId"]).map { "\"\($0)\"" }.joined(separator: ", ")))
                VALUES (\(Array(repeating: "?", count: repositoryAttributes.count + 1).joined(separator: ", ")))
                """)
            for repository in repositories {
                let owner = owners[repository.id]?.first.flatMap { identity[$0] }
                let values: [(any DatabaseValueConvertible)?] = repositoryAttributes.map { databaseValue(repository[$0]) } + [owner]
                try insertRepository.execute(arguments: StatementArguments(values))
            }
        }
        return Databases(client: client, store: store, grdb: grdb, directory: directory)
    }

    /// A stored value as GRDB binds it, in the column Tether's SQLite store gives it.
    private static func databaseValue(_ value: Value?) -> (any DatabaseValueConvertible)? {
        switch value {
        case nil: nil
        case .string(let v)?: v
        case .int(let v)?: v
        case .bool(let v)?: v
        case .double(let v)?: v
        case .date(let v)?: v.timeIntervalSinceReferenceDate
        case let other?: other.description
        }
    }

    /// Checks that both libraries read the same repositories and owners (not timed).
    static func verify(_ databases: Databases, count: Int) async throws {
        let typed = try await databases.client.fetch(Repository.self, depth: 1)
        let grdb = try await databases.grdb.read { db in
            try GRDBRepository.including(optional: GRDBRepository.owner).fetchAll(db)
        }
        guard typed.count == count, grdb.count == count else {
            throw BenchmarkError("typed fetch read \(typed.count) repositories, GRDB \(grdb.count), expected \(count)")
        }
        let converted = grdb.map { r in
            Repository(
                id: r.id, name: r.name, fullName: r.fullName, repositoryDescription: r.repositoryDescription,
                isPrivate: r.isPrivate, isFork: r.isFork, createdAt: r.createdAt, updatedAt: r.updatedAt,
                watchersCount: r.watchersCount, language: r.language,
                owner: r.owner.map { User(id: $0.id, login: $0.login, avatarURL: $0.avatarURL, type: $0.type, siteAdmin: $0.siteAdmin) })
        }
        let byID = Dictionary(uniqueKeysWithValues: converted.map { ($0.id, $0) })
        for model in typed where byID[model.id] != model {
            throw BenchmarkError("Tether and GRDB read \(model.id) differently: \(model) against \(String(describing: byID[model.id]))")
        }
        if typed.contains(where: { $0.owner == nil }) { throw BenchmarkError("a typed repository read at depth 1 has no owner") }
    }

    /// Runs one pass, timed into `row`; checks what it read.
    static func run(_ pass: String, _ databases: Databases, count: Int, into row: inout Measurement) async throws {
        let client = databases.client, grdb = databases.grdb
        let (read, withOwners): (Int, Int)
        switch pass {
        case "Objects":
            read = try await row.time { try await client.fetch(Query("Repository")) }.count
            withOwners = 0
        case "typed depth 0", "typed depth 1":
            let depth = pass == "typed depth 0" ? 0 : 1
            let models = try await row.time { try await client.fetch(Repository.self, depth: depth) }
            (read, withOwners) = (models.count, models.count(where: { $0.owner != nil }))
        case "GRDB depth 0":
            let records = try await row.time { try await grdb.read { db in try GRDBRepository.fetchAll(db) } }
            (read, withOwners) = (records.count, records.count(where: { $0.owner != nil }))
        case "GRDB depth 1":
            let records = try await row.time {
                try await grdb.read { db in try GRDBRepository.including(optional: GRDBRepository.owner).fetchAll(db) }
            }
            (read, withOwners) = (records.count, records.count(where: { $0.owner != nil }))
        default:
            throw BenchmarkError("unknown typed-fetch pass \(pass)")
        }
        let expectedOwners = pass.hasSuffix("depth 1") ? count : 0
        guard read == count, withOwners == expectedOwners else {
            throw BenchmarkError("\(pass) read \(read) repositories (\(withOwners) with an owner), expected \(count) (\(expectedOwners))")
        }
    }
}
