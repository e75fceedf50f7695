import Foundation
import Testing
import Tether

@Suite struct SchemaTests {
    @Test func declaresEntitiesWithEveryAttributeType() throws {
        let schema = try Schema {
            Entity("Everything", identity: "id") {
                Attribute("id", .int64)
                Attribute("s", .string)
                Attribute("i16", .int16)
                Attribute("i32", .int32)
                Attribute("dec", .decimal)
                Attribute("dbl", .double)
                Attribute("flt", .float)
                Attribute("flag", .bool)
                Attribute("when", .date)
                Attribute("blob", .data)
                Attribute("uuid", .uuid)
                Attribute("link", .url)
                Attribute("tags", .transformable("csv"))
                Relationship.toMany("children", "Everything", inverse: "parent", ordered: true, deleteRule: .cascade)
                Relationship.toOne("parent", "Everything", inverse: "children")
            }
        }
        let entity = try #require(schema["Everything"])
        #expect(entity.attributes.count == 13)
        #expect(entity.identity == ["id"])
        #expect(entity.relationship(named: "children")?.kind == .orderedToMany)
        #expect(entity.relationship(named: "children")?.deleteRule == .cascade)
        #expect(schema["Nothing"] == nil)
    }

    @Test func compositeIdentity() throws {
        let schema = try Schema {
            Entity("Issue", identity: "repositoryID", "number") {
                Attribute("repositoryID", .int64)
                Attribute("number", .int64)
            }
        }
        #expect(schema["Issue"]?.identity == ["repositoryID", "number"])
    }

    @Test func rejectsDuplicateEntity() {
        let error = #expect(throws: SchemaError.self) {
            try Schema { Entity("User") { Attribute("id", .int64) }; Entity("User") { Attribute("id", .int64) } }
        }
        #expect(error?.kind == .duplicateName)
        #expect(error?.entity == "User")
    }

    @Test func rejectsDuplicateMember() {
        let error = #expect(throws: SchemaError.self) {
            try Schema {
                Entity("User") {
                    Attribute("login", .string)
                    Relationship.toOne("login", "User")
                }
            }
        }
        #expect(error?.kind == .duplicateName)
        #expect(error?.member == "login")
    }

    @Test func rejectsUnknownDestination() {
        let error = #expect(throws: SchemaError.self) {
            try Schema { Entity("Repository") { Relationship.toOne("owner", "Usr") } }
        }
        #expect(error?.kind == .unknownDestination)
        #expect(error?.entity == "Repository")
        #expect(error?.member == "owner")
        #expect(error?.description.contains("Usr") == true)
    }

    @Test func rejectsUnknownInverse() {
        let error = #expect(throws: SchemaError.self) {
            try Schema {
                Entity("User") { Relationship.toMany("repositories", "Repository", inverse: "owners") }
                Entity("Repository") { Relationship.toOne("owner", "User", inverse: "repositories") }
            }
        }
        #expect(error?.kind == .unknownInverse)
        #expect(error?.member == "repositories")
    }

    @Test func rejectsMismatchedInverse() {
        let error = #expect(throws: SchemaError.self) {
            try Schema {
                Entity("User") {
                    Relationship.toMany("repositories", "Repository", inverse: "owner")
                    Relationship.toMany("starred", "Repository", inverse: "owner")
                }
                Entity("Repository") { Relationship.toOne("owner", "User", inverse: "repositories") }
            }
        }
        #expect(error?.kind == .inverseMismatch)
        #expect(error?.member == "starred")
    }

    @Test func rejectsMissingIdentityAttribute() {
        let error = #expect(throws: SchemaError.self) {
            try Schema { Entity("User", identity: "identifier") { Attribute("id", .int64) } }
        }
        #expect(error?.kind == .missingIdentityAttribute)
        #expect(error?.member == "identifier")
    }
}

