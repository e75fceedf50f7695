// LiveList: RSDataFetcher's live table, in a terminal, with typed models. A remote-backed
// observed query lists the labels of the Django REST Framework server of Tests/Servers in
// sections by colour, kept equal to the server: it answers from the local store, refreshes from
// the server every second, and redraws the table with what each refresh changed, row by row: the
// rows inserted, updated and moved are marked (+ ~ ↕, and in colour on a terminal) and the rows
// deleted are named. The first load shows a progress bar (one page of two labels at a time).
//
//     bash .ci/servers.sh start drf      # the server (Tests/Servers/drf)
//     swift run LiveList                 # the live list (Ctrl-C to stop)
//     swift run LiveList --writer        # in another terminal: changes the server's labels, saying which
//
// The local store is a SQLite file in a temporary folder, removed when the program ends
// (normally, on an error, after --seconds, or on Ctrl-C).

import Foundation
import Synchronization
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

/// A label of the server (`GET /labels/`): the model the client is built from.
struct Label: EntityModel {
    /// The server's id; nil until the server has assigned it (a label created here).
    var id: Int64?
    var name: String
    var color: String
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

let client = try Client.Builder(models: [Label.self])
    .transport(URLSessionTransport(timeout: 10))
    .baseURL(server)
    .resource("/labels/", item: "/labels/:id/", for: Label.self)   // DRF wants the trailing slash
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
func describe(_ label: Label) -> String { "\(label.name) (#\(label.color))" }

/// Creates, recolours, renames and deletes labels of its own on the server, one change every
/// 0.7 s, printing what it changed.
func write() async throws -> Never {
    stopLater()
    out("writer: changing the labels of \(server.absoluteString) (only labels it creates)")
    var mine: [Label] = []
    var step = 0
    let colors = ["ff0000", "00aa00", "0000ff", "aaaa00"]
    while true {
        step += 1
        if mine.count < 3 || step % 4 == 0 {
            let created = try await client.create(Label(id: nil, name: "live-\(UUID().uuidString.prefix(6).lowercased())", color: colors[step % 4]))
            mine.append(created)
            out("created label \(describe(created))")
        } else if step % 4 == 1, let index = mine.indices.randomElement() {
            let before = mine[index]
            var label = before
            label.color = colors[step % 4]
            mine[index] = try await client.save(label)
            out("recoloured label \(describe(before)) to #\(mine[index].color)")
        } else if step % 4 == 2, let index = mine.indices.randomElement() {
            let before = mine[index]
            var label = before
            label.name = "a-live-\(UUID().uuidString.prefix(6).lowercased())"   // unique: the server refuses a name twice
            mine[index] = try await client.save(label)
            out("renamed label \(describe(before)) to \(mine[index].name)")
        } else if let label = mine.first {
            try await client.delete(label)
            mine.removeFirst()
            out("deleted label \(describe(label))")
        }
        try await Task.sleep(for: .milliseconds(700))
    }
}

// MARK: The live list.

/// The labels by colour, and by name within a colour: one state of the live list.
typealias Results = ModelResults<Label>

/// A section's key as the table prints it: `#ff0000`.
func colour(_ key: Value?) -> String {
    if case .string(let color)? = key { return "#" + color }
    return "no colour"
}

/// The row number (1 = the first row of the table, counting across sections) of a position.
func rowNumber(_ index: ResultIndex, in results: Results) -> Int {
    results.sections[index.section].range.lowerBound + index.item + 1
}

/// The label at a position.
func label(_ index: ResultIndex, in results: Results) -> Label {
    results.models[rowNumber(index, in: results) - 1]
}

/// What the difference from `previous` to `results` did, named: the rows inserted, updated
/// (with what changed), moved (a recoloured label moves to another section) and deleted, with
/// their row numbers.
func describe(_ change: ResultsDifference, from previous: Results?, to results: Results) -> String {
    var parts: [String] = []
    // A section that is new brings its rows (they are not listed among the rows inserted, as a
    // table view wants it); one that is gone took its rows with it.
    for section in change.insertedSections {
        let names = results.sections[section].models.map(\.name).joined(separator: ", ")
        parts.append("new colour \(colour(results.sections[section].key)) with \(names)")
    }
    for section in change.deletedSections {
        let names = previous.map { $0.sections[section].models.map(\.name).joined(separator: ", ") } ?? "?"
        parts.append("colour \(colour(previous?.sections[section].key)) gone with \(names)")
    }
    for index in change.inserted { parts.append("inserted \(label(index, in: results).name) (row \(rowNumber(index, in: results)))") }
    for index in change.updated {
        guard let previous else { continue }
        let old = label(index, in: previous)
        let new = results.models.first { $0.id == old.id } ?? old
        let what = old.name != new.name ? "renamed to \(new.name)" : "colour #\(old.color) -> #\(new.color)"
        parts.append("updated \(old.name) (row \(rowNumber(index, in: previous)): \(what))")
    }
    for move in change.moved {
        let new = label(move.to, in: results)
        let old = previous.map { label(move.from, in: $0) } ?? new
        let from = previous.map { rowNumber(move.from, in: $0) } ?? 0
        let why = old.name != new.name ? ", renamed from \(old.name)" : old.color != new.color ? ", recoloured from #\(old.color)" : ""
        parts.append("moved \(new.name) (row \(from) -> \(rowNumber(move.to, in: results))\(why))")
    }
    for index in change.deleted {
        parts.append("deleted \(previous.map { label(index, in: $0).name } ?? "?") (was row \(previous.map { rowNumber(index, in: $0) } ?? 0))")
    }
    return parts.isEmpty ? "none" : parts.joined(separator: "; ")
}

/// Draws the table: a header, what changed, then each colour's section with one numbered row
/// per label and a marker (and a colour on a terminal) for the rows inserted (+, green),
/// updated (~, yellow) and moved (↕, cyan).
func draw(_ results: Results, after previous: Results?, _ count: Int) {
    // The first state lists every row as inserted: it is drawn without markers.
    let change = count == 0 ? ResultsDifference() : results.difference
    let inserted = Set(change.inserted)
    let movedFrom = Dictionary(change.moved.map { ($0.to, $0.from) }, uniquingKeysWith: { first, _ in first })
    // Updates are given at old positions: the labels there before.
    let updated = Set(change.updated.compactMap { index in previous.flatMap { label(index, in: $0).id } })
    var screen = isTerminal ? "\u{1B}[2J\u{1B}[H" : ""
    let status = results.remoteState.map { remote in
        remote.isLoading ? "refreshing…"
            : remote.lastError.map { "offline (\($0)), showing local results" }
            ?? "refreshed \(remote.lastRefreshed.map { $0.formatted(date: .omitted, time: .standard) } ?? "never")"
    } ?? ""
    screen += "Labels on \(server.absoluteString) — state \(count), \(results.models.count) labels in \(results.sections.count) colours, \(status)\n"
    if count > 0 { screen += "change: \(describe(change, from: previous, to: results))\n" }
    let width = max(12, results.models.map(\.name.count).max() ?? 0)
    screen += "     row  \("name".padding(toLength: width, withPad: " ", startingAt: 0))  colour\n"
    for (number, section) in results.sections.enumerated() {
        let isNew = change.insertedSections.contains(number)
        screen += "  \(colour(section.key)) (\(section.models.count) label\(section.models.count == 1 ? "" : "s"))\(isNew ? ", new" : "")\n"
        for (item, label) in section.models.enumerated() {
            let index = ResultIndex(section: number, item: item)
            let marker: String, ansi: String?, note: String
            if inserted.contains(index) || isNew {
                (marker, ansi, note) = ("+", "32", "  inserted")
            } else if let from = movedFrom[index] {
                (marker, ansi, note) = ("↕", "36", "  moved from row \(previous.map { rowNumber(from, in: $0) } ?? 0)")
            } else if let id = label.id, updated.contains(id) {
                (marker, ansi, note) = ("~", "33", "  updated")
            } else {
                (marker, ansi, note) = (" ", nil, "")
            }
            let row = String(rowNumber(index, in: results))
            let text = "  \(marker) \(String(repeating: " ", count: max(0, 4 - row.count)))\(row)  "
                + "\(label.name.padding(toLength: width, withPad: " ", startingAt: 0))  #\(label.color)\(note)"
            screen += (isTerminal ? ansi.map { "\u{1B}[\($0)m\(text)\u{1B}[0m" } ?? text : text) + "\n"
        }
    }
    screen += "  (+ inserted, ~ updated, ↕ moved since the state before; deleted rows are named on the change line)\n"
    out(screen, terminator: "")
}

/// Loads the labels (with a progress bar), then shows them live until the program is stopped.
func list() async throws {
    stopLater()

    // The first load, with a progress bar: every page of the list, one transaction.
    final class Pages: Sendable { let count = Mutex(0) }
    let pages = Pages()
    let progress = ProgressReporter { step in
        guard step.phase == .fetching else { return }
        pages.count.withLock { $0 = step.pages }
        let bar = String(repeating: "█", count: min(40, step.pages)) + String(repeating: "·", count: max(0, 10 - step.pages))
        out(isTerminal ? "\r\u{1B}[2Kloading \(bar) \(step.pages) pages, \(step.bytes) bytes" : "loading: \(step.pages) pages, \(step.bytes) bytes",
            terminator: isTerminal ? "" : "\n")
    }
    let first = try await client.fetch(Label.self, from: "/labels/?page_size=2", options: ImportOptions(deleteMissing: .all, progress: progress))
    out(isTerminal ? "\n" : "", terminator: "")
    out("loaded \(first.count) labels in \(pages.count.withLock { $0 }) pages")

    // Then live: the local result at once, a refresh from the server every second; in sections
    // by colour, by name within a colour.
    let labels = try client.observe(Label.self, sortedBy: [.ascending(\.name)], sectionedBy: \.color,
                                    from: .objects(at: "/labels/?page_size=100"), refresh: .always)
    Task {
        while true {
            try await Task.sleep(for: .seconds(1))
            try? await labels.refresh()   // a failure shows in the list's status line
        }
    }
    var count = 0
    var previous: Results?
    for try await results in labels {
        if !results.difference.isEmpty || count == 0 { draw(results, after: previous, count) }
        previous = results
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
