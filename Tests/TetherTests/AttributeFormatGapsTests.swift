import Foundation
import Testing
import Tether
import TetherTesting

// Gaps of issue 41: date formats per attribute (read by imports, written in request bodies and
// URLs), and composite identities in foreign keys, URL templates and relationship removal.

/// A person whose birthday is a plain date and whose `created` is Unix seconds (as Stripe
/// writes it), beside ISO 8601 timestamps, the client's formats.
private struct Person: EntityModel {
    var id: Int64
    var name: String?
    var birthday: Date?
    var created: Date?
    var updatedAt: Date?

    static func describe(_ model: inout ModelDescription<Self>) {
        model.dateFormats(\.birthday, .format("yyyy-MM-dd"))
        model.dateFormats(\.created, .secondsSince1970)
    }
}

private func utc(_ year: Int, _ month: Int, _ day: Int) -> Date {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC")!
    return calendar.date(from: DateComponents(year: year, month: month, day: day))!
}

@Suite struct DateFormatPerAttributeTests {
    static let payload = #"""
        [{"id": 1, "name": "Ada", "birthday": "1990-05-17", "created": 1700000000, "updatedAt": "2024-01-02T03:04:05Z"}]
        """#

    @Test func aTypedModelReadsEachAttributeInItsOwnFormatFromBytesAndFromATree() async throws {
        for fromBytes in [true, false] {
            let client = try Client.Builder(models: [Person.self]).build()
            if fromBytes {
                _ = try await client.import(Data(Self.payload.utf8), as: Person.self)
            } else {
                let result = try await client.import(try JSON(parsing: Data(Self.payload.utf8)), as: "Person")
                #expect(result.diagnostics.isEmpty)
            }
            let person = try #require(try await client.fetch(Person.self).first)
            #expect(person.birthday == utc(1990, 5, 17))
            #expect(person.created == Date(timeIntervalSince1970: 1_700_000_000))
            #expect(person.updatedAt == Date(timeIntervalSince1970: 1_704_164_645))
        }
    }

    @Test func aValueNotInTheAttributesFormatIsADiagnosticNamingEntityAttributeAndPath() async throws {
        let client = try Client.Builder(models: [Person.self]).build()
        // The attribute's formats replace the client's: an ISO 8601 birthday is not read either.
        let payload = #"""
            [{"id": 1, "birthday": "17/05/1990"},
             {"id": 2, "birthday": "1990-05-17T00:00:00Z", "created": "2024-01-02T03:04:05Z"},
             {"id": 3, "updatedAt": "1990-05-17"}]
            """#
        for data in [Data(payload.utf8)] {
            let result = try await client.import(data, as: "Person")
            #expect(result.diagnostics.map(\.path.description) == ["$[0].birthday", "$[1].birthday", "$[1].created"])
            #expect(result.diagnostics.allSatisfy { $0.entity == "Person" && $0.problem == .invalidValue })
            #expect(result.diagnostics.map(\.attribute) == ["birthday", "birthday", "created"])
            #expect(result.diagnostics[0].message.contains("attribute's own date formats"))
        }
        // The client's ISO 8601 reads a plain date for an attribute without formats of its own.
        #expect(try await client.object("Person", identity: .int(3))?["updatedAt"] == .date(utc(1990, 5, 17)))
        #expect(try await client.object("Person", identity: .int(1))?["birthday"] == nil, "never stored silently")

        let strict = try Client.Builder(models: [Person.self]).importOptions(ImportOptions(policy: .fail)).build()
        let error = await #expect(throws: ImportError.self) {
            _ = try await strict.import(Data(#"[{"id": 1, "birthday": "17/05/1990"}]"#.utf8), as: "Person")
        }
        #expect(error?.path.description == "$[0].birthday")
        #expect(error?.entity == "Person")
    }

    @Test func dateFormatsOnATypedPropertyThatHoldsNoDatesAreRefusedWhenTheClientIsBuilt() throws {
        struct Broken: EntityModel {
            var id: Int64
            var name: String
            static func describe(_ model: inout ModelDescription<Self>) {
                model.dateFormats(\.name, .format("yyyy-MM-dd"))
            }
        }
        let error = #expect(throws: ConfigurationError.self) { _ = try Client.Builder(models: [Broken.self]).build() }
        #expect(error?.kind == .invalidDateFormats)
        #expect(error?.entity == "Broken" && error?.member == "name")
    }

    @Test func requestBodiesAndURLsWriteEachAttributeInItsOwnFormat() async throws {
        let stub = StubTransport()
        stub.on(.post, "/people/born/1990-05-17", json: ["id": 1, "birthday": "1990-05-17", "created": 1_700_000_000])
        let client = try Client.Builder(models: [Person.self])
            .resource("/people/born/:birthday", for: "Person")
            .transport(stub).baseURL(URL(string: "https://api.example")!).build()
        _ = try await client.import(Data(Self.payload.utf8), as: Person.self)
        let id = try #require(try await client.object("Person", identity: .int(1))?.id)
        let body = try await client.export(id)
        #expect(body["birthday"] == .string("1990-05-17"))
        #expect(body["created"] == .int(1_700_000_000))
        #expect(body["updatedAt"] == .string("2024-01-02T03:04:05Z"))

        _ = try await client.create(id)
        let sent = try #require(stub.requests.first)
        #expect(sent.url.absoluteString == "https://api.example/people/born/1990-05-17")
        let sentBody = try JSON(parsing: try #require(sent.body))
        #expect(sentBody["birthday"] == .string("1990-05-17"))
        #expect(sentBody["created"] == .int(1_700_000_000))
    }

    @Test func keyOverridesGiveDateFormatsInTheStringLayerAndRefuseWhatHoldsNoDates() async throws {
        let schema = try Schema {
            Entity("Event") {
                Attribute("id", .int64)
                Attribute("title", .string)
                Attribute("day", .date)
                Attribute("holidays", .array(.date))
                Attribute("stamp", .date)
            }
        }
        let overrides = KeyOverrides([:], dateFormats: ["Event": [
            "day": DateDecoding([.format("yyyy-MM-dd")]), "holidays": DateDecoding([.format("dd.MM.yyyy")]),
            "stamp": DateDecoding([.millisecondsSince1970]),
        ]])
        let client = try Client.Builder(schema: schema).keyMapping(overrides).build()
        let result = try await client.import(
            Data(#"[{"id": 1, "day": "2024-12-24", "holidays": ["24.12.2024", "31.12.2024"], "stamp": 1700000000123}]"#.utf8), as: "Event")
        #expect(result.diagnostics.isEmpty)
        let event = try #require(try await client.object("Event", identity: .int(1)))
        #expect(event["day"] == .date(utc(2024, 12, 24)))
        #expect(event["holidays"] == .array([.date(utc(2024, 12, 24)), .date(utc(2024, 12, 31))]))
        let body = try await client.export(event.id)
        #expect(body["day"] == .string("2024-12-24"))
        #expect(body["holidays"] == .array([.string("24.12.2024"), .string("31.12.2024")]))
        #expect(body["stamp"] == .int(1_700_000_000_123))
        #expect(client.mapping["Event"]?.attribute("day")?.dateDecoding == DateDecoding([.format("yyyy-MM-dd")]))
        #expect(client.mapping["Event"]?.attribute("title")?.dateDecoding == nil)

        let bad = try await client.import(Data(#"[{"id": 2, "holidays": ["24.12.2024", "2024-12-31"]}]"#.utf8), as: "Event")
        #expect(bad.diagnostics.map(\.path.description) == ["$[0].holidays"])
        #expect(bad.diagnostics.first?.attribute == "holidays")

        for formats in [["title": DateDecoding([.iso8601])], ["nothing": DateDecoding([.iso8601])], ["day": DateDecoding([])]] {
            #expect(throws: ConfigurationError.self) {
                _ = try Client.Builder(schema: schema).keyMapping(KeyOverrides([:], dateFormats: ["Event": formats])).build()
            }
        }
        let error = #expect(throws: ConfigurationError.self) {
            _ = try Client.Builder(schema: schema).keyMapping(KeyOverrides([:], dateFormats: ["Event": ["title": DateDecoding([.iso8601])]])).build()
        }
        #expect(error?.kind == .invalidDateFormats)
        #expect(error?.member == "title")
    }
}

/// Repositories identified by owner and name (GitHub's `/repos/:owner/:repo`), issues that point
/// at them by a foreign key, teams that hold several.
private let compositeSchema = try! Schema {
    Entity("Repository", identity: "owner", "name") {
        Attribute("owner", .string)
        Attribute("name", .string)
        Attribute("stars", .int64)
        Relationship.toMany("issues", "Issue", inverse: "repository")
    }
    Entity("Issue") {
        Attribute("id", .int64)
        Attribute("title", .string)
        Relationship.toOne("repository", "Repository", inverse: "issues")
    }
    Entity("Team") {
        Attribute("id", .int64)
        Relationship.toMany("repositories", "Repository")
    }
}

@Suite struct CompositeIdentityTests {
    private func client(_ stub: StubTransport = StubTransport(), _ change: (Client.Builder) -> Client.Builder = { $0 }) throws -> Client {
        try change(Client.Builder(schema: compositeSchema)
            .keyMapping(KeyOverrides([:], foreignKeys: ["Issue": ["repository": "repository_id"], "Team": ["repositories": "repository_ids"]]))
            .transport(stub).baseURL(URL(string: "https://api.example")!)).build()
    }

    @Test func aForeignKeyNamesACompositeIdentityAsAnObjectOfItsKeysOnImportAndExport() async throws {
        let client = try client()
        try await client.import(Data(#"[{"owner": "octocat", "name": "hello", "stars": 5}]"#.utf8), as: "Repository")
        let issues = try await client.import(Data(#"""
            [{"id": 1, "title": "Bug", "repository_id": {"owner": "octocat", "name": "hello"}},
             {"id": 2, "title": "Later", "repository_id": {"owner": "octocat", "name": "later"}},
             {"id": 3, "title": "Bad", "repository_id": 5},
             {"id": 4, "title": "Half", "repository_id": {"owner": "octocat"}}]
            """#.utf8), as: "Issue")
        let hello = try #require(try await client.object("Repository", identity: .string("octocat"), .string("hello")))
        let issue = try #require(try await client.object("Issue", identity: .int(1)))
        #expect(try await client.related("repository", of: issue.id).map(\.id) == [hello.id])
        // A bad reference is a diagnostic with its path; one to an object not yet imported waits.
        let invalid = issues.diagnostics.filter { $0.problem == .invalidRelationship }
        #expect(invalid.map(\.path.description) == ["$[2].repository_id", "$[3].repository_id"])
        #expect(invalid.allSatisfy { $0.entity == "Issue" && $0.attribute == "repository" })
        #expect(invalid.first?.message.contains("Repository's identity ('owner', 'name')") == true)
        try await client.import(Data(#"[{"owner": "octocat", "name": "later"}]"#.utf8), as: "Repository")
        let later = try #require(try await client.object("Repository", identity: .string("octocat"), .string("later")))
        let second = try #require(try await client.object("Issue", identity: .int(2)))
        #expect(try await client.related("repository", of: second.id).map(\.id) == [later.id])

        // To-many: an array of such objects.
        try await client.import(Data(#"""
            [{"id": 7, "repository_ids": [{"owner": "octocat", "name": "hello"}, {"owner": "octocat", "name": "later"}]}]
            """#.utf8), as: "Team")
        let team = try #require(try await client.object("Team", identity: .int(7)))
        #expect(try await client.related("repositories", of: team.id).map(\.id) == [hello.id, later.id])

        // Request bodies write the same forms.
        let issueBody = try await client.export(issue.id)
        #expect(issueBody["repository_id"] == .object(["owner": .string("octocat"), "name": .string("hello")]))
        let teamBody = try await client.export(team.id, options: ExportOptions(relationships: .all))
        #expect(teamBody["repository_ids"] == .array([
            .object(["owner": .string("octocat"), "name": .string("hello")]), .object(["owner": .string("octocat"), "name": .string("later")]),
        ]))
    }

    @Test func anItemURLHasOneSegmentPerIdentityAttributeAndTemplatesNameEachAttribute() async throws {
        let stub = StubTransport()
        stub.on(.get, "/repos/octocat/hello%20world", json: ["owner": "octocat", "name": "hello world", "stars": 9])
        stub.on(.post, "/repos/octocat/hello%20world/issues", json: ["id": 1, "title": "Bug"])
        let client = try client(stub) {
            $0.resource("/repos", for: "Repository")
                .resource("/repos/:repository.owner/:repository.name/issues", for: "Issue")
        }
        try await client.import(Data(#"[{"owner": "octocat", "name": "hello world", "stars": 5}]"#.utf8), as: "Repository")
        let repository = try #require(try await client.object("Repository", identity: .string("octocat"), .string("hello world")))
        let refreshed = try await client.refresh(repository.id)
        #expect(refreshed["stars"] == .int(9))
        #expect(stub.requests.last?.url.absoluteString == "https://api.example/repos/octocat/hello%20world")

        let issue = try await client.create("Issue", values: ["title": .string("Bug")], related: ["repository": [repository.id]])
        let post = try #require(stub.requests.last)
        #expect(post.method == .post)
        #expect(post.url.absoluteString == "https://api.example/repos/octocat/hello%20world/issues")
        #expect(try JSON(parsing: try #require(post.body))["repository_id"] == .object(["owner": .string("octocat"), "name": .string("hello world")]))
        #expect(try await client.related("repository", of: issue.id).map(\.id) == [repository.id])

        // One variable cannot hold a composite identity: refused when the client is built, naming the fix.
        for template in ["/repos/:repository/issues", "/repos/:repository_id/issues"] {
            let error = #expect(throws: ConfigurationError.self) {
                _ = try self.client { $0.resource(URLTemplate(template), for: "Issue") }
            }
            #expect(error?.kind == .invalidRoute)
            #expect(error?.message.contains(":repository.owner/:repository.name") == true)
        }
    }

    @Test func removingACompositeIdentityTargetDeletesItsSegmentsAndUnlinksIt() async throws {
        let stub = StubTransport()
        stub.on(.delete, "/teams/7/repos/octocat/a%2Fb", status: 204, body: Data())
        let client = try client(stub) { $0.relationshipResource("/teams/:id/repos", for: "repositories", of: "Team") }
        try await client.import(Data(#"""
            [{"id": 7, "repository_ids": [{"owner": "octocat", "name": "a/b"}, {"owner": "octocat", "name": "c"}]}]
            """#.utf8), as: "Team")
        try await client.import(Data(#"[{"owner": "octocat", "name": "a/b"}, {"owner": "octocat", "name": "c"}]"#.utf8), as: "Repository")
        let team = try #require(try await client.object("Team", identity: .int(7)))
        let ab = try #require(try await client.object("Repository", identity: .string("octocat"), .string("a/b")))
        let c = try #require(try await client.object("Repository", identity: .string("octocat"), .string("c")))
        #expect(try await client.related("repositories", of: team.id).map(\.id) == [ab.id, c.id])

        let status = try await client.relationship("repositories", of: team.id).remove(ab.id)
        #expect(status == 204)
        #expect(stub.requests.last?.method == .delete)
        #expect(stub.requests.last?.url.absoluteString == "https://api.example/teams/7/repos/octocat/a%2Fb")
        #expect(try await client.related("repositories", of: team.id).map(\.id) == [c.id])
        #expect(try await client.object("Repository", identity: .string("octocat"), .string("a/b")) != nil, "the object itself stays")
    }
}
