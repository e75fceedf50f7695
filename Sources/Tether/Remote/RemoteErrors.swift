public import Foundation

/// A server answered with a status outside 200–299.
///
/// Carries the status, the response headers and the decoded error body. It never carries the
/// request's headers, so an `Authorization` value cannot leak through a log of the error.
///
/// ```swift
/// do {
///     _ = try await client.create("User", values: ["login": .string("octocat")])
/// } catch let error as HTTPError where error.status == 422 || error.status == 400 {
///     error.body.messages(for: "login")   // ["has already been taken"]
/// }
/// ```
public struct HTTPError: Error, Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    /// The request's HTTP method.
    public let method: HTTPMethod
    /// The URL of the request, without user, password and secret query values (``Redaction/url(_:)``).
    public let url: URL
    /// The HTTP status of the answer, outside 200–299: usually 400–599, or a redirect the
    /// transport did not follow.
    public let status: Int
    /// The response headers.
    public let headers: HTTPHeaders
    /// The decoded body: field errors, a message, or the raw text of a non-JSON page.
    public let body: ErrorBody
    /// The raw response body.
    public let data: Data
    /// The request's secrets, hidden wherever the error prints the body (a server may echo them).
    private let secrets: [String]

    /// The error of `response` to a request of `method` to `url` (redacted here). Prefer
    /// ``init(request:response:)``, which also hides the request's secrets where the server
    /// echoes them.
    public init(method: HTTPMethod, url: URL, response: TransportResponse) {
        self.method = method
        self.url = RemoteURL.redacted(url)
        self.status = response.status
        self.headers = response.headers
        self.data = response.body
        self.body = ErrorBody(data: response.body, contentType: response.headers["Content-Type"])
        self.secrets = []
    }

    /// The error of `request`'s answer: its description hides the request's secrets even where
    /// the server echoes them in the body (``body`` and ``data`` keep what the server sent).
    public init(request: TransportRequest, response: TransportResponse) {
        self.method = request.method
        self.url = RemoteURL.redacted(request.url)
        self.status = response.status
        self.headers = response.headers
        self.data = response.body
        self.body = ErrorBody(data: response.body, contentType: response.headers["Content-Type"])
        self.secrets = Redaction.secrets(of: request)
    }

    /// The error of `request`'s answer with its body decoded by the entity's document format.
    init(request: TransportRequest, response: TransportResponse, body: ErrorBody) {
        self.method = request.method
        self.url = RemoteURL.redacted(request.url)
        self.status = response.status
        self.headers = response.headers
        self.data = response.body
        self.body = body
        self.secrets = Redaction.secrets(of: request)
    }

    /// True for 404 Not Found and 410 Gone.
    public var isNotFound: Bool { status == 404 || status == 410 }

    public var description: String {
        Redaction.scrub("HTTP \(status) for \(method) \(url.absoluteString): \(body.summary)", secrets: secrets)
    }

    /// What `dump` shows: the request's secrets hidden in the body too.
    public var customMirror: Mirror {
        Mirror(self, children: [
            "method": method, "url": url, "status": status, "headers": Redaction.headers(headers),
            "body": Redaction.scrub(body.summary, secrets: secrets),
        ], displayStyle: .struct)
    }
}

/// The body of an HTTP error, decoded from the common dialects:
/// - Django REST Framework: `{"login": ["This field is required."]}`, `{"detail": "Not found."}`,
///   `{"non_field_errors": ["…"]}`, nested `{"owner": {"login": ["…"]}}` (as `owner.login`);
/// - Rails: `{"login": ["has already been taken"]}`, `{"status": 404, "error": "Not Found"}`,
///   `{"errors": {"login": ["…"]}}`;
/// - GitHub: `{"message": "Validation Failed", "errors": [{"resource", "field", "code"}]}`;
/// - an HTML page or an empty body: ``isJSON`` is false and ``text`` holds the text.
///
/// A body is read as JSON only when its `Content-Type` says JSON (or is missing and the body
/// parses); an HTML error page is never mistaken for JSON.
public struct ErrorBody: Sendable, Hashable, CustomStringConvertible {
    /// The general message: DRF's `detail`, GitHub's `message`, Rails' `error`.
    public var message: String?
    /// Messages per field (JSON key, dotted for nested errors), in the server's words.
    public var fieldErrors: [String: [String]]
    /// The parsed body when it is JSON.
    public var json: JSON?
    /// The body as text when it is not JSON (an HTML page), at most 2,000 characters.
    public var text: String?
    /// The response's content type, if any.
    public var contentType: String?
    /// The errors one by one, for formats whose error bodies list them with more than a field
    /// and a message (JSON:API's `errors[]`: `status`, `code`, `source.pointer`,
    /// `source.parameter`); empty for the plain dialects, whose ``fieldErrors`` say it all.
    public var entries: [Entry] = []

