import Foundation
import Tether
import TetherTestSupport
import TetherTesting

/// A hostile HTTP server on 127.0.0.1 (a Python standard-library script the test writes and
/// starts): gzip bombs, endless and trickled bodies, redirects to another origin, redirects that
/// cannot be followed, and lists with ETags. It listens on two ports (the second is "another
/// origin" for redirects), logs every request it reads (port, method, path, every header) as a
/// JSON line before answering, and serves until it is dropped.
///
/// The first path segment says what to do (`/bomb/users`):
/// - `bomb`: `200`, `Content-Encoding: gzip`, about 1 MB that inflates to `?mib=` MiB (1024 by
///   default) of an unclosed JSON array;
/// - `endless`: `Content-Length: 10000000000`, then spaces until the client goes away;
/// - `endless-chunked`: chunked, no length, spaces until the client goes away;
/// - `big`: `?bytes=` bytes of a valid JSON list (no compression);
/// - `trickle`: `Content-Length: 1000`, then one byte every 2 s;
/// - `redirect-<status>-other`: a redirect to the same path on the other port, under `/landing`;
/// - `redirect-<status>-same`: the same on this port;
/// - `upper-location`: a 302 whose `Location` is `HTTP://127.0.0.1:<port>/ok/users`;
/// - `no-location`, `ftp-location`: a 302 without `Location`, or to `ftp://`;
/// - `etag`: a one-user list (`?n=` its id) with `ETag: "v-<n>"`, `304` to a matching `If-None-Match`;
/// - anything else: `200` with two users (one for a path ending in a number).
final class HostileServer: Sendable {
    static let script = #"""
    import json, os, socket, struct, sys, threading, time, zlib

    parent = os.getppid()
    port_file, log_file = sys.argv[1], sys.argv[2]
    log_lock = threading.Lock()
    bomb_lock = threading.Lock()
    bombs = {}
    ports = []

    def log(port, method, path, headers):
        with log_lock:
            with open(log_file, "a") as f:
                f.write(json.dumps({"port": port, "method": method, "path": path, "headers": headers}) + "\n")

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

    def head(status, extra=(), content_type="application/json"):
        lines = ["HTTP/1.1 %d Status" % status]
        if content_type:
            lines.append("Content-Type: " + content_type)
        lines.append("Connection: close")
        lines.extend(extra)
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    def send(conn, status, body, extra=(), content_type="application/json"):
        conn.sendall(head(status, list(extra) + ["Content-Length: %d" % len(body)], content_type) + body)

    def bomb(mib):
        # A gzip member of '[' and `mib` MiB of spaces: one compressed MiB block, repeated (each
        # ends with a full flush, so the blocks are identical), then the CRC and the size.
        with bomb_lock:
            if mib not in bombs:
                c = zlib.compressobj(9, zlib.DEFLATED, -15)
                chunk = b" " * (1 << 20)
                first = c.compress(b"[") + c.flush(zlib.Z_FULL_FLUSH)
                block = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
                end = c.flush(zlib.Z_FINISH)
                crc = zlib.crc32(b"[")
                for _ in range(mib):
                    crc = zlib.crc32(chunk, crc)
                size = (1 + mib * (1 << 20)) & 0xffffffff
                bombs[mib] = (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + first + block * mib + end
                              + struct.pack("<II", crc & 0xffffffff, size))
            return bombs[mib]

    def query(target, name, default):
        for pair in target.partition("?")[2].split("&"):
            key, _, value = pair.partition("=")
            if key == name:
                return value
        return default

    def until_gone(conn, chunk, chunked=False):
        # Writes `chunk` until the client closes the connection.
        try:
            while True:
                if chunked:
                    conn.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                else:
                    conn.sendall(chunk)
        except OSError:
            pass

    USERS = b'[{"id": 1, "login": "one"}, {"id": 2, "login": "two"}]'
    USER = b'{"id": 1, "login": "one"}'

    def handle(conn, port):
        request = read_request(conn)
        if request is None:
            conn.close()
            return
        method, target, headers = request
        log(port, method, target, headers)
        path = target.split("?")[0]
        mode = path.strip("/").split("/")[0]
        rest = path[len("/" + mode):]
        single = method != "GET" or path.rstrip("/").split("/")[-1].isdigit()
        if mode == "bomb":
            body = bomb(int(query(target, "mib", "1024")))
            send(conn, 200, body, ["Content-Encoding: gzip"])
        elif mode == "endless":
            conn.sendall(head(200, ["Content-Length: 10000000000"]) + b"[")
            until_gone(conn, b" " * 65536)
        elif mode == "endless-chunked":
            conn.sendall(head(200, ["Transfer-Encoding: chunked"]) + b"1\r\n[\r\n")
            until_gone(conn, b" " * 65536, chunked=True)
        elif mode == "big":
            size = int(query(target, "bytes", "1000"))
            body = b"[" + b" " * max(0, size - len(USERS)) + USERS[1:]
            send(conn, 200, body)
        elif mode == "trickle":
            conn.sendall(head(200, ["Content-Length: 1000"]) + b"[")
            try:
                for _ in range(999):
                    time.sleep(2)
                    conn.sendall(b" ")
            except OSError:
                pass
        elif mode.startswith("redirect-"):
            _, status, where = mode.split("-")
            other = ports[1] if where == "other" else port
            send(conn, int(status), b"", ["Location: http://127.0.0.1:%d/landing%s" % (other, rest + ("?" + target.partition("?")[2] if "?" in target else ""))], None)
        elif mode == "upper-location":
            send(conn, 302, b"", ["Location: HTTP://127.0.0.1:%d/ok%s" % (port, rest)], None)
        elif mode == "no-location":
            send(conn, 302, b"", [], None)
        elif mode == "ftp-location":
            send(conn, 302, b"", ["Location: ftp://127.0.0.1:%d/ok%s" % (port, rest)], None)
        elif mode == "etag":
            n = query(target, "n", "1")
            tag = '"v-%s"' % n
            if headers.get("if-none-match") == tag:
                send(conn, 304, b"", ["ETag: " + tag], None)
            else:
                send(conn, 200, ('[{"id": %d, "login": "user-%s"}]' % (int(n), n)).encode(), ["ETag: " + tag])
        else:
            send(conn, 201 if method == "POST" else 200, USER if single else USERS)
        try:
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass
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
        listener.listen(128)
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

    let process: ChildProcess
    let folder: URL
    let port: Int
    let otherPort: Int

    init() async throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("tether-hostile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let scriptURL = folder.appendingPathComponent("server.py")
        try Data(Self.script.utf8).write(to: scriptURL)
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

    /// `http://127.0.0.1:<port>/<mode>`.
    func base(_ mode: String) -> URL { URL(string: "http://127.0.0.1:\(port)/\(mode)")! }

    struct LoggedRequest: Decodable {
        let port: Int
        let method: String
        let path: String
        /// Every header, by lower-cased name.
        let headers: [String: String]
    }

    /// Every request the server read, in order.
    func requests() throws -> [LoggedRequest] {
        guard let data = try? Data(contentsOf: folder.appendingPathComponent("log")) else { return [] }
        return try data.split(separator: UInt8(ascii: "\n")).map { try JSONDecoder().decode(LoggedRequest.self, from: Data($0)) }
    }
}
