import Foundation
import Testing
import Tether
import TetherRails
import TetherSQLite
import TetherTesting

// The README's "A taste" example, compiled and run so that the README stays true. The code
// between the markers is the README's, word for word, but for the transport: a stub answering
// as api.github.com does, in place of `URLSessionTransport()` (no network in tests).

private let stub: StubTransport = {
    let stub = StubTransport()
    stub.on(.get, "/users/octocat/repos", json: [
        ["id": 1296269, "full_name": "octocat/Hello-World", "stargazers_count": 80, "created_at": "2011-01-26T19:01:12Z",
         "owner": ["id": 1, "login": "octocat", "avatar_url": "https://github.com/images/error/octocat_happy.gif"]],
        ["id": 18221276, "full_name": "octocat/git-consortium", "stargazers_count": 120, "created_at": "2014-03-28T17:55:38Z",
         "owner": ["id": 1, "login": "octocat", "avatar_url": "https://github.com/images/error/octocat_happy.gif"]],
    ])
    return stub
}()

// README >>>
struct User: EntityModel {
    var id: Int64
    var login: String
    var avatarURL: URL?
    var repositories: [Repository] = []
}

struct Repository: EntityModel {
    var id: Int64
    var fullName: String
    var stargazersCount: Int?
    var createdAt: Date?
    var owner: User?
}

func taste(databasePath: String) async throws -> (repositories: [Repository], popular: [Repository]) {
    let client = try Client.Builder(models: [User.self, Repository.self])
        .naming(RailsNaming(conventions: ["URL": "url"]))  // fullName ↔ full_name, avatarURL ↔ avatar_url
        .store(try SQLiteStore(path: databasePath))         // or the default in-memory store
        .transport(stub)                                    // URLSessionTransport() in the README
        .baseURL(URL(string: "https://api.github.com")!)
        .build()

    // GET, import in one transaction (one object per identity), and back come your structs
    let repositories = try await client.fetch(Repository.self, from: "/users/octocat/repos")
    print(repositories[0].fullName, repositories[0].owner?.login ?? "")

    // query what is stored, with key paths the compiler checks
    let popular = try await client.fetch(Repository.self, where: .greater(\.stargazersCount, 100),
                                         sortedBy: [.descending(\.createdAt)])
    return (repositories, popular)
}
// <<< README

@Test func readmeTasteRuns() async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tether-readme-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let (repositories, popular) = try await taste(databasePath: directory.appendingPathComponent("github.sqlite").path)
    #expect(repositories.map(\.fullName) == ["octocat/Hello-World", "octocat/git-consortium"])
    #expect(repositories[0].owner?.avatarURL?.absoluteString == "https://github.com/images/error/octocat_happy.gif")
    #expect(repositories[0].createdAt == Date(timeIntervalSince1970: 1296068472))
    #expect(popular.map(\.fullName) == ["octocat/git-consortium"])
}

/// The README shows the code above, line for line (trimmed), but for the wrapping function and
/// the transport.
@Test func readmeShowsTheTestedCode() throws {
    let here = URL(fileURLWithPath: #filePath)
    let root = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
    let shown = Set(readme.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) })
    let source = try String(contentsOf: here, encoding: .utf8)
    let tested = source.components(separatedBy: "// README >>>\n")[1].components(separatedBy: "// <<< README")[0]
    let wrapping = ["func taste(", "return (repositories", ".transport(stub)"]
    for line in tested.split(separator: "\n").map({ $0.trimmingCharacters(in: .whitespaces) })
    where !line.isEmpty && line != "}" && !wrapping.contains(where: { line.hasPrefix($0) }) {
        #expect(shown.contains(line), "README.md does not show: \(line)")
    }
    #expect(shown.contains(".transport(URLSessionTransport())"))
}
