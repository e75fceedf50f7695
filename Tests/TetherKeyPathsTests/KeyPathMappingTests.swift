import Foundation
import Testing
import Tether
import TetherKeyPaths

private func json(_ text: String) -> Data { Data(text.utf8) }

@Suite struct DerivedSchemaTests {
    @Test func entitiesComeFromTheMappings() throws {
        let schema = try Schema(mappings: [taskMapping, projectMapping])
        let task = try #require(schema["Task"])
        #expect(task.identity == ["id"])
        #expect(task.attributes == [
            Attribute("id", .int64), Attribute("desc", .string), Attribute("done", .bool),
            Attribute("dueDate", .date), Attribute("priority", .string),
        ])
        #expect(task.relationship(named: "project") == Relationship.toOne("project", "Project", inverse: "tasks"))
        // The inverse declared on Project.tasks only is filled in on Task.project.
        #expect(schema["Project"]?.relationship(named: "tasks") == Relationship.toMany("tasks", "Task", inverse: "project"))
    }

    @Test func jsonKeysBecomeTheKeyMapping() {
        let overrides = taskMapping.keyOverrides
        #expect(overrides.keyPath(for: "desc", in: "Task") == "description")
        #expect(overrides.keyPath(for: "dueDate", in: "Task") == "due_date")
        #expect(overrides.keyPath(for: "project", in: "Task") == "project")
        #expect(overrides.foreignKey(for: "project", in: "Task") == "project_id")
        #expect(repositoryMapping.keyOverrides.keyPath(for: "ownerLogin", in: "Repository") == JSONKeyPath(components: ["owner", "login"]))
    }

    @Test func attributeNamesAreFoundByKeyPath() {
        #expect(taskMapping.attributeName(for: \Task.desc) == "desc")
        #expect(taskMapping.attributeName(for: \Task.id) == "id")
        #expect(taskMapping.attributeName(for: \Task.project) == nil)
        #expect(repositoryMapping.attributeNames == ["id", "fullName", "stars", "ownerLogin"])
        #expect(userMapping.relationshipNames == ["repositories"])
    }

    @Test func identityMustBeMapped() {
        let mapping = KeyPathMapping<Task>("Task", identity: \.id) { $0.map("description", to: \.desc) }
        let error = #expect(throws: KeyPathMappingError.self) { try Schema(mappings: [mapping]) }
        #expect(error?.kind == .unmappedIdentity)
        #expect(error?.entity == "Task")
    }

    @Test func nestedJSONKeyNeedsAName() {
        let mapping = KeyPathMapping<Repository>("Repository") { $0.map("owner.login", to: \.ownerLogin) }
        let error = #expect(throws: KeyPathMappingError.self) { try mapping.entity() }
        #expect(error?.kind == .unnamedKeyPath)
        #expect(error?.member == "owner.login")
    }

    @Test func propertyMappedTwice() {
        let mapping = KeyPathMapping<Task>("Task") {
            $0.map("description", to: \.desc)
            $0.map("summary", to: \.desc)
        }
        let error = #expect(throws: KeyPathMappingError.self) { try mapping.entity() }
        #expect(error?.kind == .duplicateKeyPath)
        #expect(error?.member == "summary")
    }

    @Test func sameEntityTwice() {
        let other = KeyPathMapping<Project>("Task") { $0.map("id", to: \.id) }
        let error = #expect(throws: KeyPathMappingError.self) { try Schema(mappings: [taskMapping, other]) }
        #expect(error?.kind == .duplicateEntity)
        #expect(error?.entity == "Task")
    }

    @Test func twoAttributesOnOneJSONKeyIsACoreSchemaError() {
        let mapping = KeyPathMapping<Task>("Task") {
            $0.map("x", to: \.desc)
            $0.map("x", to: \.done)
        }
        let error = #expect(throws: SchemaError.self) { try Schema(mappings: [mapping]) }
        #expect(error?.kind == .duplicateName)
    }

    @Test func relationshipToAnUnlistedMappingIsASchemaError() {
        let error = #expect(throws: SchemaError.self) { try Schema(mappings: [taskMapping]) }
        #expect(error?.kind == .unknownDestination)
        #expect(error?.member == "project")
    }

    @Test func mappingsMixWithHandDeclaredEntities() throws {
        let tag = Entity("Tag", identity: "name") { Attribute("name", .string) }
        let client = try Client.Builder(models: [taskMapping, projectMapping], entities: [tag]).build()
        #expect(client.schema.entities.map(\.name) == ["Task", "Project", "Tag"])
    }
}

