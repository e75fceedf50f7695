import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Tether
import TetherURLSession
import TetherTestSupport
import TetherTesting

/// Issue 18, transport faults: a real HTTP server on 127.0.0.1 (a Python standard-library script
/// the test writes and starts) misbehaves the ways servers and networks do. Through a `Client` on
/// `URLSessionTransport`, every fault must end in a typed error, write nothing to the store, and
/// print no credential.
@Suite struct TransportFaultTests {
    static let token = "tf-S3cret-T0ken-4f9c2e"

    /// The server: its first path segment says how to misbehave (`/reset/users`). It listens on two
    /// ports (the second only to catch a request that should never be sent), logs every request it
    /// reads as a JSON line (port, method, path, Authorization) before answering, and serves until
    /// it is terminated.
    static let script = #"""
    import json, os, socket, struct, sys, threading, time

    parent = os.getppid()

    port_file, log_file = sys.argv[1], sys.argv[2]
    log_lock = threading.Lock()
    ports = []

    def log(port, method, path, headers):
        with log_lock:
            with open(log_file, "a") as f:
                f.write(json.dumps({"port": port, "method": method, "path": path,
                                    "authorization": headers.get("authorization")}) + "\n")

    def read_request(conn):
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target = lines[0].split(" ")[:2]
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0") or "0")
        while len(rest) < length:
            chunk = conn.recv(65536)
            if not chunk:
                break
            rest += chunk
        return method, target, headers

    REASONS = {200: "OK", 201: "Created", 302: "Found", 307: "Temporary Redirect", 401: "Unauthorized", 500: "Internal Server Error",
               502: "Bad Gateway", 503: "Service Unavailable"}

    def head(status, content_type, length, extra=()):
        lines = ["HTTP/1.1 %d %s" % (status, REASONS.get(status, "Status"))]
        if content_type:
            lines.append("Content-Type: " + content_type)
        lines.append("Content-Length: %d" % length)
        lines.append("Connection: close")
        lines.extend(extra)
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    def send(conn, status, content_type, body, extra=()):
        conn.sendall(head(status, content_type, len(body), extra) + body)

    def reset(conn):
        # SO_LINGER with a zero timeout: close() sends RST instead of FIN.
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()

    def wait_for_client(conn):
        # Hold the connection (sending nothing) until the client gives up and closes it.
        conn.settimeout(60)
        try:
            while conn.recv(65536):
                pass
        except OSError:
            pass

    USERS = b'[{"id": 1, "login": "page-one"}, {"id": 2, "login": "page-one-b"}]'
    USER = b'{"id": 1, "login": "one"}'

