"""An unfamiliar REST server for Tether's tests: other envelopes, other pagination styles,
ETags, strict PATCH/PUT, trailing-slash redirects and empty answers.

    python3 dialect_server.py PORTFILE

Listens on 127.0.0.1 (a free port, written to PORTFILE). Every request is logged; GET /_log
returns the log, POST /_reset empties it and restores the notes.

Users (23, ids 1-23), paged four ways:
  GET /cursor/users?cursor=C      {"data": [...10], "meta": {"next_cursor": "10" | null}}
  GET /pages/users?page=N&per_page=M   [...] ; a page past the last is a 404
  GET /offset/users?offset=O&limit=L   {"items": [...], "total": 23}
  GET /next/users?after=A         {"users": [...10], "links": {"next": "/next/users?after=10" | null}}

Notes (id, title, body, status, created_at; created_at and id are read-only):
  GET    /notes        every note; ETag of the list, If-None-Match with the current tag -> 304
  GET    /notes/ID     ETag "vN"; If-None-Match with the current tag -> 304
  PATCH  /notes/ID     only the fields sent; If-Match with another tag -> 412; a read-only field or
                       an unknown one -> 400
  PUT    /notes/ID     every writable field required (400 otherwise)
  POST   /notes        201 with the note
  DELETE /notes/ID     204
  /quiet/notes...      the same, but POST/PATCH/PUT answer 204 with no body
  /untagged/notes...   the same, without ETags (and If-Match is not checked)
  /strict/notes        POST and PATCH without a trailing slash answer 308 (307 for PATCH) to the
                       URL with one; the target refuses an empty body
"""
import copy, json, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit, parse_qs

USERS = [{"id": i, "login": "user%d" % i} for i in range(1, 24)]
INITIAL_NOTES = {
    1: {"id": 1, "title": "First", "body": "hello", "status": "open", "created_at": "2026-01-01T00:00:00Z"},
    2: {"id": 2, "title": "Second", "body": "world", "status": "open", "created_at": "2026-01-02T00:00:00Z"},
}
WRITABLE = {"title", "body", "status"}
READ_ONLY = {"id", "created_at"}

