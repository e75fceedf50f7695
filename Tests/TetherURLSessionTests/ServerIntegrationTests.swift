import Foundation
import Testing
import Tether
import TetherTesting
import TetherTestSupport
import TetherURLSession

/// The two real servers of `Tests/Servers`, reached through `URLSessionTransport`.
///
/// Set `TETHER_DRF_URL` (e.g. `http://127.0.0.1:8000/api`) and `TETHER_RAILS_URL`
/// (`http://127.0.0.1:3000`) after `bash .ci/servers.sh start` (`eval "$(bash .ci/servers.sh env)"` sets them). Without them these tests are
/// skipped, and the skip says why; with `TETHER_REQUIRE_SERVERS=1` (CI) a missing URL fails.
struct Server: Sendable, CustomStringConvertible {
    let name: String
    let variable: String
    /// The collection URL of a user's repositories.
    let userRepositories: URLTemplate
    /// A query asking for pages of two.
    let pageOfTwo: String
    /// The status of a validation error.
    let validationStatus: Int

    static let drf = Server(name: "DRF", variable: "TETHER_DRF_URL", userRepositories: "/users/:id/repositories/",
                            pageOfTwo: "/users/?page_size=2", validationStatus: 400)
    static let rails = Server(name: "Rails", variable: "TETHER_RAILS_URL", userRepositories: "/users/:id/repositories",
                              pageOfTwo: "/users?page=1&per_page=2", validationStatus: 422)

    var baseURL: URL? {
        TestServers.url(variable)
    }

    static var required: Bool { ProcessInfo.processInfo.environment["TETHER_REQUIRE_SERVERS"] == "1" }
    static func runs(_ server: Server) -> Bool { server.baseURL != nil || required }

    var description: String { name }

    /// A client for this server, or a recorded failure when the URL is missing under CI.
    func client(sourceLocation: SourceLocation = #_sourceLocation) throws -> Client? {
        guard let baseURL else {
            Issue.record("\(variable) is not set but TETHER_REQUIRE_SERVERS=1: start the servers with `bash .ci/servers.sh start`",
                         sourceLocation: sourceLocation)
            return nil
        }
        return try makeBuilder(transport: URLSessionTransport(timeout: 20), baseURL: baseURL)
            .dateDecoding(DateDecoding([.iso8601WithFractionalSeconds]))
            .relationshipResource(userRepositories, for: "repositories", of: "User")
            .build()
    }
}

func uniqueLogin(_ prefix: String) -> String {
    "\(prefix)-\(UUID().uuidString.prefix(8).lowercased())"
}

@Suite(.serialized, .enabled(if: Server.runs(.drf), "no DRF server: DRF integration tests skipped (run `bash .ci/servers.sh start`, or set TETHER_DRF_URL)"))
struct DRFServerTests {
    @Test func listGetNullsAndUnicode() async throws { try await ServerScenarios.listGetNullsAndUnicode(.drf) }
    @Test func followsEveryPage() async throws { try await ServerScenarios.followsEveryPage(.drf) }
    @Test func deleteMissingAcrossPages() async throws { try await ServerScenarios.deleteMissingAcrossPages(.drf) }
    @Test func createSaveDelete() async throws { try await ServerScenarios.createSaveDelete(.drf) }
    @Test func nestedObjectsAndForeignKeys() async throws { try await ServerScenarios.nestedObjectsAndForeignKeys(.drf) }
    @Test func validationAndMissingObjects() async throws { try await ServerScenarios.validationAndMissingObjects(.drf) }
    @Test func remoteBackedQuery() async throws { try await ServerScenarios.remoteBackedQuery(.drf) }
    @Test func anotherClientsChangeSurvivesASave() async throws { try await ServerScenarios.anotherClientsChangeSurvivesASave(.drf) }

    @Test func anUnroutedPathAnswersHTMLNotJSON() async throws {
        guard let client = try Server.drf.client() else { return }
        let error = await #expect(throws: HTTPError.self) { _ = try await client.fetchObjects("User", from: "/nope/") }
        #expect(error?.status == 404)
        #expect(error?.body.isJSON == false)
        #expect(error?.body.contentType?.hasPrefix("text/html") == true)
    }
}

