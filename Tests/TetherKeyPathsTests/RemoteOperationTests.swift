import Foundation
import Testing
import Tether
import TetherKeyPaths
import TetherTesting

/// Typed fetch-from-URL, create and save for key-path mappings (issue 41), each routed through
/// the core operation of the same name.
@Suite struct KeyPathRemoteOperationTests {
    private func client(_ stub: StubTransport) throws -> Client {
        try Client.Builder(models: [taskMapping, projectMapping])
            .resource("/tasks", for: "Task")
            .transport(stub).baseURL(URL(string: "https://api.example")!).build()
    }

    @Test func fetchFromAURLCreateAndSaveGiveModels() async throws {
        let stub = StubTransport()
        stub.on(.get, "/projects/1/tasks", json: [["id": 1, "description": "Write", "done": false, "priority": "normal"], ["id": 2, "description": "Test", "done": true]])
        stub.on(.get, "/tasks/2", json: ["id": 2, "description": "Test!", "done": true])
        stub.on(.post, "/tasks", json: ["id": 9, "description": "Ship", "done": false, "priority": "high"])
        stub.on(.patch, "/tasks/1", json: ["id": 1, "description": "Write docs", "done": true])
        let client = try client(stub)

        let tasks = try await client.fetch(taskMapping, from: "/projects/1/tasks")
        #expect(tasks.map(\.desc) == ["Write", "Test"])
        let one = try await client.fetchModel(taskMapping, from: "/tasks/2")
        #expect(one.desc == "Test!")

        let created = try await client.create(Task(desc: "Ship", priority: .high), as: taskMapping)
        #expect(created.id == 9)
        let post = try #require(stub.requests(.post).first)
        let body = try JSON(parsing: try #require(post.body))
        #expect(body["description"] == .string("Ship"))
        #expect(body["id"] == nil, "the placeholder identity is not sent")

        var changed = tasks[0]
        changed.desc = "Write docs"
        changed.done = true
        let saved = try await client.save(changed, as: taskMapping)
        #expect(saved.desc == "Write docs" && saved.done)
        let patch = try #require(stub.requests(.patch).first)
        #expect(patch.url.absoluteString == "https://api.example/tasks/1")
        let patchBody = try JSON(parsing: try #require(patch.body))
        #expect(patchBody["description"] == .string("Write docs"))
        #expect(patchBody["done"] == .bool(true))
        #expect(patchBody["priority"] == nil, "only what changed")

        let error = await #expect(throws: KeyPathMappingError.self) {
            _ = try await client.save(Task(id: 404, desc: "Nowhere"), as: taskMapping)
        }
        #expect(error?.kind == .notStored)
        #expect(stub.requests(.patch).count == 1, "nothing sent for a model that names no stored object")
    }
}
