import Foundation
import Synchronization
import Testing
import Tether
import TetherSQLite
import TetherTesting

/// The outbox of a local-first client (issue 40) on both stores, against ``OfflineServer``:
/// writes offline, coalescing, replay in order, temporary identities, idempotency, failures,
/// conflicts, refreshes while changes are pending, and restarts.
@Suite struct OutboxTests {
    struct Issue: EntityModel {
        var id: Int64?
        var title: String?
        var state: String?
    }

    struct Comment: EntityModel {
        var id: Int64?
        var body: String?
        var issue: Issue?
    }

    static let base = URL(string: "https://api.example.com")!

    static func store(_ kind: String, _ folder: TemporaryDirectory) throws -> any Store {
        kind == "memory" ? InMemoryStore() : try SQLiteStore(path: folder.path())
    }

    static func client(_ store: any Store, _ server: OfflineServer, _ options: OutboxOptions = OutboxOptions()) throws -> Client {
        try Client.Builder(models: [Issue.self, Comment.self])
            .store(store)
            .transport(server)
            .baseURL(base)
            .resource("/issues", for: "Issue")
            .resource("/comments", for: "Comment")
            .retries(.none)
            .writes(.localFirst(options))
            .build()
    }

    static func methods(_ server: OfflineServer) -> [String] {
        server.requests.map { "\($0.method.rawValue) \($0.url.path)" }
    }

