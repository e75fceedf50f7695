public import Foundation
public import Tether
import Synchronization

/// One recorded HTTP exchange, stored as one JSON file.
///
/// File format (one file per exchange, named `0001-GET-users-octocat.json`, replayed in name order):
/// ```json
/// {
///   "request": {"method": "GET", "url": "http://127.0.0.1:8000/api/users/1",
///               "headers": [["Accept", "application/json"], ["Authorization", "<redacted>"]],
///               "body": null},
///   "response": {"status": 200,
///                "headers": [["Content-Type", "application/json"]],
///                "body": {"id": 1, "login": "octocat"}, "bodyFormat": "json"}
/// }
/// ```
/// `bodyFormat` is `json` (the body is inline JSON), `text` (a UTF-8 string) or `base64`; a
/// missing or null body is empty. Credentials are written as `<redacted>` (see ``json()``).
public struct RecordedExchange: Sendable, Hashable {
    /// The request as it was sent (its credentials redacted when read back from a file).
    public var request: TransportRequest
    /// The answer the server gave, which ``ReplayTransport`` serves again.
    public var response: TransportResponse

    /// An exchange made of a request and its answer, to record or to replay.
    public init(request: TransportRequest, response: TransportResponse) {
        self.request = request
        self.response = response
    }

    /// The file contents. Secrets are written as `<redacted>` (`Redaction`): credential
    /// headers of the request and response (`Authorization`, `Cookie`, `Set-Cookie`, …), and
    /// the URL's password and secret query values (`access_token=<redacted>`).
    public func json() -> JSON {
        func headers(_ h: HTTPHeaders) -> JSON {
            .array(Redaction.headers(h).fields.map { .array([.string($0.name), .string($0.value)]) })
        }
        func body(_ data: Data?, contentType: String?) -> (JSON, String) {
            guard let data, !data.isEmpty else { return (.null, "json") }
            if let parsed = try? JSON(parsing: data), case .object = parsed { return (parsed, "json") }
            if let parsed = try? JSON(parsing: data), case .array = parsed { return (parsed, "json") }
            if let text = String(data: data, encoding: .utf8) { return (.string(text), "text") }
            return (.string(data.base64EncodedString()), "base64")
        }
        let (requestBody, requestFormat) = body(request.body, contentType: request.headers["Content-Type"])
        let (responseBody, responseFormat) = body(response.body, contentType: response.headers["Content-Type"])
        return [
            "request": [
                "method": .string(request.method.rawValue), "url": .string(Redaction.url(request.url).absoluteString),
                "headers": headers(request.headers), "body": requestBody, "bodyFormat": .string(requestFormat),
            ],
            "response": [
                "status": .int(Int64(response.status)), "headers": headers(response.headers),
                "body": responseBody, "bodyFormat": .string(responseFormat),
            ],
        ]
    }

    /// Reads an exchange from a file's JSON.
    public init(json: JSON, file: String = "") throws {
        func fail(_ why: String) -> ReplayError { ReplayError(file: file, message: why) }
        func headers(_ json: JSON?) throws -> HTTPHeaders {
            var h = HTTPHeaders()
            for pair in json?.arrayValue ?? [] {
                guard let name = pair[0]?.stringValue, let value = pair[1]?.stringValue else { throw fail("a header is not [name, value]") }
                h.add(name: name, value: value)
            }
            return h
        }
        func body(_ json: JSON?, _ format: String?) throws -> Data? {
            guard let json, !json.isNull else { return nil }
            switch format ?? "json" {
            case "json": return json.serialized()
            case "text": return Data((json.stringValue ?? "").utf8)
            case "base64":
                guard let data = json.stringValue.flatMap({ Data(base64Encoded: $0) }) else { throw fail("the body is not base64") }
                return data
            default: throw fail("unknown bodyFormat '\(format ?? "")'")
            }
        }
        guard let request = json["request"], let response = json["response"] else { throw fail("expected request and response") }
        guard let method = request["method"]?.stringValue, let urlText = request["url"]?.stringValue, let url = URL(string: urlText) else {
            throw fail("the request needs a method and a URL")
        }
        guard let status = response["status"]?.int64Value else { throw fail("the response needs a status") }
        self.request = TransportRequest(
            method: HTTPMethod(rawValue: method), url: url, headers: try headers(request["headers"]),
            body: try body(request["body"], request["bodyFormat"]?.stringValue))
        self.response = TransportResponse(
            status: Int(status), headers: try headers(response["headers"]),
            body: try body(response["body"], response["bodyFormat"]?.stringValue) ?? Data())
    }
}

