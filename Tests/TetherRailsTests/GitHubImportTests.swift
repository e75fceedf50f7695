import Foundation
import Testing
import Tether
import TetherRails

/// SLRESTfulCoreData's GitHub example through the public API, on real recorded GitHub JSON
/// (octokit/fixtures): Rails naming with the `identifier` <-> `id` and `URL` <-> `url`
/// conventions, issues identified by `number`, and no per-attribute code except
/// `repositoryDescription`.
@Suite struct GitHubImportTests {
    static let schema: Schema = {
        do {
            return try Schema {
                Entity("User") {
                    Attribute("identifier", .int64)
                    Attribute("login", .string)
                    Attribute("avatarURL", .url)
                    Attribute("gravatarIdentifier", .string)
                    Attribute("createdAt", .date)
                    Relationship.toMany("repositories", "Repository", inverse: "owner")
                }
                Entity("Repository") {
                    Attribute("identifier", .int64)
                    Attribute("name", .string)
                    Attribute("fullName", .string)
                    Attribute("repositoryDescription", .string)
                    Attribute("htmlURL", .url)
                    Attribute("cloneURL", .url)
                    Attribute("createdAt", .date)
                    Relationship.toOne("owner", "User", inverse: "repositories")
                    Relationship.toMany("issues", "Issue", inverse: "repository")
                }
                Entity("Issue") {
                    Attribute("number", .int64)
                    Attribute("title", .string)
                    Attribute("body", .string)
                    Attribute("state", .string)
                    Relationship.toOne("repository", "Repository", inverse: "issues")
                }
            }
        } catch {
            fatalError("the GitHub schema is invalid: \(error)")
        }
    }()

    func makeClient() throws -> Client {
        try Client.Builder(schema: Self.schema)
            .rails(conventions: ["identifier": "id", "URL": "url"], identity: ["Issue": ["number"]])
            .keyMapping(KeyOverrides(["Repository": ["repositoryDescription": "description"]]))
            .store(InMemoryStore())
            .build()
    }

    /// GitHub lists a repository's issues under `/repos/:owner/:repo/issues` and does not embed
    /// the repository in them (only `repository_url`). The caller knows the parent from the URL,
    /// so it passes it as the Rails foreign key `repository_id`.
    func issuesPage(ofRepository id: Int64, page: JSON) -> JSON {
        .array((page.arrayValue ?? []).map { issue in
            var members = issue.objectValue ?? [:]
            members["repository_id"] = .int(id)
            return .object(members)
        })
    }

    @Test func theMappingComesFromTheConventions() throws {
        let client = try makeClient()
        let user = try #require(client.mapping["User"])
        #expect(user.identity.map(\.name) == ["identifier"])
        #expect(user.keyPath(for: "identifier") == "id")
        #expect(user.keyPath(for: "avatarURL") == "avatar_url")
        #expect(user.keyPath(for: "gravatarIdentifier") == "gravatar_id")
        #expect(user.keyPath(for: "createdAt") == "created_at")
        #expect(user.resourcePath == "users")
        let repository = try #require(client.mapping["Repository"])
        #expect(repository.keyPath(for: "repositoryDescription") == "description")
        #expect(repository.keyPath(for: "htmlURL") == "html_url")
        #expect(repository.keyPath(for: "cloneURL") == "clone_url")
        #expect(repository.keyPath(for: "fullName") == "full_name")
        #expect(repository.relationship("owner")?.foreignKey == "owner_id")
        #expect(repository.relationship("issues")?.foreignKey == "issue_ids")
        #expect(repository.resourcePath == "repositories")
        let issue = try #require(client.mapping["Issue"])
        #expect(issue.identity.map(\.name) == ["number"])
        #expect(issue.relationship("repository")?.foreignKey == "repository_id")
        #expect(issue.resourcePath == "issues")
    }

