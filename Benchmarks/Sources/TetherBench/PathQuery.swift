import Foundation
import Tether
import TetherSQLite

#if canImport(SQLite3)
import SQLite3
#else
import BenchSQLite3
#endif

/// A condition through two to-one relationships (issue 41): the issues whose repository's owner
/// has a given login, among N issues (N/10 repositories, 1,000 users, so about N/1,000 issues
/// match), stored by Tether in a `SQLiteStore` file. Tether's query by name
/// (`"repository.owner.login"`) and typed by key path (`\.repository?.owner?.login`, depth 0)
/// against the same query written by hand in SQL with two joins over the same file and its
/// indexes, reading the same columns into structs, in one process, the passes alternating round
/// by round.
enum PathQuery {
    /// The passes, in the order of the even rounds (odd rounds run them backwards).
    static let passes = ["Tether by name", "Tether key path", "hand-written join"]
    static let userCount = 1_000

    struct User: EntityModel {
        var id: Int64
        var login: String
        var repositories: [Repository] = []
    }

    struct Repository: EntityModel {
        var id: Int64
        var fullName: String
        var owner: User?
        var issues: [Issue] = []
    }

    struct Issue: EntityModel {
        var id: Int64
        var number: Int64
        var title: String
        var state: String
        var repository: Repository?
    }

    /// What the hand-written query reads of a row.
    struct IssueRow {
        var id: Int64
        var number: Int64
        var title: String
        var state: String
    }

    struct Databases {
        let client: Client
        let sql: SQLiteDatabase
        let directory: TemporaryDirectory
        let login: String
        let expected: Int
    }

    static func login(_ user: Int) -> String { "user-\(user)" }

    /// Imports the users, repositories and issues (issue i in repository i·7919 mod R, repository
    /// r owned by user r mod 1,000), and opens a second connection for the hand-written SQL.
    static func prepare(count: Int) async throws -> Databases {
        let directory = try TemporaryDirectory()
        let path = directory.file("tether.sqlite")
        let store = try SQLiteStore(path: path)
        let client = try Client.Builder(models: [User.self, Repository.self, Issue.self]).store(store).build()
        let repositories = max(1, count / 10)
        func json(_ count: Int, _ element: (Int) -> String) -> Data {
            var text = "["
            text.reserveCapacity(count * 80)
            for i in 0..<count {
                if i > 0 { text += "," }
                text += element(i)
            }
            return Data((text + "]").utf8)
        }
        _ = try await client.import(json(userCount) { #"{"id":\#($0),"login":"\#(login($0))"}"# }, as: "User")
        _ = try await client.import(json(repositories) { #"{"id":\#($0),"fullName":"org/repo-\#($0)","owner":{"id":\#($0 % userCount)}}"# },
                                    as: "Repository")
        var expected = 0
        let wanted = 7
        _ = try await client.import(json(count) { i in
            let repository = (i * 7919) % repositories
            if repository % userCount == wanted { expected += 1 }
            return #"{"id":\#(i),"number":\#(i + 1),"title":"Issue \#(i)","state":"\#(i % 3 == 0 ? "closed" : "open")","repository":{"id":\#(repository)}}"#
        }, as: "Issue")
        await store.checkpoint()
        return Databases(client: client, sql: try SQLiteDatabase(path: path), directory: directory, login: login(wanted), expected: expected)
    }

    /// The hand-written query: two inner joins on the foreign key columns, the login bound.
    static func handWritten(_ sql: SQLiteDatabase, login: String) throws -> [IssueRow] {
        let statement = try sql.prepare("""
            SELECT i."id", i."number", i."title", i."state" FROM "Issue" i
            JOIN "Repository" r ON r."rowid" = i."repository"
            JOIN "User" u ON u."rowid" = r."owner"
            WHERE u."login" = ?
            """)
        statement.bind(1, login)
        var rows: [IssueRow] = []
        while sqlite3_step(statement.handle) == SQLITE_ROW {
            let h = statement.handle
            rows.append(IssueRow(id: sqlite3_column_int64(h, 0), number: sqlite3_column_int64(h, 1),
                                 title: String(cString: sqlite3_column_text(h, 2)), state: String(cString: sqlite3_column_text(h, 3))))
        }
        return rows
    }

    /// Checks that the three read the same issues (not timed).
    static func verify(_ databases: Databases) async throws {
        let byName = try await databases.client.fetch(Query("Issue", where: .equal("repository.owner.login", .string(databases.login))))
        let typed = try await databases.client.fetch(Issue.self, where: .equal(\.repository?.owner?.login, databases.login), depth: 0)
        let rows = try handWritten(databases.sql, login: databases.login)
        let ids = Set(rows.map(\.id))
        guard rows.count == databases.expected, byName.count == databases.expected, typed.count == databases.expected,
              Set(typed.map(\.id)) == ids, Set(byName.compactMap { $0["id", as: Int64.self] }) == ids
        else {
            throw BenchmarkError("the path query read \(byName.count) issues (typed \(typed.count)), the join \(rows.count), expected \(databases.expected)")
        }
    }

    /// Runs one pass, timed into `row`; checks how many issues it read.
    static func run(_ pass: String, _ databases: Databases, into row: inout Measurement) async throws {
        let client = databases.client, login = databases.login
        let read: Int
        switch pass {
        case "Tether by name":
            read = try await row.time { try await client.fetch(Query("Issue", where: .equal("repository.owner.login", .string(login)))) }.count
        case "Tether key path":
            read = try await row.time { try await client.fetch(Issue.self, where: .equal(\.repository?.owner?.login, login), depth: 0) }.count
        case "hand-written join":
            read = try row.time { try handWritten(databases.sql, login: login) }.count
        default:
            throw BenchmarkError("unknown path-query pass \(pass)")
        }
        guard read == databases.expected else { throw BenchmarkError("\(pass) read \(read) issues, expected \(databases.expected)") }
    }
}