    /// One error of a body that lists them (JSON:API's error objects).
    public struct Entry: Sendable, Hashable {
        /// The field it is about (`title` for `/data/attributes/title`), nil for the request as a whole.
        public var field: String?
        /// The message: the error's `detail`, else its `title`.
        public var message: String?
        /// A short summary (JSON:API's `title`).
        public var title: String?
        /// An application-specific code (`blank`, `invalid`).
        public var code: String?
        /// The HTTP status the error stands for, as the body gives it (`"422"`).
        public var status: String?
        /// The JSON pointer into the request document (`/data/attributes/title`).
        public var pointer: String?
        /// The query parameter at fault (`include`, `sort`).
        public var parameter: String?

        /// An entry with these parts.
        public init(field: String? = nil, message: String? = nil, title: String? = nil, code: String? = nil,
                    status: String? = nil, pointer: String? = nil, parameter: String? = nil) {
            self.field = field
            self.message = message
            self.title = title
            self.code = code
            self.status = status
            self.pointer = pointer
            self.parameter = parameter
        }
    }

    /// A body with these parts, as decoding fills them (for stubs in tests, and document formats
    /// decoding their own error bodies); use ``init(data:contentType:)`` to decode a plain one.
    public init(message: String? = nil, fieldErrors: [String: [String]] = [:], json: JSON? = nil, text: String? = nil, contentType: String? = nil,
                entries: [Entry] = []) {
        self.message = message
        self.fieldErrors = fieldErrors
        self.json = json
        self.text = text
        self.contentType = contentType
        self.entries = entries
    }

    /// Decodes a response body.
    public init(data: Data, contentType: String?) {
        self.init(contentType: contentType)
        let trimmed = data.drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        if trimmed.isEmpty { return }
        let declaredJSON = contentType.map(RemoteURL.isJSONContentType)
        if declaredJSON != false, let parsed = try? JSON(parsing: data) {
            json = parsed
            decode(parsed)
        } else {
            text = String(String(decoding: data, as: UTF8.self).prefix(2000))
        }
    }

    /// True when the body was parsed as JSON (``json`` is set).
    public var isJSON: Bool { json != nil }
    /// True when the body was empty (or only whitespace): neither JSON nor text.
    public var isEmpty: Bool { json == nil && (text ?? "").isEmpty }

    /// The messages for a field (`login`, `owner.login`, `non_field_errors`).
    public func messages(for field: String) -> [String] { fieldErrors[field] ?? [] }

    /// One line: the message and field errors, or the content type and size of a non-JSON body.
    public var summary: String {
        var parts: [String] = []
        if let message { parts.append(message) }
        for field in fieldErrors.keys.sorted() {
            parts.append("\(field): \(fieldErrors[field]!.joined(separator: "; "))")
        }
        if parts.isEmpty {
            if let text {
                parts.append("\(contentType ?? "untyped") body (\(text.utf8.count) bytes, not JSON)")
            } else if let json {
                parts.append(String(json.description.prefix(200)))
            } else {
                parts.append("empty body")
            }
        }
        return parts.joined(separator: ", ")
    }

    public var description: String { summary }

    private static let messageKeys: Set<String> = ["detail", "message", "error"]
    private static let ignoredKeys: Set<String> = ["documentation_url", "status", "url"]

