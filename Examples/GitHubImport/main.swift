// GitHubImport: import recorded GitHub issues (with their nested users) into a SQLite file with
// Rails naming conventions, and print the resulting object graph.
//
//     swift run GitHubImport [path/to/issues.json] [path/to/store.sqlite]
//
// Without a store path it writes a temporary SQLite file, says where, and removes it at the end.
// The recording (Resources/issues.json) holds 13 issues, each with its user nested: the same
// user every time, so the import inserts 14 objects, 13 issues and 1 user.

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

let usage = """
    usage: swift run GitHubImport [path/to/issues.json] [path/to/store.sqlite]
      Imports GitHub issues (default: the bundled recording) into a SQLite file (default: a
      temporary one, removed at the end) and prints the graph.
    """
var paths: [String] = []
for argument in CommandLine.arguments.dropFirst() {
    if argument == "--help" || argument == "-h" {
        print(usage)
        exit(0)
    }
    guard !argument.hasPrefix("-"), paths.count < 2 else {
        FileHandle.standardError.write(Data("GitHubImport: unknown option \(argument)\n\(usage)\n".utf8))
        exit(2)
    }
    paths.append(argument)
}

// The store file: a fresh one in the temporary directory unless a path is given.
let isTemporaryStore = paths.count < 2
let storePath = isTemporaryStore
    ? FileManager.default.temporaryDirectory.appendingPathComponent("github-import-\(UUID().uuidString).sqlite").path
    : paths[1]
/// Removes the temporary store file, if any.
func removeTemporaryStore() {
    guard isTemporaryStore else { return }
    for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: storePath + suffix) }
}

do {
    let store = try SQLiteStore(path: storePath)
    defer { store.close() }
    // Rails conventions: created_at <-> createdAt, html_url <-> htmlURL, id <-> identifier.
    let client = try Client.Builder(schema: schema)
        .rails(conventions: ["identifier": "id", "URL": "url"])
        .store(store)
        .build()
    print("Store: \(storePath) (\(isTemporaryStore ? "a temporary file, removed at the end" : "kept"))")

    let url = paths.first.map { URL(fileURLWithPath: $0) }
        ?? Bundle.module.url(forResource: "issues", withExtension: "json", subdirectory: "Resources")!
    let data = try Data(contentsOf: url)

    let result = try await client.import(data, as: "Issue")
    let inserted = Dictionary(grouping: result.inserted, by: \.entity).mapValues(\.count)
    print("Imported \(url.lastPathComponent): \(result.inserted.count) inserted (\(inserted["Issue"] ?? 0) issues and "
        + "\(inserted["User"] ?? 0) user\(inserted["User"] == 1 ? "" : "s"), nested in the issues), \(result.updated.count) updated, "
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
} catch {
    FileHandle.standardError.write(Data("GitHubImport failed: \(error)\n".utf8))
    removeTemporaryStore()
    exit(1)
}
removeTemporaryStore()
