// LiveList: RSDataFetcher's live table, in a terminal. A remote-backed observed query lists the
// labels of the Django REST Framework server of Tests/Servers, kept equal to the server: it
// answers from the local store, refreshes from the server every second, and redraws the table
// with what each refresh changed, row by row: the rows inserted, updated and moved are marked
// (+ ~ ↕, and in colour on a terminal) and the rows deleted are named. The first load shows a
// progress bar (one page of two labels at a time).
//
//     bash .ci/servers.sh start drf      # the server (Tests/Servers/drf)
//     swift run LiveList                 # the live list (Ctrl-C to stop)
//     swift run LiveList --writer        # in another terminal: changes the server's labels, saying which
//
// The local store is a SQLite file in a temporary folder, removed when the program ends
// (normally, on an error, after --seconds, or on Ctrl-C).

import Foundation
import Tether
import TetherSQLite
import TetherURLSession

let usage = """
    usage: swift run LiveList [--writer] [--server URL] [--seconds N]
      --server URL   the DRF server's API (default: TETHER_DRF_URL, else http://127.0.0.1:8000/api)
      --seconds N    stop after N seconds (default: run until Ctrl-C)
      --writer       instead of listing the labels, change them on the server (create, rename,
                     recolour, delete), printing each change
    """

/// The options, or the usage and an exit: `--help` prints it, an unknown flag is refused.
let arguments = Array(CommandLine.arguments.dropFirst())
var options: [String: String] = [:]
var isWriter = false
do {
    var rest = arguments[...]
    while let argument = rest.popFirst() {
        switch argument {
        case "--help", "-h":
            print(usage)
            exit(0)
        case "--writer":
            isWriter = true
        case "--server", "--seconds":
            guard let value = rest.popFirst() else {
                FileHandle.standardError.write(Data("LiveList: \(argument) needs a value\n\(usage)\n".utf8))
                exit(2)
            }
            options[argument] = value
        default:
            FileHandle.standardError.write(Data("LiveList: unknown option \(argument)\n\(usage)\n".utf8))
            exit(2)
        }
    }
}
let defaultServer = ProcessInfo.processInfo.environment["TETHER_DRF_URL"].flatMap { $0.isEmpty ? nil : $0 } ?? "http://127.0.0.1:8000/api"
guard let server = URL(string: options["--server"] ?? defaultServer), server.host != nil else {
    FileHandle.standardError.write(Data("LiveList: --server needs a URL\n\(usage)\n".utf8))
    exit(2)
}
let seconds = options["--seconds"].flatMap(Double.init)
if options["--seconds"] != nil && seconds == nil {
    FileHandle.standardError.write(Data("LiveList: --seconds needs a number\n\(usage)\n".utf8))
    exit(2)
}
let isTerminal = isatty(STDOUT_FILENO) == 1

/// Writes to standard output at once (a pipe is not line-buffered).
@Sendable func out(_ text: String, terminator: String = "\n") {
    FileHandle.standardOutput.write(Data((text + terminator).utf8))
}

let schema = try Schema {
    Entity("Label", identity: "id") {
        Attribute("id", .int64)
        Attribute("name", .string)
        Attribute("color", .string)
    }
}