@Suite(.serialized, .enabled(if: Server.runs(.rails), "no Rails server: Rails integration tests skipped (run `bash .ci/servers.sh start`, or set TETHER_RAILS_URL)"))
struct RailsServerTests {
    @Test func listGetNullsAndUnicode() async throws { try await ServerScenarios.listGetNullsAndUnicode(.rails) }
    @Test func followsEveryPage() async throws { try await ServerScenarios.followsEveryPage(.rails) }
    @Test func deleteMissingAcrossPages() async throws { try await ServerScenarios.deleteMissingAcrossPages(.rails) }
    @Test func createSaveDelete() async throws { try await ServerScenarios.createSaveDelete(.rails) }
    @Test func nestedObjectsAndForeignKeys() async throws { try await ServerScenarios.nestedObjectsAndForeignKeys(.rails) }
    @Test func validationAndMissingObjects() async throws { try await ServerScenarios.validationAndMissingObjects(.rails) }
    @Test func remoteBackedQuery() async throws { try await ServerScenarios.remoteBackedQuery(.rails) }
    @Test func anotherClientsChangeSurvivesASave() async throws { try await ServerScenarios.anotherClientsChangeSurvivesASave(.rails) }
}

/// The same scenarios against each server. Each test uses its own client (an in-memory store)
/// and its own unique logins, so they run in any order; the tests of one server run one at a
/// time, because paging through the users while another test creates and deletes one can ask
/// for a page that no longer exists (a 404 for `?page=3`, seen in CI).
enum ServerScenarios {
    static func listGetNullsAndUnicode(_ server: Server) async throws {
        guard let client = try server.client() else { return }
        let users = try await client.fetchObjects("User", from: "/users")
        let logins = users.objects.compactMap { $0["login", as: String.self] }
        #expect(logins.starts(with: ["octocat", "hubot", "zoë-ünicode"]))

        let hubot = try await client.fetchObject("User", from: "/users/2")
        #expect(hubot.id == users.objects[1].id)
        #expect(hubot["name"] == nil)  // null on the server: unset
        #expect(hubot["email"] == nil)
        #expect(hubot["siteAdmin"] == .bool(true))
        #expect(hubot["createdAt"] == .date(Date(timeIntervalSince1970: 1_331_025_300)))  // 2012-03-06T09:15:00Z

        let zoe = try await client.fetchObject("User", from: "/users/:id", for: users.objects[2].id).id
        if server.name == "DRF" {
            // a non-ASCII value escaped into the query by the template, and decoded by the server
            let found = try await client.fetchObjects("User", from: "/users/?login=:login", for: zoe)
            #expect(found.objects.map(\.id) == [zoe])
        }
        #expect(try await client.object(zoe)?["name"] == .string("Zoë Ünicødé 🐙"))

        let repository = try await client.fetchObject("Repository", from: "/repositories/3")
        #expect(repository["description"] == .string("Ωmega — “quotes” & <tags>"))
        #expect(repository["fullName"] == .string("zoë-ünicode/ünïcode-repo"))
        #expect(try await client.related("owner", of: repository.id).map(\.id) == [zoe])

        let secret = try await client.fetchObject("Repository", from: "/repositories/2")
        #expect(secret["description"] == nil)
        #expect(secret["private"] == .bool(true))

        let issue = try await client.fetchObject("Issue", from: "/issues/3")
        #expect(issue["body"]?.description.contains("\n") == true)
        #expect(issue["title", as: String.self]?.unicodeScalars.contains { $0.properties.isEmoji && $0.value > 0x2000 } == true)
    }

