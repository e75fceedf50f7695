import Foundation
import Tether
import TetherSQLite

/// Tether's side of the benchmark: the workload's schema, the client, and the stores to compare.
enum TetherImport {
    static let schema: Schema = {
        do {
            return try Schema {
                Entity("Repository", identity: "id") {
                    Attribute("id", .int64)
                    Attribute("name", .string)
                    Attribute("fullName", .string)
                    Attribute("repositoryDescription", .string)
                    Attribute("isPrivate", .bool)
                    Attribute("isFork", .bool)
                    Attribute("htmlURL", .string)
                    Attribute("cloneURL", .string)
                    Attribute("createdAt", .date)
                    Attribute("updatedAt", .date)
                    Attribute("pushedAt", .date)
                    Attribute("forksCount", .int64)
                    Attribute("watchersCount", .int64)
                    Attribute("size", .int64)
                    Attribute("language", .string)
                    Attribute("openIssues", .int64)
                    Relationship.toOne("owner", "User", inverse: "repositories")
                }
                Entity("User", identity: "id") {
                    Attribute("id", .int64)
                    Attribute("login", .string)
                    Attribute("avatarURL", .string)
                    Attribute("gravatarID", .string)
                    Attribute("url", .string)
                    Attribute("type", .string)
                    Attribute("siteAdmin", .bool)
                    Relationship.toMany("repositories", "Repository", inverse: "owner")
                }
            }
        } catch {
            fatalError("the benchmark schema is invalid: \(error)")
        }
    }()

    /// The snake_case keys of the workload, spelled out (the Rails naming strategy would derive them).
    static let keys = KeyOverrides([
        "Repository": [
            "fullName": "full_name", "repositoryDescription": "description", "isPrivate": "private",
            "isFork": "fork", "htmlURL": "html_url", "cloneURL": "clone_url", "createdAt": "created_at",
            "updatedAt": "updated_at", "pushedAt": "pushed_at", "forksCount": "forks_count",
            "watchersCount": "watchers_count", "openIssues": "open_issues",
        ],
        "User": ["avatarURL": "avatar_url", "gravatarID": "gravatar_id", "siteAdmin": "site_admin"],
    ])

    static func client(store: any Store) throws -> Client {
        try Client.Builder(schema: schema)
            .keyMapping(keys)
            .store(store)
            .build()
    }

    /// Imports `data` (in memory) as repositories and returns what the import did.
    static func importRepositories(_ data: Data, into client: Client, deletingMissing: Bool = false) async throws -> ImportResult {
        try check(await client.import(data, as: "Repository", options: deletingMissing ? ImportOptions(deleteMissing: .all) : nil))
    }

    /// Imports the file at `path` as repositories, streaming it `batchSize` elements at a time.
    static func importRepositories(file path: String, batchSize: Int, into client: Client) async throws -> ImportResult {
        try check(await client.import(
            contentsOf: URL(fileURLWithPath: path), as: "Repository", options: ImportOptions(batchSize: batchSize)))
    }

    private static func check(_ result: ImportResult) throws -> ImportResult {
        if let first = result.diagnostics.first {
            throw BenchmarkError("Tether reported \(result.diagnostics.count) diagnostics, first: \(first)")
        }
        return result
    }
}

struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