    @Test(arguments: ["memory", "sqlite"])
    func writesOfflineAreStoredAtOnceAndSentCoalescedInOrder(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let server = OfflineServer(firstID: 10)
        server.isOffline = true
        let client = try Self.client(try Self.store(kind, folder), server)

        // create + updates -> one POST with the final values (an object created offline has no
        // identity to find a typed model by: it is edited through its object id)
        let a = try await client.create("Issue", values: ["title": .string("first draft")])
        _ = try await client.updateLocally(a.id, setting: ["title": .string("first")])
        _ = try await client.save(a.id)
        _ = try await client.updateLocally(a.id, setting: ["state": .string("open")])
        _ = try await client.save(a.id)
        // create + delete -> nothing
        let b = try await client.create(Issue(title: "never sent"))
        let bID = try #require(try await client.fetch(Query("Issue", where: .equal("title", .string("never sent")))).first?.id)
        #expect(try await client.delete(bID) == 0)
        #expect(b.id == nil)
        // a child of an object created offline
        _ = try await client.create("Comment", values: ["body": .string("on the first")], related: ["issue": [a.id]])

        let stored = try await client.fetch(Issue.self)
        #expect(stored.map(\.title) == ["first"] && stored[0].id == nil)
        let entries = try await client.outbox.entries()
        #expect(entries.map(\.operation) == [.create, .create])
        #expect(entries.allSatisfy { $0.idempotencyKey != nil && $0.state == .pending })
        #expect(server.requests.isEmpty)

        let offline = try await client.outbox.flush()
        #expect(offline.sent.isEmpty && offline.stoppedBy?.contains("connectionRefused") == true)
        #expect(try await client.outbox.entries().first?.error?.contains("offline") == true)

        server.isOffline = false
        let report = try await client.outbox.flush()
        #expect(report.isComplete && report.sent.count == 2)
        #expect(Self.methods(server) == ["POST /issues", "POST /comments"])
        #expect(server.objects(in: "issues")[10] == ["id": 10, "title": "first", "state": "open"])
        // The comment went with the server's id of its issue.
        #expect(server.objects(in: "comments")[11]?["issue_id"] == 10 || server.objects(in: "comments")[11]?["issueId"] == 10
            || server.objects(in: "comments")[11]?["issue"] == 10)
        #expect(server.requests.allSatisfy { $0.headers["Idempotency-Key"] != nil })
        #expect(try await client.outbox.entries().isEmpty)
        #expect(try await client.fetch(Issue.self).map(\.id) == [10])
    }

    @Test(arguments: ["memory", "sqlite"])
    func updatesCoalesceIntoOnePatchAndADeleteWinsOverThem(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let server = OfflineServer()
        let one = server.put(["title": "one", "state": "open"], in: "issues")
        let two = server.put(["title": "two", "state": "open"], in: "issues")
        let client = try Self.client(try Self.store(kind, folder), server)
        _ = try await client.fetch(Issue.self, from: "/issues")
        server.isOffline = true

        var first = try #require(try await client.model(Issue.self, identity: one))
        first.title = "one, edited"
        first = try await client.save(first)
        first.state = "closed"
        _ = try await client.save(first)
        var second = try #require(try await client.model(Issue.self, identity: two))
        second.title = "two, edited"
        second = try await client.save(second)
        _ = try await client.delete(second)
        #expect(try await client.outbox.entries().map(\.operation) == [.update, .delete])
        #expect(try await client.model(Issue.self, identity: two) == nil)

        server.isOffline = false
        _ = try await client.outbox.flush()
        let requests = server.requests.filter { $0.method != .get }
        #expect(requests.map { "\($0.method.rawValue) \($0.url.path)" } == ["PATCH /issues/\(one)", "DELETE /issues/\(two)"])
        #expect(try JSON(parsing: requests[0].body ?? Data()) == ["title": "one, edited", "state": "closed"])
        #expect(server.objects(in: "issues")[one]?["state"] == "closed" && server.objects(in: "issues")[two] == nil)
    }

    @Test(arguments: ["memory", "sqlite"])
    func aCreateWhoseAnswerWasLostIsNotCreatedTwice(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let server = OfflineServer()
        let client = try Self.client(try Self.store(kind, folder), server)
        _ = try await client.create(Issue(title: "once"))
        server.loseNextAnswers()
        let lost = try await client.outbox.flush()
        #expect(lost.stoppedBy?.contains("connectionLost") == true)
        let entry = try #require(try await client.outbox.entries().first)
        #expect(entry.attempts == 1 && entry.state == .pending)
        _ = try await client.outbox.flush()
        #expect(server.objects(in: "issues").count == 1)
        let keys = server.requests.map { $0.headers["Idempotency-Key"] }
        #expect(keys.count == 2 && keys[0] == keys[1] && keys[0] == entry.idempotencyKey)
        #expect(try await client.fetch(Issue.self).map(\.id) == [1])
    }

    @Test(arguments: ["memory", "sqlite"])
    func aRefreshKeepsPendingChangesAndAppliesTheServersOtherFields(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let server = OfflineServer()
        let one = server.put(["title": "one", "state": "open"], in: "issues")
        let gone = server.put(["title": "gone", "state": "open"], in: "issues")
        let client = try Self.client(try Self.store(kind, folder), server)
        _ = try await client.fetch(Issue.self, from: "/issues")

        var mine = try #require(try await client.model(Issue.self, identity: one))
        mine.title = "mine"
        _ = try await client.save(mine)
        _ = try await client.delete(try #require(try await client.model(Issue.self, identity: gone)))
        let local = try await client.create(Issue(title: "created offline"))
        // Another client changes both fields on the server.
        server.put(["id": .int(one), "title": "theirs", "state": "closed"], in: "issues")

        _ = try await client.fetchObjects("Issue", from: "/issues", options: ImportOptions(deleteMissing: .all))
        let refreshed = try #require(try await client.model(Issue.self, identity: one))
        #expect(refreshed.title == "mine" && refreshed.state == "closed")
        #expect(try await client.model(Issue.self, identity: gone) == nil)
        #expect(try await client.fetch(Issue.self, where: .equal(\.title, "created offline")).count == 1)
        #expect(local.id == nil)

        let report = try await client.outbox.flush()
        #expect(report.isComplete && report.sent.count == 3)
        #expect(server.objects(in: "issues")[one] == ["id": .int(one), "title": "mine", "state": "closed"])
        #expect(server.objects(in: "issues")[gone] == nil)
    }

    @Test(arguments: ["memory", "sqlite"])
    func refusedEntriesFailAndHoldWhatDependsOnThem(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let server = OfflineServer()
        let client = try Self.client(try Self.store(kind, folder), server)
        let issue = try await client.create("Issue", values: ["title": .string("")])
        _ = try await client.create("Comment", values: ["body": .string("waits")], related: ["issue": [issue.id]])
        _ = try await client.create(Issue(title: "independent"))
        server.refuseNext(.post, status: 422)

        let report = try await client.outbox.flush()
        #expect(report.failed.count == 1 && report.held.count == 1 && report.sent.count == 1)
        let entries = try await client.outbox.entries()
        #expect(entries.map(\.state) == [.failed, .pending])
        #expect(entries[0].error?.contains("422") == true)
        #expect(try await client.outbox.hasUnsentChanges(issue.id))

        // The app fixes the issue and retries: the issue, then its comment.
        try await client.outbox.retry(entries[0])
        let again = try await client.outbox.flush()
        #expect(again.isComplete && again.sent.count == 2)
        #expect(server.objects(in: "comments").count == 1)
    }

    @Test(arguments: ["memory", "sqlite"])
    func discardingRollsBackToTheServersValues(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let server = OfflineServer()
        let one = server.put(["title": "one", "state": "open"], in: "issues")
        let client = try Self.client(try Self.store(kind, folder), server)
        _ = try await client.fetch(Issue.self, from: "/issues")
        var mine = try #require(try await client.model(Issue.self, identity: one))
        mine.title = "mine"
        _ = try await client.save(mine)
        let created = try await client.create(Issue(title: "draft"))
        #expect(created.title == "draft")

        for entry in try await client.outbox.entries() { try await client.outbox.discard(entry) }
        #expect(try await client.fetch(Issue.self).map(\.title) == ["one"])
        _ = try await client.outbox.flush()
        #expect(server.requests.filter { $0.method != .get }.isEmpty)

        // A delete discarded: the object is back.
        _ = try await client.delete(try #require(try await client.model(Issue.self, identity: one)))
        #expect(try await client.fetch(Issue.self).isEmpty)
        try await client.outbox.discard(try #require(try await client.outbox.entries().first))
        #expect(try await client.fetch(Issue.self).map(\.title) == ["one"])
    }

    @Test(arguments: ["memory", "sqlite"])
    func conflictsAreKeptOrResolvedByPolicy(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let server = OfflineServer()
        let one = server.put(["title": "one", "state": "open"], in: "issues")
        let store = try Self.store(kind, folder)
        let client = try Self.client(store, server)
        _ = try await client.fetchModel(Issue.self, from: URLTemplate("/issues/\(one)"))
        var mine = try #require(try await client.model(Issue.self, identity: one))
        mine.title = "mine"
        _ = try await client.save(mine)
        server.put(["id": .int(one), "title": "theirs", "state": "closed"], in: "issues")  // a new ETag

        let report = try await client.outbox.flush()
        #expect(report.conflicts.count == 1)
        let conflict = try #require(try await client.outbox.entries().first)
        #expect(conflict.state == .conflict && conflict.conflict?.status == 412)
        #expect(conflict.conflict?.server?["title"] == "theirs")
        #expect(try await client.model(Issue.self, identity: one)?.title == "mine")

        try await client.outbox.resolve(conflict, keeping: .server)
        let resolved = try #require(try await client.model(Issue.self, identity: one))
        #expect(resolved.title == "theirs" && resolved.state == "closed")
        #expect(try await client.outbox.entries().isEmpty)

        // Client wins by policy: sent again over the server's version.
        let winning = try Self.client(store, server, OutboxOptions(conflictPolicies: ["Issue": .clientWins]))
        var again = resolved
        again.title = "mine again"
        _ = try await winning.save(again)
        server.put(["id": .int(one), "title": "theirs again", "state": "closed"], in: "issues")
        let won = try await winning.outbox.flush()
        #expect(won.isComplete)
        #expect(server.objects(in: "issues")[one]?["title"] == "mine again")
    }

    @Test(arguments: ["memory", "sqlite"])
    func a409IsAConflictAndServerWinsShowsTheServersCopy(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let server = OfflineServer()
        let one = server.put(["title": "one", "state": "open"], in: "issues")
        let client = try Self.client(try Self.store(kind, folder), server, OutboxOptions(conflictPolicies: ["Issue": .serverWins]))
        _ = try await client.fetch(Issue.self, from: "/issues")
        var mine = try #require(try await client.model(Issue.self, identity: one))
        mine.title = "mine"
        _ = try await client.save(mine)
        server.put(["id": .int(one), "title": "theirs", "state": "closed"], in: "issues")
        server.refuseNext(.patch, status: 409)
        let report = try await client.outbox.flush()
        #expect(report.isComplete && report.sent.count == 1)
        let stored = try #require(try await client.model(Issue.self, identity: one))
        #expect(stored.title == "theirs" && stored.state == "closed")
        #expect(try await client.outbox.entries().isEmpty)
        // Sent nothing more: the server's copy won.
        #expect(server.requests.filter { $0.method == .patch }.count == 1)
    }

    @Test(arguments: ["memory", "sqlite"])
    func flushingAfterWritesSendsAtOnceOrKeepsTheChangeQueued(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let server = OfflineServer()
        let events = EventLog()
        let client = try Client.Builder(models: [Issue.self, Comment.self])
            .store(try Self.store(kind, folder)).transport(server).baseURL(Self.base)
            .resource("/issues", for: "Issue").resource("/comments", for: "Comment").retries(.none)
            .writes(.localFirst(OutboxOptions(flushesAfterWrites: true)))
            .onEvent { events.record($0) }
            .build()
        let sent = try await client.create(Issue(title: "online"))
        #expect(sent.title == "online")
        #expect(server.objects(in: "issues").count == 1)
        #expect(try await client.outbox.entries().isEmpty)
        #expect(try await client.fetch(Issue.self).first?.id == 1)
        server.isOffline = true
        _ = try await client.create(Issue(title: "offline"))  // not thrown: queued
        #expect(try await client.outbox.entries().count == 1)
        #expect(events.kinds.contains(.acknowledged) && events.kinds.contains(.deferred))
    }

    final class EventLog: Sendable {
        private let events = Mutex<[OutboxEvent.Kind]>([])
        func record(_ event: ClientEvent) { if case .outbox(let outbox) = event { events.withLock { $0.append(outbox.kind) } } }
        var kinds: [OutboxEvent.Kind] { events.withLock { $0 } }
    }

    @Test func entriesSurviveARestartAndAreSentAfterIt() async throws {
        let folder = try TemporaryDirectory()
        let server = OfflineServer()
        server.isOffline = true
        do {
            let client = try Self.client(try SQLiteStore(path: folder.path()), server)
            _ = try await client.create(Issue(title: "before the restart"))
        }
        server.isOffline = false
        let reopened = try Self.client(try SQLiteStore(path: folder.path()), server)
        #expect(try await reopened.outbox.entries().count == 1)
        let report = try await reopened.outbox.flush()
        #expect(report.sent.count == 1)
        #expect(server.objects(in: "issues").values.map { $0["title"] } == ["before the restart"])
    }

    @Test(arguments: ["memory", "sqlite"])
    func theOutboxIsObservedAndBounded(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let server = OfflineServer()
        server.isOffline = true
        let client = try Self.client(try Self.store(kind, folder), server, OutboxOptions(limit: 2))
        var changes = client.outbox.changes().makeAsyncIterator()
        #expect(try await changes.next()?.count == 0)
        _ = try await client.create(Issue(title: "a"))
        #expect(try await changes.next()?.count == 1)
        _ = try await client.create(Issue(title: "b"))
        await #expect(throws: OutboxError.self) { try await client.create(Issue(title: "c")) }
        #expect(try await client.fetch(Issue.self).count == 2)
        let unsent = try await client.outbox.objectsWithUnsentChanges(of: "Issue")
        #expect(unsent.count == 2)
    }

    /// A local-first client of users and their repositories, with the relationship's URL.
    static func relationshipClient(_ store: any Store, _ server: OfflineServer) throws -> Client {
        let schema = try Schema {
            Entity("User") {
                Attribute("id", .int64)
                Attribute("login", .string)
                Relationship.toMany("repositories", "Repo")
            }
            Entity("Repo") {
                Attribute("id", .int64)
                Attribute("name", .string)
            }
        }
        return try Client.Builder(schema: schema)
            .store(store).transport(server).baseURL(base)
            .resource("/users", for: "User").resource("/repos", for: "Repo")
            .relationshipResource("/users/:id/repos", for: "repositories", of: "User")
            .writes(.localFirst())
            .build()
    }

    @Test(arguments: ["memory", "sqlite"])
    func relationshipChangesAreQueuedAndCancelOut(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let server = OfflineServer()
        let client = try Self.relationshipClient(try Self.store(kind, folder), server)
        let user = try await client.insertLocally("User", values: ["id": .int(1), "login": .string("ann")])
        let repo = try await client.insertLocally("Repo", values: ["id": .int(2), "name": .string("r")])
        try await client.relationship("repositories", of: user.id).add(repo.id)
        #expect(try await client.related("repositories", of: user.id).map(\.id) == [repo.id])
        #expect(try await client.relationship("repositories", of: user.id).remove(repo.id) == 0)
        #expect(try await client.outbox.entries().isEmpty)
        #expect(try await client.related("repositories", of: user.id).isEmpty)
    }

    /// A replace of a local-first client relinks at once and queues a remove of each dropped
    /// target and an add of each new one (a dropped target added unsent cancels out); the flush
    /// sends them one by one, as plain JSON has no request replacing a relationship's targets.
    @Test(arguments: ["memory", "sqlite"])
    func aReplaceIsQueuedAsRemovesAndAdds(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let server = OfflineServer()
        let client = try Self.relationshipClient(try Self.store(kind, folder), server)
        let user = try await client.insertLocally("User", values: ["id": .int(1), "login": .string("ann")])
        let repos = try await (2...4).asyncMap { try await client.insertLocally("Repo", values: ["id": .int(Int64($0)), "name": .string("r\($0)")]) }
        let resource = client.relationship("repositories", of: user.id)
        try await resource.add(repos[0].id)
        try await resource.add(repos[1].id)
        #expect(try await resource.replace(with: [repos[1].id, repos[2].id]) == 0)
        #expect(Set(try await client.related("repositories", of: user.id).map(\.id)) == [repos[1].id, repos[2].id])
        let operations = try await client.outbox.entries().map(\.operation)
        #expect(operations == [.add(relationship: "repositories", target: repos[1].id), .add(relationship: "repositories", target: repos[2].id)])
        #expect(server.requests.isEmpty, "nothing sent before a flush")
    }
}

extension ClosedRange where Bound == Int {
    /// Each element mapped by an asynchronous transform, in order.
    func asyncMap<T>(_ transform: (Int) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
