import Foundation
import Testing
import Tether
import TetherEntityMapper
import TetherRails

// Docs/Strategy-EntityMapper.md's typed example, run as written.

private enum EntityMapperDoc {
    struct Task: EntityModel {
        var id: Int64
        var title: String
        var desc: String?
        var project: Project?
    }

    struct Project: EntityModel {
        var id: Int64
        var title: String
        var tasks: [Task] = []
    }
}

@Test func entityMapperDocTypedExample() async throws {
    typealias Task = EntityMapperDoc.Task
    typealias Project = EntityMapperDoc.Project
    let mapper = EntityMapper {
        EntityMap("Task", ["desc": "description"])
    }
    let client = try Client.Builder(models: [Task.self, Project.self])
        .keyMapping(mapper)
        .build()

    let json = Data(#"""
        [{"id": 1, "title": "Groceries", "tasks": [
            {"id": 10, "title": "Milk", "description": "2 litres, semi-skimmed"},
            {"id": 11, "title": "Bread", "description": "sourdough"}]}]
        """#.utf8)
    let projects = try await client.import(json, as: Project.self)
    #expect(projects[0].tasks.count == 2)
    #expect(Set(projects[0].tasks.map(\.desc)) == ["2 litres, semi-skimmed", "sourdough"])
    #expect(try await client.model(Task.self, identity: 10)?.desc == "2 litres, semi-skimmed")
    #expect(try await client.model(Task.self, identity: 10)?.project?.title == "Groceries")
}

/// A relationship mapped to another JSON key travels as ids under that key's foreign key:
/// `tags` mapped to "labels" reads and sends "label_ids", `project` mapped to "repository"
/// "repository_id"; an explicit foreign key still wins.
@Test func foreignKeysFollowTheMappedJSONKey() async throws {
    let schema = try Schema {
        Entity("Task") {
            Attribute("id", .int64)
            Relationship.toMany("tags", "Tag", inverse: "tasks")
            Relationship.toOne("project", "Project", inverse: "tasks")
            Relationship.toOne("owner", "Person", inverse: "tasks")
        }
        Entity("Tag") {
            Attribute("id", .int64)
            Relationship.toMany("tasks", "Task", inverse: "tags")
        }
        Entity("Project") {
            Attribute("id", .int64)
            Relationship.toMany("tasks", "Task", inverse: "project")
        }
        Entity("Person") {
            Attribute("id", .int64)
            Relationship.toMany("tasks", "Task", inverse: "owner")
        }
    }
    let client = try Client.Builder(schema: schema)
        .naming(RailsNaming())
        .keyMapping(EntityMapper {
            EntityMap("Task", ["tags": "labels", "project": "repository", "owner": "user"], foreignKeys: ["owner": "assignee_id"])
        })
        .build()
    let task = try #require(client.mapping["Task"])
    #expect(task.relationships.first { $0.name == "tags" }?.foreignKey == "label_ids")
    #expect(task.relationships.first { $0.name == "project" }?.foreignKey == "repository_id")
    #expect(task.relationships.first { $0.name == "owner" }?.foreignKey == "assignee_id")

    try await client.import((["id": 1, "label_ids": [7, 8], "repository_id": 3] as JSON), as: "Task")
    let id = try #require(try await client.object("Task", identity: .int(1))?.id)
    #expect(try await client.related("tags", of: id).count == 0)   // the tags are not stored yet: pending
    try await client.import(([["id": 7], ["id": 8]] as JSON), as: "Tag")
    try await client.import((["id": 3] as JSON), as: "Project")
    #expect(try await client.related("tags", of: id).count == 2)
    #expect(try await client.related("project", of: id).count == 1)
}
