import Foundation
import Testing
import Tether
import TetherEntityMapper

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
