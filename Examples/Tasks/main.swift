// Tasks: AeroGear's AGEntityMapper example, told with Tether's entity mapper (TetherEntityMapper)
// and typed models, with full CRUD against the Django REST Framework server of Tests/Servers.
//
// AeroGear's TODO app has a Task (title, description, tags, project) in a Project, with the
// model's `desc` read from the JSON's `description` by an explicit dictionary. The DRF server
// has no tasks resource; its closest one is the issue: a task in a project (repository), with a
// title, a text, tags (labels) and open or closed. So here `Task` is a DRF issue, `Project` a
// repository and `Tag` a label, and the explicit dictionaries say which JSON key holds which
// property: `Task.desc` <- "body" (an issue's text; `Project.desc` <- "description", AeroGear's
// own key, on the repository), `Task.project` <- "repository_id", `Task.tags` <- "labels",
// `Tag.title` <- "name", `Tag.style` <- "color". Everything else is the property's own name.
//
// The typed models only declare the properties; every JSON key comes from the EntityMapper:
// the two compose (`Client.Builder(models:)` derives the schema, `.keyMapping(mapper)` maps it).
//
// It lists the projects and tasks, queries the open tasks locally, then creates a task, saves a
// change (a PATCH of only what changed, in the server's keys), refreshes it and deletes it,
// printing each request it sends.
//
//     bash .ci/servers.sh start          # or: Tests/Servers/drf/start.sh 8000
//     swift run Tasks                    # TETHER_DRF_URL overrides http://127.0.0.1:8000/api
//     bash .ci/servers.sh stop
//
// (`Task` below is the model, as in AeroGear; Swift's own Task is `_Concurrency.Task`.)

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Tether
import TetherEntityMapper
import TetherURLSession

// MARK: The models

/// A DRF repository as AeroGear's Project.
struct Project: EntityModel {
    var id: Int64
    var title: String
    var desc: String?
    var tasks: [Task] = []
}

/// A DRF label as AeroGear's Tag.
struct Tag: EntityModel {
    var id: Int64
    var title: String
    var style: String?
}

/// A DRF issue as AeroGear's Task.
struct Task: EntityModel {
    enum State: String, Codable, Sendable, CaseIterable { case open, closed }
    var id: Int64?                  // nil until the server assigns one
    var title: String
    var desc: String?
    var state: State = .open
    var authorId: Int64             // the DRF issue's required user
    var project: Project?
    var tags: [Tag] = []
}

// MARK: AeroGear's explicit dictionaries: model property -> JSON key

let mapper = EntityMapper {
    EntityMap("Task", ["desc": "body", "authorId": "user_id", "tags": "labels"],
              foreignKeys: ["project": "repository_id"])
    EntityMap("Project", ["title": "name", "desc": "description"])
    EntityMap("Tag", ["title": "name", "style": "color"])
}

// MARK: Options

let usage = """
    usage: swift run Tasks
      Lists, creates, saves, refreshes and deletes tasks on the DRF server of Tests/Servers
      (bash .ci/servers.sh start). TETHER_DRF_URL names the server, default http://127.0.0.1:8000/api.
    """
for argument in CommandLine.arguments.dropFirst() {
    if argument == "--help" || argument == "-h" {
        print(usage)
        exit(0)
    }
    FileHandle.standardError.write(Data("Tasks: unknown option \(argument)\n\(usage)\n".utf8))
    exit(2)
}

// MARK: The client

let environment = ProcessInfo.processInfo.environment
let server = URL(string: environment["TETHER_DRF_URL"].flatMap { $0.isEmpty ? nil : $0 } ?? "http://127.0.0.1:8000/api")!

/// Prints each exchange in one line: method, path, the body sent, the status.
struct PrintingTransport: Transport {
    let next: any Transport
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let response = try await next.send(request)
        var line = "  \(request.method) \(request.url.path(percentEncoded: false))"
        if let query = request.url.query { line += "?\(query)" }
        if let body = request.body, !body.isEmpty { line += " \(String(decoding: body, as: UTF8.self))" }
        print(line + " -> \(response.status)")
        return response
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("error: \(message)\n".utf8))
    exit(1)
}

