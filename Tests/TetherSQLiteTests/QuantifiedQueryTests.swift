import Foundation
import Testing
import Tether
import TetherSQLite

/// `any` and `all` over relationships (`.any("labels", .equal("name", "bug"))`), string form and
/// typed, with the same answers from both stores (the in-memory store follows links, SQLite asks
/// `EXISTS` of a subquery, or evaluates in Swift when a condition inside needs it), and observed
/// queries that follow changes of the related objects and of the links.
@Suite struct QuantifiedQueryTests {
    typealias User = RelationshipPathQueryTests.User
    typealias Repository = RelationshipPathQueryTests.Repository
    typealias Label = RelationshipPathQueryTests.Label

    static let payload = #"""
        [{"id": 10, "fullName": "octocat/hello", "owner": {"id": 100, "login": "octocat", "karma": "2.5"},
          "labels": [{"id": 1, "name": "bug"}, {"id": 2, "name": "area/ui"}]},
         {"id": 11, "fullName": "ann/tether", "owner": {"id": 101, "login": "ann", "karma": "10"},
          "labels": [{"id": 3, "name": "area/core"}, {"id": 4, "name": "area/docs"}]},
         {"id": 12, "fullName": "octocat/spoon", "owner": {"id": 100}, "labels": []},
         {"id": 13, "fullName": "zed/a", "labels": [{"id": 1}, {"id": 3}]}]
        """#

    static func names(_ client: Client, _ condition: Condition, _ entity: String = "Repository", _ key: String = "fullName") async throws -> [String] {
        let query = Query(entity, where: condition, sortedBy: [.ascending("id")])
        let names = try await client.fetch(query).map { if case .string(let name)? = $0.values[key] { name } else { "?" } }
        // `ids` and `count` agree with `fetch`.
        #expect(try await client.store.read { try $0.ids(query) }.count == names.count)
        #expect(try await client.count(Query(entity, where: condition)) == names.count)
        return names
    }

    @Test(arguments: ["memory", "sqlite"]) func anyAndAllInTheStringForm(store: String) async throws {
        let directory = try TemporaryDirectory()
        let client = try RelationshipPathQueryTests.client(store, directory)
        _ = try await client.import(Data(Self.payload.utf8), as: Repository.self)

        // A many-to-many (a join table).
        #expect(try await Self.names(client, .any("labels", .equal("name", .string("bug")))) == ["octocat/hello", "zed/a"])
        #expect(try await Self.names(client, .all("labels", .hasPrefix("name", "area/"))) == ["ann/tether", "octocat/spoon"])
        // `all` is true for none; with `any` of anything, at least one.
        #expect(try await Self.names(client, .all("labels", .hasPrefix("name", "area/")) && .any("labels", .and([]))) == ["ann/tether"])
        #expect(try await Self.names(client, !.any("labels", .equal("name", .string("bug")))) == ["ann/tether", "octocat/spoon"])
        // A to-one (a foreign key here), and a to-many by the other side's foreign key.
        #expect(try await Self.names(client, .any("owner", .equal("login", .string("octocat")))) == ["octocat/hello", "octocat/spoon"])
        #expect(try await Self.names(client, .all("owner", .equal("login", .string("octocat")))) == ["octocat/hello", "octocat/spoon", "zed/a"])
        #expect(try await Self.names(client, .any("repositories", .hasPrefix("fullName", "ann/")), "User", "login") == ["ann"])
        // Nested, through a path inside, and a decimal inside (SQLite then evaluates in Swift).
        #expect(try await Self.names(client, .any("repositories", .any("labels", .equal("name", .string("bug")))), "User", "login") == ["octocat"])
        #expect(try await Self.names(client, .any("repositories", .equal("owner.login", .string("ann"))), "Label", "name") == ["area/core", "area/docs"])
        #expect(try await Self.names(client, .any("owner", .greater("karma", .decimal(3))) || .equal("id", .int(13))) == ["ann/tether", "zed/a"])
        #expect(try await Self.names(client, .any("repositories", .any("owner", .greater("karma", .decimal(3)))), "Label", "name")
                == ["area/core", "area/docs"])
        // A sort and a window with a quantified condition.
        let sorted = try await client.fetch(Query("Repository", where: .any("labels", .hasPrefix("name", "area/")), sortedBy: [.descending("fullName")], limit: 2))
        #expect(sorted.map { $0["fullName"] } == [.string("zed/a"), .string("octocat/hello")])

        // Names that are not relationships, and bad names inside, are refused by both stores.
        let refused: [(Condition, StoreError.Kind, String)] = [
            (.any("nope", .and([])), .unknownRelationship, "nope"),
            (.any("fullName", .and([])), .unknownRelationship, "fullName"),
            (.all("labels", .equal("title", .string("x"))), .unknownAttribute, "title"),
        ]
        for (condition, kind, member) in refused {
            do {
                _ = try await client.fetch(Query("Repository", where: condition))
                Testing.Issue.record("\(condition) was accepted")
            } catch let error as StoreError {
                #expect(error.kind == kind && error.member == member, "\(error)")
            }
        }
    }

    @Test(arguments: ["memory", "sqlite"]) func anyAndAllTyped(store: String) async throws {
        let directory = try TemporaryDirectory()
        let client = try RelationshipPathQueryTests.client(store, directory)
        _ = try await client.import(Data(Self.payload.utf8), as: Repository.self)

        let bugs = try await client.fetch(Repository.self, where: .any(\.labels, .equal(\.name, "bug")), sortedBy: [.ascending(\.id)], depth: 0)
        #expect(bugs.map(\.fullName) == ["octocat/hello", "zed/a"])
        let areas = try await client.fetch(Repository.self, where: .all(\.labels, .hasPrefix(\.name, "area/")), sortedBy: [.ascending(\.id)], depth: 0)
        #expect(areas.map(\.fullName) == ["ann/tether", "octocat/spoon"])
        let owned = try await client.fetch(Repository.self, where: .any(\.owner, .equal(\.login, "octocat")), sortedBy: [.ascending(\.id)], depth: 0)
        #expect(owned.map(\.fullName) == ["octocat/hello", "octocat/spoon"])
        let users = try await client.fetch(User.self, where: .any(\.repositories, .any(\.labels, .equal(\.name, "bug"))), depth: 0)
        #expect(users.map(\.login) == ["octocat"])
        let query = try client.query(Repository.self, where: .any(\.labels, .equal(\.name, "bug")) && .all(\.owner, .equal(\.login, "ann")))
        #expect(query.condition == .and([.any("labels", .equal("name", .string("bug"))), .all("owner", .equal("login", .string("ann")))]))
        // A key path to an attribute quantifies nothing.
        await #expect(throws: ModelError.self) {
            try await client.fetch(Repository.self, where: .any(\.owner, .equal(\.login, "x")) && .any(\.labels, .equal(\.name, "x")) && .all(\.fullNameOwner, .equal(\.login, "x")))
        }
    }

    /// An observed query over `any` follows the related objects (a label renamed) and the links
    /// (a label added to a repository, from either side), as a fresh fetch answers.
    @Test(arguments: ["memory", "sqlite"]) func anObservedQueryFollowsRelatedObjectsAndLinks(store: String) async throws {
        let directory = try TemporaryDirectory()
        let client = try RelationshipPathQueryTests.client(store, directory)
        _ = try await client.import(Data(Self.payload.utf8), as: Repository.self)
        let query = Query("Repository", where: .any("labels", .equal("name", .string("bug"))), sortedBy: [.ascending("id")])
        var results = client.observe(query).makeAsyncIterator()
        func names(_ snapshot: ResultsSnapshot?) -> [Value?] { snapshot?.objects.map { $0["fullName"] } ?? [] }
        #expect(names(try await results.next()) == [.string("octocat/hello"), .string("zed/a")])

        // The label "area/core" (on ann/tether and zed/a) becomes "bug".
        _ = try await client.import(Data(#"[{"id": 3, "name": "bug"}]"#.utf8), as: Label.self)
        #expect(names(try await results.next()) == [.string("octocat/hello"), .string("ann/tether"), .string("zed/a")])
        // octocat/spoon gains the label "bug" (a link, written from the repository's side).
        _ = try await client.import(Data(#"[{"id": 12, "labels": [{"id": 1}]}]"#.utf8), as: Repository.self)
        let fourth = try await results.next()
        #expect(names(fourth) == [.string("octocat/hello"), .string("ann/tether"), .string("octocat/spoon"), .string("zed/a")])
        #expect(fourth?.objects.map(\.id) == (try await client.fetch(query).map(\.id)))
        // ann/tether's label 3 is renamed back: it leaves.
        _ = try await client.import(Data(#"[{"id": 3, "name": "area/core"}]"#.utf8), as: Label.self)
        #expect(names(try await results.next()) == [.string("octocat/hello"), .string("octocat/spoon"), .string("zed/a")])
    }
}

extension RelationshipPathQueryTests.Repository {
    /// A computed property (no relationship): refused by `all`.
    var fullNameOwner: RelationshipPathQueryTests.User? { owner }
}
