import Foundation
import Testing
import Tether
import TetherTesting

@Suite struct CRUDStubTests {
    let user1: JSON = ["id": 1, "login": "octocat", "name": "The Octocat", "site_admin": false, "created_at": "2011-01-25T18:44:36Z"]

    @Test func fetchOneObjectFindsOrCreatesThenUpdates() async throws {
        let stub = StubTransport()
        stub.on(.get, "/users/octocat", json: user1)
        let client = try makeClient(stub)
        let existing = try await seed(client, "User", ["id": 1, "login": "octocat", "name": "old"])[0]
        let fetched = try await client.fetchObject("User", from: "/users/octocat")
        #expect(fetched.id == existing.id)
        #expect(fetched["name"] == .string("The Octocat"))
        #expect(try await client.count(Query("User")) == 1)
        #expect(stub.requests.first?.headers["Accept"] == "application/json")
    }

    @Test func fetchesAnArrayAndTheObjectsOfARelationship() async throws {
        let stub = StubTransport()
        stub.on(.get, "/users/octocat/repos", json: [
            ["id": 10, "name": "a", "full_name": "octocat/a"], ["id": 11, "name": "b", "full_name": "octocat/b"],
        ])
        stub.on(.get, "/users", json: [user1, ["id": 2, "login": "hubot", "name": nil]])
        let client = try makeBuilder(transport: stub).relationshipResource("/users/:login/repos", for: "repositories", of: "User").build()
        let users = try await client.fetchObjects("User", from: "/users")
        #expect(users.objects.map { $0["login"] } == [.string("octocat"), .string("hubot")])
        #expect(users.pages == 1)
        let octocat = users.objects[0]
        let old = try await seed(client, "Repository", ["id": 9, "name": "gone", "owner_id": 1])[0]
        #expect(try await client.related("repositories", of: octocat.id).map(\.id) == [old.id])

        let repos = try await client.relationship("repositories", of: octocat.id).list()
        #expect(repos.objects.map { $0["name"] } == [.string("a"), .string("b")])
        // the set is replaced: the unlisted repository is unlinked, not deleted
        #expect(Set(try await client.related("repositories", of: octocat.id).map(\.id)) == Set(repos.objects.map(\.id)))
        #expect(try await client.object(old.id) != nil)
    }

    @Test func createMergesTheAnswerIntoTheSameLocalObject() async throws {
        let stub = StubTransport()
        stub.on(.post, "/repos/octocat%2Fhello/issues", status: 201, json: [
            "id": 99, "number": 5, "title": "Crash", "state": "open", "created_at": "2026-11-22T01:44:58.922346Z", "repository_id": 1,
        ])
        let client = try makeBuilder(transport: stub)
            .resource("/repos/:repository.full_name/issues", item: "/repos/:repository.full_name/issues/:number", for: "Issue")
            .build()
        let repo = try await seed(client, "Repository", ["id": 1, "full_name": "octocat/hello"])[0]
        let label = try await seed(client, "Label", ["id": 3, "name": "bug"])[0]
        let local = try await client.insertLocally("Issue", values: ["title": .string("Crash")], related: ["repository": [repo.id], "labels": [label.id]])
        let created = try await client.create(local.id)

        #expect(created.id == local.id)
        #expect(created["id"] == .int(99))
        #expect(created["number"] == .int(5))
        #expect(created["createdAt"] != nil)
        #expect(try await client.count(Query("Issue")) == 1)
        // the body: set attributes only, foreign keys from the relationships, no identity yet
        let body = try JSON(parsing: try #require(stub.requests.first?.body))
        #expect(body == ["title": "Crash", "repository_id": 1, "label_ids": [3]])
        #expect(stub.requests.first?.headers["Content-Type"]?.hasPrefix("application/json") == true)
    }

    @Test func createFromValuesStoresNothingUntilTheServerAccepts() async throws {
        let stub = StubTransport()
        stub.on(.post, "/users", once: true, status: 400, json: ["login": ["user with this login already exists."]])
        stub.on(.post, "/users", status: 201, json: ["id": 4, "login": "new-user", "name": "Néw Üser 🐙"])
        let client = try makeClient(stub)
        let error = await #expect(throws: HTTPError.self) {
            try await client.create("User", values: ["login": .string("octocat")])
        }
        #expect(error?.body.messages(for: "login") == ["user with this login already exists."])
        #expect(try await client.count(Query("User")) == 0)
        let created = try await client.create("User", values: ["login": .string("new-user"), "name": .string("Néw Üser 🐙")])
        #expect(created["id"] == .int(4))
        #expect(try await client.count(Query("User")) == 1)
    }

