import Foundation
import Tether
import TetherTesting
import TetherTestSupport

/// camelCase model names <-> snake_case JSON keys; `Repository` -> `repositories`.
struct SnakeCaseNaming: NamingStrategy {
    func jsonKey(for name: String, in entity: String) -> String {
        var out = ""
        for c in name {
            if c.isUppercase {
                out += "_" + c.lowercased()
            } else {
                out.append(c)
            }
        }
        return out
    }

    func modelName(for jsonKey: String, in entity: String) -> String {
        var out = ""
        var upper = false
        for c in jsonKey {
            if c == "_" {
                upper = true
            } else {
                out += upper ? c.uppercased() : String(c)
                upper = false
            }
        }
        return out
    }

    func resourcePath(for entity: String) -> String {
        let lower = entity.lowercased()
        return lower.hasSuffix("y") ? String(lower.dropLast()) + "ies" : lower + "s"
    }
}

/// The GitHub-like model both test servers serve.
func trackerSchema() throws -> Schema {
    try Schema {
        Entity("User") {
            Attribute("id", .int64)
            Attribute("login", .string)
            Attribute("name", .string)
            Attribute("email", .string)
            Attribute("siteAdmin", .bool)
            Attribute("createdAt", .date)
            Attribute("updatedAt", .date)
            Relationship.toMany("repositories", "Repository", inverse: "owner", deleteRule: .cascade)
            Relationship.toMany("issues", "Issue", inverse: "user")
        }
        Entity("Repository") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Attribute("fullName", .string)
            Attribute("description", .string)
            Attribute("private", .bool)
            Attribute("stargazersCount", .int64)
            Attribute("openIssuesCount", .int64)
            Attribute("createdAt", .date)
            Attribute("updatedAt", .date)
            Relationship.toOne("owner", "User", inverse: "repositories")
            Relationship.toMany("issues", "Issue", inverse: "repository", deleteRule: .cascade)
        }
        Entity("Issue") {
            Attribute("id", .int64)
            Attribute("number", .int64)
            Attribute("title", .string)
            Attribute("body", .string)
            Attribute("state", .string)
            Attribute("comments", .int64)
            Attribute("closedAt", .date)
            Attribute("createdAt", .date)
            Attribute("updatedAt", .date)
            Relationship.toOne("repository", "Repository", inverse: "issues")
            Relationship.toOne("user", "User", inverse: "issues")
            Relationship.toMany("labels", "Label", inverse: "issues")
        }
        Entity("Label") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Attribute("color", .string)
            Relationship.toMany("issues", "Issue", inverse: "labels")
        }
    }
}

let stubBase = URL(string: "https://api.example.com")!

func makeBuilder(transport: some Transport, baseURL: URL = stubBase) throws -> Client.Builder {
    Client.Builder(schema: try trackerSchema())
        .naming(SnakeCaseNaming())
        .transport(transport)
        .baseURL(baseURL)
}

func makeClient(_ transport: some Transport, baseURL: URL = stubBase) throws -> Client {
    try makeBuilder(transport: transport, baseURL: baseURL).build()
}

/// Seeds the store by importing JSON.
@discardableResult
func seed(_ client: Client, _ entity: String, _ json: JSON) async throws -> [Object] {
    let result = try await client.import(json, as: entity)
    return try await client.store.read { try $0.objects(Array(result.objects)) }
}

/// Directory of this test target's fixtures.
let fixturesFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

/// The ports a test server started with `process` writes (space-separated) to `file` once it
/// listens: waits up to 30 s for `count` of them, killing the process if it stops or is late.
func awaitPorts(_ count: Int, in file: URL, of process: ChildProcess) async throws -> [Int] {
    let deadline = ContinuousClock.now + .seconds(30)
    while true {
        if let text = try? String(contentsOf: file, encoding: .utf8) {
            let ports = text.split(separator: " ").compactMap { Int($0) }
            if ports.count == count { return ports }
        }
        guard process.isRunning, ContinuousClock.now < deadline else {
            process.kill()
            throw TransportFaultTests.ServerDidNotStart()
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}
