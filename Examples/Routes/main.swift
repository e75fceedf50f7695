// Routes: RSAPI's way of talking to an API, told with Tether's route tables (TetherRouteTable),
// against the Rails server of Tests/Servers. One table holds the named routes (path
// variables, method, entity, kind), the development and production base URLs, and RSAPI's
// per-entity property exceptions (`site_admin` for `siteAdmin`, ...); typed calls
// (`client.call("users", as: User.self, parameters: ...)`) return what a route imported as models.
//
// It calls a MANY route first (RSAPI's first-launch bootstrap: users and labels in one
// transaction), then routes with path variables and query parameters, a POST whose parameters
// become the JSON body, a DATA route (raw JSON, the store untouched), a DELETE, and a route the
// server answers with 404, printing each request as sent.
//
// The Rails server, a scaffold, has no multi-entity endpoint, so `BootstrapEndpoint` below stands
// in for one: it answers `GET /bootstrap` with `{"User": <GET /users>, "Label": <GET /labels>}`,
// two real requests to the same server, and the printed request line says so. Everything else
// goes to the server as it is.
//
//     bash .ci/servers.sh start          # or: Tests/Servers/rails/start.sh 3000
//     swift run Routes                   # development: TETHER_RAILS_URL, default http://127.0.0.1:3000
//     swift run Routes --production      # or TETHER_ENV=production: TETHER_RAILS_PRODUCTION_URL,
//                                        # default https://api.example.com (not reachable from here)
//     bash .ci/servers.sh stop

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Tether
import TetherRouteTable
import TetherURLSession

// MARK: The models (the property exceptions are in the route table)

struct User: EntityModel {
    var id: Int64
    var login: String
    var name: String?
    var siteAdmin: Bool?
    var repositories: [Repository] = []
}

struct Repository: EntityModel {
    var id: Int64
    var name: String
    var fullName: String?
    var repositoryDescription: String?
    var stars: Int64?
    var owner: User?
    var issues: [Issue] = []
}

struct Issue: EntityModel {
    enum State: String, Codable, Sendable, CaseIterable { case open, closed }
    var id: Int64
    var number: Int64
    var title: String
    var body: String?
    var state: State
    var repository: Repository?
    var labels: [Label] = []
}

struct Label: EntityModel {
    var id: Int64
    var name: String
    var color: String?
}

// MARK: Options

let usage = """
    usage: swift run Routes [--production]
      --production   use the route table's production base URL (TETHER_RAILS_PRODUCTION_URL, default
                     https://api.example.com, not reachable from here); TETHER_ENV=production does the same
    The development base URL is TETHER_RAILS_URL, default http://127.0.0.1:3000 (bash .ci/servers.sh start).
    """
for argument in CommandLine.arguments.dropFirst() {
    switch argument {
    case "--help", "-h":
        print(usage)
        exit(0)
    case "--production":
        break
    default:
        FileHandle.standardError.write(Data("Routes: unknown option \(argument)\n\(usage)\n".utf8))
        exit(2)
    }
}

// MARK: The route table

func setting(_ name: String) -> String? {
    ProcessInfo.processInfo.environment[name].flatMap { $0.isEmpty ? nil : $0 }
}

let development = URL(string: setting("TETHER_RAILS_URL") ?? "http://127.0.0.1:3000")!
let production = URL(string: setting("TETHER_RAILS_PRODUCTION_URL") ?? "https://api.example.com")!
let environment: RouteTable.Environment =
    CommandLine.arguments.contains("--production") || setting("TETHER_ENV") == "production" ? .production : .development

let api = RouteTable(
    development: development,
    production: production,
    keys: [
        "User": RouteTable.EntityKeys(properties: ["siteAdmin": "site_admin"]),
        "Repository": RouteTable.EntityKeys(properties: [
            "fullName": "full_name", "repositoryDescription": "description", "stars": "stargazers_count",
        ]),
    ]
) {
    Route("bootstrap", .get, "/bootstrap", kind: .envelope)                               // MANY
    Route("users", .get, "/users", entity: "User")
    Route("user", .get, "/users/:id", entity: "User")
    Route("userRepositories", .get, "/users/:owner_id/repositories", entity: "Repository")
    Route("repositoryIssues", .get, "/repositories/:repository_id/issues", entity: "Issue")
    Route("createIssue", .post, "/repositories/:repository_id/issues", entity: "Issue")
    Route("deleteIssue", .delete, "/issues/:id", entity: "Issue")
    Route("repositoryStats", .get, "/repositories/:id", entity: "Repository", kind: .data)  // DATA
}

/// Stands in for the multi-entity endpoint the Rails scaffold lacks: `GET <base>/bootstrap` is
/// answered with `{"User": [...], "Label": [...]}` from the server's own `GET /users` and
/// `GET /labels` (its answer carries the header `X-Stand-In`, which `PrintingTransport` shows).
/// Every other request goes to the server unchanged.
struct BootstrapEndpoint: Transport {
    static let header = "X-Stand-In"
    let next: any Transport
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        guard request.method == .get, request.url.lastPathComponent == "bootstrap" else { return try await next.send(request) }
        var envelope: [String: JSON] = [:]
        for (entity, path) in [("User", "users"), ("Label", "labels")] {
            let part = TransportRequest(method: .get, url: request.url.deletingLastPathComponent().appendingPathComponent(path),
                                        headers: request.headers)
            let response = try await next.send(part)
            guard response.isSuccess else { return response }
            envelope[entity] = try JSON(parsing: response.body)
        }
        return TransportResponse(status: 200, headers: ["Content-Type": "application/json",
                                                        Self.header: "BootstrapEndpoint, from GET /users and GET /labels"],
                                 body: JSON.object(envelope).serialized())
    }
}

