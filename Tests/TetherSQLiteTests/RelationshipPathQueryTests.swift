import Foundation
import Testing
import Tether
import TetherSQLite

/// Conditions and sorts through to-one relationships (`"repository.owner.login"`), string form
/// and typed by key path (`\.repository?.owner?.login`), with the same answers from both stores
/// (the in-memory store follows links, SQLite joins).
@Suite struct RelationshipPathQueryTests {
    struct User: EntityModel, Equatable {
        var id: Int64
        var login: String
        var karma: Decimal?
        var repositories: [Repository] = []
    }

    struct Repository: EntityModel, Equatable {
        var id: Int64
        var fullName: String
        var owner: User?
        var issues: [Issue] = []
        var labels: [Label] = []
    }

    struct Issue: EntityModel, Equatable {
        var id: Int64
        var title: String
        var repository: Repository?
    }

    struct Label: EntityModel, Equatable {
        var id: Int64
        var name: String
        var repositories: [Repository] = []
    }

    static let models: [any EntityModel.Type] = [User.self, Repository.self, Issue.self, Label.self]

    static func client(_ store: String, _ directory: TemporaryDirectory) throws -> Client {
        let builder = try Client.Builder(models: models)
        return store == "sqlite" ? try builder.store(try SQLiteStore(path: directory.path())).build() : try builder.build()
    }

    static let payload = #"""
        [{"id": 1, "title": "crash", "repository": {"id": 10, "fullName": "octocat/hello", "owner": {"id": 100, "login": "octocat", "karma": "2.5"}}},
         {"id": 2, "title": "docs", "repository": {"id": 11, "fullName": "ann/tether", "owner": {"id": 101, "login": "ann", "karma": "10"}}},
         {"id": 3, "title": "typo", "repository": {"id": 12, "fullName": "octocat/spoon"}},
         {"id": 4, "title": "orphan"},
         {"id": 5, "title": "speed", "repository": {"id": 13, "fullName": "zed/a", "owner": {"id": 100, "login": "octocat"}}},
         {"id": 6, "title": "other", "repository": {"id": 11}}]
        """#

    static func titles(_ client: Client, _ query: Query) async throws -> [String] {
        try await client.fetch(query).map { if case .string(let t)? = $0.values["title"] { t } else { "?" } }
    }

    @Test(arguments: ["memory", "sqlite"]) func stringPathsInConditionsAndSorts(store: String) async throws {
        let directory = try TemporaryDirectory()
        let client = try Self.client(store, directory)
        _ = try await client.import(Data(Self.payload.utf8), as: Issue.self)

        let byOwner = Query("Issue", where: .equal("repository.owner.login", .string("octocat")), sortedBy: [.ascending("id")])
        #expect(try await Self.titles(client, byOwner) == ["crash", "speed"])
        #expect(try await client.count(byOwner) == 2)
        // No target on the way: unset, so a comparison is false and NOT of it true.
        #expect(try await Self.titles(client, Query("Issue", where: .isNull("repository.owner.login"), sortedBy: [.ascending("id")]))
                == ["typo", "orphan"])
        #expect(try await Self.titles(client, Query("Issue", where: !.equal("repository.owner.login", .string("octocat")), sortedBy: [.ascending("id")]))
                == ["docs", "typo", "orphan", "other"])
        #expect(try await Self.titles(client, Query("Issue", where: .hasPrefix("repository.fullName", "octocat/"), sortedBy: [.ascending("id")]))
                == ["crash", "typo"])
        // Sorts through relationships, unset first ascending, ties by row id; and mixed with own attributes.
        #expect(try await Self.titles(client, Query("Issue", sortedBy: [.ascending("repository.fullName")]))
                == ["orphan", "docs", "other", "crash", "typo", "speed"])
        #expect(try await Self.titles(client, Query("Issue", sortedBy: [.descending("repository.owner.login"), .ascending("title")]))
                == ["crash", "speed", "docs", "other", "orphan", "typo"])
        #expect(try await Self.titles(client, Query("Issue", where: .isNotNull("repository.id"), sortedBy: [.ascending("repository.owner.login")], limit: 2, offset: 1))
                == ["docs", "other"])
        // A decimal at the end of a path (SQLite evaluates such queries in Swift).
        #expect(try await Self.titles(client, Query("Issue", where: .greater("repository.owner.karma", .decimal(3)), sortedBy: [.ascending("id")]))
                == ["docs", "other"])
        #expect(try await Self.titles(client, Query("Issue", sortedBy: [.descending("repository.owner.karma"), .ascending("id")]))
                == ["docs", "other", "crash", "speed", "typo", "orphan"])
        // The other direction of a one-to-many is to-many: not a path.
        await #expect(throws: StoreError.self) { try await client.fetch(Query("User", where: .equal("repositories.fullName", .string("x")))) }
        let cases: [(String, StoreError.Kind)] = [
            ("repository.labels.name", .unsupported), ("repository.owner", .unsupported), ("repository.nope", .unknownAttribute),
            ("nope.title", .unknownAttribute), ("repository.", .unknownAttribute),
        ]
        for (name, kind) in cases {
            do {
                _ = try await client.fetch(Query("Issue", where: .isNull(name)))
                Testing.Issue.record("\(name) was accepted")
            } catch let error as StoreError {
                #expect(error.kind == kind && error.member == name, "\(name): \(error)")
            }
            await #expect(throws: StoreError.self) { try await client.fetch(Query("Issue", sortedBy: [.ascending(name)])) }
        }
    }

    @Test(arguments: ["memory", "sqlite"]) func typedKeyPathsThroughOptionalRelationships(store: String) async throws {
        let directory = try TemporaryDirectory()
        let client = try Self.client(store, directory)
        _ = try await client.import(Data(Self.payload.utf8), as: Issue.self)

        let octocat = try await client.fetch(Issue.self, where: .equal(\.repository?.owner?.login, "octocat"), sortedBy: [.ascending(\.id)], depth: 0)
        #expect(octocat.map(\.title) == ["crash", "speed"])
        // At depth 1 (SQLite reads the rows with their foreign keys through the joins).
        let withRepositories = try await client.fetch(Issue.self, where: .equal(\.repository?.owner?.login, "octocat"),
                                                      sortedBy: [.descending(\.repository?.fullName)], depth: 2)
        #expect(withRepositories.map(\.repository?.fullName) == ["zed/a", "octocat/hello"])
        #expect(withRepositories.map(\.repository?.owner?.login) == ["octocat", "octocat"])
        let sorted = try await client.fetch(Issue.self, sortedBy: [.ascending(\.repository?.fullName), .ascending(\.id)], depth: 0)
        #expect(sorted.map(\.title) == ["orphan", "docs", "other", "crash", "typo", "speed"])
        #expect(try await client.count(Issue.self, where: .equal(\.repository?.owner?.login, nil)) == 2)
        #expect(try await client.count(Issue.self, where: .hasPrefix(\.repository?.fullName, "ann/")) == 2)
        let query = try client.query(Issue.self, where: .greater(\.repository?.owner?.karma, Decimal(3)) && .notEqual(\.repository?.id, 12))
        #expect(query.condition == .and([.greater("repository.owner.karma", .decimal(3)), .notEqual("repository.id", .int(12))]))
        // A key path to a relationship itself compares nothing.
        await #expect(throws: ModelError.self) { try await client.fetch(Issue.self, where: .equal(\.repository?.owner?.id, 100) && .notEqual(\.repository?.owner, nil)) }
    }
}