    private mutating func decode(_ json: JSON) {
        switch json {
        case .object(let members):
            for key in ["detail", "message", "error"] {
                if let text = members[key]?.stringValue { message = text; break }
            }
            for (key, value) in members where !Self.messageKeys.contains(key) && !Self.ignoredKeys.contains(key) {
                if key == "errors" {
                    switch value {
                    case .array(let elements): decodeGitHubErrors(elements)
                    case .object: collect(value, prefix: "")
                    default: collect(value, prefix: key)
                    }
                } else {
                    collect(value, prefix: key)
                }
            }
            // DRF answers `{"detail": ["…"]}` for some validation errors: keep them as the message.
            if message == nil, let details = members["detail"]?.arrayValue?.compactMap(\.stringValue), !details.isEmpty {
                message = details.joined(separator: "; ")
            }
        case .array(let elements):
            let texts = elements.compactMap(\.stringValue)
            if !texts.isEmpty { fieldErrors["non_field_errors", default: []].append(contentsOf: texts) }
        case .string(let text):
            message = text
        default:
            break
        }
    }

    private mutating func collect(_ value: JSON, prefix: String) {
        switch value {
        case .string(let text):
            fieldErrors[prefix, default: []].append(text)
        case .array(let elements):
            for (i, element) in elements.enumerated() {
                switch element {
                case .string(let text): fieldErrors[prefix, default: []].append(text)
                // DRF's errors of a nested list: one object per element
                case .object: collect(element, prefix: "\(prefix)[\(i)]")
                default: break
                }
            }
        case .object(let members):
            for (key, nested) in members { collect(nested, prefix: prefix.isEmpty ? key : "\(prefix).\(key)") }
        default:
            break
        }
    }

    private mutating func decodeGitHubErrors(_ elements: [JSON]) {
        for element in elements {
            switch element {
            case .object(let error):
                let field = error["field"]?.stringValue ?? error["resource"]?.stringValue ?? "base"
                let text = error["message"]?.stringValue ?? error["code"]?.stringValue ?? element.description
                fieldErrors[field, default: []].append(text)
            case .string(let text):
                fieldErrors["base", default: []].append(text)
            default:
                break
            }
        }
    }
}

/// A request that could not be exchanged: the connection was refused, it timed out, it was
/// cancelled, or something else went wrong below HTTP. Distinct from ``HTTPError`` (the server
/// answered) and from ``ImportError`` / ``JSONParseError`` (the answer could not be mapped).
public struct TransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Why no answer came; compare with the static members (`.timeout`, ...).
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The kind's name, as its static member is spelled (`timeout`).
        public let name: String
        /// A kind named `name`, for a transport's own failures; the client's retries look only at
        /// ``connectionLost``.
        public init(_ name: String) { self.name = name }
        /// No server accepted the connection (nothing listens on the port, or the host is down).
        public static let connectionRefused = Kind("connectionRefused")
        /// The connection was lost or reset before the answer was complete.
        public static let connectionLost = Kind("connectionLost")
        /// No data came within the transport's timeout (`URLSessionTransport`: 60 s by default).
        public static let timeout = Kind("timeout")
        /// The task was cancelled while the request was under way.
        public static let cancelled = Kind("cancelled")
        /// The answer's body was larger than the request's response limit
        /// (``TransportRequest/responseLimit``, counted after decompression, or a `Content-Length`
        /// saying so); the exchange was stopped and nothing was parsed. ``TransportError/limit``
        /// holds the limit, ``TransportError/status`` the answer's status.
        public static let responseTooLarge = Kind("responseTooLarge")
        /// The exchange took longer than the request's deadline (``TransportRequest/deadline``)
        /// and was cancelled; ``TransportError/limit`` holds the deadline.
        public static let deadlineExceeded = Kind("deadlineExceeded")
        /// A redirect (301, 302, 303, 307, 308) that cannot be followed: no `Location`, one that
        /// is not an `http` or `https` URL, or more redirects than the transport follows.
        /// ``TransportError/status`` holds the redirect's status.
        public static let badRedirect = Kind("badRedirect")
        /// Anything else below HTTP: a DNS or TLS failure, an error thrown by a custom transport
        /// (its text in ``TransportError/message``).
        public static let other = Kind("other")
        public var description: String { name }
    }

    /// Why no answer came.
    public let kind: Kind
    /// The request's HTTP method.
    public let method: HTTPMethod
    /// The URL of the request, without user, password and secret query values (``Redaction/url(_:)``).
    public let url: URL
    /// What went wrong, in the words of the layer below (`URLError -1004: …` from
    /// `URLSessionTransport`).
    public let message: String
    /// The HTTP status of the answer when one had begun to arrive (a body cut at the response
    /// limit, a redirect that cannot be followed); nil when none came.
    public let status: Int?
    /// The limit that was reached: the response limit of `.responseTooLarge`, the deadline of
    /// `.deadlineExceeded`; nil for the other kinds.
    public let limit: TransportLimit?

    /// An error of `kind` for a request of `method` to `url` (redacted here); a transport of your
    /// own throws these. The client removes the request's secrets from `message`; keep others out.
    public init(_ kind: Kind, method: HTTPMethod, url: URL, status: Int? = nil, limit: TransportLimit? = nil, _ message: String) {
        self.kind = kind
        self.method = method
        self.url = RemoteURL.redacted(url)
        self.status = status
        self.limit = limit
        self.message = message
    }

    /// The same error with every secret of `request` removed from its message
    /// (``Redaction/scrub(_:of:)``): what the client does with a transport's errors.
    public func scrubbed(of request: TransportRequest) -> TransportError {
        TransportError(kind, method: method, url: url, status: status, limit: limit, Redaction.scrub(message, of: request))
    }

    public var description: String { "transport error (\(kind)) for \(method) \(url.absoluteString): \(message)" }
}

