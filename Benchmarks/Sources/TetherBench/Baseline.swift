import Foundation

/// The hand-written baseline of issue 6: what a careful Swift developer writes without Tether.
/// `JSONDecoder` (`.convertFromSnakeCase`, ISO 8601 dates) into structs, then prepared SQLite
/// upserts of the distinct owners and of the repositories, in one transaction.
enum Baseline {
    struct Owner: Decodable {
        let login: String
        let id: Int64
        let avatarUrl: String
        let gravatarId: String
        let url: String
        let type: String
        let siteAdmin: Bool
    }

    struct Repository: Decodable {
        let id: Int64
        let name: String
        let fullName: String
        let description: String?
        let `private`: Bool
        let fork: Bool
        let htmlUrl: String
        let cloneUrl: String
        let createdAt: Date
        let updatedAt: Date
        let pushedAt: Date
        let forksCount: Int64
        let watchersCount: Int64
        let size: Int64
        let language: String?
        let openIssues: Int64
        let owner: Owner
    }

    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    /// A database file with the two tables.
    static func createDatabase(at path: String) throws -> SQLiteDatabase {
        let database = try SQLiteDatabase(path: path)
        try database.execute(
            """
            PRAGMA journal_mode = WAL;
            PRAGMA synchronous = NORMAL;
            CREATE TABLE IF NOT EXISTS owners (
                id INTEGER PRIMARY KEY, login TEXT NOT NULL, avatar_url TEXT, gravatar_id TEXT, url TEXT,
                type TEXT, site_admin INTEGER);
            CREATE TABLE IF NOT EXISTS repositories (
                id INTEGER PRIMARY KEY, name TEXT NOT NULL, full_name TEXT, description TEXT, private INTEGER,
                fork INTEGER, html_url TEXT, clone_url TEXT, created_at REAL, updated_at REAL, pushed_at REAL,
                forks_count INTEGER, watchers_count INTEGER, size INTEGER, language TEXT, open_issues INTEGER,
                owner_id INTEGER REFERENCES owners(id));
            """)
        return database
    }

    /// Decodes `data` and upserts it; returns the number of repositories.
    @discardableResult
    static func importRepositories(_ data: Data, into database: SQLiteDatabase, deletingMissing: Bool = false) throws -> Int {
        let repositories = try decoder().decode([Repository].self, from: data)
        try database.execute("BEGIN")
        do {
            let ownerUpsert = try database.prepare(
                """
                INSERT INTO owners (id, login, avatar_url, gravatar_id, url, type, site_admin)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET login = excluded.login, avatar_url = excluded.avatar_url,
                    gravatar_id = excluded.gravatar_id, url = excluded.url, type = excluded.type,
                    site_admin = excluded.site_admin
                """)
            var seenOwners = Set<Int64>()
            for repository in repositories where seenOwners.insert(repository.owner.id).inserted {
                let owner = repository.owner
                ownerUpsert.bind(1, owner.id)
                ownerUpsert.bind(2, owner.login)
                ownerUpsert.bind(3, owner.avatarUrl)
                ownerUpsert.bind(4, owner.gravatarId)
                ownerUpsert.bind(5, owner.url)
                ownerUpsert.bind(6, owner.type)
                ownerUpsert.bind(7, owner.siteAdmin)
                try ownerUpsert.run()
            }
            let repositoryUpsert = try database.prepare(
                """
                INSERT INTO repositories (id, name, full_name, description, private, fork, html_url, clone_url,
                    created_at, updated_at, pushed_at, forks_count, watchers_count, size, language, open_issues,
                    owner_id)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET name = excluded.name, full_name = excluded.full_name,
                    description = excluded.description, private = excluded.private, fork = excluded.fork,
                    html_url = excluded.html_url, clone_url = excluded.clone_url, created_at = excluded.created_at,
                    updated_at = excluded.updated_at, pushed_at = excluded.pushed_at,
                    forks_count = excluded.forks_count, watchers_count = excluded.watchers_count,
                    size = excluded.size, language = excluded.language, open_issues = excluded.open_issues,
                    owner_id = excluded.owner_id
                """)
            for repository in repositories {
                repositoryUpsert.bind(1, repository.id)
                repositoryUpsert.bind(2, repository.name)
                repositoryUpsert.bind(3, repository.fullName)
                repositoryUpsert.bind(4, repository.description)
                repositoryUpsert.bind(5, repository.private)
                repositoryUpsert.bind(6, repository.fork)
                repositoryUpsert.bind(7, repository.htmlUrl)
                repositoryUpsert.bind(8, repository.cloneUrl)
                repositoryUpsert.bind(9, repository.createdAt.timeIntervalSince1970)
                repositoryUpsert.bind(10, repository.updatedAt.timeIntervalSince1970)
                repositoryUpsert.bind(11, repository.pushedAt.timeIntervalSince1970)
                repositoryUpsert.bind(12, repository.forksCount)
                repositoryUpsert.bind(13, repository.watchersCount)
                repositoryUpsert.bind(14, repository.size)
                repositoryUpsert.bind(15, repository.language)
                repositoryUpsert.bind(16, repository.openIssues)
                repositoryUpsert.bind(17, repository.owner.id)
                try repositoryUpsert.run()
            }
            if deletingMissing {
                // The repositories the payload no longer lists: DELETE … WHERE id NOT IN the payload's ids.
                try database.execute("CREATE TEMP TABLE IF NOT EXISTS kept (id INTEGER PRIMARY KEY); DELETE FROM kept")
                let keep = try database.prepare("INSERT OR IGNORE INTO kept (id) VALUES (?)")
                for repository in repositories {
                    keep.bind(1, repository.id)
                    try keep.run()
                }
                try database.execute("DELETE FROM repositories WHERE id NOT IN (SELECT id FROM kept)")
            }
        } catch {
            try? database.execute("ROLLBACK")
            throw error
        }
        try database.execute("COMMIT")
        return repositories.count
    }
}
