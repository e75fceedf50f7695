import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Tether
import TetherTesting
import TetherURLSession
import TetherTestSupport

/// The unfamiliar REST server of `Fixtures/dialect_server.py` (other envelopes and pagination
/// styles, ETags, strict PATCH and PUT, trailing-slash redirects, empty answers), started on
/// 127.0.0.1 for one test and stopped when the value goes away.
final class DialectServer: Sendable {
    let process: ChildProcess
    let folder: URL
    let port: Int

    init() async throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("tether-dialect-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let portFile = folder.appendingPathComponent("port")
        let script = fixturesFolder.appendingPathComponent("dialect_server.py")
        process = try ChildProcess("/usr/bin/env", ["python3", script.path, portFile.path])
        port = try await awaitPorts(1, in: portFile, of: process)[0]
    }

    deinit {
        process.kill()
        try? FileManager.default.removeItem(at: folder)
    }

    var base: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// One request as the server read it.
    struct Logged: CustomStringConvertible {
        let method: String
        let path: String
        /// The JSON body, or nil when there was none.
        let body: JSON?
        let length: Int
        let ifMatch: String?
        let ifNoneMatch: String?
        var description: String { "\(method) \(path) \(body.map { String(decoding: $0.serialized(), as: UTF8.self) } ?? "")" }
        /// The keys of an object body.
        var keys: [String] { body?.objectValue?.keys.sorted() ?? [] }
    }

    /// Every request since the last reset (the log's own requests excluded), in order.
    func log() async throws -> [Logged] {
        let (data, _) = try await URLSession.shared.data(from: base.appendingPathComponent("_log"))
        return try (JSON(parsing: data).arrayValue ?? []).compactMap { entry in
            guard let method = entry["method"]?.stringValue, let path = entry["path"]?.stringValue, !path.hasPrefix("/_") else { return nil }
            let body = entry["body"].flatMap { $0.isNull ? nil : $0 }
            return Logged(method: method, path: path, body: body, length: Int(entry["length"]?.int64Value ?? 0),
                          ifMatch: entry["if_match"]?.stringValue, ifNoneMatch: entry["if_none_match"]?.stringValue)
        }
    }

    func reset() async throws {
        var request = URLRequest(url: base.appendingPathComponent("_reset"))
        request.httpMethod = "POST"
        _ = try await URLSession.shared.data(for: request)
    }

    /// Another client's change: a PATCH sent without Tether.
    func patch(_ path: String, _ json: String) async throws {
        var request = URLRequest(url: base.appendingPathComponent(path))
        request.httpMethod = "PATCH"
        request.httpBody = Data(json.utf8)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        _ = try await URLSession.shared.data(for: request)
    }
}