    @Test func saveRefreshAndDelete() async throws {
        let stub = StubTransport()
        stub.on(.patch, "/users/1", json: ["id": 1, "login": "octocat", "name": nil, "updated_at": "2026-01-01T00:00:00Z"])
        stub.on(.get, "/users/1", json: ["id": 1, "login": "octocat", "name": "Back"])
        stub.on(.delete, "/users/1", status: 204)
        stub.on(.delete, "/users/2", status: 404, json: ["detail": "Not found."])
        stub.on(.delete, "/users/3", status: 410)
        stub.on(.delete, "/users/4", status: 500, headers: ["Content-Type": "text/html"], body: Data("<h1>Server Error</h1>".utf8))
        let client = try makeClient(stub)
        let users = try await seed(client, "User", [
            ["id": 1, "login": "octocat", "name": "x"], ["id": 2, "login": "b"], ["id": 3, "login": "c"], ["id": 4, "login": "d"],
        ])
        let cleared = try await client.updateLocally(users[0].id, setting: [:], clearing: ["name"])
        #expect(cleared["name"] == nil)
        let saved = try await client.save(users[0].id, options: ExportOptions(includeNulls: true))
        // Only what changed: the cleared name as an explicit null.
        let body = try JSON(parsing: try #require(stub.requests(.patch).first?.body))
        #expect(body == .object(["name": .null]))
        #expect(saved["updatedAt"] != nil)
        // Nothing changed since: nothing is sent.
        _ = try await client.save(users[0].id)
        #expect(stub.requests(.patch).count == 1)

        #expect(try await client.refresh(users[0].id)["name"] == .string("Back"))

        #expect(try await client.delete(users[0].id) == 204)
        #expect(try await client.delete(users[1].id) == 404)
        #expect(try await client.delete(users[2].id) == 410)
        let error = await #expect(throws: HTTPError.self) { try await client.delete(users[3].id) }
        #expect(error?.status == 500)
        #expect(error?.body.isJSON == false)
        #expect(try await client.fetch(Query("User")).map(\.id) == [users[3].id])
    }

    @Test func aFailedRequestWritesNothing() async throws {
        let stub = StubTransport()
        stub.on(.get, "/users", once: true, headers: ["Link": #"<https://api.example.com/users?page=2>; rel="next""#], json: [user1])
        stub.on(.get, "/users?page=2", status: 503, json: ["message": "try later"])
        stub.on(.get, "/broken", status: 200, headers: ["Content-Type": "text/html"], body: Data("<html></html>".utf8))
        let client = try makeClient(stub)
        let changes = client.store.changes()
        await #expect(throws: HTTPError.self) { _ = try await client.fetchObjects("User", from: "/users") }
        await #expect(throws: JSONParseError.self) { _ = try await client.fetchObjects("User", from: "/broken") }
        #expect(try await client.count(Query("User")) == 0)
        // a transport failure: connection refused
        _ = changes
        #expect(stub.requests.count == 5, "page 2 sent three times: answered 503, it is retried twice")
    }

    @Test func followsLinkHeadersAndDRFEnvelopes() async throws {
        let stub = StubTransport()
        func link(_ page: Int, last: Int) -> HTTPHeaders {
            var parts = [#"<https://api.example.com/issues?page=1&per_page=2>; rel="first""#]
            if page < last { parts.append("<https://api.example.com/issues?page=\(page + 1)&per_page=2>; rel=\"next\"") }
            parts.append("<https://api.example.com/issues?page=\(last)&per_page=2>; rel=\"last\"")
            return ["Link": parts.joined(separator: ", ")]
        }
        stub.on(.get, "/issues?per_page=2", headers: link(1, last: 3), json: [["id": 1], ["id": 2]])
        stub.on(.get, "/issues?page=2&per_page=2", headers: link(2, last: 3), json: [["id": 3], ["id": 4]])
        stub.on(.get, "/issues?page=3&per_page=2", headers: link(3, last: 3), json: [["id": 5]])
        stub.on(.get, "/api/labels", json: ["count": 3, "next": "https://api.example.com/api/labels?page=2", "previous": nil,
                                            "results": [["id": 1, "name": "bug"], ["id": 2, "name": "enhancement"]]])
        stub.on(.get, "/api/labels?page=2", json: ["count": 3, "next": nil, "previous": "https://api.example.com/api/labels",
                                                   "results": [["id": 3, "name": "good first issue"]]])
        let client = try makeClient(stub)
        let changes = client.store.changes()
        let issues = try await client.fetchObjects("Issue", from: "/issues?per_page=2")
        #expect(issues.pages == 3)
        #expect(issues.objects.map { $0["id"] } == (1...5).map { .int($0) })
        let labels = try await client.fetchObjects("Label", from: "/api/labels")
        #expect(labels.pages == 2)
        #expect(labels.objects.compactMap { $0["name", as: String.self] } == ["bug", "enhancement", "good first issue"])
        // one transaction per fetch, whatever the number of pages
        var iterator = changes.makeAsyncIterator()
        #expect(await iterator.next()?.inserted.count == 5)
        #expect(await iterator.next()?.inserted.count == 3)
    }

    @Test func parsesLinkHeaders() {
        let headers: HTTPHeaders = ["Link": #"<https://x/a?page=2>; rel="next", <https://x/a?page=5>; rel="last prev""#]
        #expect(LinkHeader.url(rel: "next", in: headers)?.absoluteString == "https://x/a?page=2")
        #expect(LinkHeader.url(rel: "prev", in: headers)?.absoluteString == "https://x/a?page=5")
        #expect(LinkHeader.url(rel: "first", in: headers) == nil)
        #expect(LinkHeader.url(rel: "next", in: ["Link": "</b?page=3>; rel=next"], relativeTo: URL(string: "https://h/a"))?.absoluteString == "https://h/b?page=3")
    }

    @Test func relationshipAddAndRemove() async throws {
        let stub = StubTransport()
        stub.on(.post, "/users/octocat/repos", status: 201, json: ["id": 50, "name": "new", "full_name": "octocat/new", "owner_id": 1])
        stub.on(.delete, "/users/octocat/repos/50", status: 204)
        let client = try makeBuilder(transport: stub).relationshipResource("/users/:login/repos", for: "repositories", of: "User").build()
        let user = try await seed(client, "User", user1)[0]
        let local = try await client.insertLocally("Repository", values: ["name": .string("new")])
        let repos = client.relationship("repositories", of: user.id)
        let added = try await repos.add(local.id)
        #expect(added.id == local.id)
        #expect(added["id"] == .int(50))
        #expect(try await client.related("repositories", of: user.id).map(\.id) == [local.id])
        #expect(try await repos.remove(local.id) == 204)
        #expect(try await client.related("repositories", of: user.id).isEmpty)
        #expect(try await client.object(local.id) != nil)
        #expect(stub.requests.map(\.method) == [.post, .delete])
        await #expect(throws: RequestError.self) { _ = try await client.relationship("issues", of: user.id).list() }
    }

    @Test func perEntityTransportOverridesTheDefault() async throws {
        let main = StubTransport()
        let labels = StubTransport()
        main.on(.get, "/users", json: [user1])
        labels.on(.get, "/labels", json: [["id": 1, "name": "bug"]])
        let client = try makeBuilder(transport: main).transport(labels, for: "Label").build()
        #expect(client.transport(for: "Label") as? StubTransport === labels)
        _ = try await client.fetchObjects("User", from: "/users")
        _ = try await client.fetchObjects("Label", from: "/labels")
        #expect(main.requests.map(\.url.path) == ["/users"])
        #expect(labels.requests.map(\.url.path) == ["/labels"])
    }

    @Test func authHookAndDefaultHeadersReachEveryRequest() async throws {
        let stub = StubTransport()
        stub.on(.get, nil, json: [user1])
        let client = try makeBuilder(transport: stub)
            .requestHook(AuthorizationHook(scheme: "Bearer") { "t0ken" })
            .requestHook(DefaultHeaders(["Accept": "application/vnd.github+json", "User-Agent": "TetherTests"]))
            .build()
        _ = try await client.fetchObjects("User", from: "/users")
        _ = try await client.fetchObject("User", from: "/users/octocat")
        #expect(stub.requests.count == 2)
        for request in stub.requests {
            #expect(request.headers["Authorization"] == "Bearer t0ken")
            #expect(request.headers["User-Agent"] == "TetherTests")
            #expect(request.headers["Accept"] == "application/json")  // already set: DefaultHeaders does not replace
        }
    }

    @Test func exportUsesTheMappingInReverse() async throws {
        let client = try makeBuilder(transport: StubTransport())
            .keyMapping(KeyOverrides(["User": ["siteAdmin": "flags.admin"]]))
            .build()
        let issue = try await seed(client, "Issue", [
            "id": 1, "title": "T", "body": nil, "closed_at": "2024-05-01T10:00:00Z",
            "user": ["id": 2, "login": "hubot", "flags": ["admin": true]], "labels": [["id": 1], ["id": 3]],
        ])[0]
        let json = try await client.export(issue.id)
        #expect(json == ["id": 1, "title": "T", "closed_at": "2024-05-01T10:00:00Z", "user_id": 2, "label_ids": [1, 3]])
        let user = try #require(try await client.fetch(Query("User")).first)
        // nested key paths; the one-to-many side (repositories, issues) is left out
        #expect(try await client.export(user.id) == ["id": 2, "login": "hubot", "flags": ["admin": true]])
        #expect(try await client.export(user.id, options: ExportOptions(relationships: .all))["issue_ids"] == [1])
    }
}

/// Answers without a body and saves by PUT (issue 20's save semantics, first part).
@Suite struct SaveSemanticsTests {
    @Test func aCreateAnsweredWithoutABodyOrLocationKeepsTheLocalObjectMarkedUnconfirmed() async throws {
        let stub = StubTransport()
        stub.on(.post, "/users", status: 204)
        let client = try makeClient(stub)
        let local = try await client.insertLocally("User", values: ["login": .string("new")])
        // No identity and no Location: not an ordinary stored object, and the call says so.
        let error = await #expect(throws: UnconfirmedCreateError.self) { try await client.create(local.id) }
        #expect(error?.id == local.id)
        #expect(try await client.object(local.id)?["login"] == .string("new"))
        #expect(try await client.isUnconfirmed(local.id))
        #expect(stub.requests(.post, "/users").count == 1)
    }

    @Test func aCreateAnsweredWithALocationReadsTheObjectFromIt() async throws {
        let stub = StubTransport()
        stub.on(.post, "/users", once: true, response: TransportResponse(status: 201, headers: ["Location": "https://api.example.com/users/12"]))
        stub.on(.get, "/users/12", json: ["id": 12, "login": "new", "name": "New"])
        let client = try makeClient(stub)
        let local = try await client.insertLocally("User", values: ["login": .string("new")])
        let created = try await client.create(local.id)
        #expect(created.id == local.id && created["id"] == .int(12) && created["name"] == .string("New"))
        #expect(try await client.isUnconfirmed(local.id) == false)
        // A Location on another host is not read with the client's credentials.
        stub.on(.post, "/users", response: TransportResponse(status: 201, headers: ["Location": "https://evil.example/users/13"]))
        let other = try await client.insertLocally("User", values: ["login": .string("other")])
        let error = await #expect(throws: UnconfirmedCreateError.self) { try await client.create(other.id) }
        #expect(error?.reason.contains("evil.example") == true)
        #expect(stub.requests(.get).count == 1)
    }

    @Test func aCreateFromValuesAnsweredWithoutABodyStoresWhatWasSent() async throws {
        let stub = StubTransport()
        stub.on(.post, "/users", status: 201)
        let client = try makeClient(stub)
        let created = try await client.create("User", values: ["id": .int(7), "login": .string("seven")])
        #expect(created["id"] == .int(7))
        #expect(try await client.object("User", identity: .int(7))?.id == created.id)
    }

    @Test func anEmptyGETNamesItsStatus() async throws {
        let stub = StubTransport()
        stub.on(.get, "/users/1", status: 204)
        let client = try makeClient(stub)
        let error = await #expect(throws: RequestError.self) { _ = try await client.fetchObject("User", from: "/users/1") }
        #expect(error?.kind == .emptyResponse)
        #expect(error?.message.contains("204") == true)
    }

    @Test func savesGoByPUTWhereTheBuilderSaysSo() async throws {
        let stub = StubTransport()
        stub.on(.put, "/users/1", json: ["id": 1, "login": "renamed"])
        stub.on(.patch, "/repositories/5", status: 204)
        let client = try makeBuilder(transport: stub).saveMethod(.put, for: "User").build()
        _ = try await seed(client, "User", ["id": 1, "login": "octocat"])
        _ = try await seed(client, "Repository", ["id": 5, "name": "r"])
        let user = try #require(try await client.object("User", identity: .int(1)))
        let saved = try await client.save(user.id)
        #expect(saved["login"] == .string("renamed"))
        // A PUT sends the whole object; a PATCH what changed.
        #expect(try JSON(parsing: try #require(stub.requests(.put).first?.body)) == .object(["id": 1, "login": "octocat"]))
        let repository = try #require(try await client.object("Repository", identity: .int(5)))
        try await client.updateLocally(repository.id, setting: ["name": .string("s")])
        _ = try await client.save(repository.id)
        #expect(stub.requests.map(\.method) == [.put, .patch])
        #expect(try JSON(parsing: try #require(stub.requests(.patch).first?.body)) == .object(["name": "s"]))
        let everything = try makeBuilder(transport: stub).saveMethod(.put).build()
        #expect(everything.remote.saveMethod == .put)
        #expect(throws: ConfigurationError.self) { _ = try makeBuilder(transport: stub).saveMethod(.put, for: "Nope").build() }
    }
}
