import Testing
import TetherRails

/// Property-style tests over 282 real GitHub API keys (Fixtures/github-keys.txt, extracted from
/// octokit/fixtures): snake -> camel -> snake is the identity.
///
/// Keys for which it cannot hold, and why (asserted below, so the list stays honest):
/// - without conventions: none. No GitHub key in the list has a word starting with a digit
///   (`x_1` -> `x1` -> `x1`) or a doubled underscore, the two shapes that cannot round-trip.
/// - with `identifier` <-> `id` and `URL` <-> `url`: none either. A key would fail if it contained
///   the *model* word `identifier` (`identifier` -> `identifier` -> `id`); GitHub has no such key.
@Suite struct GitHubKeysRoundTripTests {
    @Test func theKeyListIsLargeAndClean() throws {
        let keys = try Fixtures.githubKeys()
        #expect(keys.count >= 200)
        #expect(Set(keys).count == keys.count)
        let identifier = /[a-z_][a-z0-9_]*/
        #expect(keys.allSatisfy { $0.wholeMatch(of: identifier) != nil })
        // Real GitHub keys, several of which use the conventions.
        for key in ["id", "node_id", "gravatar_id", "avatar_url", "html_url", "full_name", "created_at", "_links"] {
            #expect(keys.contains(key), "\(key) is missing from github-keys.txt")
        }
    }

    @Test func snakeCamelSnakeWithoutConventions() throws {
        let naming = RailsNaming.rails
        let keys = try Fixtures.githubKeys()
        var checked = 0
        for key in keys {
            let camel = naming.modelName(for: key, in: "Any")
            #expect(naming.jsonKey(for: camel, in: "Any") == key, "\(key) -> \(camel)")
            #expect(!camel.dropFirst().contains("_") || key.hasPrefix("_"), "\(key) -> \(camel) is not camelCase")
            checked += 1
        }
        #expect(checked >= 200)
    }

    @Test func snakeCamelSnakeWithConventions() throws {
        let naming = RailsNaming.rails(conventions: ["identifier": "id", "URL": "url"])
        let keys = try Fixtures.githubKeys()
        let exceptions = keys.filter { $0.split(separator: "_").contains("identifier") }
        #expect(exceptions.isEmpty)
        var usingConventions = 0
        for key in keys where !exceptions.contains(key) {
            let camel = naming.modelName(for: key, in: "Any")
            #expect(naming.jsonKey(for: camel, in: "Any") == key, "\(key) -> \(camel)")
            if camel.contains("Identifier") || camel.contains("URL") || camel == "identifier" { usingConventions += 1 }
        }
        #expect(keys.count - exceptions.count >= 200)
        // Many GitHub keys end in _url or _id: the conventions are really exercised.
        #expect(usingConventions >= 40)
    }

    @Test func camelSnakeCamelOnTheModelSide() throws {
        let naming = RailsNaming.rails(conventions: ["identifier": "id", "URL": "url"])
        for key in try Fixtures.githubKeys() {
            let camel = naming.modelName(for: key, in: "Any")
            #expect(naming.modelName(for: naming.jsonKey(for: camel, in: "Any"), in: "Any") == camel)
        }
    }

    @Test func theShapesThatCannotRoundTrip() {
        let naming = RailsNaming.rails(conventions: ["identifier": "id"])
        #expect(naming.jsonKey(for: naming.modelName(for: "x_1", in: "A"), in: "A") == "x1")
        #expect(naming.jsonKey(for: naming.modelName(for: "a__b", in: "A"), in: "A") == "a_b")
        #expect(naming.jsonKey(for: naming.modelName(for: "identifier", in: "A"), in: "A") == "id")
    }
}
