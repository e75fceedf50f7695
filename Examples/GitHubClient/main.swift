// GitHubClient: the SLRESTfulCoreData article ("Introducing SLRESTfulCoreData", its GitHub
// client) re-told in Tether. Typed models (Models.swift) with the Rails naming and the article's
// two conventions registered once, in a SQLite file; a user, the user's repositories, a
// repository's issues, an issue created at the CRUD base `/repos/:repository.full_name/issues`,
// a re-fetch that updates an object in place, and typed queries over what is stored.
//
//     swift run GitHubClient                       # replays recorded GitHub traffic (no network)
//     swift run GitHubClient --live                # against https://api.github.com (GITHUB_TOKEN if set)
//
// Replay (the default; --replay says so explicitly): octokit/fixtures recordings, bundled in
// Resources/ (Resources/README.md says which recording answers which request). GITHUB_TOKEN
// alone never turns the network on: only --live does, and the first lines say which mode runs.
// Live (--live; with GITHUB_TOKEN as a bearer token, else GitHub's anonymous rate limit):
//   --user LOGIN        the user to fetch (default octocat)
//   --repository NAME   the repository whose issues to list (default: the user's repository
//                       with the fewest open issues)
//   --create-in NAME    really create an issue in this repository of the user (it must accept
//                       your token); without it, the POST is shown and not sent
//   --api URL           another GitHub API (GitHub Enterprise Server: https://HOST/api/v3)
// Options of both modes: --store PATH (the SQLite file; default a new one in a temporary folder,
// removed at the end), --help.

import Foundation
import Tether
import TetherRails
import TetherSQLite
import TetherTesting
import TetherURLSession

let usage = """
    usage: swift run GitHubClient [--replay | --live [--user LOGIN] [--repository NAME] [--create-in NAME] [--api URL]]
                                  [--store PATH]
      --replay            replay recorded GitHub traffic, no network (the default)
      --live              talk to api.github.com (with GITHUB_TOKEN as a bearer token when it is set)
      --user LOGIN        live: the user to fetch (default octocat)
      --repository NAME   live: the repository whose issues to list (default: the one with the fewest open issues)
      --create-in NAME    live: really create an issue in this repository (without it the POST is shown, not sent)
      --api URL           live: another GitHub API (GitHub Enterprise Server: https://HOST/api/v3)
      --store PATH        the SQLite file (default: a temporary one, removed at the end)
    """

struct Options {
    var live = false
    var token: String?
    var login = Recordings.login
    var issuesRepository: String?
    var createIn: String?
    var storePath: String?
    var api = URL(string: "https://api.github.com")!

    init(arguments: [String], environment: [String: String]) throws {
        func value(after name: String) throws -> String? {
            guard let index = arguments.firstIndex(of: name) else { return nil }
            guard index + 1 < arguments.count else { throw ExampleError("\(name) needs a value") }
            return arguments[index + 1]
        }
        let valued: Set = ["--user", "--repository", "--create-in", "--api", "--store"]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if valued.contains(argument) {
                index += 2
            } else if argument == "--live" || argument == "--replay" {
                index += 1
            } else {
                throw UsageError(argument == "--help" || argument == "-h" ? nil : "unknown option \(argument)")
            }
        }
        if arguments.contains("--live") && arguments.contains("--replay") { throw UsageError("--live and --replay exclude each other") }
        token = environment["GITHUB_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
        live = arguments.contains("--live")
        storePath = try value(after: "--store")
        if live {
            login = try value(after: "--user") ?? "octocat"
            issuesRepository = try value(after: "--repository")
            createIn = try value(after: "--create-in")
            if let text = try value(after: "--api") {
                guard let url = URL(string: text), url.scheme == "https" || url.scheme == "http", url.host != nil else {
                    throw ExampleError("--api needs an http(s) URL, not \(text)")
                }
                api = url
            }
        } else {
            for name in ["--user", "--repository", "--create-in", "--api"] where arguments.contains(name) {
                throw ExampleError("\(name) is for live mode (--live); the replay walks the recorded session")
            }
            // The repositories the recordings hold issues of, and the POST of an issue.
            issuesRepository = "paginate-issues"
            createIn = "add-labels-to-issue"
        }
    }
}

