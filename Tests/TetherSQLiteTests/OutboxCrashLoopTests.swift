import Foundation
import Testing
import Tether
import TetherSQLite
import TetherTestSupport
import TetherTesting
import TetherURLSession

/// The outbox under SIGKILL (issue 40): a child process (`SQLiteCrashHelper outbox`) makes
/// local-first writes and flushes against a real HTTP server (a Python standard-library script
/// the test starts, honouring `Idempotency-Key` and logging every request), and is killed at
/// random points, again and again on one store file. After every kill:
/// - nothing the app wrote is lost: every write the child finished (journaled after it returned)
///   is in the store;
/// - the store and the outbox agree: an object without a server id has its create queued; a
///   queued create or update has its object; a queued delete has none;
/// - no create was sent twice under two different idempotency keys.
/// At the end one flush sends everything, and the server holds exactly the local objects.
///
/// `TETHER_OUTBOX_KILLS` sets the number of kills (20 by default; Docs/Reliability.md reports a
/// run of 100).
@Suite(.serialized) struct OutboxCrashLoopTests {
    static let script = #"""
    import json, os, sys, threading, time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    port_file, log_file = sys.argv[1], sys.argv[2]
    parent = os.getppid()
    lock = threading.Lock()
    items, answered, next_id = {}, {}, [1]

    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def log_message(self, *args): pass
        def answer(self, status, body=None):
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        def body(self):
            # A body cut short (the client was killed while sending it) is no request: nothing is
            # done and no idempotency key is kept for it, as a real server's parser would refuse it.
            length = int(self.headers.get("Content-Length", "0") or "0")
            data = self.rfile.read(length)
            if len(data) < length:
                self.close_connection = True
                return None
            return json.loads(data or b"{}")
        def record(self, body):
            with open(log_file, "a") as f:
                f.write(json.dumps({"method": self.command, "path": self.path,
                                    "key": self.headers.get("Idempotency-Key"), "body": body}) + "\n")
        def item_id(self):
            parts = self.path.strip("/").split("/")
            return int(parts[1]) if len(parts) == 2 and parts[1].isdigit() else None
        def do_GET(self):
            with lock:
                i = self.item_id()
                if i is None: return self.answer(200, [items[k] for k in sorted(items)])
                return self.answer(200, items[i]) if i in items else self.answer(404, {"detail": "not found"})
        def do_POST(self):
            body = self.body()
            if body is None: return
            with lock:
                self.record(body)
                key = self.headers.get("Idempotency-Key")
                if key and key in answered: return self.answer(201, answered[key])
                body["id"] = next_id[0]; next_id[0] += 1
                items[body["id"]] = body
                if key: answered[key] = body
                return self.answer(201, body)
        def do_PATCH(self):
            body = self.body()
            if body is None: return
            with lock:
                self.record(body)
                i = self.item_id()
                if i not in items: return self.answer(404, {"detail": "not found"})
                items[i].update({k: v for k, v in body.items() if k != "id"})
                return self.answer(200, items[i])
        def do_DELETE(self):
            with lock:
                self.record(None)
                i = self.item_id()
                if i not in items: return self.answer(404, {"detail": "not found"})
                del items[i]
                return self.answer(204)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=watch, daemon=True).start()
    with open(port_file + ".tmp", "w") as f: f.write(str(server.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()
    """#

    struct Expected {
        /// Title -> n, for the items the store must hold.
        var present: [String: Int64] = [:]
        /// Titles the store must not hold.
        var absent: Set<String> = []
        /// Titles a write was under way on when the child was killed: either state is right.
        var uncertain: Set<String> = []

        init(journal: String) {
            var intent: (op: String, title: String, n: Int64)?
            for line in journal.split(separator: "\n") {
                let parts = line.split(separator: " ").map(String.init)
                if parts.first == "intent", parts.count == 4 {
                    if let open = intent { uncertain.insert(open.title) }  // the kill came after the intent
                    intent = (parts[1], parts[2], Int64(parts[3]) ?? 0)
                } else if parts.first == "done", let done = intent {
                    uncertain.remove(done.title)
                    switch done.op {
                    case "delete":
                        present[done.title] = nil
                        absent.insert(done.title)
                    default:
                        present[done.title] = done.n
                        absent.remove(done.title)
                    }
                    intent = nil
                } else if parts.first == "refused" {
                    intent = nil
                }
            }
            if let open = intent { uncertain.insert(open.title) }
        }
    }

    static var kills: Int { ProcessInfo.processInfo.environment["TETHER_OUTBOX_KILLS"].flatMap(Int.init) ?? 20 }

    @Test func killedAnywhereTheStoreAndTheOutboxAgreeAndNothingIsSentTwice() async throws {
        let folder = try TemporaryDirectory()
        let root = URL(fileURLWithPath: folder.path()).deletingLastPathComponent()
        let scriptURL = root.appendingPathComponent("outbox-server.py")
        try Self.script.write(to: scriptURL, atomically: true, encoding: .utf8)
        let portFile = root.appendingPathComponent("port")
        let logFile = root.appendingPathComponent("requests.log")
        let journal = root.appendingPathComponent("journal")
        _ = FileManager.default.createFile(atPath: journal.path, contents: Data())
        let server = try ChildProcess("/usr/bin/env", ["python3", scriptURL.path, portFile.path, logFile.path])
        defer { server.kill() }
        var port: Int?
        for _ in 0..<300 where port == nil {
            port = (try? String(contentsOf: portFile, encoding: .utf8)).flatMap { Int($0) }
            if port == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        let base = URL(string: "http://127.0.0.1:\(try #require(port, "the outbox test server did not start"))")!
        let helper = try DurabilityTests.helperURL()
        let path = folder.path()
        var generator = SystemRandomNumberGenerator()
        var killed = 0
        var checkedEntries = 0
        for run in 1...Self.kills {
            let child = try ChildProcess(helper.path, ["outbox", path, base.absoluteString, journal.path, String(run)])
            try await Task.sleep(for: .milliseconds(Int.random(in: 30...1_200, using: &generator)))
            child.kill()
            let termination = try await child.wait(timeout: .seconds(60))
            if termination == .signalled(SIGKILL) { killed += 1 } else {
                #expect(termination == .exited(0), "run \(run): the helper failed: \(termination)")
            }
            checkedEntries += try await Self.check(path: path, base: base, journal: journal, log: logFile, run: run)
        }
        #expect(killed > Self.kills / 2, "only \(killed) of \(Self.kills) kills landed before the helper finished")

        // Online at last: one flush sends everything, and the server holds the local objects.
        let store = try SQLiteStore(path: path)
        let client = try Self.client(store, base)
        let report = try await client.outbox.flush()
        #expect(report.isComplete, "\(report)")
        var local: [String: Int64] = [:]
        for item in try await client.fetch(Query("Item")) { local[item["title", as: String.self] ?? ""] = item["n", as: Int64.self] }
        let listed = try await client.send(.get, base.appendingPathComponent("items"))
        let remote = try JSON(parsing: listed.body).arrayValue ?? []
        var onServer: [String: Int64] = [:]
        for item in remote {
            let title = item["title"]?.stringValue ?? ""
            #expect(onServer[title] == nil, "\(title) is on the server twice")
            onServer[title] = item["n"]?.int64Value
        }
        #expect(onServer == local)
        if onServer != local, let keep = ProcessInfo.processInfo.environment["TETHER_OUTBOX_KEEP"] {
            try? FileManager.default.removeItem(atPath: keep)
            try? FileManager.default.copyItem(at: root, to: URL(fileURLWithPath: keep))
        }
        if onServer != local {
            let differing = Set(onServer.keys).symmetricDifference(local.keys).union(onServer.keys.filter { onServer[$0] != local[$0] })
            let ids = remote.filter { differing.contains($0["title"]?.stringValue ?? "") }.compactMap { $0["id"]?.int64Value }
            let log = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
            for line in log.split(separator: "\n") where differing.contains(where: { line.contains("\"\($0)\"") })
                || ids.contains(where: { line.contains("/items/\($0)\"") }) {
                print("differing: \(line)")
            }
            print("differing titles \(differing), server ids \(ids); journal:\n" + ((try? String(contentsOf: journal, encoding: .utf8)) ?? "")
                .split(separator: "\n").filter { line in differing.contains { line.contains($0) } }.joined(separator: "\n"))
        }
        // How often a kill landed between a request and its acknowledgement (a create sent again
        // under its key), and how many requests the server saw.
        var posts: [String: Int] = [:]
        var requests = 0
        for line in ((try? String(contentsOf: logFile, encoding: .utf8)) ?? "").split(separator: "\n") {
            requests += 1
            let request = try JSON(parsing: Data(line.utf8))
            if request["method"] == "POST", let key = request["key"]?.stringValue { posts[key, default: 0] += 1 }
        }
        let resent = posts.values.filter { $0 > 1 }.count
        print("outbox crash loop: \(killed) of \(Self.kills) runs killed, \(local.count) objects, \(checkedEntries) outbox entries checked, "
            + "\(requests) requests, \(resent) creates sent again under their key after a kill")
        store.close()
    }

    static func client(_ store: SQLiteStore, _ base: URL) throws -> Client {
        try Client.Builder(schema: Schema {
            Entity("Item") {  // as SQLiteCrashHelper's OutboxCrashMode declares it
                Attribute("id", .int64)
                Attribute("title", .string)
                Attribute("n", .int64)
            }
        })
            .store(store).transport(URLSessionTransport(timeout: 5)).baseURL(base)
            .resource("/items", for: "Item").retries(.none).writes(.localFirst())
            .build()
    }

    /// Checks the store, the outbox and the server's log after a kill; returns the entries checked.
    static func check(path: String, base: URL, journal: URL, log: URL, run: Int) async throws -> Int {
        let store = try SQLiteStore(path: path)
        defer { store.close() }
        let client = try Self.client(store, base)
        let expected = Expected(journal: try String(contentsOf: journal, encoding: .utf8))
        let items = try await client.fetch(Query("Item"))
        var byTitle: [String: Object] = [:]
        for item in items { byTitle[item["title", as: String.self] ?? ""] = item }
        for (title, n) in expected.present where !expected.uncertain.contains(title) {
            #expect(byTitle[title]?["n", as: Int64.self] == n, "run \(run): \(title) should hold n = \(n), the store has \(String(describing: byTitle[title]))")
        }
        for title in expected.absent where !expected.uncertain.contains(title) {
            #expect(byTitle[title] == nil, "run \(run): \(title) was deleted, the store has it")
        }
        let entries = try await client.outbox.entries()
        var queued: [ObjectID: OutboxEntry] = [:]
        for entry in entries { queued[entry.object] = entry }
        for item in items where item["id"] == nil {
            #expect(queued[item.id]?.operation == .create, "run \(run): \(item.id) has no server id and no queued create")
        }
        for entry in entries {
            let stored = try await client.object(entry.object)
            switch entry.operation {
            case .create, .update: #expect(stored != nil, "run \(run): \(entry) names an object the store does not hold")
            case .delete: #expect(stored == nil, "run \(run): \(entry) names an object the store still holds")
            default: break
            }
        }
        // No create sent twice under two keys.
        var keys: [String: Set<String>] = [:]
        let lines = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        for line in lines.split(separator: "\n") {
            let request = try JSON(parsing: Data(line.utf8))
            guard request["method"] == "POST", let title = request["body"]?["title"]?.stringValue else { continue }
            keys[title, default: []].insert(request["key"]?.stringValue ?? "none")
        }
        for (title, sent) in keys { #expect(sent.count == 1 && !sent.contains("none"), "run \(run): \(title) was posted under \(sent)") }
        return entries.count
    }
}
