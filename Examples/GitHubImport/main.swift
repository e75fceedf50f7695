// GitHubImport: import recorded GitHub issues (with their nested users) into a SQLite file with
// Rails naming conventions, and print the resulting object graph.
//
//     swift run GitHubImport [path/to/issues.json] [path/to/store.sqlite]

import Foundation
import Tether
import TetherRails
import TetherSQLite

let schema = try Schema {
    Entity("User", identity: "identifier") {
        Attribute("identifier", .int64)
        Attribute("login", .string)
        Attribute("avatarURL", .url)
        Attribute("siteAdmin", .bool)
        Relationship.toMany("issues", "Issue", inverse: "user")
    }
    Entity("Issue", identity: "number") {
        Attribute("number", .int64)
        Attribute("title", .string)
        Attribute("state", .string)
        Attribute("comments", .int32)
        Attribute("createdAt", .date)
        Attribute("closedAt", .date)
        Attribute("htmlURL", .url)
        Relationship.toOne("user", "User", inverse: "issues")
    }
}

// The store file: a fresh one in the temporary directory unless a path is given.
let storePath = CommandLine.arguments.count > 2
    ? CommandLine.arguments[2]
    : FileManager.default.temporaryDirectory.appendingPathComponent("github-import-\(UUID().uuidString).sqlite").path
let store = try SQLiteStore(path: storePath)
defer { store.close() }

// Rails conventions: created_at <-> createdAt, html_url <-> htmlURL, id <-> identifier.
let client = try Client.Builder(schema: schema)
    .rails(conventions: ["identifier": "id", "URL": "url"])
    .store(store)
    .build()
print("Store: \(storePath)")

let url = CommandLine.arguments.count > 1
    ? URL(fileURLWithPath: CommandLine.arguments[1])
    : Bundle.module.url(forResource: "issues", withExtension: "json", subdirectory: "Resources")!
let data = try Data(contentsOf: url)

let result = try await client.import(data, as: "Issue")
print("Imported \(url.lastPathComponent): \(result.inserted.count) inserted, \(result.updated.count) updated, "
    + "\(result.unchanged.count) unchanged, \(result.diagnostics.count) diagnostics")
for diagnostic in result.diagnostics { print("  ! \(diagnostic)") }

for user in try await client.fetch(Query("User", sortedBy: [.ascending("login")])) {
    let issues = try await client.related("issues", of: user.id)
        .sorted { ($0["number", as: Int64.self] ?? 0) < ($1["number", as: Int64.self] ?? 0) }
    print("\(user["login", as: String.self] ?? "?") (id \(user["identifier", as: Int64.self] ?? 0)): \(issues.count) issues")
    for issue in issues {
        let number = issue["number", as: Int64.self] ?? 0
        let title = issue["title", as: String.self] ?? ""
        let state = issue["state", as: String.self] ?? ""
        print("  #\(number) [\(state)] \(title)")
    }
}

// Importing the same payload again finds every object: nothing is inserted.
let again = try await client.import(data, as: "Issue")
print("Re-import: \(again.inserted.count) inserted, \(again.unchanged.count) unchanged")
