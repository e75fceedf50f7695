import Foundation
import Testing
import Tether
import TetherTesting

// Typed models (EntityModel): the string API's main tests, written with Codable structs.

private struct User: EntityModel {
    var id: Int64
    var login: String
    var name: String?
    var siteAdmin: Bool?
    var repositories: [Repository] = []

    static func describe(_ model: inout ModelDescription<Self>) {
        model.jsonKey(\.siteAdmin, "site_admin")
    }
}

private enum Visibility: String, Codable, Sendable, CaseIterable { case `public`, `private` }

private struct Repository: EntityModel {
    var id: Int64?
    var fullName: String
    var stars: Int = 0
    var visibility: Visibility?
    var createdAt: Date?
    var owner: User?
    var issues: [Issue] = []

    static func describe(_ model: inout ModelDescription<Self>) {
        model.jsonKey(\.fullName, "full_name")
        model.jsonKey(\.stars, "stargazers_count")
        model.jsonKey(\.createdAt, "created_at")
        model.deleteRule(\.issues, .cascade)
        model.readOnly(\.createdAt)
    }
}

private struct Issue: EntityModel {
    enum State: String, Codable, Sendable, CaseIterable { case open, closed }
    var id: Int64?
    var number: Int?
    var title: String
    var state: State = .open
    var repository: Repository?
    var labels: [Label] = []

    static func describe(_ model: inout ModelDescription<Self>) {
        model.ordered(\.labels)
    }
}

private struct Label: EntityModel {
    var id: Int64
    var name: String
    var color: String?
    var issues: [Issue] = []
}

private let base = URL(string: "https://api.example.com")!

private func makeClient(_ transport: StubTransport = StubTransport()) throws -> Client {
    try Client.Builder(models: [User.self, Repository.self, Issue.self, Label.self])
        .transport(transport)
        .baseURL(base)
        .resource("/users", item: "/users/:login", for: "User")
        .resource("/repos", item: "/repos/:fullName", for: "Repository")
        .resource("/repos/:repository.fullName/issues", item: "/repos/:repository.fullName/issues/:number", for: "Issue")
        .relationshipResource("/repos/:repository.fullName/issues/:number/labels", for: "labels", of: "Issue")
        .build()
}

