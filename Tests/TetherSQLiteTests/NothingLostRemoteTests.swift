import Foundation
import Synchronization
import Testing
import Tether
import TetherSQLite
import TetherTesting

/// "Nothing lost, nothing duplicated" (issue 37, items 5–10) on both stores: what a stale typed
/// save sends, pages after a 304, a refresh after a refused save, creates answered without a
/// body, imports of enveloped lists, and the URLs writes go to.
@Suite struct NothingLostRemoteTests {
    struct Member: EntityModel {
        var id: Int64
        var name: String?
        var email: String?
        var repositories: [Repo] = []
    }

    struct Repo: EntityModel {
        var id: Int64?
        var title: String?
        var owner: Member?
    }

    static let base = URL(string: "https://api.example.com")!

    static func store(_ kind: String, _ folder: TemporaryDirectory) throws -> any Store {
        kind == "memory" ? InMemoryStore() : try SQLiteStore(path: folder.path())
    }

    static func builder(_ store: any Store, _ stub: StubTransport) throws -> Client.Builder {
        try Client.Builder(models: [Member.self, Repo.self])
            .store(store)
            .transport(stub)
            .baseURL(base)
            .resource("/members", for: "Member")
            .resource("/repos", for: "Repo")
    }

    static func json(_ text: String, status: Int = 200, _ headers: HTTPHeaders = [:]) -> TransportResponse {
        var headers = headers
        headers["Content-Type"] = "application/json"
        return TransportResponse(status: status, headers: headers, body: Data(text.utf8))
    }

