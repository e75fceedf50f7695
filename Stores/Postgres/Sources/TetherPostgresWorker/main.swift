// The child process of the many-writers and observer tests (not a product): an instance of a
// service with its own pool and PostgresStore on the namespace it is given.
//
//     TetherPostgresWorker import NAMESPACE WRITER PAGES PAGE_SIZE   imports writer WRITER's pages
//     TetherPostgresWorker observe NAMESPACE COUNT                   prints each Repository it sees inserted
//                                                                    by another instance, until COUNT
//
// Reads TETHER_POSTGRES_URL. Exits 0 when done, 1 with the error on standard error otherwise.
import Foundation
import Logging
import PostgresNIO
import Tether
import TetherPostgres
import TetherPostgresTestSupport

/// Prints a line at once (standard output to a file is buffered otherwise).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("TetherPostgresWorker: \(message)\n".utf8))
    exit(1)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 3, let url = ProcessInfo.processInfo.environment["TETHER_POSTGRES_URL"],
      let configuration = Payloads.configuration(url: url, maximumConnections: 4)
else { fail("usage: import NAMESPACE WRITER PAGES PAGE_SIZE | observe NAMESPACE COUNT, with TETHER_POSTGRES_URL set") }
var logger = Logger(label: "tether.worker")
logger.logLevel = .error
let postgres = PostgresClient(configuration: configuration, backgroundLogger: logger)
let runner = Task { await postgres.run() }
let store = PostgresStore(client: postgres, namespace: arguments[1], logger: logger)

do {
    let client = try Client.Builder(schema: Payloads.schema).store(store).build()
    try await store.migrate()
    switch arguments[0] {
    case "import":
        guard arguments.count == 5, let writer = Int(arguments[2]), let pages = Int(arguments[3]), let size = Int(arguments[4]) else {
            fail("import NAMESPACE WRITER PAGES PAGE_SIZE")
        }
        for page in 0..<pages {
            let start = Payloads.start(writer: writer, page: page, size: size)
            let repositories = try await client.import(Payloads.repositories(start..<start + size), as: "Repository")
            let issues = try await client.import(Payloads.issues(start..<start + size / 2), as: "Issue")
            if let first = (repositories.diagnostics + issues.diagnostics).first { fail("diagnostics: \(first)") }
        }
        say("imported \(pages) pages; \(store.counters.commits) commits, \(store.counters.retries) retried")
    case "observe":
        guard let count = Int(arguments[2]) else { fail("observe NAMESPACE COUNT") }
        let changes = store.changes()
        try await store.listen()
        say("listening")
        var seen = Set<ObjectID>()
        for await change in changes {
            for id in change.inserted where id.entity == "Repository" && seen.insert(id).inserted {
                let name = try await client.object(id)?["name"]
                say("seen \(id.rowID) \(name.map(String.init(describing:)) ?? "-")")
            }
            if seen.count >= count { break }
        }
        say("observed \(seen.count)")
    default:
        fail("unknown mode \(arguments[0])")
    }
} catch {
    fail("\(error)")
}
store.close()
runner.cancel()
exit(0)