/// A recorded-exchange folder that cannot be read or replayed.
public struct ReplayError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file at fault, by name within the folder; empty when the error concerns no file (a
    /// request with no recording left).
    public let file: String
    /// What is wrong: the JSON that does not match the exchange format, or the request that has no
    /// recorded exchange left.
    public let message: String
    /// An error about `file` (empty for none), explained by `message`.
    public init(file: String, message: String) {
        self.file = file
        self.message = message
    }
    public var description: String { "replay error\(file.isEmpty ? "" : " in \(file)"): \(message)" }
}

/// A `Transport` serving exchanges recorded by ``RecordingTransport`` (files in a folder).
///
/// A request is answered by the first unused exchange with the same method, path and query
/// (host and port are ignored, so a session recorded against one server replays anywhere; secret
/// query values are compared redacted, as ``RecordingTransport`` writes them).
/// Each exchange answers once, so a repeated request gets the next recording of it. A request
/// with no recording left throws a ``ReplayError``.
///
/// ```swift
/// let replay = try ReplayTransport(folder: fixtures.appendingPathComponent("create-user"))
/// let client = try Client.Builder(schema: schema).transport(replay).baseURL(base).build()
/// ```
public final class ReplayTransport: Transport {
    private let exchanges: [RecordedExchange]
    private let used: Mutex<Set<Int>>

    /// A transport serving `exchanges`: each answers the first request with its method, path and
    /// query, once.
    public init(exchanges: [RecordedExchange]) {
        self.exchanges = exchanges
        self.used = Mutex([])
    }