    static func body(_ request: TransportRequest?) throws -> JSON {
        try JSON(parsing: try #require(request?.body))
    }

    // MARK: 5. A stale typed model saved over a newer store

    /// One member on the server: GET gives it, PATCH merges the body into it.
    final class ServerMember: Sendable {
        let state = Mutex<[String: JSON]>(["id": 1, "name": "Ann", "email": .null])

        func change(_ key: String, _ value: JSON) { state.withLock { $0[key] = value } }
        var json: TransportResponse { NothingLostRemoteTests.json(JSON.object(state.withLock { $0 }).serialized().utf8String) }

        func install(on stub: StubTransport) {
            stub.on(.get, "/members/1") { _ in self.json }
            stub.on(.get, "/members") { _ in
                NothingLostRemoteTests.json("[" + JSON.object(self.state.withLock { $0 }).serialized().utf8String + "]")
            }
            stub.on(.patch, "/members/1") { request in
                guard case .object(let sent) = try JSON(parsing: request.body ?? Data()) else { throw CancellationError() }
                self.state.withLock { $0.merge(sent) { _, new in new } }
                return self.json
            }
        }
    }

    @Test(arguments: ["memory", "sqlite"])
    func aStaleTypedSaveSendsOnlyWhatTheAppChanged(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let stub = StubTransport()
        let server = ServerMember()
        server.install(on: stub)
        let client = try Self.builder(try Self.store(kind, folder), stub).build()

        var mine = try await client.fetchModel(Member.self, from: "/members/1")
        #expect(mine.email == nil)
        // Another client sets the email; a list refresh brings it into the store.
        server.change("email", "ann@theirs.example")
        let refreshed = try await client.fetch(Member.self, from: "/members")
        #expect(refreshed.first?.email == "ann@theirs.example")

        mine.name = "Ann B."
        let saved = try await client.save(mine)
        #expect(try Self.body(stub.requests(.patch).last) == ["name": "Ann B."])
        #expect(saved.email == "ann@theirs.example")
        let stored = try #require(try await client.model(Member.self, identity: Int64(1)))
        #expect(stored.name == "Ann B." && stored.email == "ann@theirs.example")
        #expect(server.state.withLock { $0["email"] } == "ann@theirs.example")

        // A change the app makes to its current struct is sent, a cleared value as null.
        var current = saved
        current.email = nil
        let cleared = try await client.save(current)
        #expect(try Self.body(stub.requests(.patch).last) == ["email": .null])
        #expect(cleared.email == nil)

        // The same with an untyped refresh between the read and the save.
        var stale = try #require(try await client.model(Member.self, identity: Int64(1)))
        server.change("email", "new@theirs.example")
        _ = try await client.fetchObject("Member", from: "/members/1")
        stale.name = "Ann C."
        _ = try await client.save(stale)
        #expect(try Self.body(stub.requests(.patch).last) == ["name": "Ann C."])
        #expect(try await client.model(Member.self, identity: Int64(1))?.email == "new@theirs.example")
        #expect(server.state.withLock { $0["email"] } == "new@theirs.example")
    }

    @Test(arguments: ["memory", "sqlite"])
    func aStaleTypedSaveKeepsANewerToOneTarget(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let stub = StubTransport()
        stub.on(.get, "/repos/5", once: true, response: Self.json(#"{"id": 5, "title": "r", "owner": {"id": 1, "name": "a"}}"#))
        stub.on(.get, "/repos/5", response: Self.json(#"{"id": 5, "title": "r", "owner": {"id": 2, "name": "b"}}"#))
        stub.on(.patch, "/repos/5", response: Self.json(#"{"id": 5, "title": "r2"}"#))
        let client = try Self.builder(try Self.store(kind, folder), stub).build()

        var repo = try await client.fetchModel(Repo.self, from: "/repos/5")
        #expect(repo.owner?.id == 1)
        // Another client gives the repository to member 2; a refresh brings it.
        _ = try await client.fetchObject("Repo", from: "/repos/5")
        repo.title = "r2"
        _ = try await client.save(repo)
        #expect(try Self.body(stub.requests(.patch).last) == ["title": "r2"])
        #expect(try await client.model(Repo.self, identity: Int64(5))?.owner?.id == 2)
    }

    // MARK: 6. A 304 on the first page hides later pages

    @Test(arguments: ["memory", "sqlite"])
    func aNotModifiedFirstPageGoesOnToTheNextPages(_ kind: String) async throws {
        let stub = StubTransport()
        let grown = Mutex(false)
        stub.on(.get, "/members?page=1&per_page=2") { request in
            if request.headers["If-None-Match"] == "\"p1\"" { return TransportResponse(status: 304, headers: ["ETag": "\"p1\""]) }
            return Self.json(#"[{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]"#, ["ETag": "\"p1\""])
        }
        stub.on(.get, "/members?page=2&per_page=2") { _ in
            grown.withLock { $0 } ? Self.json(#"[{"id": 3, "name": "c"}]"#) : Self.json(#"{"detail": "no such page"}"#, status: 404)
        }
        func client(_ folder: TemporaryDirectory) throws -> Client {
            try Self.builder(try Self.store(kind, folder), stub).pagination(.pages(size: 2, sizeParameter: "per_page"), for: "Member").build()
        }

        let folder = try TemporaryDirectory()
        let first = try client(folder)
        let once = try await first.fetchObjects("Member", from: "/members")
        #expect(once.objects.count == 2 && once.pages == 1)

        // A third member, added since, lands on page 2; page 1 is unchanged (304).
        grown.withLock { $0 = true }
        let again = try await first.fetchObjects("Member", from: "/members")
        #expect(stub.requests(.get, "/members?page=1&per_page=2").last?.headers["If-None-Match"] == "\"p1\"")
        #expect(again.objects.map { $0["id"] } == [.int(1), .int(2), .int(3)])
        #expect(again.pages == 2 && !again.notModified)
        #expect(again.importResult.objects.count == 1, "only the second page is imported: the first is unchanged")
        #expect(try await first.count(Query("Member")) == 3)

        // With deleteMissing, a list that goes on after a 304 is fetched whole again.
        grown.withLock { $0 = false }
        let other = try TemporaryDirectory()
        let second = try client(other)
        _ = try await second.fetchObjects("Member", from: "/members")
        try await second.import(Data(#"[{"id": 9, "name": "local only"}]"#.utf8), as: "Member")
        grown.withLock { $0 = true }
        stub.clearRequests()
        let whole = try await second.fetchObjects("Member", from: "/members", options: ImportOptions(deleteMissing: .all))
        #expect(whole.objects.map { $0["id"] } == [.int(1), .int(2), .int(3)])
        #expect(try await second.object("Member", identity: .int(9)) == nil)
        #expect(stub.requests(.get, "/members?page=1&per_page=2").map { $0.headers["If-None-Match"] } == ["\"p1\"", nil])
    }

    @Test(arguments: ["memory", "sqlite"])
    func aNotModifiedFirstPageOfARelationshipGoesOnToTheNextPages(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let stub = StubTransport()
        let grown = Mutex(false)
        stub.on(.get, "/members/1/repos?page=1&per_page=2") { request in
            if request.headers["If-None-Match"] == "\"r1\"" { return TransportResponse(status: 304) }
            return Self.json(#"[{"id": 10, "title": "a"}, {"id": 11, "title": "b"}]"#, ["ETag": "\"r1\""])
        }
        stub.on(.get, "/members/1/repos?page=2&per_page=2") { _ in
            grown.withLock { $0 } ? Self.json(#"[{"id": 12, "title": "c"}]"#) : Self.json(#"{"detail": "no such page"}"#, status: 404)
        }
        let client = try Self.builder(try Self.store(kind, folder), stub)
            .pagination(.pages(size: 2, sizeParameter: "per_page"), for: "Repo")
            .relationshipResource("/members/:id/repos", for: "repositories", of: "Member")
            .build()
        let member = try #require(try await client.import(Data(#"[{"id": 1, "name": "a"}]"#.utf8), as: "Member").objects.first)
        let repositories = client.relationship("repositories", of: member)
        #expect(try await repositories.list().objects.count == 2)

        grown.withLock { $0 = true }
        let again = try await repositories.list()
        #expect(stub.requests(.get, "/members/1/repos?page=1&per_page=2").last?.headers["If-None-Match"] == "\"r1\"")
        #expect(again.objects.map { $0["id"] } == [.int(10), .int(11), .int(12)])
        #expect(Set(try await client.related("repositories", of: member).map { $0["id"] }) == [.int(10), .int(11), .int(12)])
    }

    // MARK: 7. A rejected save cannot be undone by refresh

    @Test(arguments: ["memory", "sqlite"])
    func aRefreshAfterARefusedSaveBringsTheServersValuesBack(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let stub = StubTransport()
        stub.on(.get, "/members/1") { request in
            if request.headers["If-None-Match"] == "\"v1\"" { return TransportResponse(status: 304, headers: ["ETag": "\"v1\""]) }
            return Self.json(#"{"id": 1, "name": "Ann", "email": "ann@example.com"}"#, ["ETag": "\"v1\""])
        }
        stub.on(.patch, "/members/1", response: Self.json(#"{"detail": "boom"}"#, status: 500))
        let client = try Self.builder(try Self.store(kind, folder), stub).build()
        let member = try await client.fetchObject("Member", from: "/members/1")

        try await client.updateLocally(member.id, setting: ["name": .string("Refused")])
        let error = await #expect(throws: HTTPError.self) { try await client.save(member.id) }
        #expect(error?.status == 500)
        #expect(try await client.object(member.id)?["name"] == .string("Refused"))

        let back = try await client.refresh(member.id)
        #expect(back["name"] == .string("Ann"))
        #expect(stub.requests(.get, "/members/1").last?.headers["If-None-Match"] == nil)
        // Nothing pending any more: the next refresh is conditional again, and a 304 keeps Ann.
        let again = try await client.refresh(member.id)
        #expect(stub.requests(.get, "/members/1").last?.headers["If-None-Match"] == "\"v1\"")
        #expect(again["name"] == .string("Ann"))
        _ = try await client.save(member.id)
        #expect(stub.requests(.patch).count == 1, "nothing is pending after the refresh")

        // An unsent change too.
        try await client.updateLocally(member.id, setting: ["email": .string("local@example.com")])
        #expect(try await client.refresh(member.id)["email"] == .string("ann@example.com"))
    }

    // MARK: 8. A create answered without a body

    @Test(arguments: ["memory", "sqlite"])
    func aCreateWithoutABodyTakesItsIdentityFromLocationOrIsMarkedUnconfirmed(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let stub = StubTransport()
        stub.on(.post, "/members", once: true, response: TransportResponse(status: 201, headers: ["Location": "/members/7"]))
        stub.on(.get, "/members/7", response: Self.json(#"{"id": 7, "name": "Seven", "email": "seven@example.com"}"#, ["ETag": "\"s7\""]))
        let client = try Self.builder(try Self.store(kind, folder), stub).build()

        // A Location: the object is read from it, into the same local object.
        let local = try await client.insertLocally("Member", values: ["name": .string("Seven")])
        let created = try await client.create(local.id)
        #expect(created.id == local.id)
        #expect(created["id"] == .int(7) && created["email"] == .string("seven@example.com"))
        #expect(try await client.isUnconfirmed(local.id) == false)
        #expect(try await client.count(Query("Member")) == 1)

        // No Location: kept, marked as not confirmed by the server, and the call says so.
        stub.on(.post, "/members", response: TransportResponse(status: 204))
        let quiet = try await client.insertLocally("Member", values: ["name": .string("Quiet")])
        let error = await #expect(throws: UnconfirmedCreateError.self) { try await client.create(quiet.id) }
        #expect(error?.id == quiet.id && error?.status == 204)
        #expect(error?.description.contains("Location") == true)
        #expect(try await client.object(quiet.id)?["name"] == .string("Quiet"))
        #expect(try await client.isUnconfirmed(quiet.id))

        // From values: stored as sent (nothing lost), marked too.
        let fromValues = await #expect(throws: UnconfirmedCreateError.self) {
            try await client.create("Member", values: ["name": .string("Valued")])
        }
        let valued = try #require(fromValues?.id)
        #expect(try await client.isUnconfirmed(valued))
        // With its identity in the values, an object is the server's as it was sent.
        let identified = try await client.create("Member", values: ["id": .int(8), "name": .string("Eight")])
        #expect(try await client.isUnconfirmed(identified.id) == false)

        if kind == "sqlite" {
            // The mark survives a restart.
            let reopened = try Self.builder(try SQLiteStore(path: folder.path()), stub).build()
            #expect(try await reopened.isUnconfirmed(quiet.id))
            #expect(try await reopened.isUnconfirmed(valued))
            #expect(try await reopened.isUnconfirmed(local.id) == false)
        }
    }

    // MARK: 9. An import of an enveloped list

    @Test(arguments: ["memory", "sqlite"])
    func anImportHonoursTheResponseShape(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let stripe = Data(#"{"object": "list", "data": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}], "has_more": true, "url": "/v1/members"}"#.utf8)

        // Undeclared: an error naming the keys and the builder call, never an import of nothing.
        let plain = try Self.builder(try Self.store(kind, folder), StubTransport()).build()
        let error = await #expect(throws: ImportError.self) { try await plain.import(stripe, as: "Member") }
        #expect(error?.message.contains("responseShape") == true)
        await #expect(throws: ImportError.self) { try await plain.import(try JSON(parsing: stripe), as: "Member") }
        #expect(try await plain.count(Query("Member")) == 0)

        // Declared: the list's objects, from bytes, parsed JSON, typed, a file, and into a parent.
        let other = try TemporaryDirectory()
        let client = try Self.builder(try Self.store(kind, other), StubTransport()).responseShape(.keyPath("data"), for: "Member")
            .responseShape(.keyPath("data"), for: "Repo").build()
        let result = try await client.import(stripe, as: "Member")
        #expect(result.objects.count == 2)
        let models = try await client.import(stripe, as: Member.self)
        #expect(models.map(\.id) == [1, 2])
        let file = other.url.appendingPathComponent("members.json")
        try stripe.write(to: file)
        #expect(try await client.import(contentsOf: file, as: "Member").objects.count == 2)
        // A bare array is the list itself, whatever the shape.
        #expect(try await client.import(Data(#"[{"id": 3}]"#.utf8), as: "Member").objects.count == 1)
        let one = try #require(try await client.object("Member", identity: .int(1)))
        let repos = try await client.import(Data(#"{"object": "list", "data": [{"id": 10, "title": "r"}]}"#.utf8), as: "Repo",
                                            into: "repositories", of: one.id)
        #expect(repos.objects.count == 1)
        #expect(try await client.related("repositories", of: one.id).count == 1)
    }

    // MARK: 10. Writes do not carry the paging parameters

    @Test(arguments: ["memory", "sqlite"])
    func writesLeaveOutThePagingParametersOfAListURL(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let stub = StubTransport()
        stub.on(.post, "/members/1/repos") { request in
            #expect(request.url.query == nil)
            return Self.json(#"{"id": 5, "title": "r"}"#, status: 201)
        }
        stub.on(.delete, "/members/1/repos/5", status: 204)
        stub.on(.post, "/repos", response: Self.json(#"{"id": 6, "title": "s"}"#, status: 201))
        stub.on(.patch, "/repos/6", response: Self.json(#"{"id": 6, "title": "t"}"#))
        let client = try Self.builder(try Self.store(kind, folder), stub)
            .relationshipResource("/members/:id/repos?per_page=3", for: "repositories", of: "Member")
            .resource("/repos?per_page=50&page=1&sort=name", for: "Repo")
            .build()
        let member = try #require(try await client.import(Data(#"[{"id": 1, "name": "a"}]"#.utf8), as: "Member").objects.first)
        let repo = try await client.insertLocally("Repo", values: ["title": .string("r")])
        let resource = client.relationship("repositories", of: member)
        let added = try await resource.add(repo.id)
        #expect(added["id"] == .int(5))
        #expect(try await resource.remove(repo.id) == 204)
        let created = try await client.create("Repo", values: ["title": .string("s")])
        try await client.updateLocally(created.id, setting: ["title": .string("t")])
        _ = try await client.save(created.id)
        let sent = stub.requests.map { "\($0.method.rawValue) \($0.url.path)\($0.url.query.map { "?" + $0 } ?? "")" }
        // Another parameter of the template (sort) is kept.
        #expect(sent == ["POST /members/1/repos", "DELETE /members/1/repos/5", "POST /repos?sort=name", "PATCH /repos/6?sort=name"])
    }
}

extension Data {
    fileprivate var utf8String: String { String(decoding: self, as: UTF8.self) }
}
