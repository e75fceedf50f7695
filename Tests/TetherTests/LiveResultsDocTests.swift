import Foundation
import Synchronization
import Testing
import Tether
import TetherTesting

/// The examples of Docs/Live-Results.md, compiled and run.
@Suite struct LiveResultsDocTests {
    static let schema = try! Schema {
        Entity("User") {
            Attribute("id", .int64)
            Attribute("login", .string)
            Relationship.toMany("repositories", "Repository", inverse: "owner")
        }
        Entity("Repository") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Attribute("stars", .int64)
            Attribute("language", .string)
            Relationship.toOne("owner", "User", inverse: "repositories")
        }
    }

    static func client(_ transport: StubTransport? = nil) async throws -> Client {
        var builder = Client.Builder(schema: schema)
        if let transport { builder = builder.transport(transport).baseURL(URL(string: "https://api.example")!) }
        let client = try builder.build()
        try await client.import(Data(#"""
            [{"id": 1, "login": "ada", "repositories": [
                {"id": 10, "name": "engine", "stars": 120, "language": "Swift"},
                {"id": 11, "name": "notes", "stars": 5, "language": "Markdown"}]}]
            """#.utf8), as: "User")
        return client
    }

    @Test func observingAQuery() async throws {
        let client = try await Self.client()
        let repositories = client.observe(Query("Repository", sortedBy: [.descending("stars")]),
                                          sectionedBy: "language", reading: ["name", "stars", "language"])
        var seen = 0
        for try await snapshot in repositories {
            // snapshot.objects, snapshot.sections (key and range), snapshot.difference
            print(snapshot.sections.map { "\($0.key.map { "\($0)" } ?? "none"): \($0.count)" })
            seen += 1
            if seen == 1 {
                #expect(snapshot.sections.map(\.key) == [.string("Markdown"), .string("Swift")])
                try await client.import(Data(#"[{"id": 12, "name": "parser", "stars": 50, "language": "Swift"}]"#.utf8), as: "Repository")
            } else {
                #expect(snapshot.difference.inserted == [ResultIndex(section: 1, item: 1)])
                let previous = [[ObjectID]]([[snapshot.objects[0].id], [snapshot.objects[1].id]])
                var rows = previous
                rows = snapshot.difference.applied(to: rows, from: snapshot.sectionedIDs)  // == snapshot.sectionedIDs
                #expect(rows == snapshot.sectionedIDs)
                break
            }
        }

        repositories.change(where: .greater("stars", .int(100)), sortedBy: [.ascending("name")])
        repositories.change { $0.limit = 20 }
        var again = repositories.makeAsyncIterator()
        #expect(try await again.next()?.objects.map { $0["name"] } == [.string("engine")])
    }

    @Test func oneObjectOneRelationship() async throws {
        let client = try await Self.client()
        let repository = try #require(try await client.object("Repository", identity: .int(10)))
        let user = try #require(try await client.object("User", identity: .int(1)))
        let deleter = Task {
            try await Task.sleep(for: .milliseconds(50))
            try await client.deleteLocally(repository.id)
        }
        for try await repository in client.observe(repository.id, reading: ["stars"]) {
            guard let repository else { break }   // nil: deleted, and the sequence ends
            print(repository["stars"] ?? .int(0))
        }
        try await deleter.value
        for try await snapshot in try client.observe("repositories", of: user.id) {
            print(snapshot.objects.count, snapshot.difference)
            #expect(snapshot.objects.map { $0["name"] } == [.string("notes")])
            break
        }
    }

    @Test func remoteBacked() async throws {
        let stub = StubTransport()
        stub.on(.get, "/users/ada/repos", json: [["id": 10, "name": "engine", "stars": 121], ["id": 13, "name": "new", "stars": 1]])
        let client = try await Self.client(stub)
        let user = try #require(try await client.object("User", identity: .int(1)))
        try await client.import(Data(#"[{"id": 1, "login": "ada"}]"#.utf8), as: "User")

        let repositories = client.observe(Query("Repository", sortedBy: [.descending("stars")]),
                                          from: .objects(at: "/users/:login/repos", for: user.id),
                                          refresh: .ifOlderThan(.seconds(300)))
        for try await snapshot in repositories {
            if let remote = snapshot.remote {
                print(remote.isLoading ? "loading…" : "refreshed \(remote.lastRefreshed.map { "\($0)" } ?? "never")")
                if let error = remote.lastError { print("showing local results: \(error)") }
                if !remote.isLoading, remote.lastRefreshed != nil {
                    #expect(snapshot.objects.map { $0["name"] } == [.string("engine"), .string("new")], "notes deleted: not on the server")
                    break
                }
            }
        }
        try await repositories.refresh()   // pull to refresh
        #expect(stub.requests.count == 2)
    }

    @Test func progress() async throws {
        let client = try await Self.client()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("live-doc-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(("[" + (100..<400).map { #"{"id": \#($0), "name": "r\#($0)"}"# }.joined(separator: ",") + "]").utf8).write(to: file)

        let progress = ProgressReporter()
        let printer = Task { for await step in progress.updates { print(step) } }   // or ProgressReporter { step in … }
        try await client.import(contentsOf: file, as: "Repository", options: ImportOptions(batchSize: 100, progress: progress))
        await printer.value
        #expect(progress.latest?.phase == .finished)
        #expect(progress.latest?.objects == 300)
    }
}
