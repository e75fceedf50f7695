import Foundation
import Testing
import Tether
import TetherRails

// Docs/Strategy-Rails.md's complete example, with typed models, run as written.

private enum RailsDoc {
    struct User: EntityModel {
        var identifier: Int64
        var login: String
        var avatarURL: URL?
        var gravatarIdentifier: String?
        var createdAt: Date?
        var repositories: [Repository] = []
    }

    struct Repository: EntityModel {
        var identifier: Int64
        var name: String
        var fullName: String
        var repositoryDescription: String?
        var htmlURL: URL?
        var cloneURL: URL?
        var createdAt: Date?
        var owner: User?
        var issues: [Issue] = []

        static func describe(_ model: inout ModelDescription<Self>) {
            model.jsonKey(\.repositoryDescription, "description")
        }
    }

    struct Issue: EntityModel {
        var number: Int64
        var title: String
        var body: String?
        var state: String
        var repository: Repository?
    }
}

@Test func railsDocTypedExample() async throws {
    let client = try Client.Builder(models: [RailsDoc.User.self, RailsDoc.Repository.self, RailsDoc.Issue.self])
        .rails(conventions: ["identifier": "id", "URL": "url"], identity: ["Issue": ["number"]])
        .build()

    let json = Data(#"""
        {"id": 1296269, "name": "Hello-World", "full_name": "octocat/Hello-World",
         "description": "This your first repo!", "html_url": "https://github.com/octocat/Hello-World",
         "clone_url": "https://github.com/octocat/Hello-World.git", "created_at": "2011-01-26T19:01:12Z",
         "owner": {"id": 1, "login": "octocat", "gravatar_id": "",
                   "avatar_url": "https://github.com/images/error/octocat_happy.gif"}}
        """#.utf8)
    let repository = try await client.import(json, as: RailsDoc.Repository.self)[0]
    #expect(repository.identifier == 1296269)
    #expect(repository.fullName == "octocat/Hello-World")
    #expect(repository.repositoryDescription == "This your first repo!")
    #expect(repository.htmlURL?.absoluteString == "https://github.com/octocat/Hello-World")
    #expect(repository.owner?.avatarURL?.absoluteString == "https://github.com/images/error/octocat_happy.gif")
    #expect(repository.owner?.gravatarIdentifier == "")

    #expect(client.mapping["Repository"]!.resourcePath == "repositories")
    #expect(client.mapping["Issue"]!.identity.map(\.name) == ["number"])
    #expect(client.mapping["User"]!.identity.map(\.name) == ["identifier"])

    // issues by number, wired to their repository through the Rails foreign key
    try await client.import(Data(#"[{"number": 1347, "title": "Found a bug", "state": "open", "repository_id": 1296269}]"#.utf8),
                            as: RailsDoc.Issue.self)
    let issues = try await client.related(\.issues, of: repository)
    #expect(issues.map(\.number) == [1347])
}
