import Foundation
import Testing
import Tether
import TetherRails

@Suite struct RailsNamingTests {
    let plain = RailsNaming.rails
    let github = RailsNaming.rails(conventions: ["identifier": "id", "URL": "url"])

    @Test(arguments: [
        ("createdAt", "created_at"), ("fullName", "full_name"), ("login", "login"), ("htmlUrl", "html_url"),
        ("someIdValue", "some_id_value"), ("avatarURL", "avatar_url"), ("urlString", "url_string"),
        ("URLString", "url_string"), ("sha256Hash", "sha256_hash"), ("_links", "_links"), ("id", "id"),
    ])
    func camelToSnakeWithoutConventions(_ pair: (String, String)) {
        #expect(plain.jsonKey(for: pair.0, in: "User") == pair.1)
    }

    @Test(arguments: [
        ("created_at", "createdAt"), ("full_name", "fullName"), ("login", "login"), ("html_url", "htmlUrl"),
        ("gravatar_id", "gravatarId"), ("_links", "_links"), ("id", "id"), ("a_b_c", "aBC"),
    ])
    func snakeToCamelWithoutConventions(_ pair: (String, String)) {
        #expect(plain.modelName(for: pair.0, in: "User") == pair.1)
    }

    /// The conventions of the issue, both directions.
    @Test(arguments: [
        ("id", "identifier"), ("gravatar_id", "gravatarIdentifier"), ("some_id_value", "someIdentifierValue"),
        ("avatar_url", "avatarURL"), ("html_url", "htmlURL"), ("url", "url"), ("clone_url", "cloneURL"),
        ("created_at", "createdAt"), ("full_name", "fullName"), ("id_url", "identifierURL"),
        ("url_id", "urlIdentifier"), ("urls", "urls"), ("ids", "ids"), ("idle_time", "idleTime"),
    ])
    func conventionsApplyInsideNames(_ pair: (json: String, model: String)) {
        #expect(github.modelName(for: pair.json, in: "User") == pair.model)
        #expect(github.jsonKey(for: pair.model, in: "User") == pair.json)
    }

    @Test func multiWordConventions() {
        let naming = RailsNaming().convention("login", json: "user_name").convention("API", json: "api")
        #expect(naming.modelName(for: "user_name", in: "User") == "login")
        #expect(naming.modelName(for: "owner_user_name", in: "User") == "ownerLogin")
        #expect(naming.jsonKey(for: "ownerLogin", in: "User") == "owner_user_name")
        #expect(naming.jsonKey(for: "apiURL", in: "User") == "api_url")
        #expect(naming.modelName(for: "api_key", in: "User") == "apiKey")
        #expect(naming.modelName(for: "the_api_key", in: "User") == "theAPIKey")
        #expect(naming.jsonKey(for: "theAPIKey", in: "User") == "the_api_key")
    }

    @Test func theSameConventionsMakeEqualNamingsInAnyOrder() {
        let a = RailsNaming.rails(conventions: ["identifier": "id", "URL": "url"])
        let b = RailsNaming().convention("identifier", json: "id").convention("URL", json: "url")
        let c = RailsNaming().convention("URL", json: "url").convention("identifier", json: "id")
        #expect(a == b)
        #expect(b == c)
        #expect(b.conventions.map(\.modelWord) == ["URL", "identifier"])
        #expect(b.jsonKey(for: "htmlURL", in: "User") == "html_url")
        #expect(b.modelName(for: "gravatar_id", in: "User") == "gravatarIdentifier")
    }

    @Test func aLaterConventionReplacesAnEarlierOne() {
        let naming = RailsNaming().convention("identifier", json: "id").convention("ID", json: "id")
        #expect(naming.conventions == [RailsNaming.Convention(model: "ID", json: "id")])
        #expect(naming.modelName(for: "gravatar_id", in: "User") == "gravatarID")
    }

    @Test(arguments: [
        ("Issue", "issues"), ("Person", "people"), ("Repository", "repositories"), ("Category", "categories"),
        ("Status", "statuses"), ("PullRequest", "pull_requests"), ("User", "users"), ("Equipment", "equipment"),
        ("CommitStatus", "commit_statuses"), ("HTTPHeader", "http_headers"),
    ])
    func resourcePaths(_ pair: (entity: String, path: String)) {
        #expect(github.resourcePath(for: pair.entity) == pair.path)
        #expect(github.entityName(forResourcePath: pair.path) == pair.entity.replacingHTTP())
    }

    @Test func foreignKeys() {
        #expect(github.foreignKey(for: .toOne("owner", "User"), in: "Repository") == "owner_id")
        #expect(github.foreignKey(for: .toMany("labels", "Label"), in: "Issue") == "label_ids")
        #expect(github.foreignKey(for: .toMany("people", "Person"), in: "Team") == "person_ids")
        #expect(github.foreignKey(for: .toMany("categories", "Category"), in: "Post") == "category_ids")
        #expect(github.foreignKey(for: .toOne("pullRequest", "PullRequest"), in: "Review") == "pull_request_id")
        #expect(github.foreignKey(for: .toMany("pullRequests", "PullRequest"), in: "Repository") == "pull_request_ids")
    }