    def handle(conn, port):
        request = read_request(conn)
        if request is None:
            conn.close()
            return
        method, target, headers = request
        log(port, method, target, headers)
        mode = target.split("?")[0].strip("/").split("/")[0]
        single = method != "GET" or target.rstrip("/").split("?")[0].split("/")[-1].isdigit()
        json_type = "application/json"
        if mode.startswith("paged-"):
            # Page 1 is good and links page 2 on the same origin; page 2 has the fault.
            if "page=2" not in target:
                send(conn, 200, json_type, USERS,
                     ['Link: <http://127.0.0.1:%d/%s/users?page=2>; rel="next"' % (port, mode)])
                conn.close()
                return
            mode = mode[len("paged-"):]
        if mode == "ok":
            send(conn, 201 if method == "POST" else 200, json_type, USER if single else USERS)
        elif mode == "reset":
            # Headers and part of the body, then a reset: the part is valid JSON on its own.
            conn.sendall(head(200, json_type, 100000) + (USER if single else USERS) + b" " * 2000)
            time.sleep(0.05)
            reset(conn)
            return
        elif mode == "reset-early":
            reset(conn)
            return
        elif mode == "short-truncated":
            body = USER if single else USERS
            conn.sendall(head(200, json_type, len(body)) + body[: len(body) // 2])
            conn.shutdown(socket.SHUT_WR)
            time.sleep(0.05)
        elif mode == "short-complete":
            # A complete JSON document, but fewer bytes than Content-Length says.
            body = USER if single else USERS
            conn.sendall(head(200, json_type, len(body) + 500) + body)
            conn.shutdown(socket.SHUT_WR)
            time.sleep(0.05)
        elif mode == "hang":
            conn.sendall(head(200, json_type, 100000) + (USER if single else USERS)[:10])
            wait_for_client(conn)
        elif mode == "silent":
            wait_for_client(conn)
        elif mode == "status500":
            send(conn, 500, json_type, b'{"detail": "A server error occurred."}')
        elif mode == "status502":
            send(conn, 502, "text/html", b"<html><body><h1>502 Bad Gateway</h1></body></html>")
        elif mode == "status503":
            send(conn, 503, json_type, b'{"message": "down for maintenance"}', ["Retry-After: 1"])
        elif mode == "html-as-json":
            send(conn, 200, "application/json; charset=utf-8",
                 b"<!DOCTYPE html><html><head><title>Sign in</title></head><body>Please sign in</body></html>")
        elif mode == "malformed":
            send(conn, 200, json_type, b'[{"id": 1, "login": "a"},, {"id": 2}]')
        elif mode == "link-host":
            send(conn, 200, json_type, USERS,
                 ['Link: <http://localhost:%d/stolen/users?page=2>; rel="next"' % ports[0]])
        elif mode == "link-port":
            send(conn, 200, json_type, USERS,
                 ['Link: <http://127.0.0.1:%d/stolen/users?page=2>; rel="next"' % ports[1]])
        elif mode == "drf-host":
            body = {"count": 3, "next": "http://localhost:%d/stolen/users?page=2" % ports[0],
                    "results": json.loads(USERS)}
            send(conn, 200, json_type, json.dumps(body).encode())
        elif mode == "redirect-host":
            send(conn, 302, None, b"", ["Location: http://localhost:%d/stolen%s" % (ports[0], target[len("/redirect-host"):])])
        elif mode == "redirect-port":
            send(conn, 307, None, b"", ["Location: http://127.0.0.1:%d/stolen%s" % (ports[1], target[len("/redirect-port"):])])
        elif mode == "echo-json":
            # A server that echoes the credential it refused.
            text = "invalid credential: %s" % headers.get("authorization", "")
            send(conn, 401, json_type, json.dumps({"detail": text}).encode())
        elif mode == "echo-html":
            # A debug error page that lists the request headers.
            page = "<html><body><h1>Server Error</h1><pre>HTTP_AUTHORIZATION = %s</pre></body></html>" % headers.get("authorization", "")
            send(conn, 500, "text/html", page.encode())
        else:
            send(conn, 200, json_type, b"[]")
        conn.close()

    def serve(listener, port):
        while True:
            conn, _ = listener.accept()
            threading.Thread(target=handle, args=(conn, port), daemon=True).start()

    listeners = []
    for _ in range(2):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        listeners.append(listener)
        ports.append(listener.getsockname()[1])
    for listener, port in zip(listeners, ports):
        threading.Thread(target=serve, args=(listener, port), daemon=True).start()
    with open(port_file + ".tmp", "w") as f:
        f.write("%d %d" % tuple(ports))
    os.rename(port_file + ".tmp", port_file)
    # Serve while the test process lives (at most ten minutes).
    for _ in range(600):
        if os.getppid() != parent:
            break
        time.sleep(1)
    """#

    struct ServerDidNotStart: Error, CustomStringConvertible {
        var description: String { "the test server did not start within 30 s (is python3 on the PATH?)" }
    }

    /// One running server; terminated when the value goes away.
    final class LocalServer: Sendable {
        let process: ChildProcess
        let folder: URL
        let port: Int
        let otherPort: Int

        init() async throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("tether-faults-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let scriptURL = folder.appendingPathComponent("server.py")
            try Data(TransportFaultTests.script.utf8).write(to: scriptURL)
            let portFile = folder.appendingPathComponent("ports")
            let process = try ChildProcess("/usr/bin/env", ["python3", scriptURL.path, portFile.path, folder.appendingPathComponent("log").path])
            self.process = process
            let ports = try await awaitPorts(2, in: portFile, of: process)
            (port, otherPort) = (ports[0], ports[1])
        }

        deinit {
            process.kill()
            try? FileManager.default.removeItem(at: folder)
        }

        func base(_ mode: String) -> URL { URL(string: "http://127.0.0.1:\(port)/\(mode)")! }

        struct LoggedRequest: Decodable {
            let port: Int
            let method: String
            let path: String
            let authorization: String?
        }

        /// Every request the server read, in order.
        func requests() throws -> [LoggedRequest] {
            guard let data = try? Data(contentsOf: folder.appendingPathComponent("log")) else { return [] }
            return try data.split(separator: UInt8(ascii: "\n")).map { try JSONDecoder().decode(LoggedRequest.self, from: Data($0)) }
        }
    }

    enum Expected {
        case transport(TransportError.Kind?)
        case http(Int)
        case parse
        case untrustedLink
    }

    enum Fault: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case resetMidBody = "reset"
        case resetBeforeAnswering = "reset-early"
        case bodyCutShort = "short-truncated"
        case completeJSONCutShortOfContentLength = "short-complete"
        case timeoutMidBody = "hang"
        case timeoutBeforeAnswering = "silent"
        case status500
        case status502
        case status503
        case htmlWithJSONContentType = "html-as-json"
        case malformedJSON = "malformed"
        case nextLinkToAnotherHost = "link-host"
        case nextLinkToAnotherPort = "link-port"
        case drfNextToAnotherHost = "drf-host"
        // Page 1 is good, page 2 fails: the import of all pages is one, and nothing is written.
        case resetOnPageTwo = "paged-reset"
        case timeoutOnPageTwo = "paged-hang"
        case status503OnPageTwo = "paged-status503"
        case malformedJSONOnPageTwo = "paged-malformed"
        case nextLinkToAnotherHostOnPageTwo = "paged-link-host"

        var testDescription: String { "\(self)" }

        /// Only a list follows pages.
        var isPaged: Bool { rawValue.hasPrefix("paged-") }

        var expected: Expected {
            switch self {
            case .resetMidBody, .resetBeforeAnswering, .bodyCutShort, .completeJSONCutShortOfContentLength, .resetOnPageTwo: .transport(nil)
            case .timeoutMidBody, .timeoutBeforeAnswering, .timeoutOnPageTwo: .transport(.timeout)
            case .status500: .http(500)
            case .status502: .http(502)
            case .status503, .status503OnPageTwo: .http(503)
            case .htmlWithJSONContentType, .malformedJSON, .malformedJSONOnPageTwo: .parse
            case .nextLinkToAnotherHost, .nextLinkToAnotherPort, .drfNextToAnotherHost, .nextLinkToAnotherHostOnPageTwo: .untrustedLink
            }
        }

        var isTimeout: Bool {
            if case .transport(.timeout?) = expected { return true }
            return false
        }
    }

    /// A client of `server` whose requests go to `/<mode>/…` with a bearer token, over a store
    /// that already holds one user.
    static func client(_ server: LocalServer, _ mode: String, timeout: TimeInterval) async throws -> Client {
        // One fault, one request: retries are covered by RetryTests.
        let client = try makeBuilder(transport: URLSessionTransport(timeout: timeout), baseURL: server.base(mode))
            .requestHook(AuthorizationHook(credential: token))
            .retries(.none)
            .build()
        _ = try await client.import(Data(#"[{"id": 9, "login": "seeded"}]"#.utf8), as: "User")
        return client
    }

    /// What an error may print, every way it can be printed.
    static func texts(of error: any Error) -> [String] {
        var dumped = ""
        dump(error, to: &dumped)
        return ["\(error)", String(reflecting: error), error.localizedDescription, dumped]
    }

    static func check(_ error: (any Error)?, _ expected: Expected, _ label: String) {
        guard let error else {
            Issue.record("\(label): no error")
            return
        }
        switch expected {
        case .transport(let kind):
            if let error = error as? TransportError {
                if let kind { #expect(error.kind == kind, "\(label): \(error)") }
            } else {
                Issue.record("\(label): \(type(of: error)) \(error), expected a TransportError")
            }
        case .http(let status):
            if let error = error as? HTTPError {
                #expect(error.status == status, "\(label): \(error)")
            } else {
                Issue.record("\(label): \(type(of: error)) \(error), expected an HTTPError")
            }
        case .parse:
            #expect(error is JSONParseError, "\(label): \(type(of: error)) \(error), expected a JSONParseError")
        case .untrustedLink:
            #expect((error as? RequestError)?.kind == .untrustedLink, "\(label): \(type(of: error)) \(error), expected RequestError.untrustedLink")
        }
        for text in texts(of: error) {
            #expect(!text.contains(token), "\(label): the token is printed: \(text)")
        }
    }

    static func expectNothingWritten(_ client: Client, _ label: String) async throws {
        let users = try await client.fetch(Query("User"))
        #expect(users.count == 1, "\(label): \(users.count) users stored")
        #expect(users.first?["login"] == .string("seeded"), "\(label)")
    }

    @Test(arguments: Fault.allCases)
    func aFaultIsATypedErrorAndWritesNothing(_ fault: Fault) async throws {
        let server = try await LocalServer()
        let client = try await Self.client(server, fault.rawValue, timeout: fault.isTimeout ? 1 : 30)

        // A list, following pages.
        var error: (any Error)?
        do { _ = try await client.fetchObjects("User", from: "/users") } catch let caught { error = caught }
        Self.check(error, fault.expected, "\(fault) fetchObjects")
        try await Self.expectNothingWritten(client, "\(fault) fetchObjects")

        if fault.isPaged {
            // Both pages were asked for, on the same origin, and the first one's objects were not kept.
            let requests = try server.requests()
            #expect(requests.map(\.path) == ["/\(fault.rawValue)/users", "/\(fault.rawValue)/users?page=2"], "\(requests.map(\.path))")
            #expect(requests.allSatisfy { $0.port == server.port && $0.authorization == "Bearer \(Self.token)" })
            return
        }
        if case .untrustedLink = fault.expected {
            // Only the first page was asked for, and never elsewhere.
            let requests = try server.requests()
            #expect(requests.map(\.path) == ["/\(fault.rawValue)/users"], "\(requests.map(\.path))")
            #expect(requests.allSatisfy { $0.port == server.port })
            #expect(requests.first?.authorization == "Bearer \(Self.token)", "the hook ran")
            return
        }

        // One object, and a create (a POST with a body).
        error = nil
        do { _ = try await client.fetchObject("User", from: "/users/1") } catch let caught { error = caught }
        Self.check(error, fault.expected, "\(fault) fetchObject")
        try await Self.expectNothingWritten(client, "\(fault) fetchObject")

        error = nil
        do { _ = try await client.create("User", values: ["login": .string("new")]) } catch let caught { error = caught }
        Self.check(error, fault.expected, "\(fault) create")
        try await Self.expectNothingWritten(client, "\(fault) create")

        let requests = try server.requests()
        #expect(requests.map(\.method) == ["GET", "GET", "POST"], "\(requests.map(\.path))")
        #expect(requests.allSatisfy { $0.authorization == "Bearer \(Self.token)" }, "the hook ran on every request")
    }

    /// The same server and client answer normally on the `ok` path: the faults above are the
    /// server's, not the setup's.
    @Test func theServerAnswersWhenNothingIsWrong() async throws {
        let server = try await LocalServer()
        let client = try await Self.client(server, "ok", timeout: 30)
        let result = try await client.fetchObjects("User", from: "/users")
        #expect(result.objects.map { $0["login"] } == [.string("page-one"), .string("page-one-b")])
        let one = try await client.fetchObject("User", from: "/users/1")
        #expect(one["login"] == .string("one"))
        #expect(try await client.count(Query("User")) == 3)
        #expect(try server.requests().allSatisfy { $0.authorization == "Bearer \(Self.token)" })
    }

    /// A redirect to another host or port (which URLSession follows by itself) must not take the
    /// credential there: the same rule as for next-page links.
    @Test(arguments: ["redirect-host", "redirect-port"])
    func aRedirectToAnotherOriginDoesNotCarryTheToken(_ mode: String) async throws {
        let server = try await LocalServer()
        let client = try await Self.client(server, mode, timeout: 30)
        for operation in ["fetchObjects", "fetchObject", "create"] {
            do {
                switch operation {
                case "fetchObjects": _ = try await client.fetchObjects("User", from: "/users")
                case "fetchObject": _ = try await client.fetchObject("User", from: "/users/1")
                default: _ = try await client.create("User", values: ["login": .string("new")])
                }
            } catch {
                for text in Self.texts(of: error) { #expect(!text.contains(Self.token), "\(operation): \(text)") }
            }
        }
        let requests = try server.requests()
        #expect(requests.count >= 3)
        for request in requests where request.path.hasPrefix("/stolen") || request.port != server.port {
            #expect(request.authorization == nil, "\(request.method) \(request.path) on port \(request.port) received the token")
        }
    }

    /// A server that echoes the credential it was sent (in a JSON error message, or a debug page
    /// listing the request's headers): the `HTTPError` Tether throws must not print it.
    @Test(arguments: ["echo-json", "echo-html"])
    func anErrorBodyThatEchoesTheTokenDoesNotPrintIt(_ mode: String) async throws {
        let server = try await LocalServer()
        let client = try await Self.client(server, mode, timeout: 30)
        let error = await #expect(throws: HTTPError.self) { _ = try await client.fetchObjects("User", from: "/users") }
        #expect(error?.status == (mode == "echo-json" ? 401 : 500))
        // The body keeps what the server sent (`error.body.message`, `error.data`); what Tether
        // prints of the error must not show the credential.
        for text in [error.map { "\($0)" }, error.map { String(reflecting: $0) }] {
            #expect(text?.contains(Self.token) != true, "the token is printed: \(text ?? "")")
        }
        try await Self.expectNothingWritten(client, mode)
    }
}