@Suite struct BuilderTests {
    static let schema = try! Schema {
        Entity("User") {
            Attribute("id", .int64)
            Attribute("login", .string)
            Attribute("tags", .transformable("csv"))
            Relationship.toMany("repositories", "Repository", inverse: "owner")
        }
        Entity("Repository") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Relationship.toOne("owner", "User", inverse: "repositories")
        }
    }

    struct CSV: AttributeTransformer {
        func value(from json: JSON) throws -> Value {
            guard let items = json.arrayValue?.compactMap(\.stringValue) else { throw CSVError() }
            return .string(items.joined(separator: ","))
        }
        func json(from value: Value) -> JSON {
            guard case .string(let s) = value else { return .null }
            return .array(s.split(separator: ",").map { .string(String($0)) })
        }
        struct CSVError: Error {}
    }

    @Test func defaultsAreVerbatimIdInMemory() throws {
        let client = try Client.Builder(schema: Self.schema).transformer(CSV(), named: "csv").build()
        #expect(client.naming is VerbatimNaming)
        #expect(client.store is InMemoryStore)
        #expect(client.transport == nil)
        #expect(client.schema["User"]?.identity == ["id"])
        #expect(client.mapping["Repository"]?.keyPath(for: "name") == "name")
        #expect(client.mapping["Repository"]?.relationship("owner")?.foreignKey == "owner_id")
        #expect(client.mapping["User"]?.relationship("repositories")?.foreignKey == "repository_ids")
        #expect(client.mapping["User"]?.resourcePath == "User")
    }

    @Test func missingTransformerFailsAtBuild() {
        let error = #expect(throws: ConfigurationError.self) { try Client.Builder(schema: Self.schema).build() }
        #expect(error?.kind == .missingTransformer)
        #expect(error?.entity == "User")
        #expect(error?.member == "tags")
    }

    @Test func keyOverridesNamingUnknownThingsFailAtBuild() {
        let base = Client.Builder(schema: Self.schema).transformer(CSV(), named: "csv")
        let unknownEntity = #expect(throws: ConfigurationError.self) {
            try base.keyMapping(KeyOverrides(["Usr": ["login": "user_login"]])).build()
        }
        #expect(unknownEntity?.kind == .unknownEntity)
        let unknownAttribute = #expect(throws: ConfigurationError.self) {
            try base.keyMapping(KeyOverrides(["User": ["logn": "login"]])).build()
        }
        #expect(unknownAttribute?.kind == .unknownProperty)
        #expect(unknownAttribute?.entity == "User")
        #expect(unknownAttribute?.member == "logn")
    }

    @Test func twoPropertiesOnOneKeyFailAtBuild() {
        let error = #expect(throws: ConfigurationError.self) {
            try Client.Builder(schema: Self.schema).transformer(CSV(), named: "csv")
                .keyMapping(KeyOverrides(["User": ["login": "id"]])).build()
        }
        #expect(error?.kind == .conflictingKeys)
    }

    @Test func identityNamingMissingAttributeFailsAtBuild() {
        let error = #expect(throws: ConfigurationError.self) {
            try Client.Builder(schema: Self.schema).transformer(CSV(), named: "csv")
                .identity(.attribute("id", overrides: ["User": ["uuid"]])).build()
        }
        #expect(error?.kind == .invalidIdentity)
        #expect(error?.member == "uuid")
    }

    @Test func transportForUnknownEntityFailsAtBuild() {
        struct Never: Transport {
            func send(_ request: TransportRequest) async throws -> TransportResponse { TransportResponse(status: 500) }
        }
        let error = #expect(throws: ConfigurationError.self) {
            try Client.Builder(schema: Self.schema).transformer(CSV(), named: "csv").transport(Never(), for: "Team").build()
        }
        #expect(error?.kind == .unknownEntity)
    }

    @Test func buildersAreValuesThatTestsCanCopy() async throws {
        let base = Client.Builder(schema: Self.schema).transformer(CSV(), named: "csv")
        let storeA = InMemoryStore()
        let storeB = InMemoryStore()
        let a = try base.store(storeA).build()
        let b = try base.store(storeB).build()
        _ = try await a.import(JSON(parsing: #"{"id": 1, "login": "a", "tags": ["x", "y"]}"#), as: "User")
        #expect(try await a.count(Query("User")) == 1)
        #expect(try await b.count(Query("User")) == 0)
        #expect(try await a.object("User", identity: .int(1))?["tags"] == .string("x,y"))
    }
}

@Suite struct SchemaInverseAndDateTests {
    @Test func anInverseDeclaredOnOneSideIsCompleted() async throws {
        let schema = try Schema {
            Entity("User") { Attribute("id", .int64); Relationship.toMany("repositories", "Repository") }
            Entity("Repository") { Attribute("id", .int64); Relationship.toOne("owner", "User", inverse: "repositories") }
        }
        #expect(schema["User"]?.relationship(named: "repositories")?.inverse == "owner")
        let client = try Client.Builder(schema: schema).build()
        let repo = try await client.import(JSON(parsing: #"{"id": 1, "owner": {"id": 7}}"#), as: "Repository").objects[0]
        let user = try #require(try await client.object("User", identity: .int(7)))
        #expect(try await client.related("repositories", of: user.id).map(\.id) == [repo])
    }

    @Test(arguments: [
        (1_296_068_472.0, "2011-01-26T19:01:12Z"),
        (1_296_068_472.25, "2011-01-26T19:01:12.250Z"),
        (1_795_311_898.922346, "2026-11-22T01:44:58.922346Z"),
        (-86_400.5, "1969-12-30T23:59:59.500Z"),
    ])
    func iso8601WritesWhatItReads(seconds: Double, text: String) throws {
        let json = DateDecoding.default.json(from: Date(timeIntervalSince1970: seconds))
        #expect(json == .string(text))
        let back = try #require(DateDecoding.default.date(from: json))
        #expect(abs(back.timeIntervalSince1970 - seconds) < 0.000_001)
    }
}
