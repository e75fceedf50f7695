// Offline: local-first writes through Tether's outbox, against the Django REST Framework server.
//
// Run it three times on one store file, as an app that is restarted:
//
//     swift run Offline sync  --store /tmp/labels.sqlite                                    # online: the server's labels
//     swift run Offline edit  --store /tmp/labels.sqlite --server http://127.0.0.1:9/api   # no server there: offline
//     swift run Offline flush --store /tmp/labels.sqlite                                    # TETHER_DRF_URL or http://127.0.0.1:8000/api
//
// `edit` tries to refresh the labels (the server cannot be reached), then creates two labels,
// renames one, creates and deletes a third and recolours a label the store already had, all
// stored at once and queued in the outbox; it prints the list as an app shows it, unsent rows
// marked. `flush` (a new process, the same store) shows the same list, sends the queue in one
// flush (one request per coalesced entry), and checks that the server holds every change.
// The store file is the caller's (`--store`): remove it when done.
//
//     bash .ci/servers.sh start          # the DRF server on 127.0.0.1:8000
//     swift run Offline --help

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Tether
import TetherSQLite
import TetherURLSession

let usage = """
    usage: swift run Offline sync  --store PATH [--server URL]
           swift run Offline edit  --store PATH [--server URL] [--tag TEXT]
           swift run Offline flush --store PATH [--server URL]

    sync   fetches the server's labels into the store
    edit   writes label changes locally first (queued in the outbox); the server may be unreachable
    flush  sends the queued changes in one flush and checks the server holds them
    --store PATH   the SQLite file kept between the two runs (yours to remove)
    --server URL   the DRF API (default: TETHER_DRF_URL, else http://127.0.0.1:8000/api)
    --tag TEXT     makes the new labels' names unique on a shared server (default: the time)
    """

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("error: \(message)\n".utf8))
    exit(1)
}

var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") || arguments.contains("-h") {
    print(usage)
    exit(0)
}
guard let mode = arguments.first, ["sync", "edit", "flush"].contains(mode) else { fail("say sync, edit or flush\n\(usage)") }
arguments.removeFirst()
var options: [String: String] = [:]
while let flag = arguments.first {
    guard ["--store", "--server", "--tag"].contains(flag), arguments.count >= 2 else { fail("unknown option '\(flag)'\n\(usage)") }
    options[flag] = arguments[1]
    arguments.removeFirst(2)
}
guard let storePath = options["--store"] else { fail("--store PATH is required\n\(usage)") }
let environment = ProcessInfo.processInfo.environment
let serverText = options["--server"] ?? environment["TETHER_DRF_URL"].flatMap { $0.isEmpty ? nil : $0 } ?? "http://127.0.0.1:8000/api"
guard let server = URL(string: serverText) else { fail("'\(serverText)' is not a URL") }

let schema = try Schema {
    Entity("Label") {
        Attribute("id", .int64)
        Attribute("name", .string)
        Attribute("color", .string)
    }
}

let client: Client
do {
    client = try Client.Builder(schema: schema)
        .store(try SQLiteStore(path: storePath))
        .transport(URLSessionTransport(timeout: 10))
        .baseURL(server)
        .resource("/labels/", item: "/labels/:id/", for: "Label")   // DRF wants the trailing slash
        .retries(.none)
        .writes(.localFirst())
        .build()
} catch {
    fail("the client does not build: \(error)")
}

/// The labels as a list shows them, the unsent ones marked with what is queued for them.
func show(_ title: String) async throws {
    let labels = try await client.fetch(Query("Label", sortedBy: [.ascending("name")]))
    let entries = try await client.outbox.entries()
    var queued: [ObjectID: String] = [:]
    for entry in entries { queued[entry.object] = "\(entry.operation)\(entry.state == .pending ? "" : ", \(entry.state.rawValue)")" }
    print("\(title): \(labels.count) labels, \(entries.count) changes not sent")
    for label in labels where queued[label.id] != nil || label["name", as: String.self]?.hasPrefix("offline ") == true {
        let mark = queued[label.id].map { "  * unsent (\($0))" } ?? ""
        print("  \(label["name", as: String.self] ?? "?") #\(label["color", as: String.self] ?? "")\(label["id", as: Int64.self].map { " [server id \($0)]" } ?? " [no server id yet]")\(mark)")
    }
    for entry in entries where entry.operation == .delete { print("  (deleted) \(entry.object)  * unsent (delete)") }
}

do {
    switch mode {
    case "sync":
        let fetched = try await client.fetchObjects("Label", from: "/labels/")
        print("synced \(fetched.objects.count) labels from \(server.absoluteString) into \(storePath)")
    case "edit":
        let tag = options["--tag"] ?? String(Int(Date().timeIntervalSince1970))
        do {
            let fetched = try await client.fetchObjects("Label", from: "/labels/")
            print("refreshed \(fetched.objects.count) labels from \(server.absoluteString)")
        } catch let error as TransportError {
            print("the server at \(server.absoluteString) cannot be reached (\(error.kind)): working offline")
        }
        let first = try await client.create("Label", values: ["name": .string("offline \(tag) first draft"), "color": .string("ff0000")])
        _ = try await client.create("Label", values: ["name": .string("offline \(tag) second"), "color": .string("00ff00")])
        _ = try await client.updateLocally(first.id, setting: ["name": .string("offline \(tag) first")])
        _ = try await client.save(first.id)
        let third = try await client.create("Label", values: ["name": .string("offline \(tag) never sent"), "color": .string("0000ff")])
        _ = try await client.delete(third.id)
        print("created 2 labels, renamed 1, created and deleted 1 (nothing to send for it)")
        if let known = try await client.fetch(Query("Label", where: .isNotNull("id"), sortedBy: [.ascending("id")], limit: 1)).first {
            let color = String(format: "%06x", Int(Date().timeIntervalSince1970) % 0xFFFFFF)
            _ = try await client.updateLocally(known.id, setting: ["color": .string(color)])
            _ = try await client.save(known.id)
            print("recoloured label \(known["name", as: String.self] ?? "?") (server id \(known["id", as: Int64.self] ?? 0)) to #\(color)")
        }
        let report = try await client.outbox.flush()
        if let stopped = report.stoppedBy { print("flush: nothing sent, stopped: \(stopped.prefix(80))…") } else { print("flush: \(report)") }
        try await show("after editing")
    default:
        try await show("restarted")
        let report = try await client.outbox.flush()
        print("flush: \(report)")
        guard report.isComplete else { fail("the flush did not send everything: \(report)") }
        // The server's labels, read by a second client that writes immediately.
        let check = try Client.Builder(schema: schema).transport(URLSessionTransport(timeout: 10)).baseURL(server)
            .resource("/labels/", item: "/labels/:id/", for: "Label").build()
        var serverLabels: [Int64: Object] = [:]
        for label in try await check.fetchObjects("Label", from: "/labels/").objects { serverLabels[label["id", as: Int64.self] ?? 0] = label }
        var missing: [String] = []
        for label in try await client.fetch(Query("Label")) {
            guard let id = label["id", as: Int64.self], let remote = serverLabels[id],
                remote["name"] == label["name"], remote["color"] == label["color"]
            else {
                missing.append(label["name", as: String.self] ?? "\(label.id)")
                continue
            }
        }
        print("the server holds every change: \(missing.isEmpty ? "yes" : "no, it lacks \(missing.joined(separator: ", "))")")
        try await show("after the flush")
        if !missing.isEmpty { exit(1) }
    }
} catch {
    fail("\(error)")
}