/// A request that Tether refused to send: a URL template names a value the object lacks, no
/// route or transport is configured, or the object is not stored. Nothing was sent.
public struct RequestError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Why the request was refused; compare with the static members (`.missingValue`, ...).
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The kind's name, as its static member is spelled (`missingValue`).
        public let name: String
        /// A kind named `name`, for an extension's own refusals; the client throws the static members.
        public init(_ name: String) { self.name = name }
        /// A template variable has no value (unset, empty, or a relationship with no object).
        public static let missingValue = Kind("missingValue")
        /// A template variable names nothing in the entity's mapping.
        public static let unknownVariable = Kind("unknownVariable")
        /// No URL is known for the request: a relationship without a registered URL, an item URL
        /// for an entity without a single identity attribute, or a list longer than
        /// ``RemoteConfiguration/maxPages`` pages.
        public static let noRoute = Kind("noRoute")
        /// No transport is set for the entity, nor a default one.
        public static let noTransport = Kind("noTransport")
        /// The template does not make a valid URL: relative without a base URL, or unparsable.
        public static let invalidURL = Kind("invalidURL")
        /// The object to send, or to read the URL's values from, is not in the store (or was
        /// deleted while the request was under way).
        public static let objectNotFound = Kind("objectNotFound")
        /// The call names an entity that is not in the schema.
        public static let unknownEntity = Kind("unknownEntity")
        /// The call names a relationship that the entity does not have.
        public static let unknownRelationship = Kind("unknownRelationship")
        /// The response had no object to import (an empty body where one was needed).
        public static let emptyResponse = Kind("emptyResponse")
        /// A page links its next page to another scheme, host or port than the request's, which
        /// Tether does not follow (it would send the client's credentials there).
        public static let untrustedLink = Kind("untrustedLink")
        /// A list was cut by its pagination's page cap where the whole list is needed (deleting
        /// what it lacks, or setting a relationship to it).
        public static let incompleteList = Kind("incompleteList")
        /// The store or the configuration cannot do what was asked (a save of only the changes on
        /// a store that keeps no remote records).
        public static let unsupported = Kind("unsupported")
        public var description: String { name }
    }

    /// Why the request was refused.
    public let kind: Kind
    /// The entity concerned, if any.
    public let entity: String?
    /// The attribute, relationship or template variable concerned.
    public let member: String?
    /// A sentence saying what is missing and what to do (`no URL is registered for
    /// User.repositories; use relationshipResource(_:for:of:)`).
    public let message: String

    /// An error of `kind`, about `entity` and `member` when given.
    public init(_ kind: Kind, entity: String? = nil, member: String? = nil, _ message: String) {
        self.kind = kind
        self.entity = entity
        self.member = member
        self.message = message
    }

    public var description: String { "request error (\(kind)): \(message)" }
}

enum RemoteURL {
    static func redacted(_ url: URL) -> URL { Redaction.url(url) }

    static func isJSONContentType(_ contentType: String) -> Bool {
        let type = contentType.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        return type == "application/json" || type.hasSuffix("+json") || type == "text/json"
    }
}
