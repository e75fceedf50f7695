import Foundation
import Testing
import Tether

/// The acceptance example of the foundation issue, on recorded GitHub data (octokit/fixtures).
@Suite struct GitHubExampleTests {
    static let schema = try! Schema {
        Entity("User", identity: "identifier") {
            Attribute("identifier", .int64)
            Attribute("login", .string)
            Attribute("avatarURL", .url)
            Attribute("gravatarIdentifier", .string)
            Attribute("type", .string)
            Attribute("siteAdmin", .bool)
            Attribute("createdAt", .date)
            Relationship.toMany("repositories", "Repository", inverse: "owner")
        }
        Entity("Repository", identity: "identifier") {
            Attribute("identifier", .int64)
            Attribute("name", .string)
            Attribute("fullName", .string)
            Attribute("repositoryDescription", .string)
            Attribute("htmlURL", .url)
            Attribute("isPrivate", .bool)
            Attribute("stargazersCount", .int32)
            Attribute("createdAt", .date)
            Attribute("ownerLogin", .string)
            Relationship.toOne("owner", "User", inverse: "repositories")
        }
    }

    /// Explicit overrides only: the core's verbatim naming plus a `KeyOverrides` table.
    static func client() throws -> Client {
        try Client.Builder(schema: schema)
            .keyMapping(KeyOverrides([
                "User": [
                    "identifier": "id", "avatarURL": "avatar_url", "gravatarIdentifier": "gravatar_id",
                    "siteAdmin": "site_admin", "createdAt": "created_at",
                ],
                "Repository": [
                    "identifier": "id", "fullName": "full_name", "repositoryDescription": "description",
                    "htmlURL": "html_url", "isPrivate": "private", "stargazersCount": "stargazers_count",
                    "createdAt": "created_at", "ownerLogin": "owner.login",
                ],
            ]))
            .build()
    }

    @Test func userThenRepositoriesShareOneOwner() async throws {
        let client = try Self.client()
        let repository = try octokitResponse("get-repository")
        let ownerJSON = try #require(repository["owner"])

        // A user JSON: the recorded owner plus the profile fields of GET /users/:login.
        var user = try #require(ownerJSON.objectValue)
        user["created_at"] = "2011-01-25T18:44:36Z"
        user["name"] = "Octokit Fixtures"
        let userResult = try await client.import(.object(user), as: "User")
        #expect(userResult.diagnostics.isEmpty)
        let userID = try #require(userResult.objects.first)
        let stored = try #require(try await client.object(userID))
        #expect(stored["identifier"] == .int(1000))
        #expect(stored["login"] == .string("octokit-fixture-org"))
        #expect(stored["avatarURL"] == .url(URL(string: "https://avatars.githubusercontent.com/u/1000?v=4")!))
        #expect(stored["gravatarIdentifier"] == .string(""))
        #expect(stored["siteAdmin"] == .bool(false))
        #expect(stored["createdAt"] == .date(Date(timeIntervalSince1970: 1_295_981_076)))

        // A repositories array whose nested owner is that user (ids varied from the recorded one).
        var repositories: [JSON] = []
        for (i, name) in ["hello-world", "fixtures", "octokit.js"].enumerated() {
            var copy = try #require(repository.objectValue)
            copy["id"] = .int(Int64(2000 + i))
            copy["name"] = .string(name)
            copy["full_name"] = .string("octokit-fixture-org/\(name)")
            if i > 0 { copy["description"] = .string("The \(name) repository") }  // the recording has null
            repositories.append(.object(copy))
        }
        let first = try await client.import(.array(repositories), as: "Repository")
        #expect(first.diagnostics.isEmpty)
        #expect(first.inserted.count == 3)
        #expect(first.unchanged == [userID])
        for id in first.objects {
            let owner = try await client.related("owner", of: id)
            #expect(owner.map(\.id) == [userID])
        }
        let repo = try #require(try await client.object(first.objects[0]))
        #expect(repo["fullName"] == .string("octokit-fixture-org/hello-world"))
        #expect(repo["repositoryDescription"] == nil)
        #expect(try await client.object(first.objects[1])?["repositoryDescription"] == .string("The fixtures repository"))
        #expect(repo["htmlURL"] == .url(URL(string: "https://github.com/octokit-fixture-org/hello-world")!))
        #expect(repo["isPrivate"] == .bool(false))
        #expect(repo["ownerLogin"] == .string("octokit-fixture-org"))
        #expect(Set(try await client.related("repositories", of: userID).map(\.id)) == Set(first.objects))
        // The owner's profile fields that the nested object lacks are untouched.
        #expect(try await client.object(userID)?["createdAt"] == stored["createdAt"])

        // Importing the array again changes no counts.
        let second = try await client.import(.array(repositories), as: "Repository")
        #expect(second.inserted.isEmpty)
        #expect(second.updated.isEmpty)
        #expect(second.objects == first.objects)
        #expect(try await client.count(Query("User")) == 1)
        #expect(try await client.count(Query("Repository")) == 3)
    }

    /// The typed access layer over the same data.
    struct UserFields: ObjectFields {
        static let entityName = "User"
        let login = Field<String>("login")
        let identifier = Field<Int64>("identifier")
        let siteAdmin = Field<Bool>("siteAdmin")
        let avatarURL = Field<URL>("avatarURL")
    }
    typealias User = TypedObject<UserFields>

    @Test func typedAccessReadsWithoutStringKeys() async throws {
        let client = try Self.client()
        _ = try await client.import(try #require(try octokitResponse("get-repository")["owner"]), as: "User")
        let users = try await client.fetch(User.self)
        let user = try #require(users.first)
        #expect(user.login == "octokit-fixture-org")
        #expect(user.identifier == 1000)
        #expect(user.siteAdmin == false)
        #expect(user.avatarURL?.host == "avatars.githubusercontent.com")
        #expect(User(Object(id: ObjectID(entity: "Repository", rowID: 1), values: [:])) == nil)
    }
}