let dayFormat: Date.ISO8601FormatStyle = .iso8601.year().month().day()
func day(_ date: Date?) -> String { date.map { $0.formatted(dayFormat) } ?? "-" }

func tour(_ options: Options) async throws {
    let recordings = options.live ? nil : try Recordings()
    let replay = recordings.map { ReplayTransport(exchanges: $0.exchanges) }
    let network: any Transport = replay ?? URLSessionTransport(timeout: 30)
    // Live without --create-in is a dry run for the create: the POST is shown, not sent.
    let transport = TourTransport(network, sendsWrites: !options.live || options.createIn != nil, notes: recordings?.notes ?? [:])

    let storePath: String
    if let path = options.storePath {
        storePath = path
    } else {
        try FileManager.default.createDirectory(at: temporaryFolder, withIntermediateDirectories: true)
        storePath = temporaryFolder.appendingPathComponent("github.sqlite").path
    }
    let store = try SQLiteStore(path: storePath)
    defer { store.close() }

    var builder = try Client.Builder(models: [User.self, Repository.self, Issue.self])
        // The article's conventions, registered once for every model: `id` <-> `identifier` and
        // `url` <-> `URL` (inside names too: `gravatar_id`, `avatar_url`), and snake_case keys.
        .rails(conventions: ["identifier": "id", "URL": "url"])
        .store(store)
        .transport(transport)
        .baseURL(options.api)
        // `octokit-fixture-org/hello-world` is two path segments in GitHub's URLs.
        .pathAttribute(\Repository.fullName)
        // The article's URLs, registered once (templates in JSON names, as in the article).
        .relationshipResource("/users/:login/repos", for: \User.repositories)
        .resource("/user/repos", item: "/repos/:full_name", for: Repository.self)
        // (The recording asked for pages of 3 issues; live, pages of 100 take fewer requests.)
        .relationshipResource(URLTemplate("/repos/:full_name/issues?per_page=\(options.live ? 100 : 3)"), for: \Repository.issues)
        .resource("/repos/:repository.full_name/issues", item: "/repos/:repository.full_name/issues/:number", for: Issue.self)
    if options.live {
        builder = builder.requestHook(DefaultHeaders(["User-Agent": "Tether-GitHubClient-example", "X-GitHub-Api-Version": "2022-11-28"]))
        if let token = options.token { builder = builder.requestHook(AuthorizationHook(scheme: "Bearer", credential: token)) }
    }
    let client = try builder.build()

    func requests() {
        for line in transport.takeLines() { print("   \(line)") }
    }
    func key<M: EntityModel>(_ model: M.Type, _ name: String) -> String {
        client.mapping[M.entityName]?.keyPath(for: name)?.description ?? "?"
    }

    print("GitHubClient: the SLRESTfulCoreData article in Tether (typed models, Rails conventions, SQLite)")
    if options.live {
        print("Mode: live (--live), \(options.api.absoluteString) (\(options.token == nil ? "no GITHUB_TOKEN: GitHub's anonymous rate limit" : "token from GITHUB_TOKEN"))")
    } else {
        print("Mode: replay of recorded GitHub traffic (octokit/fixtures; see Examples/GitHubClient/Resources/README.md)"
            + (options.token == nil ? "" : "; GITHUB_TOKEN is set but unused: pass --live to talk to GitHub"))
    }
    print("Store: \(storePath) (\(options.storePath == nil ? "a temporary file, removed at the end" : "kept"))")
    print("JSON keys by the conventions: identifier <- \(key(User.self, "identifier")), avatarURL <- \(key(User.self, "avatarURL")), "
        + "gravatarIdentifier <- \(key(User.self, "gravatarIdentifier")), fullName <- \(key(Repository.self, "fullName")), "
        + "repositoryURL <- \(key(Issue.self, "repositoryURL")); the one exception: repositoryDescription <- \(key(Repository.self, "repositoryDescription"))")

    // 1. A user, by login.
    print("1. A user: GET /users/:login")
    let user = try await client.fetchModel(User.self, at: "/users/:login", values: ["login": .string(options.login)])
    requests()
    print("   \(user.login): identifier \(user.identifier), \(user.type ?? "-"), created \(day(user.createdAt)), avatarURL \(user.avatarURL?.absoluteString ?? "-")")

    // 2. The user's repositories, from the relationship's registered URL.
    print("2. The user's repositories: GET /users/:login/repos")
    let repositories = try await client.fetch(\.repositories, of: user)
    requests()
    print("   \(repositories.count) repositories: \(repositories.map(\.fullName).joined(separator: ", "))")
    var owners = Set<Int64>()
    for repository in repositories {
        guard let owner = try await client.related(\.owner, of: repository) else { throw ExampleError("\(repository.fullName) has no owner") }
        owners.insert(owner.identifier)
    }
    let usersStored = try await client.count(User.self)
    print("   every owner is the user of step 1: \(owners == [user.identifier] ? "yes" : "no") (\(usersStored) User stored)")
    guard !repositories.isEmpty else { throw ExampleError("\(options.login) has no public repositories to walk through") }

    // 3. One repository's issues (every page), by number.
    print("3. A repository's issues: GET /repos/:full_name/issues")
    func repository(named name: String) throws -> Repository {
        guard let found = repositories.first(where: { $0.name == name || $0.fullName == name }) else {
            throw ExampleError("\(options.login) has no repository \(name) (\(repositories.map(\.name).joined(separator: ", ")))")
        }
        return found
    }
    let issuesRepository: Repository
    if let name = options.issuesRepository {
        issuesRepository = try repository(named: name)
    } else {
        // A typed query over the list just stored: the repository with the fewest open issues.
        let fewest = try await client.fetch(
            Repository.self, where: .greater(\.openIssuesCount, 0), sortedBy: [.ascending(\.openIssuesCount), .ascending(\.fullName)], limit: 1)
        issuesRepository = fewest.first ?? repositories[0]
    }
    let issues = try await client.fetch(\.issues, of: issuesRepository)
    let pages = transport.takeLines()
    for line in pages { print("   \(line)") }
    let numbered = issues.map { "#\($0.number ?? 0) \($0.title)" }
    print("   \(issues.count) issues of \(issuesRepository.fullName) in \(pages.count) pages: "
        + (numbered.count > 4 ? numbered.prefix(3).joined(separator: ", ") + ", …, " + numbered.last! : numbered.joined(separator: ", ")))

    // 4. Create an issue at the CRUD base URL `/repos/:repository.full_name/issues`, while
    //    observing the open issues.
    print("4. Create an issue: POST /repos/:repository.full_name/issues")
    let target = try options.createIn.map(repository(named:)) ?? issuesRepository
    let title = options.live ? "An issue created by Tether's GitHubClient example" : "Issue without a label"
    let observation = try client.observe(Issue.self, where: .equal(\.state, "open"), sortedBy: [.descending(\.number)])
    var observed = observation.makeAsyncIterator()
    let openBefore = try await observed.next()?.models.count ?? 0
    do {
        let created = try await client.create(Issue(title: title, repository: target))
        requests()
        let body = transport.sent.last?.body.map { String(decoding: $0, as: UTF8.self) } ?? ""
        print("   sent \(body)")
        if let recorded = recordings?.recordedIssueBody {
            guard let sent = transport.sent.last?.body, try JSON(parsing: sent) == recorded else {
                throw ExampleError("the POST body differs from the recorded one, \(recorded)")
            }
            print("   the body is the recorded request's")
        }
        print("   created #\(created.number ?? 0) \"\(created.title)\" in \(created.repository?.fullName ?? "?"), \(created.state ?? "-")")
        if try await client.count(Issue.self, where: .equal(\.state, "open")) == openBefore {
            // Already stored (a store file of an earlier run): the answer changed nothing.
            print("   observed open issues: \(openBefore), unchanged (the issue was stored already)")
        } else {
            guard let after = try await observed.next() else { throw ExampleError("the observation ended") }
            print("   observed open issues: \(openBefore) -> \(after.models.count) (\(after.difference.inserted.count) inserted)")
        }
    } catch let error where !transport.held.isEmpty && !(error is ExampleError) {
        let held = transport.held[0]
        print("   \(held.method) \(TourTransport.pathAndQuery(held.url)) \(held.body.map { String(decoding: $0, as: UTF8.self) } ?? "")")
        print("   not sent: a dry run (pass --create-in NAME to create it in a repository your token may write to)")
    }

    // 5. Fetch a repository again: the answer updates the stored object in place.
    print("5. Re-fetch a repository: GET /repos/:full_name")
    let first = repositories[0]
    let before = try await client.objectID(of: first)
    let refreshed = try await client.refresh(first)
    requests()
    let sameObject = try await client.objectID(of: refreshed) == before
    print("   \(refreshed.fullName): the same object: \(sameObject ? "yes" : "no"), subscribersCount "
        + "\(first.subscribersCount.map(String.init) ?? "nil") -> \(refreshed.subscribersCount.map(String.init) ?? "nil"), "
        + "repositoryDescription \(refreshed.repositoryDescription ?? "nil"), \(try await client.count(Repository.self)) Repository stored")

    // 6. Typed queries over the store: key paths and values the compiler checks.
    print("6. Typed queries over the store")
    let open = try await client.count(Issue.self, where: .equal(\.state, "open"))
    let highest = try await client.fetch(Issue.self, where: .equal(\.state, "open"), sortedBy: [.descending(\.number)], limit: 3)
    print("   open issues: \(open); highest numbers: \(highest.map { "#\($0.number ?? 0) \($0.title)" }.joined(separator: ", "))")
    let ones = try await client.fetch(Issue.self, where: .equal(\.number, 1), sortedBy: [.ascending(\.title)])
    print("   issues numbered 1: \(ones.count) (\(ones.map { "\"\($0.title)\" in \($0.repository?.fullName ?? "?")" }.joined(separator: ", ")))")
    for repository in try await client.fetch(Repository.self, where: .hasPrefix(\.fullName, "\(options.login)/"), sortedBy: [.ascending(\.fullName)]) {
        let count = try await client.related(\.issues, of: repository).count
        print("   \(repository.fullName): \(count) issue\(count == 1 ? "" : "s") stored, owner \(repository.owner?.login ?? "-")")
    }

    let counts = (try await client.count(User.self), try await client.count(Repository.self), try await client.count(Issue.self))
    var summary = "Stored: \(counts.0) User, \(counts.1) Repository, \(counts.2) Issue objects; \(transport.sent.count) requests"
    if let replay {
        let unused = replay.unused
        guard unused.isEmpty else {
            throw ExampleError("recorded exchanges never asked for: \(unused.map { "\($0.request.method) \(TourTransport.pathAndQuery($0.request.url))" })")
        }
        summary += ", every recorded exchange replayed"
    }
    print(summary)
}