/// Prints each exchange in one line: method, path and query as sent, the body, the status, and
/// which stand-in answered when the server did not.
struct PrintingTransport: Transport {
    let next: any Transport
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let response = try await next.send(request)
        var line = "  \(request.method) \(request.url.path(percentEncoded: true))"
        if let query = request.url.query(percentEncoded: true) { line += "?\(query)" }
        if let body = request.body, !body.isEmpty { line += " \(String(decoding: body, as: UTF8.self))" }
        line += " -> \(response.status)"
        if let standIn = response.headers[BootstrapEndpoint.header] {
            line += " (not the server's: the server has no such route; answered by the stand-in \(standIn))"
        }
        print(line)
        return response
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("error: \(message)\n".utf8))
    exit(1)
}

let client: Client
do {
    client = try Client.Builder(models: [User.self, Repository.self, Issue.self, Label.self])
        .routes(api)
        .environment(environment)
        .transport(PrintingTransport(next: BootstrapEndpoint(next: URLSessionTransport(timeout: 10))))
        .build()
} catch {
    fail("the client does not build: \(error)")
}

// MARK: Calls

let base = client.baseURL?.absoluteString ?? "?"
do {
    let other = environment == .development ? "production \(production.absoluteString)" : "development \(development.absoluteString)"
    print("Routes on \(base): the \(environment) base URL of the route table (\(other))")

    // MANY: the envelope's arrays, each as its entity, in one transaction.
    let bootstrap = try await client.call("bootstrap")
    let byEntity = Dictionary(grouping: bootstrap.objects, by: \.id.entity).mapValues(\.count)
    print("MANY bootstrap: \(byEntity["User"] ?? 0) User and \(byEntity["Label"] ?? 0) Label objects in one transaction "
        + "(\(bootstrap.importResult?.inserted.count ?? 0) inserted; the envelope is composed by BootstrapEndpoint)")

    // Typed calls: the imported objects come back as models. A parameter the path does not use
    // goes in the query, escaped.
    let zoe = try await client.call("users", as: User.self, parameters: ["login": "zoë-ünicode"])
    print("users (login zoë-ünicode): \(zoe.map { "\($0.login) (\($0.name ?? "no name"))" }.joined(separator: ", ")); "
        + "\(try await client.count(User.self)) users stored, one per id")

    // Path variables, here by foreign key: a user's repositories, with their owner.
    let repositories = try await client.call("userRepositories", as: Repository.self, parameters: ["owner_id": 1]).map { repository in
        "\(repository.fullName ?? repository.name) (\(repository.stars ?? 0) stars, owner \(repository.owner?.login ?? "?"), "
            + (repository.repositoryDescription.map { "\"\($0)\")" } ?? "no description)")
    }
    print("userRepositories (owner_id 1): \(repositories.joined(separator: ", "))")

    let open = try await client.call("repositoryIssues", as: Issue.self, parameters: ["repository_id": 1, "state": "open"])
    print("repositoryIssues (repository_id 1, state open): "
        + open.map { "#\($0.number) \($0.title) [\($0.labels.map(\.name).sorted().joined(separator: ", "))]" }.joined(separator: ", "))

    // POST: the parameters the path does not use are the JSON body; the answer is imported.
    let created = try await client.call("createIssue", as: Issue.self, parameters: [
        "repository_id": 1, "title": "Routes example", "body": "Created through a route table", "user_id": 1, "label_ids": [2],
    ])
    guard let issue = created.first else { fail("the server's answer to createIssue holds no issue") }
    print("createIssue (repository_id 1): issue \(issue.id), #\(issue.number) in \(issue.repository?.fullName ?? "?") "
        + "labelled \(issue.labels.map(\.name).joined(separator: ", ")), stored")

    // DATA: the JSON comes back as it is; nothing is imported.
    let stats = try await client.call("repositoryStats", parameters: ["id": 1])
    let number = { (key: String) in stats.json?[key]?.int64Value.map(String.init) ?? "?" }
    print("DATA repositoryStats (id 1): open_issues_count \(number("open_issues_count")), stargazers_count "
        + "\(number("stargazers_count")) (raw JSON, \(stats.importResult == nil ? "nothing imported" : "imported"))")

    let deleted = try await client.call("deleteIssue", parameters: ["id": .int(issue.id)])
    print("deleteIssue (id \(issue.id)): HTTP \(deleted.status), deleted on the server")

    // An error status: an HTTPError with the status; nothing is written.
    do {
        _ = try await client.call("user", as: User.self, parameters: ["id": 999])
        fail("GET /users/999 succeeded; the seeded server has no user 999")
    } catch let error as HTTPError {
        print("user (id 999): HTTP \(error.status), nothing written (\(try await client.count(User.self)) users stored)")
    }
} catch let error as TransportError {
    fail("""
        cannot reach the Rails server at \(base) (\(error.kind): \(error.message)).
        \(environment == .development
            ? "Start it with `bash .ci/servers.sh start` (or `Tests/Servers/rails/start.sh 3000`), or point TETHER_RAILS_URL at a running one."
            : "Set TETHER_RAILS_PRODUCTION_URL to a reachable production server, or leave out --production and TETHER_ENV=production.")
        """)
} catch {
    fail("\(error)")
}
