import Foundation
import Testing
import Tether

// Typed-model gaps of issue 41: fallback keys declared on a model, model identity, and a
// per-attribute null policy.

/// Broker's employee: the identity comes as `employeeId` from one endpoint and `id` from another.
private struct Employee: EntityModel {
    var employeeId: Int64
    var name: String
    var avatar: String?

    static func describe(_ model: inout ModelDescription<Self>) {
        model.identity(\.employeeId)
        model.fallbackKeys(\.employeeId, "id")
        model.jsonKey(\.avatar, "avatar_url")
        model.fallbackKeys(\.avatar, "avatarUrl", "picture.url")
    }
}

/// A profile whose server sends `null` for the fields a list view leaves out.
private struct Profile: EntityModel {
    var id: Int64
    var name: String?
    var bio: String?

    static func describe(_ model: inout ModelDescription<Self>) {
        model.ignoresNull(\.bio)
    }
}

@Suite struct ModelGapsTests {
    private func client() throws -> Client {
        try Client.Builder(models: [Employee.self]).build()
    }

    @Test func fallbackKeysAreReadInOrderWhenTheOwnKeyIsAbsent() async throws {
        let client = try client()
        let payload = #"""
            [{"employeeId": 1, "name": "Ada", "avatar_url": "a.png"},
             {"id": 2, "name": "Grace", "picture": {"url": "g.png"}},
             {"id": 3, "name": "Edsger", "avatarUrl": "e.png", "picture": {"url": "ignored.png"}}]
            """#
        let employees = try await client.import(Data(payload.utf8), as: Employee.self)
        #expect(employees.map(\.employeeId) == [1, 2, 3])
        #expect(employees.map(\.avatar) == ["a.png", "g.png", "e.png"])

        // The fallback identity finds the same object again: one object per identity.
        let again = try await client.import(Data(#"[{"id": 1, "name": "Ada L."}]"#.utf8), as: Employee.self)
        #expect(again.map(\.name) == ["Ada L."])
        #expect(try await client.fetch(Employee.self).count == 3)
    }

    @Test func aFallbackKeyOfAPropertyTheModelDoesNotCodeIsRefusedWhenTheClientIsBuilt() throws {
        struct Broken: EntityModel {
            var id: Int64
            var name: String
            var nickname: String { name }
            static func describe(_ model: inout ModelDescription<Self>) {
                model.fallbackKeys(\.nickname, "nick")
            }
        }
        #expect(throws: ModelError.self) { _ = try Client.Builder(models: [Broken.self]).build() }
    }

    @Test func modelsAreTheSameObjectWhenTheirIdentitiesAreEqual() async throws {
        let client = try client()
        let read = try await client.import(Data(#"[{"employeeId": 7, "name": "Ada"}]"#.utf8), as: Employee.self)[0]
        var changed = read
        changed.name = "Ada Lovelace"
        changed.avatar = "new.png"
        let other = Employee(employeeId: 8, name: "Ada")
        #expect(try client.isSame(read, changed))
        #expect(try !client.isSame(read, other))
        // The store is not read: a model of an object never stored is the same as its copy.
        #expect(try client.isSame(other, other))
    }

    @Test func anAttributeThatIgnoresNullKeepsItsValueAndTheOthersAreCleared() async throws {
        let client = try Client.Builder(models: [Profile.self]).build()
        try await client.import(Data(#"[{"id": 1, "name": "Ada", "bio": "Analyst"}]"#.utf8), as: Profile.self)
        let listed = try await client.import(Data(#"[{"id": 1, "name": null, "bio": null}]"#.utf8), as: Profile.self)
        #expect(listed.first?.name == nil)          // null clears, as by default
        #expect(listed.first?.bio == "Analyst")     // null is ignored
        let changed = try await client.import(Data(#"[{"id": 1, "bio": "Poet"}]"#.utf8), as: Profile.self)
        #expect(changed.first?.bio == "Poet")       // a value still replaces it
        // An unchanged re-import with the null reports nothing changed.
        let again = try await client.import(Data(#"[{"id": 1, "name": null, "bio": null}]"#.utf8), as: "Profile")
        #expect(again.updated.isEmpty)
    }

    @Test func keyOverridesIgnoreNullInTheStringLayerAndRefuseARelationship() async throws {
        let schema = try Schema {
            Entity("User") {
                Attribute("id", .int64)
                Attribute("email", .string)
                Relationship.toMany("posts", "Post", inverse: "author")
            }
            Entity("Post") {
                Attribute("id", .int64)
                Relationship.toOne("author", "User", inverse: "posts")
            }
        }
        let client = try Client.Builder(schema: schema).keyMapping(KeyOverrides([:], ignoringNull: ["User": ["email"]])).build()
        try await client.import(Data(#"[{"id": 1, "email": "a@example.com"}]"#.utf8), as: "User")
        try await client.import(Data(#"[{"id": 1, "email": null}]"#.utf8), as: "User")
        #expect(try await client.object("User", identity: .int(1))?["email"] == .string("a@example.com"))

        #expect(throws: ConfigurationError.self) {
            _ = try Client.Builder(schema: schema).keyMapping(KeyOverrides([:], ignoringNull: ["User": ["posts"]])).build()
        }
    }
}