/// The folder of the default store file; removed on every way out (`finish`, and Ctrl-C or SIGTERM).
let temporaryFolder = FileManager.default.temporaryDirectory.appendingPathComponent("github-client-\(UUID().uuidString)")

/// Removes the temporary folder (if it was made) and ends the program with `status`.
@Sendable func finish(_ status: Int32) -> Never {
    try? FileManager.default.removeItem(at: temporaryFolder)
    exit(status)
}
let signalSources = [SIGINT, SIGTERM].map { signalNumber in
    signal(signalNumber, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
    source.setEventHandler { finish(128 + signalNumber) }
    source.resume()
    return source
}

/// A wrong command line (or `--help`, with no message): the usage is printed.
struct UsageError: Error {
    let message: String?
    init(_ message: String?) { self.message = message }
}

do {
    let options = try Options(arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
    // The replay takes about a second; a tour that takes minutes has gone wrong (a server that
    // does not answer, an observation that never sees the change it waits for).
    let limit = options.live ? 300 : 60
    Task.detached {
        try? await Task.sleep(for: .seconds(limit))
        FileHandle.standardError.write(Data("GitHubClient failed: no result after \(limit) seconds\n".utf8))
        finish(2)
    }
    try await tour(options)
    finish(0)
} catch let error as UsageError {
    if let message = error.message {
        FileHandle.standardError.write(Data("GitHubClient: \(message)\n\(usage)\n".utf8))
        finish(2)
    }
    print(usage)
    finish(0)
} catch {
    FileHandle.standardError.write(Data("GitHubClient failed: \(error)\n".utf8))
    finish(1)
}