    /// Loads every `*.json` file of `folder`, in file-name order.
    public convenience init(folder: URL) throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".json") }.sorted()
        var exchanges: [RecordedExchange] = []
        for name in names {
            let data = try Data(contentsOf: folder.appendingPathComponent(name))
            let json: JSON
            do {
                json = try JSON(parsing: data)
            } catch {
                throw ReplayError(file: name, message: "\(error)")
            }
            exchanges.append(try RecordedExchange(json: json, file: name))
        }
        self.init(exchanges: exchanges)
    }

    /// Loads a nock-style recording, as octokit/fixtures writes them (`normalized-fixture.json`:
    /// an array of `{"scope", "method", "path", "status", "response", "headers", "reqheaders",
    /// "body"}`), so a test can replay recorded GitHub traffic as it is published.
    ///
    /// ```swift
    /// let replay = try ReplayTransport(nockRecording: fixtures.appendingPathComponent("paginate-issues/normalized-fixture.json"))
    /// let client = try Client.Builder(schema: schema).transport(replay).baseURL(URL(string: "https://api.github.com")!).build()
    /// ```
    /// Header values that are numbers are read as their text; a JSON response is served as its
    /// serialized JSON (`responseIsBinary` responses as base64-decoded bytes).
    public convenience init(nockRecording file: URL) throws {
        let name = file.lastPathComponent
        let json: JSON
        do {
            json = try JSON(parsing: Data(contentsOf: file))
        } catch {
            throw ReplayError(file: name, message: "\(error)")
        }
        guard let records = json.arrayValue else { throw ReplayError(file: name, message: "expected an array of recorded requests") }
        func headers(_ json: JSON?) -> HTTPHeaders {
            var h = HTTPHeaders()
            for (key, value) in (json?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
                switch value {
                case .string(let text): h.add(name: key, value: text)
                case .array(let values): for v in values { h.add(name: key, value: v.stringValue ?? "\(v)") }
                default: h.add(name: key, value: "\(value)")
                }
            }
            return h
        }
        var exchanges: [RecordedExchange] = []
        for (index, record) in records.enumerated() {
            guard let scope = record["scope"]?.stringValue, let method = record["method"]?.stringValue,
                  let path = record["path"]?.stringValue, let url = URL(string: scope + path),
                  let status = record["status"]?.int64Value
            else { throw ReplayError(file: name, message: "record \(index) needs scope, method, path and status") }
            var body = Data()
            switch record["response"] {
            case .string(let text)? where record["responseIsBinary"]?.boolValue == true:
                body = Data(base64Encoded: text) ?? Data(text.utf8)
            case .string(let text)?: body = Data(text.utf8)
            case let value? where !value.isNull: body = value.serialized()
            default: break
            }
            let requestBody: Data? = record["body"].flatMap { $0.isNull || $0.stringValue == "" ? nil : $0.serialized() }
            exchanges.append(RecordedExchange(
                request: TransportRequest(method: HTTPMethod(rawValue: method.uppercased()), url: url,
                                          headers: headers(record["reqheaders"]), body: requestBody),
                response: TransportResponse(status: Int(status), headers: headers(record["headers"]), body: body)))
        }
        self.init(exchanges: exchanges)
    }

    /// The exchanges not replayed yet.
    public var unused: [RecordedExchange] {
        let used = used.withLock { $0 }
        return exchanges.indices.filter { !used.contains($0) }.map { exchanges[$0] }
    }

    /// Answers `request` with the first unused exchange recorded for the same method, path and query
    /// (host and port ignored), which is then used up; throws a ``ReplayError`` when none is left.
    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        let key = StubTransport.pathAndQuery(Redaction.url(request.url))
        let index: Int? = used.withLock { used in
            guard let i = exchanges.indices.first(where: { i in
                !used.contains(i) && exchanges[i].request.method == request.method
                    && StubTransport.pathAndQuery(Redaction.url(exchanges[i].request.url)) == key
            }) else { return nil }
            used.insert(i)
            return i
        }
        guard let index else { throw ReplayError(file: "", message: "no recorded exchange left for \(request.method) \(key)") }
        return exchanges[index].response
    }
}

/// A `Transport` wrapping a real one and writing every exchange to a folder, one file each,
/// in the format ``ReplayTransport`` reads (see ``RecordedExchange``).
///
/// ```swift
/// let recorder = try RecordingTransport(wrapping: URLSessionTransport(), folder: fixtures)
/// ```
/// Files are numbered in the order the answers arrive. Failed exchanges (no answer) are not
/// written.
public final class RecordingTransport: Transport {
    /// The real transport every request is sent through.
    public let wrapped: any Transport
    /// The folder the exchanges are written to, one numbered JSON file each.
    public let folder: URL
    private let counter: Mutex<Int>

    /// Creates `folder` if needed; numbering continues after the files already there.
    public init(wrapping transport: any Transport, folder: URL) throws {
        self.wrapped = transport
        self.folder = folder
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let existing = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".json") }.count
        self.counter = Mutex(existing)
    }

    /// Sends `request` through ``wrapped`` and writes the exchange to the next numbered file of
    /// ``folder`` (credentials redacted) before returning the answer. A failed exchange throws and
    /// writes nothing.
    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        let response = try await wrapped.send(request)
        let number = counter.withLock { n in
            n += 1
            return n
        }
        let exchange = RecordedExchange(request: request, response: response)
        let path = URLComponents(url: request.url, resolvingAgainstBaseURL: true)?.path ?? ""
        let slug = String(path.map { $0.isASCII && ($0.isLetter || $0.isNumber) ? $0 : "-" }.prefix(60))
            .split(separator: "-").joined(separator: "-")
        let name = String(format: "%04d", number) + "-\(request.method.rawValue)\(slug.isEmpty ? "" : "-" + slug).json"
        try exchange.json().serialized().write(to: folder.appendingPathComponent(name), options: .atomic)
        return response
    }
}