let client: Client
do {
    client = try Client.Builder(models: [Task.self, Project.self, Tag.self])
        .keyMapping(mapper)
        .transport(PrintingTransport(next: URLSessionTransport(timeout: 10)))
        .baseURL(server)
        .resource("/repositories/", item: "/repositories/:id/", for: "Project")   // DRF wants the trailing slash
        .resource("/issues/", item: "/issues/:id/", for: "Task")
        .build()
} catch {
    fail("the client does not build: \(error)")
}

func name(_ task: Task) -> String { "\"\(task.title)\" [\(task.state.rawValue)]" }
/// A description on one line, quoted, with its line breaks and tabs escaped.
func quoted(_ text: String?) -> String {
    guard let text else { return "(none)" }
    return "\"" + text.replacingOccurrences(of: "\n", with: "\\n").replacingOccurrences(of: "\t", with: "\\t") + "\""
}

do {
    let taskMap = mapper["Task"]!
    print("Tasks on \(server.absoluteString), mapped by explicit dictionaries: Task.desc <- \(taskMap.keys["desc"]!), "
        + "Task.project <- \(taskMap.foreignKeys["project"]!), Task.tags <- \(taskMap.keys["tags"]!), "
        + "Project.desc <- \(mapper["Project"]!.keys["desc"]!)")

    // List: every page of the projects, then of the tasks (each list is one transaction).
    let projects = try await client.fetch(Project.self, from: "/repositories/")
    let tasks = try await client.fetch(Task.self, from: "/issues/")
    print("listed \(projects.count) projects and \(tasks.count) tasks")

    // Query the local store with typed predicates.
    for task in try await client.fetch(Task.self, where: .equal(\.state, .open), sortedBy: [.ascending(\.title)]) {
        let tags = task.tags.isEmpty ? "" : " tagged " + task.tags.map(\.title).joined(separator: ", ")
        print("open: \(name(task)) in \(task.project?.title ?? "?")\(tags), desc \(quoted(task.desc))")
    }

    // Create: POST the new task; the server's answer (its id) goes into the store.
    guard let project = projects.first else { fail("the server lists no repository to put a task in") }
    let draft = Task(title: "Write the Tasks example", desc: "AeroGear's TODO app, told with Tether",
                     authorId: 1, project: project)
    var task = try await client.create(draft)
    guard let id = task.id else { fail("the server gave the new task no id") }
    print("created task \(id): \(name(task)) in \(task.project?.title ?? "?"), desc \(quoted(task.desc))")

    // Save: change it locally, PATCH what changed (in the server's keys: desc goes out as "body").
    task.desc = "Told with Tether's entity mapper"
    task.state = .closed
    task = try await client.save(task)
    print("saved task \(id): \(name(task)), desc \(quoted(task.desc))")

    // Refresh: GET it again and merge the server's copy.
    task = try await client.refresh(task)
    print("refreshed task \(id): \(name(task)), desc \(quoted(task.desc))")
    guard task.state == .closed, task.desc == "Told with Tether's entity mapper" else {
        fail("the server does not hold the saved task: \(task)")
    }

    // Delete: DELETE it on the server, then locally.
    let status = try await client.delete(task)
    let left = try await client.count(Task.self)
    do {
        _ = try await client.fetchObject("Task", at: "/issues/:id/", values: ["id": .int(id)])
        fail("task \(id) is still on the server after its delete")
    } catch let error as HTTPError where error.status == 404 {
        print("deleted task \(id) (HTTP \(status)); \(left) tasks stored; the server now answers \(error.status)")
    }
} catch let error as TransportError where error.kind == .connectionRefused || error.kind == .timeout {
    fail("""
        cannot reach the DRF server at \(server.absoluteString) (\(error.kind)).
        Start it with `bash .ci/servers.sh start` (or `Tests/Servers/drf/start.sh 8000`), \
        or point TETHER_DRF_URL at a running one.
        """)
} catch {
    fail("\(error)")
}