// The local store, in a temporary folder that every way out removes: `finish` (the end, an
// error, --seconds) and a handler of Ctrl-C and SIGTERM (a `defer` at the top level would not
// run: the program ends by exit() or by a signal).
let folder = FileManager.default.temporaryDirectory.appendingPathComponent("live-list-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)

/// Removes the temporary folder and ends the program with `status`.
@Sendable func finish(_ status: Int32) -> Never {
    try? FileManager.default.removeItem(at: folder)
    exit(status)
}
let signalSources = [SIGINT, SIGTERM].map { signalNumber in
    signal(signalNumber, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
    source.setEventHandler {
        if isTerminal { out("") }
        finish(128 + signalNumber)
    }
    source.resume()
    return source
}

let store: SQLiteStore
do {
    store = try SQLiteStore(path: folder.appendingPathComponent("labels.sqlite").path)
} catch {
    FileHandle.standardError.write(Data("LiveList: \(error)\n".utf8))
    finish(1)
}

let client = try Client.Builder(schema: schema)
    .transport(URLSessionTransport(timeout: 10))
    .baseURL(server)
    .resource("/labels/", item: "/labels/:id/", for: "Label")   // DRF wants the trailing slash
    .store(store)
    .build()

/// Stops the program after `--seconds`, if given.
func stopLater() {
    guard let seconds else { return }
    Task {
        try await Task.sleep(for: .seconds(seconds))
        out("(stopped after \(seconds) s)")
        finish(0)
    }
}

// MARK: The writer: another client changing the server's data.

/// The label's name and colour as the writer prints them: `live-1a2b3c (#ff0000)`.
func describe(_ label: Object?) -> String {
    "\(label?["name", as: String.self] ?? "?") (#\(label?["color", as: String.self] ?? "?"))"
}

/// Creates, recolours, renames and deletes labels of its own on the server, one change every
/// 0.7 s, printing what it changed.
func write() async throws -> Never {
    stopLater()
    out("writer: changing the labels of \(server.absoluteString) (only labels it creates)")
    var mine: [ObjectID] = []
    var step = 0
    let colors = ["ff0000", "00aa00", "0000ff", "aaaa00"]
    while true {
        step += 1
        if mine.count < 3 || step % 4 == 0 {
            let local = try await client.insertLocally("Label", values: ["name": .string("live-\(UUID().uuidString.prefix(6).lowercased())"),
                                                                       "color": .string(colors[step % 4])])
            let created = try await client.create(local.id)
            mine.append(created.id)
            out("created label \(describe(created))")
        } else if step % 4 == 1, let id = mine.randomElement() {
            let before = try await client.object(id)
            _ = try await client.updateLocally(id, setting: ["color": .string(colors[step % 4])])
            let saved = try await client.save(id)
            out("recoloured label \(describe(before)) to #\(saved["color", as: String.self] ?? "?")")
        } else if step % 4 == 2, let id = mine.randomElement() {
            let before = try await client.object(id)
            _ = try await client.updateLocally(id, setting: ["name": .string("a-live-\(step)")])
            let saved = try await client.save(id)
            out("renamed label \(describe(before)) to \(saved["name", as: String.self] ?? "?")")
        } else if let id = mine.first {
            let before = try await client.object(id)
            _ = try await client.delete(id)
            mine.removeFirst()
            out("deleted label \(describe(before))")
        }
        try await Task.sleep(for: .milliseconds(700))
    }
}

// MARK: The live list.

/// One label as a row of the table: its name and colour.
func row(_ label: Object) -> (name: String, color: String) {
    (label["name", as: String.self] ?? "?", "#" + (label["color", as: String.self] ?? ""))
}

/// What the difference from `previous` to `snapshot` did, named: the rows inserted, updated
/// (with what changed), moved and deleted, with their row numbers (1 = the first row).
func describe(_ change: ResultsDifference, from previous: ResultsSnapshot?, to snapshot: ResultsSnapshot) -> String {
    var parts: [String] = []
    for index in change.inserted { parts.append("inserted \(row(snapshot.objects[index.item]).name) (row \(index.item + 1))") }
    for index in change.updated {
        guard let old = previous?.objects[index.item] else { continue }
        let new = snapshot.objects.first { $0.id == old.id } ?? old
        let (before, after) = (row(old), row(new))
        let what = before.name != after.name ? "renamed to \(after.name)" : "colour \(before.color) -> \(after.color)"
        parts.append("updated \(before.name) (row \(index.item + 1): \(what))")
    }
    for move in change.moved {
        let name = row(snapshot.objects[move.to.item]).name
        let old = previous.map { row($0.objects[move.from.item]).name } ?? name
        parts.append("moved \(name) (row \(move.from.item + 1) -> \(move.to.item + 1)\(old == name ? "" : ", renamed from \(old)"))")
    }
    for index in change.deleted {
        parts.append("deleted \(previous.map { row($0.objects[index.item]).name } ?? "?") (was row \(index.item + 1))")
    }
    return parts.isEmpty ? "none" : parts.joined(separator: "; ")
}

/// Draws the table: a header, what changed, one numbered row per label with a marker (and a
/// colour on a terminal) for the rows inserted (+, green), updated (~, yellow) and moved (↕, cyan).
func draw(_ snapshot: ResultsSnapshot, after previous: ResultsSnapshot?, _ count: Int) {
    // The first snapshot lists every row as inserted: it is drawn without markers.
    let change = count == 0 ? ResultsDifference() : snapshot.difference
    let inserted = Set(change.inserted.map(\.item))
    let movedFrom = Dictionary(change.moved.map { ($0.to.item, $0.from.item) }, uniquingKeysWith: { first, _ in first })
    // Updates are given at old positions: the labels there before.
    let updated = Set(change.updated.compactMap { previous?.objects[$0.item].id })
    var screen = isTerminal ? "\u{1B}[2J\u{1B}[H" : ""
    let status = snapshot.remote.map { remote in
        remote.isLoading ? "refreshing…"
            : remote.lastError.map { "offline (\($0)), showing local results" }
            ?? "refreshed \(remote.lastRefreshed.map { $0.formatted(date: .omitted, time: .standard) } ?? "never")"
    } ?? ""
    screen += "Labels on \(server.absoluteString) — snapshot \(count), \(snapshot.count) labels, \(status)\n"
    if count > 0 { screen += "change: \(describe(change, from: previous, to: snapshot))\n" }
    let width = max(12, snapshot.objects.map { row($0).name.count }.max() ?? 0)
    screen += "     row  \("name".padding(toLength: width, withPad: " ", startingAt: 0))  colour\n"
    for (item, label) in snapshot.objects.enumerated() {
        let (name, color) = row(label)
        let marker: String, ansi: String?, note: String
        if inserted.contains(item) {
            (marker, ansi, note) = ("+", "32", "  inserted")
        } else if let from = movedFrom[item] {
            (marker, ansi, note) = ("↕", "36", "  moved from row \(from + 1)")
        } else if updated.contains(label.id) {
            (marker, ansi, note) = ("~", "33", "  updated")
        } else {
            (marker, ansi, note) = (" ", nil, "")
        }
        let number = String(item + 1)
        let text = "  \(marker) \(String(repeating: " ", count: max(0, 4 - number.count)))\(number)  "
            + "\(name.padding(toLength: width, withPad: " ", startingAt: 0))  \(color)\(note)"
        screen += (isTerminal ? ansi.map { "\u{1B}[\($0)m\(text)\u{1B}[0m" } ?? text : text) + "\n"
    }
    screen += "  (+ inserted, ~ updated, ↕ moved since the snapshot before; deleted rows are named on the change line)\n"
    out(screen, terminator: "")
}

/// Loads the labels (with a progress bar), then shows them live until the program is stopped.
func list() async throws {
    stopLater()

    // The first load, with a progress bar: every page of the list, one transaction.
    let progress = ProgressReporter { step in
        guard step.phase == .fetching else { return }
        let bar = String(repeating: "█", count: min(40, step.pages)) + String(repeating: "·", count: max(0, 10 - step.pages))
        out(isTerminal ? "\r\u{1B}[2Kloading \(bar) \(step.pages) pages, \(step.bytes) bytes" : "loading: \(step.pages) pages, \(step.bytes) bytes",
            terminator: isTerminal ? "" : "\n")
    }
    let first = try await client.fetchObjects("Label", from: "/labels/?page_size=2",
                                              options: ImportOptions(deleteMissing: .all, progress: progress))
    out(isTerminal ? "\n" : "", terminator: "")
    out("loaded \(first.objects.count) labels in \(first.pages) pages")

    // Then live: the local result at once, a refresh from the server every second.
    let labels = client.observe(Query("Label", sortedBy: [.ascending("name")]),
                                from: .objects(at: "/labels/?page_size=100"), refresh: .always)
    Task {
        while true {
            try await Task.sleep(for: .seconds(1))
            try? await labels.refresh()   // a failure shows in the list's status line
        }
    }
    var count = 0
    var previous: ResultsSnapshot?
    for try await snapshot in labels {
        if !snapshot.difference.isEmpty || count == 0 { draw(snapshot, after: previous, count) }
        previous = snapshot
        count += 1
    }
}

do {
    if isWriter {
        try await write()
    } else {
        try await list()
    }
    finish(0)
} catch {
    FileHandle.standardError.write(Data("LiveList failed: \(error)\n".utf8))
    finish(1)
}
