// LiveList: RSDataFetcher's live table, in a terminal. A remote-backed observed query lists the
// labels of the Django REST Framework server of Tests/Servers, kept equal to the server: it
// answers from the local store, refreshes from the server every second, and redraws with what
// each refresh changed (new rows in green, changed ones in yellow, moves marked). The first load
// shows a progress bar (one page of two labels at a time).
//
//     bash .ci/servers.sh start drf                          # the server (Tests/Servers/drf)
//     swift run LiveList                                    # the live list (Ctrl-C to stop)
//     swift run LiveList --writer                           # in another terminal: changes the server's labels
//
// Options: --server URL (default http://127.0.0.1:8000/api), --seconds N (stop after N seconds),
// --writer (create, rename, recolour and delete labels on the server instead of listing them).

import Foundation
import Tether
import TetherSQLite
import TetherURLSession

let arguments = CommandLine.arguments
func option(_ name: String) -> String? {
    arguments.firstIndex(of: name).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
}
let server = URL(string: option("--server") ?? "http://127.0.0.1:8000/api")!
let seconds = option("--seconds").flatMap(Double.init)
let isTerminal = isatty(STDOUT_FILENO) == 1

/// Writes to standard output at once (a pipe is not line-buffered).
func out(_ text: String, terminator: String = "\n") {
    FileHandle.standardOutput.write(Data((text + terminator).utf8))
}

let schema = try Schema {
    Entity("Label", identity: "id") {
        Attribute("id", .int64)
        Attribute("name", .string)
        Attribute("color", .string)
    }
}

let folder = FileManager.default.temporaryDirectory.appendingPathComponent("live-list-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: folder) }
let store = try SQLiteStore(path: folder.appendingPathComponent("labels.sqlite").path)
defer { store.close() }

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
        exit(0)
    }
}

// MARK: The writer: another client changing the server's data.

if arguments.contains("--writer") {
    stopLater()
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
            out("created \(created["name"] ?? .string("?"))")
        } else if step % 4 == 1, let id = mine.randomElement() {
            _ = try await client.updateLocally(id, setting: ["color": .string(colors[step % 4])])
            let saved = try await client.save(id)
            out("recoloured \(saved["name"] ?? .string("?")) to \(saved["color"] ?? .string("?"))")
        } else if step % 4 == 2, let id = mine.randomElement() {
            _ = try await client.updateLocally(id, setting: ["name": .string("a-live-\(step)")])
            let saved = try await client.save(id)
            out("renamed to \(saved["name"] ?? .string("?"))")
        } else if let id = mine.first {
            _ = try await client.delete(id)
            mine.removeFirst()
            out("deleted one")
        }
        try await Task.sleep(for: .milliseconds(700))
    }
}

// MARK: The live list.

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

/// Draws the list with the change: inserted rows green, updated yellow, moved ones marked.
func draw(_ snapshot: ResultsSnapshot, after previous: ResultsSnapshot?, _ count: Int) {
    let change = snapshot.difference
    let inserted = Set(change.inserted.map(\.item)), moved = Set(change.moved.map(\.to.item))
    // Updates are at old positions: the labels there before.
    let updated = Set(change.updated.compactMap { previous?.objects[$0.item].id })
    var screen = isTerminal ? "\u{1B}[2J\u{1B}[H" : ""
    let status = snapshot.remote.map { remote in
        remote.isLoading ? "refreshing…"
            : remote.lastError.map { "offline (\($0)), showing local results" }
            ?? "refreshed \(remote.lastRefreshed.map { $0.formatted(date: .omitted, time: .standard) } ?? "never")"
    } ?? ""
    screen += "Labels on \(server.absoluteString) — snapshot \(count), \(snapshot.count) labels, \(status)\n"
    if count > 0 { screen += "change: \(change)\n" }
    for (item, label) in snapshot.objects.enumerated() {
        let text = "  \(label["name", as: String.self] ?? "?")  #\(label["color", as: String.self] ?? "")"
        let isUpdated = updated.contains(label.id)
        let color = inserted.contains(item) ? "32" : isUpdated ? "33" : moved.contains(item) ? "36" : nil
        let marker = inserted.contains(item) ? " +" : isUpdated ? " ~" : moved.contains(item) ? " ↕" : ""
        screen += (isTerminal ? color.map { "\u{1B}[\($0)m\(text)\(marker)\u{1B}[0m" } ?? text : text + marker) + "\n"
    }
    out(screen, terminator: "")
}

var count = 0
var previous: ResultsSnapshot?
for try await snapshot in labels {
    if !snapshot.difference.isEmpty || count == 0 { draw(snapshot, after: previous, count) }
    previous = snapshot
    count += 1
}
