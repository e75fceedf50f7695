import Foundation
import Testing
import Tether
import TetherEntityMapper
import TetherRails

/// AGEntityMapper's own example: a `Task` whose `desc` is the JSON `description` (the ObjC
/// property name `description` was taken), belonging to a `Project` that lists its tasks.
@Suite struct AGEntityMapperExampleTests {
    static func schema() throws -> Schema {
        try Schema {
            Entity("Task") {
                Attribute("id", .int64)
                Attribute("title", .string)
                Attribute("desc", .string)
                Relationship.toOne("project", "Project", inverse: "tasks")
            }
            Entity("Project") {
                Attribute("id", .int64)
                Attribute("title", .string)
                Relationship.toMany("tasks", "Task", inverse: "project")
            }
        }
    }

    static let mapper = EntityMapper {
        EntityMap("Task", ["desc": "description"])
    }

    @Test func importsTasksAndProjects() async throws {
        let client = try Client.Builder(schema: Self.schema()).keyMapping(Self.mapper).build()
        #expect(client.mapping["Task"]?.keyPath(for: "desc") == "description")
        #expect(client.mapping["Task"]?.keyPath(for: "title") == "title")  // not listed: the naming strategy

        let projects = try JSON(parsing: #"""
            [
              {"id": 1, "title": "Groceries", "tasks": [
                {"id": 10, "title": "Milk", "description": "2 litres, semi-skimmed"},
                {"id": 11, "title": "Bread", "description": "sourdough"}
              ]},
              {"id": 2, "title": "Garden", "tasks": [
                {"id": 20, "title": "Mow", "description": null}
              ]}
            ]
            """#)
        let result = try await client.import(projects, as: "Project")
        #expect(result.diagnostics.isEmpty)
        #expect(result.inserted.count == 5)
        let milk = try #require(try await client.object("Task", identity: .int(10)))
        #expect(milk["title"] == .string("Milk"))
        #expect(milk["desc"] == .string("2 litres, semi-skimmed"))
        #expect(milk["description"] == nil)
        let groceries = try #require(try await client.object("Project", identity: .int(1)))
        #expect(try await client.related("project", of: milk.id).map(\.id) == [groceries.id])
        #expect(Set(try await client.related("tasks", of: groceries.id).compactMap { $0["id", as: Int64.self] }) == [10, 11])
        let mow = try #require(try await client.object("Task", identity: .int(20)))
        #expect(mow["desc"] == nil)

        // A task on its own, moving to another project by a nested object.
        let moved = try JSON(parsing: #"{"id": 11, "title": "Bread", "description": "rye", "project": {"id": 2}}"#)
        let update = try await client.import(moved, as: "Task")
        #expect(update.updated.map(\.entity).contains("Task"))
        let bread = try #require(try await client.object("Task", identity: .int(11)))
        #expect(bread["desc"] == .string("rye"))
        #expect(try await client.related("project", of: bread.id).first?["title"] == .string("Garden"))
        #expect(try await client.related("tasks", of: groceries.id).count == 1)
        #expect(try await client.count(Query("Task")) == 3)
        #expect(try await client.count(Query("Project")) == 2)
    }

    @Test func anUnknownAttributeFailsAtBuild() throws {
        let mapper = EntityMapper {
            EntityMap("Task", ["desc": "description", "summary": "summary_text"])
        }
        let error = #expect(throws: ConfigurationError.self) {
            try Client.Builder(schema: Self.schema()).keyMapping(mapper).build()
        }
        #expect(error?.kind == .unknownProperty)
        #expect(error?.entity == "Task")
        #expect(error?.member == "summary")
        #expect(error?.message.contains("Task.summary") == true)
    }

    @Test func anUnknownEntityFailsAtBuild() throws {
        let error = #expect(throws: ConfigurationError.self) {
            try Client.Builder(schema: Self.schema()).keyMapping(EntityMapper { EntityMap("Todo", ["desc": "description"]) }).build()
        }
        #expect(error?.kind == .unknownEntity)
        #expect(error?.entity == "Todo")
    }

    @Test func otherMistakesFailAtBuild() throws {
        let schema = try Self.schema()
        let twice = EntityMapper {
            EntityMap("Task", ["desc": "description"])
            EntityMap("Task", ["title": "name"])
        }
        #expect(throws: ConfigurationError.self) { try Client.Builder(schema: schema).keyMapping(twice).build() }
        let foreignKeyOnAttribute = EntityMapper { EntityMap("Task", [:], foreignKeys: ["title": "title_id"]) }
        let error = #expect(throws: ConfigurationError.self) {
            try Client.Builder(schema: schema).keyMapping(foreignKeyOnAttribute).build()
        }
        #expect(error?.kind == .unknownProperty && error?.member == "title")
        let empty = EntityMapper { EntityMap("Task", ["desc": "details."]) }
        let emptyError = #expect(throws: ConfigurationError.self) { try Client.Builder(schema: schema).keyMapping(empty).build() }
        #expect(emptyError?.kind == .invalidKeyPath && emptyError?.member == "desc")
        // Two properties on one JSON key is caught by the builder.
        let conflicting = EntityMapper { EntityMap("Task", ["desc": "title"]) }
        let conflict = #expect(throws: ConfigurationError.self) { try Client.Builder(schema: schema).keyMapping(conflicting).build() }
        #expect(conflict?.kind == .conflictingKeys && conflict?.entity == "Task")
    }

    @Test func foreignKeysAndTheFluentForm() async throws {
        let mapper = EntityMapper([]).mapping("Task", ["desc": "description"], foreignKeys: ["project": "list_id"])
        #expect(mapper["Task"]?.keys == ["desc": "description"])
        #expect(mapper.property(forKeyPath: "description", in: "Task") == "desc")
        #expect(mapper.property(forKeyPath: "title", in: "Task") == nil)
        let client = try Client.Builder(schema: Self.schema()).keyMapping(mapper).build()
        _ = try await client.import(JSON(parsing: #"{"id": 5, "title": "Home"}"#), as: "Project")
        let result = try await client.import(
            JSON(parsing: #"{"id": 50, "title": "Dust", "description": "top shelves", "list_id": 5}"#), as: "Task")
        let task = try #require(result.objects.first)
        #expect(try await client.related("project", of: task).first?["title"] == .string("Home"))
    }
}

/// Rails naming and an entity-mapper override in one builder.
@Suite struct EntityMapperWithRailsTests {
    @Test func railsNamingPlusExplicitDictionaries() async throws {
        let schema = try Schema {
            Entity("User") {
                Attribute("identifier", .int64)
                Attribute("login", .string)
                Attribute("avatarURL", .url)
            }
            Entity("Repository") {
                Attribute("identifier", .int64)
                Attribute("fullName", .string)
                Attribute("repositoryDescription", .string)
                Attribute("ownerLogin", .string)
                Attribute("stars", .int64)
                Relationship.toOne("owner", "User")
            }
        }
        let mapper = EntityMapper {
            EntityMap("Repository", [
                "repositoryDescription": "description",
                "ownerLogin": "owner.login",  // a nested key path
                "stars": "stargazers_count",
            ])
        }
        let client = try Client.Builder(schema: schema)
            .rails(conventions: ["identifier": "id", "URL": "url"])
            .keyMapping(mapper)
            .build()
        let repository = try #require(client.mapping["Repository"])
        #expect(repository.keyPath(for: "fullName") == "full_name")  // Rails
        #expect(repository.keyPath(for: "identifier") == "id")  // Rails convention
        #expect(repository.keyPath(for: "repositoryDescription") == "description")  // mapper
        #expect(repository.keyPath(for: "ownerLogin") == JSONKeyPath(components: ["owner", "login"]))  // mapper
        #expect(repository.relationship("owner")?.foreignKey == "owner_id")  // Rails

        let json = try JSON(parsing: #"""
            {"id": 1296269, "full_name": "octocat/Hello-World", "description": "My first repository",
             "stargazers_count": 80,
             "owner": {"id": 1, "login": "octocat", "avatar_url": "https://github.com/images/error/octocat_happy.gif"}}
            """#)
        let result = try await client.import(json, as: "Repository")
        #expect(result.diagnostics.isEmpty)
        let stored = try #require(try await client.object(result.objects[0]))
        #expect(stored["fullName"] == .string("octocat/Hello-World"))
        #expect(stored["repositoryDescription"] == .string("My first repository"))
        #expect(stored["ownerLogin"] == .string("octocat"))
        #expect(stored["stars"] == .int(80))
        let owner = try #require(try await client.related("owner", of: stored.id).first)
        #expect(owner["login"] == .string("octocat"))
        #expect(owner["avatarURL", as: URL.self] == URL(string: "https://github.com/images/error/octocat_happy.gif"))
    }
}