@Suite struct TypedImportTests {
    let client: Client

    init() throws {
        client = try Client.Builder(models: [taskMapping, projectMapping, userMapping, repositoryMapping]).build()
    }

    @Test func importReturnsStructsInPayloadOrder() async throws {
        let tasks = try await client.import(json(#"""
            [{"id": 2, "description": "Write docs", "done": false, "due_date": "2024-05-01T10:00:00Z", "priority": "high"},
             {"id": 1, "description": "Ship it", "done": true}]
            """#), as: taskMapping)
        #expect(tasks.map(\.id) == [2, 1])
        #expect(tasks[0].desc == "Write docs")
        #expect(tasks[0].priority == .high)
        #expect(tasks[0].dueDate == Date(timeIntervalSince1970: 1_714_557_600))
        #expect(tasks[1] == Task(id: 1, desc: "Ship it", done: true, dueDate: nil, priority: .normal, project: nil))
        // The store holds them under the schema's attribute names.
        let stored = try await client.fetch(Query("Task", where: .equal("desc", .string("Ship it"))))
        #expect(stored.count == 1)
    }

    @Test func reimportUniquesByIdentity() async throws {
        _ = try await client.import(json(#"[{"id": 7, "description": "Draft", "done": false}]"#), as: taskMapping)
        let again = try await client.import(json(#"[{"id": "7", "done": true}, {"id": 8, "description": "New"}]"#), as: taskMapping)
        #expect(again.map(\.id) == [7, 8])
        #expect(again[0].desc == "Draft")   // a missing key leaves the stored value
        #expect(again[0].done)
        #expect(try await client.count(Query("Task")) == 2)
        let cleared = try await client.import(json(#"{"id": 7, "description": null}"#), as: taskMapping)
        #expect(cleared == [Task(id: 7, desc: "", done: true)])   // null clears: the default instance's value
    }

    @Test func toOneAndToManyBothWays() async throws {
        let tasks = try await client.import(json(#"""
            [{"id": 1, "description": "a", "project": {"id": 10, "title": "Docs"}},
             {"id": 2, "description": "b", "project_id": 10},
             {"id": 3, "description": "c"}]
            """#), as: taskMapping)
        #expect(tasks[0].project?.title == "Docs")
        #expect(tasks[1].project?.id == 10)   // linked by foreign key
        #expect(tasks[2].project == nil)
        // Depth 1: the related project carries attributes only.
        #expect(tasks[0].project?.tasks == [])

        let projects = try await client.fetch(projectMapping)
        #expect(projects.count == 1)
        #expect(Set(projects[0].tasks.map(\.id)) == [1, 2])
        #expect(projects[0].tasks.allSatisfy { $0.project == nil })

        // Depth 2 goes one level further, and stops there.
        let deep = try await client.fetch(projectMapping, depth: 2)
        #expect(deep[0].tasks.allSatisfy { $0.project?.id == 10 && $0.project?.tasks == [] })
        // Depth 0: attributes only.
        #expect(try await client.fetch(projectMapping, depth: 0)[0].tasks == [])
    }

    @Test func nestedToManyImport() async throws {
        let users = try await client.import(json(#"""
            {"id": 1, "login": "octocat", "avatar_url": "https://example.com/a.png",
             "repos": [{"id": 100, "full_name": "octocat/hello", "stargazers_count": 5, "owner": {"login": "octocat"}},
                       {"id": 101, "full_name": "octocat/world", "stargazers_count": 9}]}
            """#), as: userMapping)
        let user = try #require(users.first)
        #expect(user.login == "octocat")
        #expect(user.avatarURL == URL(string: "https://example.com/a.png"))
        #expect(user.repositories.map(\.fullName) == ["octocat/hello", "octocat/world"])
        #expect(user.repositories[0].ownerLogin == "octocat")   // nested JSON key path
        #expect(user.repositories.allSatisfy { $0.owner == nil })   // depth rule

        let repos = try await client.fetch(repositoryMapping, where: .greater(\.stars, 6))
        #expect(repos.map(\.id) == [101])
        #expect(repos[0].owner?.login == "octocat")   // the inverse was set by the import
    }

    @Test func typedPredicatesAndSorting() async throws {
        _ = try await client.import(json(#"""
            [{"id": 1, "description": "alpha", "done": true, "priority": "low"},
             {"id": 2, "description": "beta", "done": false, "priority": "high", "due_date": 0},
             {"id": 3, "description": "gamma", "done": false}]
            """#), as: taskMapping)
        let open = try await client.fetch(taskMapping, where: .equal(\.done, false), sortedBy: [.descending(\.desc)])
        #expect(open.map(\.desc) == ["gamma", "beta"])
        let noDate = try await client.fetch(taskMapping, where: .equal(\.dueDate, nil))
        #expect(noDate.map(\.id).sorted() == [1, 3])
        let combined = try await client.fetch(
            taskMapping, where: .hasPrefix(\.desc, "b") || .in(\.priority, [.low]), sortedBy: [.ascending(\.id)])
        #expect(combined.map(\.id) == [1, 2])
        let negated = try await client.fetch(taskMapping, where: !.equal(\.done, true), sortedBy: [.ascending(\.id)], limit: 1)
        #expect(negated.map(\.id) == [2])
        let one = try await client.model(taskMapping, identity: Int64(3))
        #expect(one?.desc == "gamma")
        #expect(try await client.model(taskMapping, identity: Int64(99)) == nil)
    }

    @Test func unmappedKeyPathInAPredicate() async throws {
        await #expect(throws: KeyPathMappingError.self) {
            _ = try await client.fetch(repositoryMapping, where: .equal(\.note, "local"))
        }
        let error = #expect(throws: KeyPathMappingError.self) {
            _ = try repositoryMapping.condition(.contains(\.fullName, "x") && .equal(\.note, ""))
        }
        #expect(error?.kind == .unmappedKeyPath)
    }

    @Test func clientWithoutTheEntity() async throws {
        let other = try Client.Builder(models: [userMapping, repositoryMapping]).build()
        let error = await #expect(throws: KeyPathMappingError.self) { _ = try await other.fetch(taskMapping) }
        #expect(error?.kind == .unknownEntity)
    }

    @Test func badValuesAreReportedNotSet() async throws {
        let tasks = try await client.import(json(#"[{"id": 5, "description": true, "done": "yes"}]"#), as: taskMapping)
        #expect(tasks == [Task(id: 5)])
        await #expect(throws: ImportError.self) {
            _ = try await client.import(json(#"[{"id": 6, "done": "yes"}]"#), as: taskMapping, options: ImportOptions(policy: .fail))
        }
    }

    @Test func modelsFromAnImportResult() async throws {
        let result = try await client.import(json(#"[{"id": 1, "title": "P"}]"#), as: "Project")
        let projects = try await client.models(Array(result.objects), as: projectMapping)
        #expect(projects == [Project(id: 1, title: "P")])
        #expect(projectMapping.values(of: projects[0]) == ["id": .int(1), "title": .string("P")])
        let object = try #require(try await client.object(result.objects[0]))
        #expect(projectMapping.model(from: object).title == "P")
    }
}