    static func followsEveryPage(_ server: Server) async throws {
        guard let client = try server.client() else { return }
        let all = try await client.fetchObjects("User", from: "/users")
        let paged = try await client.fetchObjects("User", from: URLTemplate(server.pageOfTwo))
        #expect(paged.pages >= 2)
        #expect(paged.objects.count >= 3)
        #expect(Set(all.objects.prefix(3).map(\.id)).isSubset(of: Set(paged.objects.map(\.id))))
        // no duplicate objects across pages
        #expect(Set(paged.objects.map(\.id)).count == paged.objects.count)
        let labels = try await client.fetchObjects("Label", from: server.name == "DRF" ? "/labels/?page_size=1" : "/labels?page=1&per_page=1")
        #expect(labels.pages >= 3)
        #expect(labels.objects.compactMap { $0["name", as: String.self] }.starts(with: ["bug", "enhancement", "good first issue"]))
    }

    /// Issue 19: a fetch with deleteMissing over pages of one label each deletes only what no page
    /// holds (the first page alone would delete the others), and a fetch whose second page fails
    /// deletes nothing.
    static func deleteMissingAcrossPages(_ server: Server) async throws {
        guard let client = try server.client(), let baseURL = server.baseURL else { return }
        let onePerPage: URLTemplate = server.name == "DRF" ? "/labels/?page_size=1" : "/labels?page=1&per_page=1"
        let onServer = try await client.fetchObjects("Label", from: server.name == "DRF" ? "/labels/?page_size=100" : "/labels?per_page=100")
        let serverIDs = Set(onServer.objects.compactMap { $0["id", as: Int64.self] })
        #expect(serverIDs.count >= 3)
        // Two labels the server does not have (deleted there, say).
        for id in [900_001, 900_002] { _ = try await client.insertLocally("Label", values: ["id": .int(Int64(id)), "name": .string("gone-\(id)")]) }

        // The second page fails: nothing is deleted, nothing imported.
        let failing = try makeBuilder(transport: FailingSecondPage(next: URLSessionTransport(timeout: 20)), baseURL: baseURL)
            .store(client.store).build()
        let error = await #expect(throws: HTTPError.self) {
            _ = try await failing.fetchObjects("Label", from: onePerPage, options: ImportOptions(deleteMissing: .all))
        }
        #expect(error?.status == 503)
        #expect(try await client.count(Query("Label")) == serverIDs.count + 2)