private let repositoriesJSON = Data(#"""
    [{"id": 1, "full_name": "octocat/hello", "stargazers_count": 80, "visibility": "public",
      "created_at": "2011-01-26T19:01:12Z", "owner": {"id": 7, "login": "octocat", "site_admin": false}},
     {"id": 2, "full_name": "octocat/spoon", "stargazers_count": 3, "visibility": "private",
      "owner": {"id": 7, "login": "octocat"}},
     {"id": 3, "full_name": "hubot/brain", "stargazers_count": 12, "owner": {"id": 8, "login": "hubot", "name": "Hubot"}}]
    """#.utf8)

@Suite struct ModelTests {
    @Test func theSchemaComesFromTheModels() throws {
        let client = try makeClient()
        let repository = try #require(client.schema["Repository"])
        #expect(repository.identity == ["id"])
        #expect(repository.attributes.map(\.name) == ["id", "fullName", "stars", "visibility", "createdAt"])
        #expect(repository.attribute(named: "stars")?.type == .int64)
        #expect(repository.attribute(named: "visibility")?.type == .string)
        #expect(repository.attribute(named: "createdAt")?.type == .date)
        let owner = try #require(repository.relationship(named: "owner"))
        #expect(owner.kind == .toOne && owner.destination == "User" && owner.inverse == "repositories")
        #expect(repository.relationship(named: "issues")?.deleteRule == .cascade)
        #expect(client.schema["User"]?.relationship(named: "repositories")?.inverse == "owner")
        #expect(client.schema["Issue"]?.relationship(named: "labels")?.kind == .orderedToMany)
        #expect(client.schema["Label"]?.relationship(named: "issues")?.inverse == "labels")
        #expect(client.mapping["Repository"]?.keyPath(for: "fullName") == "full_name")
        #expect(client.remote.readOnly["Repository"] == ["createdAt"])
    }

    @Test func importReturnsModelsInPayloadOrderWithTheirRelationships() async throws {
        let client = try makeClient()
        let repositories = try await client.import(repositoriesJSON, as: Repository.self)
        #expect(repositories.map(\.fullName) == ["octocat/hello", "octocat/spoon", "hubot/brain"])
        #expect(repositories[0].stars == 80 && repositories[0].visibility == .public)
        #expect(repositories[0].createdAt == Date(timeIntervalSince1970: 1_296_068_472))
        #expect(repositories[2].visibility == nil && repositories[2].createdAt == nil)
        #expect(repositories[0].owner?.login == "octocat" && repositories[0].owner?.siteAdmin == false)
        // depth 1: the owner carries attributes only
        #expect(repositories[0].owner?.repositories.isEmpty == true)
        // one object per identity
        #expect(try await client.count(User.self) == 2)

        let users = try await client.fetch(User.self, sortedBy: [.ascending(\.login)], depth: 2)
        #expect(users.map(\.login) == ["hubot", "octocat"])
        #expect(users[1].repositories.map(\.fullName).sorted() == ["octocat/hello", "octocat/spoon"])
        // depth 2: the repositories carry their owner, which carries attributes only
        #expect(users[1].repositories.allSatisfy { $0.owner?.login == "octocat" && $0.owner?.repositories.isEmpty == true })

        // importing again updates the same objects
        let again = try await client.import(Data(#"{"id": 1, "full_name": "octocat/hello", "stargazers_count": 81}"#.utf8), as: Repository.self)
        #expect(again.map(\.stars) == [81])
        #expect(again[0].owner?.login == "octocat")
        #expect(try await client.count(Repository.self) == 3)
    }

    @Test func aTypedImportReportsWhatItSkippedAndWhy() async throws {
        let client = try makeClient()
        let payload = Data(#"[{"id": 1, "full_name": "octocat/hello", "stargazers_count": 1, "created_at": "not a date"}, {"full_name": "no id"}, {"id": 2, "full_name": "octocat/spoon", "stargazers_count": 2}]"#.utf8)
        let imported = try await client.importReport(payload, as: Repository.self)
        #expect(imported.models.map(\.fullName) == ["octocat/hello", "octocat/spoon"])
        #expect(imported.report.inserted.count == 2)
        let paths = imported.report.diagnostics.map(\.path.description)
        #expect(paths.contains("$[0].created_at") && paths.contains("$[1].id"), "\(paths)")
        // The same from a parsed value.
        let again = try await client.importReport(try JSON(parsing: payload), as: Repository.self)
        #expect(again.models.map(\.fullName) == ["octocat/hello", "octocat/spoon"] && again.report.unchanged.count == 2)
        #expect(again.report.diagnostics.count == imported.report.diagnostics.count)
    }

    @Test func typedPredicatesAndSorts() async throws {
        let client = try makeClient()
        try await client.import(repositoriesJSON, as: Repository.self)
        func names(_ predicate: ModelPredicate<Repository>?, _ sort: [ModelSort<Repository>] = [.ascending(\.fullName)]) async throws -> [String] {
            try await client.fetch(Repository.self, where: predicate, sortedBy: sort).map(\.fullName)
        }
        #expect(try await names(.hasPrefix(\.fullName, "octocat/")) == ["octocat/hello", "octocat/spoon"])
        #expect(try await names(.greater(\.stars, 10), [.descending(\.stars)]) == ["octocat/hello", "hubot/brain"])
        #expect(try await names(.equal(\.visibility, .private)) == ["octocat/spoon"])
        #expect(try await names(.equal(\.visibility, nil)) == ["hubot/brain"])
        #expect(try await names(.notEqual(\.createdAt, nil)) == ["octocat/hello"])
        #expect(try await names(.in(\.stars, [3, 12])) == ["hubot/brain", "octocat/spoon"])
        #expect(try await names(.contains(\.fullName, "t/b") || .lessOrEqual(\.stars, 3)) == ["hubot/brain", "octocat/spoon"])
        #expect(try await names(!.hasPrefix(\.fullName, "octocat/") && .greaterOrEqual(\.stars, 12)) == ["hubot/brain"])
        #expect(try await client.fetch(Repository.self, sortedBy: [.descending(\.stars)], limit: 1, offset: 1).map(\.stars) == [12])
        #expect(try await client.count(Repository.self, where: .less(\.stars, 50)) == 2)
        // the same query through the string API
        let query = try client.query(Repository.self, where: .greater(\.stars, 10))
        #expect(query.condition == .greater("stars", .int(10)))
        // a relationship has no value to compare or sort by
        let error = await #expect(throws: ModelError.self) { try await names(nil, [.ascending(\.owner)]) }
        #expect(error?.member == "owner")
    }

    @Test func findByIdentityAndFollowRelationships() async throws {
        let client = try makeClient()
        try await client.import(repositoriesJSON, as: Repository.self)
        let hello = try #require(try await client.model(Repository.self, identity: "1"))  // converted as an import converts ids
        #expect(hello.fullName == "octocat/hello")
        #expect(try await client.model(Repository.self, identity: 99) == nil)
        let owner = try await client.related(\.owner, of: hello)
        #expect(owner?.login == "octocat")
        let theirs = try await client.related(\.repositories, of: try #require(owner), depth: 0)
        #expect(theirs.map(\.fullName).sorted() == ["octocat/hello", "octocat/spoon"])
        #expect(theirs.allSatisfy { $0.owner == nil })
        #expect(try await client.objectID(of: hello) != nil)
        #expect(try await client.objectID(of: Repository(id: nil, fullName: "new")) == nil)
    }

    @Test func aModelMayBeAPartialViewOfAHandDeclaredEntity() async throws {
        struct Person: EntityModel {
            static let entityName = "User"
            var id: Int64
            var login: String
        }
        let schema = try Schema {
            Entity("User") {
                Attribute("id", .int64)
                Attribute("login", .string)
                Attribute("email", .string)
                Attribute("score", .int32)
            }
        }
        let client = try Client.Builder(schema: schema).build()
        try await client.import((["id": 1, "login": "ada", "email": "ada@example.com"] as JSON), as: "User")
        let people = try await client.fetch(Person.self)
        #expect(people.map(\.login) == ["ada"])

        struct WrongType: EntityModel {
            static let entityName = "User"
            var id: Int64
            var email: Int
        }
        let mismatch = await #expect(throws: ModelError.self) { try await client.fetch(WrongType.self) }
        #expect(mismatch?.kind == .mismatchedProperty && mismatch?.member == "email")

        struct Unknown: EntityModel { var id: Int64 }
        let unknown = await #expect(throws: ModelError.self) { try await client.fetch(Unknown.self) }
        #expect(unknown?.kind == .unknownEntity)

        // An unset attribute read into a non-optional property is an error naming it.
        struct Scored: EntityModel {
            static let entityName = "User"
            var id: Int64
            var score: Int32
        }
        let unset = await #expect(throws: ModelError.self) { try await client.fetch(Scored.self) }
        #expect(unset?.kind == .unsetAttribute && unset?.member == "score")
    }

    @Test func modelsThatCannotBeEntitiesSaySo() throws {
        // Arrays and maps of strings, numbers, Bools and Dates are attributes; of other values, not.
        struct Tags: EntityModel {
            var id: Int64
            var tags: [UUID]
        }
        #expect { try Schema(models: [Tags.self]) } throws: { ($0 as? ModelError)?.kind == .unsupportedProperty && ($0 as? ModelError)?.member == "tags" }
        struct Nested: EntityModel {
            var id: Int64
            var groups: [String: [String]]
        }
        #expect { try Schema(models: [Nested.self]) } throws: { ($0 as? ModelError)?.kind == .unsupportedProperty && ($0 as? ModelError)?.member == "groups" }

        struct Owner: EntityModel { var id: Int64 }
        struct Pet: EntityModel {
            var id: Int64
            var owner: Owner
        }
        #expect { try Schema(models: [Owner.self, Pet.self]) } throws: { ($0 as? ModelError)?.kind == .nonOptionalToOne }

        struct Dangling: EntityModel {
            var id: Int64
            var owner: Owner?
        }
        #expect(throws: SchemaError.self) { try Schema(models: [Dangling.self]) }
    }

    @Test func aKeyPathToAnUncodedPropertyIsAnError() async throws {
        struct Note: EntityModel {
            var id: Int64
            var text: String
            var local = 0
            var shout: String { text.uppercased() }
            enum CodingKeys: String, CodingKey { case id, text }
        }
        let client = try Client.Builder(models: [Note.self]).build()
        try await client.import((["id": 1, "text": "hi"] as JSON), as: Note.self)
        let error = await #expect(throws: ModelError.self) { try await client.fetch(Note.self, where: .equal(\.local, 0)) }
        #expect(error?.kind == .unmappedKeyPath)
        await #expect(throws: ModelError.self) { try await client.fetch(Note.self, sortedBy: [.ascending(\.shout)]) }
        #expect(try await client.fetch(Note.self, where: .equal(\.text, "hi")).map(\.id) == [1])
    }

    @Test func createSendsNoUnsetIdentityAndReturnsTheStoredModel() async throws {
        let stub = StubTransport()
        stub.on(.post, "/repos/octocat%2Fhello/issues", status: 201, json: [
            "id": 99, "number": 5, "title": "Crash", "state": "open", "repository_id": 1,
        ])
        let client = try makeClient(stub)
        let hello = try #require(try await client.import(repositoriesJSON, as: Repository.self).first)
        try await client.import((["id": 3, "name": "bug"] as JSON), as: Label.self)
        let bug = try #require(try await client.model(Label.self, identity: 3))

        let created = try await client.create(Issue(title: "Crash", repository: hello, labels: [bug]))
        #expect(created.id == 99 && created.number == 5)
        #expect(created.repository?.fullName == "octocat/hello")
        #expect(created.labels.map(\.name) == ["bug"])
        let body = try JSON(parsing: try #require(stub.requests.first?.body))
        #expect(body == ["title": "Crash", "state": "open", "repository_id": 1, "label_ids": [3]])
        #expect(body["id"] == nil && body["number"] == nil)
        #expect(try await client.count(Issue.self) == 1)

        // a read-only property is not sent
        stub.on(.post, "/repos", status: 201, json: ["id": 4, "full_name": "octocat/new", "stargazers_count": 0])
        let repository = try await client.create(Repository(fullName: "octocat/new", createdAt: Date()))
        #expect(repository.id == 4)
        let sent = try JSON(parsing: try #require(stub.requests(.post, "/repos").first?.body))
        #expect(sent["created_at"] == nil && sent["full_name"] == "octocat/new")
    }

    @Test func saveSendsWhatChangedAndDeleteAndRefreshFindTheObjectByIdentity() async throws {
        let stub = StubTransport()
        let client = try makeClient(stub)
        try await client.import(repositoriesJSON, as: Repository.self)
        var hello = try #require(try await client.model(Repository.self, identity: 1))
        let serverCopy: JSON = ["id": 1, "full_name": "octocat/hello", "stargazers_count": 90, "visibility": "public"]
        // confirm the stored copy once, so that a PATCH sends only what changes afterwards
        stub.on(.get, "/repos/octocat%2Fhello", once: true, json: serverCopy)
        hello = try await client.refresh(hello)
        #expect(hello.stars == 90)

        hello.stars = 91
        hello.visibility = nil
        stub.on(.patch, "/repos/octocat%2Fhello", status: 200, json: ["id": 1, "full_name": "octocat/hello", "stargazers_count": 91])
        let saved = try await client.save(hello)
        #expect(saved.stars == 91 && saved.visibility == nil)
        let patch = try JSON(parsing: try #require(stub.requests(.patch).first?.body))
        #expect(patch == ["stargazers_count": 91, "visibility": nil])

        stub.on(.delete, "/repos/octocat%2Fhello", status: 204, body: Data())
        #expect(try await client.delete(saved) == 204)
        #expect(try await client.model(Repository.self, identity: 1) == nil)

        let error = await #expect(throws: ModelError.self) { try await client.save(Repository(fullName: "unsaved")) }
        #expect(error?.kind == .noIdentity)
        let missing = await #expect(throws: ModelError.self) { try await client.delete(Repository(id: 42, fullName: "never stored")) }
        #expect(missing?.kind == .notStored)
    }

    @Test func listsAndChangesARelationshipOnTheServer() async throws {
        let stub = StubTransport()
        let client = try makeClient(stub)
        stub.on(.post, "/repos/octocat%2Fhello/issues", status: 201, json: ["id": 99, "number": 5, "title": "Crash", "state": "open", "repository_id": 1])
        let hello = try #require(try await client.import(repositoriesJSON, as: Repository.self).first)
        let issue = try await client.create(Issue(title: "Crash", repository: hello))

        stub.on(.get, "/repos/octocat%2Fhello/issues/5/labels", json: [["id": 3, "name": "bug"], ["id": 4, "name": "crash"]])
        let labels = try await client.relationship(\.labels, of: issue).list()
        #expect(labels.map(\.name) == ["bug", "crash"])
        #expect(try await client.related(\.labels, of: issue).map(\.name) == ["bug", "crash"])

        stub.on(.post, "/repos/octocat%2Fhello/issues/5/labels", status: 201, json: ["id": 5, "name": "urgent"])
        let urgent = try await client.relationship(\.labels, of: issue).add(Label(id: 5, name: "urgent"))
        #expect(urgent.name == "urgent")
        #expect(try await client.related(\.labels, of: issue).map(\.name) == ["bug", "crash", "urgent"])

        stub.on(.delete, "/repos/octocat%2Fhello/issues/5/labels/4", status: 204, body: Data())
        stub.on(.delete, nil, status: 204, body: Data())
        try await client.relationship(\.labels, of: issue).remove(labels[1])
        #expect(try await client.related(\.labels, of: issue).map(\.name) == ["bug", "urgent"])
    }

    @Test func fetchesListsFromTemplates() async throws {
        let stub = StubTransport()
        let client = try makeClient(stub)
        stub.on(.get, "/users", json: [["id": 7, "login": "octocat"], ["id": 8, "login": "hubot"]])
        let users = try await client.fetch(User.self, from: "/users")
        #expect(users.map(\.login) == ["octocat", "hubot"])
        stub.on(.get, "/users/octocat/repos", json: [["id": 1, "full_name": "octocat/hello", "stargazers_count": 80, "owner_id": 7]])
        let repositories = try await client.fetch(Repository.self, from: "/users/:login/repos", for: users[0])
        #expect(repositories.map(\.fullName) == ["octocat/hello"])
        #expect(repositories[0].owner?.login == "octocat")
        stub.on(.get, "/repos/octocat%2Fhello/issues", json: [["id": 99, "number": 5, "title": "Crash", "state": "closed"]])
        let issues = try await client.fetch(\.issues, of: repositories[0], from: "/repos/:fullName/issues")
        #expect(issues.map(\.title) == ["Crash"])
        #expect(issues[0].repository?.fullName == "octocat/hello")
    }

    @Test func observesTypedResults() async throws {
        let client = try makeClient()
        try await client.import(repositoriesJSON, as: Repository.self)
        let observation = try client.observe(Repository.self, where: .hasPrefix(\.fullName, "octocat/"), sortedBy: [.ascending(\.fullName)])
        var iterator = observation.makeAsyncIterator()
        let first = try #require(try await iterator.next())
        #expect(first.models.map(\.fullName) == ["octocat/hello", "octocat/spoon"])
        #expect(first.models[0].owner?.login == "octocat")
        try await client.import(Data(#"{"id": 5, "full_name": "octocat/fork", "stargazers_count": 0, "owner_id": 7}"#.utf8), as: Repository.self)
        let second = try #require(try await iterator.next())
        #expect(second.models.map(\.fullName) == ["octocat/fork", "octocat/hello", "octocat/spoon"])
        #expect(second.difference.inserted == [ResultIndex(item: 0)])
    }

    @Test func fetchesOneModelAndRegistersByKeyPath() async throws {
        let stub = StubTransport()
        let client = try Client.Builder(models: [User.self, Repository.self, Issue.self, Label.self])
            .transport(stub)
            .baseURL(base)
            .resource("/repos", item: "/repos/:fullName", for: Repository.self)
            .relationshipResource("/users/:login/repos", for: \User.repositories)
            .pathAttribute(\Repository.fullName)
            .build()
        stub.on(.get, "/users/octocat", json: ["id": 7, "login": "octocat", "name": "The Octocat"])
        let octocat = try await client.fetchModel(User.self, at: "/users/:login", values: ["login": .string("octocat")])
        #expect(octocat.name == "The Octocat")

        // the relationship resource registered by key path
        stub.on(.get, "/users/octocat/repos", json: [["id": 1, "full_name": "octocat/hello", "stargazers_count": 80]])
        let listed = try await client.relationship(\.repositories, of: octocat).list()
        #expect(listed.map(\.fullName) == ["octocat/hello"])

        // the path attribute: "octocat/hello" is two segments in the item URL
        stub.on(.get, "/repos/octocat/hello", json: ["id": 1, "full_name": "octocat/hello", "stargazers_count": 81])
        let hello = try await client.fetchModel(Repository.self, from: "/repos/:fullName", for: listed[0])
        #expect(hello.stars == 81 && hello.owner?.login == "octocat")
        stub.on(.get, "/repos/octocat/hello/issues", json: [["id": 99, "number": 5, "title": "Crash", "state": "open"]])
        #expect(try await client.fetch(Issue.self, from: "/repos/:fullName/issues", for: hello).map(\.number) == [5])

        // a key path that reads no coded property fails the build
        struct Draft: EntityModel {
            var id: Int64
            var title: String
            var slug: String { title.lowercased() }
        }
        let error = #expect(throws: ModelError.self) {
            try Client.Builder(models: [Draft.self]).pathAttribute(\Draft.slug).build()
        }
        #expect(error?.kind == .unmappedKeyPath)
    }
}


