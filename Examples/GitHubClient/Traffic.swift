// Where the example's HTTP goes: the recorded GitHub traffic it replays by default, and a
// transport that shows each request of the tour (and holds back writes in a dry run).

import Foundation
import Synchronization
import Tether
import TetherTesting

/// The replayed session: recorded octokit/fixtures exchanges (bundled unchanged in Resources/),
/// arranged into the article's walk. Resources/README.md explains each one.
struct Recordings {
    let exchanges: [RecordedExchange]
    /// What answers each request that is not replayed exactly as recorded, by "METHOD path?query".
    let notes: [String: String]
    /// The body of the recorded POST of an issue, to compare with the one Tether sends.
    let recordedIssueBody: JSON?

    static let login = "octokit-fixture-org"

    init() throws {
        func scenario(_ name: String) throws -> [RecordedExchange] {
            guard let file = Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Resources") else {
                throw ExampleError("the bundled recording Resources/\(name).json is missing")
            }
            return try ReplayTransport(nockRecording: file).unused
        }
        let base = URL(string: "https://api.github.com")!
        var exchanges: [RecordedExchange] = []
        var notes: [String: String] = [:]

        // GET /users/:login is not among the recordings; the organization's own profile is
        // (GET /orgs/octokit-fixture-org). It answers the user request unchanged.
        var profile = try scenario("get-organization")[0]
        profile.request.url = base.appendingPathComponent("users/\(Self.login)")
        exchanges.append(profile)
        notes["GET /users/\(Self.login)"] = "the recorded answer of GET /orgs/\(Self.login)"

        // GET /users/:login/repos is not recorded either. The list is made of the recorded
        // repository (GET /repos/octokit-fixture-org/hello-world, without the two counts only
        // the single-repository endpoint answers) and the two repositories the issue recordings
        // are about, as the same JSON with their own name, URLs and id (normalization numbered
        // every recording's repository 1000).
        let repository = try scenario("get-repository")[0]
        guard case .object(var summary)? = try Client.jsonBody(of: repository.response) else {
            throw ExampleError("Resources/get-repository.json does not answer a repository object")
        }
        summary["subscribers_count"] = nil
        summary["network_count"] = nil
        var list: [JSON] = [.object(summary)]
        for (offset, name) in ["paginate-issues", "add-labels-to-issue"].enumerated() {
            guard case .object(var object) = Self.replacing("\(Self.login)/hello-world", with: "\(Self.login)/\(name)", in: .object(summary))
            else { continue }
            object["id"] = .int(1001 + Int64(offset))
            object["name"] = .string(name)
            list.append(.object(object))
        }
        exchanges.append(RecordedExchange(
            request: TransportRequest(method: .get, url: base.appendingPathComponent("users/\(Self.login)/repos")),
            response: TransportResponse(status: 200, headers: ["Content-Type": "application/json; charset=utf-8"],
                                        body: JSON.array(list).serialized())))
        notes["GET /users/\(Self.login)/repos"] = "made from the recorded GET /repos/\(Self.login)/hello-world"

        // As recorded: five pages of issues, the POST of an issue, and the repository again.
        exchanges += try scenario("paginate-issues")
        let created = try scenario("add-labels-to-issue")[0]
        exchanges.append(created)
        exchanges.append(repository)

        self.exchanges = exchanges
        self.notes = notes
        self.recordedIssueBody = try created.request.body.map { try JSON(parsing: $0) }
    }

    private static func replacing(_ old: String, with new: String, in json: JSON) -> JSON {
        switch json {
        case .string(let text): return .string(text.replacingOccurrences(of: old, with: new))
        case .array(let items): return .array(items.map { replacing(old, with: new, in: $0) })
        case .object(let members): return .object(members.mapValues { replacing(old, with: new, in: $0) })
        default: return json
        }
    }
}

/// Passes requests on and keeps a line per exchange for the tour to print. In a dry run, a
/// request that would change the server (anything but GET) is kept and not sent.
final class TourTransport: Transport {
    let next: any Transport
    let sendsWrites: Bool
    let notes: [String: String]
    private let state = Mutex<(lines: [String], sent: [TransportRequest], held: [TransportRequest])>(([], [], []))

    init(_ next: any Transport, sendsWrites: Bool = true, notes: [String: String] = [:]) {
        self.next = next
        self.sendsWrites = sendsWrites
        self.notes = notes
    }

    /// Thrown for a request held back in a dry run.
    struct NotSent: Error, CustomStringConvertible {
        var description: String { "not sent (dry run)" }
    }

    static func pathAndQuery(_ url: URL) -> String {
        let components = URLComponents(url: url, resolvingAgainstBaseURL: true)
        let path = components?.percentEncodedPath ?? url.path
        return components?.percentEncodedQuery.map { path + "?" + $0 } ?? path
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        if !sendsWrites && request.method != .get {
            state.withLock { $0.held.append(request) }
            throw NotSent()
        }
        let response = try await next.send(request)
        let line = "\(request.method) \(Self.pathAndQuery(request.url))"
        let note = notes[line].map { " (replayed: \($0))" } ?? ""
        state.withLock {
            $0.lines.append("\(line) -> \(response.status)\(note)")
            $0.sent.append(request)
        }
        return response
    }

    /// The lines of the exchanges since the last call.
    func takeLines() -> [String] {
        state.withLock { state in
            defer { state.lines = [] }
            return state.lines
        }
    }

    var sent: [TransportRequest] { state.withLock { $0.sent } }
    var held: [TransportRequest] { state.withLock { $0.held } }
}

struct ExampleError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