    @Test func importsRepositoryOwnerAndIssues() async throws {
        let client = try makeClient()
        let repositoryJSON = try #require(try Fixtures.responses("get-repository").first)

        // The repository, with its nested owner.
        let first = try await client.import(repositoryJSON, as: "Repository")
        #expect(first.diagnostics.isEmpty, "\(first.diagnostics)")
        #expect(first.inserted.count == 2)
        let repository = try #require(try await client.object("Repository", identity: .int(1000)))
        #expect(first.objects == [repository.id])
        #expect(repository["identifier"] == .int(1000))
        #expect(repository["name"] == .string("hello-world"))
        #expect(repository["fullName"] == .string("octokit-fixture-org/hello-world"))
        #expect(repository["repositoryDescription"] == nil)  // "description": null
        #expect(repository["htmlURL", as: URL.self] == URL(string: "https://github.com/octokit-fixture-org/hello-world"))
        #expect(repository["cloneURL", as: URL.self] == URL(string: "https://github.com/octokit-fixture-org/hello-world.git"))
        #expect(repository["createdAt", as: Date.self] == ISO8601DateFormatter().date(from: "2017-10-10T16:00:00Z"))

        let owners = try await client.related("owner", of: repository.id)
        #expect(owners.count == 1)
        let owner = try #require(owners.first)
        #expect(owner.entity == "User")
        #expect(owner["identifier"] == .int(1000))
        #expect(owner["login"] == .string("octokit-fixture-org"))
        #expect(owner["avatarURL", as: URL.self] == URL(string: "https://avatars.githubusercontent.com/u/1000?v=4"))
        #expect(owner["gravatarIdentifier"] == .string(""))
        #expect(owner["createdAt"] == nil)  // not in the embedded owner
        #expect(try await client.object("User", identity: .int(1000))?.id == owner.id)
        #expect(try await client.related("repositories", of: owner.id).map(\.id) == [repository.id])

        // Five pages of issues, identified by number, linked through repository_id.
        var inserted = 0
        for page in try Fixtures.responses("paginate-issues") {
            let result = try await client.import(issuesPage(ofRepository: 1000, page: page), as: "Issue")
            #expect(result.diagnostics.isEmpty, "\(result.diagnostics)")
            inserted += result.inserted.count
        }
        #expect(inserted == 13)
        let issues = try await client.fetch(Query("Issue", sortedBy: [.ascending("number")]))
        #expect(issues.map { $0["number", as: Int64.self] } == Array(1...13))
        #expect(issues.allSatisfy { $0["title"] == .string("Test issue \($0["number", as: Int64.self]!)") })
        #expect(issues.allSatisfy { $0["state"] == .string("open") && $0["body"] == nil })
        for issue in issues {
            #expect(try await client.related("repository", of: issue.id).map(\.id) == [repository.id])
        }
        #expect(Set(try await client.related("issues", of: repository.id).map(\.id)) == Set(issues.map(\.id)))
        let issue7 = try #require(try await client.object("Issue", identity: .int(7)))
        #expect(issue7["title"] == .string("Test issue 7"))

        // The same payloads again: nothing changes.
        let again = try await client.import(repositoryJSON, as: "Repository")
        #expect(again.inserted.isEmpty && again.updated.isEmpty)
        #expect(Set(again.unchanged) == Set([repository.id, owner.id]))
        let firstPage = try #require(try Fixtures.responses("paginate-issues").first)
        let pageAgain = try await client.import(issuesPage(ofRepository: 1000, page: firstPage), as: "Issue")
        #expect(pageAgain.inserted.isEmpty && pageAgain.updated.isEmpty && pageAgain.unchanged.count == 3)
        #expect(try await client.count(Query("Issue")) == 13)
        #expect(try await client.count(Query("User")) == 1)
        #expect(try await client.count(Query("Repository")) == 1)

        // The repository renamed and described (same id): an update of the same object, and the
        // per-entity override `repositoryDescription` <- `description` at work.
        let renamed = try #require(try Fixtures.responses("rename-repository").last)
        let update = try await client.import(renamed, as: "Repository")
        #expect(update.inserted.isEmpty)
        #expect(update.updated == [repository.id])
        #expect(update.unchanged == [owner.id])
        let updated = try #require(try await client.object(repository.id))
        #expect(updated["fullName"] == .string("octokit-fixture-org/rename-repository-newname"))
        #expect(updated["repositoryDescription"] == .string("test description"))
        #expect(try await client.related("issues", of: repository.id).count == 13)
        #expect(try await client.count(Query("Repository")) == 1)
    }

    /// The CRUD base URL of SLRESTfulCoreData's `Issue`: `/repos/:repository.full_name/issues`.
    /// Each variable's snake_case key path translates to a model key path that reads the value
    /// through the store.
    @Test func urlTemplateVariablesTranslateToModelKeyPaths() async throws {
        let client = try makeClient()
        let naming = RailsNaming.rails(conventions: ["identifier": "id", "URL": "url"])
        let repositoryJSON = try #require(try Fixtures.responses("get-repository").first)
        _ = try await client.import(repositoryJSON, as: "Repository")
        let page = try #require(try Fixtures.responses("paginate-issues").first)
        _ = try await client.import(issuesPage(ofRepository: 1000, page: page), as: "Issue")
        let issue = try #require(try await client.object("Issue", identity: .int(13)))

        var path: [String] = []
        for component in "/repos/:repository.full_name/issues".split(separator: "/").map(String.init) {
            guard component.hasPrefix(":") else {
                path.append(component)
                continue
            }
            let keyPath = naming.modelKeyPath(for: component)
            #expect(keyPath == ":repository.fullName")
            var names = keyPath.dropFirst().split(separator: ".").map(String.init)
            let attribute = names.removeLast()
            var object = issue
            for relationship in names {
                object = try #require(try await client.related(relationship, of: object.id).first)
            }
            path.append(try #require(object[attribute, as: String.self]))
        }
        #expect("/" + path.joined(separator: "/") == "/repos/octokit-fixture-org/hello-world/issues")
    }
}