lock = threading.Lock()
state = {"notes": copy.deepcopy(INITIAL_NOTES), "versions": {1: 1, 2: 1}, "next": 3, "log": []}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    untagged = False

    def answer(self, status, payload=None, headers=None):
        body = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            if self.untagged and name == "ETag":
                continue
            self.send_header(name, value)
        if payload is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        return raw

    def handle_any(self, method):
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        raw = self.read_body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = "<not json>"
        with lock:
            state["log"].append({
                "method": method, "path": self.path, "body": body, "length": len(raw),
                "if_match": self.headers.get("If-Match"), "if_none_match": self.headers.get("If-None-Match"),
            })
        path = parts.path
        if path == "/_log":
            with lock:
                return self.answer(200, state["log"])
        if path == "/_reset":
            with lock:
                state.update(notes=copy.deepcopy(INITIAL_NOTES), versions={1: 1, 2: 1}, next=3, log=[])
            return self.answer(204)
        if path == "/cursor/users":
            start = int(query.get("cursor", "0"))
            page = USERS[start:start + 10]
            nxt = str(start + 10) if start + 10 < len(USERS) else None
            return self.answer(200, {"data": page, "meta": {"next_cursor": nxt}})
        if path == "/pages/users":
            number, size = int(query.get("page", "1")), int(query.get("per_page", "10"))
            page = USERS[(number - 1) * size:number * size]
            if not page and number > 1:
                return self.answer(404, {"error": "no page %d" % number})
            return self.answer(200, page)
        if path == "/offset/users":
            offset, limit = int(query.get("offset", "0")), int(query.get("limit", "10"))
            return self.answer(200, {"items": USERS[offset:offset + limit], "total": len(USERS)})
        if path == "/next/users":
            after = int(query.get("after", "0"))
            nxt = "/next/users?after=%d" % (after + 10) if after + 10 < len(USERS) else None
            return self.answer(200, {"users": USERS[after:after + 10], "links": {"next": nxt}})
        quiet = path.startswith("/quiet/")
        strict = path.startswith("/strict/")
        self.untagged = path.startswith("/untagged/")
        if quiet or strict or self.untagged:
            path = path[path.index("/", 1):]
        if strict:
            if not parts.path.endswith("/"):
                if method in ("POST", "PATCH"):
                    status = 308 if method == "POST" else 307
                    return self.answer(status, {"detail": "use a trailing slash"}, {"Location": parts.path + "/"})
            elif method in ("POST", "PATCH", "PUT") and not raw:
                return self.answer(400, {"detail": "empty body at %s" % parts.path})
            path = path.rstrip("/")
        segments = [s for s in path.split("/") if s]
        if segments[:1] != ["notes"]:
            return self.answer(404, {"detail": "not found: %s" % parts.path})
        with lock:
            return self.notes(method, segments[1:], body, quiet)

    def notes(self, method, rest, body, quiet):
        notes, versions = state["notes"], state["versions"]
        if not rest:
            if method == "GET":
                tag = '"L%s"' % "-".join("%d.%d" % (k, versions[k]) for k in sorted(notes))
                if not self.untagged and self.headers.get("If-None-Match") == tag:
                    return self.answer(304, None, {"ETag": tag})
                return self.answer(200, [notes[k] for k in sorted(notes)], {"ETag": tag})
            if method == "POST":
                if not isinstance(body, dict) or not body.get("title"):
                    return self.answer(400, {"title": ["required"]})
                bad = sorted(set(body) - WRITABLE)
                if bad:
                    return self.answer(400, {k: ["read-only or unknown"] for k in bad})
                nid = state["next"]
                state["next"] += 1
                note = {"id": nid, "title": None, "body": None, "status": "open", "created_at": "2026-03-01T00:00:00Z"}
                note.update(body)
                notes[nid], versions[nid] = note, 1
                if quiet:
                    return self.answer(204, None, {"Location": "/notes/%d" % nid})
                return self.answer(201, note, {"ETag": '"v1"'})
            return self.answer(405, {"detail": "method not allowed"})
        nid = int(rest[0])
        if nid not in notes:
            return self.answer(404, {"detail": "no note %d" % nid})
        tag = '"v%d"' % versions[nid]
        if method == "GET":
            if not self.untagged and self.headers.get("If-None-Match") == tag:
                return self.answer(304, None, {"ETag": tag})
            return self.answer(200, notes[nid], {"ETag": tag})
        if method == "DELETE":
            del notes[nid]
            return self.answer(204)
        if method in ("PATCH", "PUT"):
            match = None if self.untagged else self.headers.get("If-Match")
            if match is not None and match != tag:
                return self.answer(412, {"detail": "the note changed (now %s)" % tag}, {"ETag": tag})
            if not isinstance(body, dict):
                return self.answer(400, {"detail": "expected an object"})
            bad = sorted(set(body) - WRITABLE)
            if bad:
                return self.answer(400, {k: ["read-only or unknown"] for k in bad})
            if method == "PUT":
                missing = sorted(WRITABLE - set(body))
                if missing:
                    return self.answer(400, {k: ["required by PUT"] for k in missing})
            notes[nid].update(body)
            versions[nid] += 1
            tag = '"v%d"' % versions[nid]
            if quiet:
                return self.answer(204, None, {"ETag": tag})
            return self.answer(200, notes[nid], {"ETag": tag})
        return self.answer(405, {"detail": "method not allowed"})

    def do_GET(self): self.handle_any("GET")
    def do_POST(self): self.handle_any("POST")
    def do_PATCH(self): self.handle_any("PATCH")
    def do_PUT(self): self.handle_any("PUT")
    def do_DELETE(self): self.handle_any("DELETE")


def exit_with_parent():
    # A test process that crashes cannot stop its servers; this one goes when its parent does
    # (it would otherwise keep the test runner's output open, and the runner waiting for it).
    import os, threading, time
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


exit_with_parent()
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
server.serve_forever()