        let result = try await client.fetchObjects("Label", from: onePerPage, options: ImportOptions(deleteMissing: .all))
        #expect(result.pages >= serverIDs.count)
        #expect(result.importResult.deleted.count == 2)
        let local = try await client.fetch(Query("Label")).compactMap { $0["id", as: Int64.self] }
        #expect(Set(local) == serverIDs, "equal to the server: every page's labels kept, the two others deleted")
    }

    /// A remote-backed observed query (Docs/Live-Results.md): local results first, then the
    /// server's; a refresh deletes what the server deleted; a failed refresh keeps the local rows
    /// and says why.
    static func remoteBackedQuery(_ server: Server) async throws {
        guard let client = try server.client(), let baseURL = server.baseURL else { return }
        let labels: URLTemplate = server.name == "DRF" ? "/labels/?page_size=2" : "/labels?page=1&per_page=2"
        let item = { (id: Int64) in baseURL.appendingPathComponent(server.name == "DRF" ? "labels/\(id)/" : "labels/\(id)") }
        // A label of our own on the server, and one locally that the server does not have.
        let name = uniqueLogin("live")
        let created = try await client.send(.post, baseURL.appendingPathComponent(server.name == "DRF" ? "labels/" : "labels"),
                                            body: .object(["name": .string(name), "color": .string("00ff00")]))
        let createdID = try #require(try JSON(parsing: created.body)["id"]?.int64Value)
        _ = try await client.insertLocally("Label", values: ["id": .int(900_001), "name": .string("only-local")])

        let observation = client.observe(Query("Label", sortedBy: [.ascending("id")]), from: .objects(at: labels), refresh: .always)
        var results = observation.makeAsyncIterator()
        let first = try #require(try await results.next())
        #expect(first.objects.map { $0["name"] } == [.string("only-local")], "the local result at once")
        #expect(first.remote?.isLoading == true)
        var latest = first
        while latest.remote?.isLoading != false { latest = try #require(try await results.next()) }
        #expect(latest.remote?.lastError == nil)
        #expect(latest.remote?.lastRefreshed != nil)
        let ids = { (snapshot: ResultsSnapshot) in snapshot.objects.compactMap { $0["id", as: Int64.self] } }
        #expect(ids(latest).contains(createdID))
        #expect(!ids(latest).contains(900_001), "deleted: the server does not list it")
        #expect(try await client.fetch(Query("Label", sortedBy: [.ascending("id")])) == latest.objects)

        // Deleted on the server (by someone else): the next refresh deletes it here.
        let deleted = try await client.send(.delete, item(createdID), entity: "Label")
        #expect((200..<300).contains(deleted.status))
        try await observation.refresh()
        while ids(latest).contains(createdID) { latest = try #require(try await results.next()) }
        #expect(try await client.object("Label", identity: .int(createdID)) == nil)

        // A failed refresh keeps the local rows and reports why.
        let broken = client.observe(Query("Label", sortedBy: [.ascending("id")]), from: .objects(at: "/no-such-list/"), refresh: .always)
        var failing = broken.makeAsyncIterator()
        var state = try #require(try await failing.next())
        let kept = state.objects
        #expect(!kept.isEmpty)
        while state.remote?.isLoading != false { state = try #require(try await failing.next()) }
        #expect((state.remote?.lastError as? HTTPError)?.status == 404, "\(String(describing: state.remote))")
        #expect(state.objects == kept)
        await #expect(throws: HTTPError.self) { try await broken.refresh() }
    }

    /// Answers 503 for the second page of a list; passes everything else on.
    struct FailingSecondPage: Transport {
        let next: any Transport
        func send(_ request: TransportRequest) async throws -> TransportResponse {
            if request.url.query?.contains("page=2") == true {
                return TransportResponse(status: 503, headers: ["Content-Type": "application/json"], body: Data(#"{"detail": "unavailable"}"#.utf8))
            }
            return try await next.send(request)
        }
    }

    static func createSaveDelete(_ server: Server) async throws {
        guard let client = try server.client() else { return }
        let login = uniqueLogin("tether-crud")
        let local = try await client.insertLocally("User", values: ["login": .string(login), "name": .string("Néw Üser 🐙")])
        #expect(local["id"] == nil)
        let created = try await client.create(local.id)
        #expect(created.id == local.id)  // merged into the same object
        let id = try #require(created["id", as: Int64.self])
        #expect(created["createdAt"] != nil)
        #expect(created["name"] == .string("Néw Üser 🐙"))
        #expect(try await client.count(Query("User")) == 1)

        // save: change one value and clear another (null)
        _ = try await client.updateLocally(local.id, setting: ["email": .string("\(login)@example.com")], clearing: ["name"])
        let saved = try await client.save(local.id, options: ExportOptions(includeNulls: true))
        #expect(saved["name"] == nil)
        #expect(saved["email"] == .string("\(login)@example.com"))

        // a second client sees the server state
        let other = try server.client()!
        let fetched = try await other.fetchObject("User", from: URLTemplate("/users/\(id)"))
        #expect(fetched["name"] == nil)
        #expect(fetched["login"] == .string(login))
        _ = try await client.refresh(local.id)

        #expect(try await client.delete(local.id) == 204)
        #expect(try await client.object(local.id) == nil)
        // deleting it again: the server answers 404, the other client's copy goes too
        #expect(try await other.delete(fetched.id) == 404)
        #expect(try await other.object(fetched.id) == nil)
    }

    /// Minimal PATCH against the real server: two clients change different fields of one user;
    /// neither save reverts the other's change, and a cleared field is sent as null.
    static func anotherClientsChangeSurvivesASave(_ server: Server) async throws {
        guard let mine = try server.client(), let theirs = try server.client() else { return }
        let login = uniqueLogin("tether-patch")
        let created = try await mine.create("User", values: ["login": .string(login), "name": .string("Before"), "email": .string("\(login)@example.com")])
        let id = try #require(created["id", as: Int64.self])
        let their = try await theirs.fetchObject("User", from: URLTemplate("/users/\(id)"))

        try await theirs.updateLocally(their.id, setting: ["email": .string("\(login)@theirs.example")])
        _ = try await theirs.save(their.id)
        try await mine.updateLocally(created.id, setting: ["name": .string("Mine")])
        let saved = try await mine.save(created.id)
        #expect(saved["name"] == .string("Mine"))
        #expect(saved["email"] == .string("\(login)@theirs.example"))   // not reverted by my save

        try await theirs.updateLocally(their.id, setting: [:], clearing: ["email"])
        _ = try await theirs.save(their.id)
        let now = try await mine.refresh(created.id)
        #expect(now["email"] == nil)
        #expect(now["name"] == .string("Mine"))
        #expect(try await mine.delete(created.id) == 204)
    }

    static func nestedObjectsAndForeignKeys(_ server: Server) async throws {
        guard let client = try server.client() else { return }
        let owner = try await client.create("User", values: ["login": .string(uniqueLogin("tether-owner"))])
        // create with a foreign key (owner_id) from a relationship
        let repo = try await client.create("Repository", values: ["name": .string("répo-\(UUID().uuidString.prefix(6))"), "private": .bool(false)],
                                           related: ["owner": [owner.id]])
        let body = try await client.export(repo.id)
        #expect(body["owner_id"] == JSON.int(try #require(owner["id", as: Int64.self])))
        #expect(try await client.related("owner", of: repo.id).map(\.id) == [owner.id])
        #expect(repo["fullName", as: String.self]?.hasSuffix("/" + (repo["name", as: String.self] ?? "")) == true)

        // relationship resource: add (POST under the user) and list
        let repos = client.relationship("repositories", of: owner.id)
        let local = try await client.insertLocally("Repository", values: ["name": .string("nested-\(UUID().uuidString.prefix(6))")])
        let added = try await repos.add(local.id)
        #expect(added.id == local.id)
        #expect(added["id"] != nil)
        let listed = try await repos.list()
        #expect(Set(listed.objects.map(\.id)) == [repo.id, local.id])
        #expect(Set(try await client.related("repositories", of: owner.id).map(\.id)) == [repo.id, local.id])

        // nested to-one and to-many objects with their *_id / *_ids
        let hello = try await client.fetchObject("Repository", from: "/repositories/1")
        let issue = try await client.fetchObject("Issue", from: "/issues/1")
        #expect(try await client.related("labels", of: issue.id).compactMap { $0["name", as: String.self] }.sorted() == ["bug", "good first issue"])
        #expect(try await client.related("user", of: issue.id).first?["login"] == .string("hubot"))
        #expect(try await client.related("repository", of: issue.id).map(\.id) == [hello.id])  // from repository_id

        _ = try await client.delete(owner.id)  // cascades on the server and locally
        #expect(try await client.object(repo.id) == nil)
    }

    static func validationAndMissingObjects(_ server: Server) async throws {
        guard let client = try server.client() else { return }
        let error = await #expect(throws: HTTPError.self) { _ = try await client.create("User", values: ["login": .string("octocat")]) }
        #expect(error?.status == server.validationStatus)
        #expect(error?.body.messages(for: "login").isEmpty == false)
        #expect(error?.description.contains("login") == true)
        let blank = await #expect(throws: HTTPError.self) { _ = try await client.create("User", values: ["name": .string("no login")]) }
        #expect(blank?.body.messages(for: "login").isEmpty == false)
        #expect(try await client.count(Query("User")) == 0)

        let missing = await #expect(throws: HTTPError.self) { _ = try await client.fetchObject("User", from: "/users/987654") }
        #expect(missing?.status == 404)
        #expect(missing?.body.isJSON == true)
        #expect(missing?.body.message != nil)
        // a delete of an object the server does not have: 404, and the local copy goes
        let ghost = try await client.insertLocally("User", values: ["id": .int(987_654), "login": .string("ghost")])
        #expect(try await client.delete(ghost.id) == 404)
        #expect(try await client.count(Query("User")) == 0)
    }
}