    @Test func keyPaths() {
        #expect(github.modelKeyPath(for: ":repository.full_name") == ":repository.fullName")
        #expect(github.modelKeyPath(for: "repository.full_name") == "repository.fullName")
        #expect(github.modelKeyPath(for: "repository.owner.avatar_url") == "repository.owner.avatarURL")
        #expect(github.modelKeyPath(for: ":id") == ":identifier")
        #expect(github.jsonKeyPath(for: ":repository.fullName") == ":repository.full_name")
        #expect(github.jsonKeyPath(for: "owner.gravatarIdentifier") == "owner.gravatar_id")
    }

    @Test func identityFollowsTheConventions() {
        let withConventions = github.identity(overrides: ["Issue": ["number"]])
        #expect(withConventions.defaultAttribute == "identifier")
        #expect(withConventions.overrides == ["Issue": ["number"]])
        #expect(plain.identity().defaultAttribute == "id")
        let issue = Entity("Issue", attributes: [Attribute("identifier", .int64), Attribute("number", .int64)])
        let user = Entity("User", attributes: [Attribute("identifier", .int64), Attribute("login", .string)])
        #expect(withConventions.identityAttributes(for: issue) == ["number"])
        #expect(withConventions.identityAttributes(for: user) == ["identifier"])
    }

    @Test func theBuilderConvenienceSetsNamingAndIdentity() throws {
        let schema = try Schema {
            Entity("User") {
                Attribute("identifier", .int64)
                Attribute("avatarURL", .url)
            }
        }
        let client = try Client.Builder(schema: schema).rails(conventions: ["identifier": "id", "URL": "url"]).build()
        let user = try #require(client.mapping["User"])
        #expect(user.identity.map(\.name) == ["identifier"])
        #expect(user.keyPath(for: "identifier") == "id")
        #expect(user.keyPath(for: "avatarURL") == "avatar_url")
        #expect(user.resourcePath == "users")
    }
}

/// A custom convention in a few lines: kebab-case keys, built on the Rails one.
struct KebabCaseNaming: NamingStrategy {
    var base = RailsNaming()
    func jsonKey(for name: String, in entity: String) -> String {
        base.jsonKey(for: name, in: entity).replacingOccurrences(of: "_", with: "-")
    }
    func modelName(for jsonKey: String, in entity: String) -> String {
        base.modelName(for: jsonKey.replacingOccurrences(of: "-", with: "_"), in: entity)
    }
    func resourcePath(for entity: String) -> String {
        base.resourcePath(for: entity).replacingOccurrences(of: "_", with: "-")
    }
}

extension NamingStrategy where Self == KebabCaseNaming {
    static var kebabCase: KebabCaseNaming { KebabCaseNaming() }
}

/// Sync's rule: under Rails naming, the model's own camelCase name is read too when the payload
/// lacks the snake_case key (SyncTests.testAutomaticCamelcaseMapping's `camelcase.json`).
@Suite struct RailsFallbackKeyTests {
    @Test func theModelsOwnNameIsAFallback() async throws {
        let schema = try Schema {
            Entity("NormalUser") {
                Attribute("id", .string)
                Attribute("firstName", .string)
                Attribute("numberOfChildren", .int32)
            }
        }
        let client = try Client.Builder(schema: schema).rails().build()
        #expect(client.mapping["NormalUser"]?.attribute("firstName")?.fallbackKeyPaths == ["firstName"])
        _ = try await client.import(Data(#"[{"id": "1", "firstName": "Elvis", "number_of_children": 1}, {"id": "2", "first_name": "own", "firstName": "ignored"}]"#.utf8),
                                    as: "NormalUser")
        let users = try await client.fetch(Query("NormalUser", sortedBy: [.ascending("id")]))
        #expect(users.map { $0["firstName"] } == [.string("Elvis"), .string("own")])
        #expect(users[0]["numberOfChildren"] == .int(1))
        #expect(RailsNaming().fallbackKeys(for: "login", in: "User") == [], "a one-word name is its own key")
    }
}

@Suite struct CustomNamingTests {
    @Test func kebabCaseConvention() async throws {
        let naming = KebabCaseNaming()
        #expect(naming.jsonKey(for: "createdAt", in: "Post") == "created-at")
        #expect(naming.modelName(for: "created-at", in: "Post") == "createdAt")
        #expect(naming.resourcePath(for: "BlogPost") == "blog-posts")
        #expect(naming.foreignKey(for: .toOne("author", "Author"), in: "BlogPost") == "author_id")

        let schema = try Schema {
            Entity("BlogPost") {
                Attribute("id", .int64)
                Attribute("createdAt", .date)
                Attribute("readingTime", .int32)
            }
        }
        let client = try Client.Builder(schema: schema).naming(.kebabCase).build()
        let json = try JSON(parsing: #"{"id": 7, "created-at": "2024-05-01T10:00:00Z", "reading-time": 4}"#)
        let result = try await client.import(json, as: "BlogPost")
        let post = try #require(try await client.object(result.objects[0]))
        #expect(post["readingTime"] == .int(4))
        #expect(post["createdAt", as: Date.self] == ISO8601DateFormatter().date(from: "2024-05-01T10:00:00Z"))
        #expect(client.mapping["BlogPost"]?.resourcePath == "blog-posts")
    }
}

private extension String {
    /// `HTTPHeader` comes back as `HttpHeader`: acronyms in entity names do not survive the trip.
    func replacingHTTP() -> String { self == "HTTPHeader" ? "HttpHeader" : self }
}
