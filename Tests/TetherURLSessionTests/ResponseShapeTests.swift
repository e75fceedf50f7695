import Foundation
import Testing
import Tether
import TetherTesting
import TetherURLSession
import TetherTestSupport

/// Where the objects are in a response (issue 20's response mapping), against a small real HTTP
/// server the test starts on 127.0.0.1 (Python's http.server serving JSON files).
@Suite(.serialized) struct ResponseShapeTests {
    /// A static file server of `files` (path → JSON text); stopped when the value goes away.
    final class FileServer: Sendable {
        let process: ChildProcess
        let folder: URL
        let port: Int

        static let script = """
            import functools, http.server, os, sys, threading, time
            root, portfile = sys.argv[1], sys.argv[2]
            parent = os.getppid()
            def watch():
                # Gone with the test process, even one that crashed (it would hold its output open).
                while os.getppid() == parent: time.sleep(0.5)
                os._exit(0)
            threading.Thread(target=watch, daemon=True).start()
            class Handler(http.server.SimpleHTTPRequestHandler):
                def log_message(self, *args): pass
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=root))
            with open(portfile + ".tmp", "w") as f: f.write(str(server.server_address[1]))
            os.rename(portfile + ".tmp", portfile)
            server.serve_forever()
            """

        init(_ files: [String: String]) async throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("tether-shapes-\(UUID().uuidString)")
            let root = folder.appendingPathComponent("root")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            for (path, text) in files {
                let url = root.appendingPathComponent(path)
                try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try Data(text.utf8).write(to: url)
            }
            let script = folder.appendingPathComponent("server.py")
            try Data(Self.script.utf8).write(to: script)
            let portFile = folder.appendingPathComponent("port")
            process = try ChildProcess("/usr/bin/env", ["python3", script.path, root.path, portFile.path])
            port = try await awaitPorts(1, in: portFile, of: process)[0]
        }

        deinit {
            process.kill()
            try? FileManager.default.removeItem(at: folder)
        }

        var base: URL { URL(string: "http://127.0.0.1:\(port)")! }
    }

    static let files = [
        "resources.json": #"{"resources": [{"id": 1, "login": "ada"}, {"id": 2, "login": "bo"}], "total": 2}"#,
        "data.json": #"{"data": {"items": [{"id": 3, "login": "cy"}]}}"#,
        "one.json": #"{"data": {"items": {"id": 4, "login": "di"}}}"#,
        "plain.json": #"[{"id": 5, "login": "ed"}]"#,
        "user.json": #"{"id": 6, "login": "fi"}"#,
        "wrapped-user.json": #"{"user": {"id": 7, "login": "gu"}}"#,
        "users/1/repositories.json": #"{"resources": [{"id": 10, "name": "kept"}]}"#,
    ]

    static func builder(_ server: FileServer) throws -> Client.Builder {
        try makeBuilder(transport: URLSessionTransport(timeout: 10), baseURL: server.base)
    }

    @Test func aListUnderAnotherKeyIsAnErrorUntilDeclared() async throws {
        let server = try await FileServer(Self.files)
        let automatic = try Self.builder(server).build()
        // The bug this prevents: {"resources": [...]} imported as one object without identity, i.e. nothing.
        let error = await #expect(throws: ImportError.self) { _ = try await automatic.fetchObjects("User", from: "/resources.json") }
        #expect(error?.message.contains("resources, total") == true, "names the keys found: \(String(describing: error))")
        #expect(error?.message.contains("responseShape") == true)
        #expect(try await automatic.count(Query("User")) == 0)

        let declared = try Self.builder(server).responseShape(.keyPath("resources"), for: "User").build()
        let fetched = try await declared.fetchObjects("User", from: "/resources.json")
        #expect(fetched.objects.map { $0["login"] } == [.string("ada"), .string("bo")])

        let nested = try Self.builder(server).responseShape(.keyPath("data.items")).build()
        #expect(try await nested.fetchObjects("User", from: "/data.json").objects.map { $0["login"] } == [.string("cy")])
        #expect(try await nested.fetchObject("User", from: "/one.json")["login"] == .string("di"))
        // The declared key is missing: an error with its path, nothing imported.
        let missing = await #expect(throws: ImportError.self) { _ = try await nested.fetchObjects("User", from: "/resources.json") }
        #expect(missing?.path.description == "$.data.items")
        #expect(try await nested.count(Query("User")) == 2, "cy and di only")
    }

    @Test func automaticStillReadsArraysPagesAndSingleObjects() async throws {
        let server = try await FileServer(Self.files)
        let client = try Self.builder(server).build()
        #expect(try await client.fetchObjects("User", from: "/plain.json").objects.count == 1)
        #expect(try await client.fetchObjects("User", from: "/user.json").objects.map { $0["login"] } == [.string("fi")],
                "an object of the entity (it has its identity) is a list of one")
        #expect(try await client.fetchObject("User", from: "/user.json")["login"] == .string("fi"))

        let custom = try Self.builder(server)
            .responseShape(.custom { json in
                guard let user = json["user"] else { throw CocoaError(.coderValueNotFound) }
                return user
            }, for: "User").build()
        #expect(try await custom.fetchObject("User", from: "/wrapped-user.json")["login"] == .string("gu"))
        await #expect(throws: CocoaError.self) { _ = try await custom.fetchObject("User", from: "/user.json") }

        let single = try Self.builder(server).responseShape(.object, for: "User").build()
        await #expect(throws: ImportError.self) { _ = try await single.fetchObjects("User", from: "/plain.json") }
    }

    /// A relationship fetch whose response is not understood never clears the links stored.
    @Test func anUnreadableRelationshipKeepsItsLinks() async throws {
        let server = try await FileServer(Self.files)
        let client = try Self.builder(server).relationshipResource("/users/:id/repositories.json", for: "repositories", of: "User").build()
        try await client.import(Data(#"[{"id": 1, "login": "ada", "repositories": [{"id": 11, "name": "stored"}]}]"#.utf8), as: "User")
        let ada = try #require(try await client.object("User", identity: .int(1)))
        await #expect(throws: ImportError.self) { _ = try await client.fetchRelationship("repositories", of: ada.id) }
        #expect(try await client.related("repositories", of: ada.id).map { $0["name"] } == [.string("stored")])

        let declared = try Self.builder(server).responseShape(.keyPath("resources"), for: "Repository")
            .relationshipResource("/users/:id/repositories.json", for: "repositories", of: "User").store(client.store).build()
        _ = try await declared.fetchRelationship("repositories", of: ada.id)
        #expect(try await client.related("repositories", of: ada.id).map { $0["name"] } == [.string("kept")])
    }
}
