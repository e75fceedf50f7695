public import Foundation
public import Tether

/// A route call that failed before or after the exchange: an unknown route, a missing or unusable
/// parameter, no transport, or a 2xx response that is not the JSON the route expects (with its
/// ``status``, ``headers`` and ``body``).
///
/// HTTP error statuses are the core's `HTTPError`, failed exchanges
/// `TransportError` and import problems `ImportError`, as for every Tether call.
public struct RouteError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure; compare with the static members (`.unknownRoute`, ...).
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The kind's name, as its static member is spelled (`missingParameter`).
        public let name: String
        /// A kind named `name`; the kinds this module throws are the static members.
        public init(_ name: String) { self.name = name }
        /// The client has no route table, or the table no route of that name.
        public static let unknownRoute = Kind("unknownRoute")
        /// A path variable has no value among the parameters.
        public static let missingParameter = Kind("missingParameter")
        /// A parameter cannot be sent (an object in a path or query, an empty, `.` or `..` path segment).
        public static let invalidParameter = Kind("invalidParameter")
        /// Neither the route's entity nor the client has a transport.
        public static let noTransport = Kind("noTransport")
        /// The response body is not JSON, or not the shape the route expects.
        public static let invalidResponse = Kind("invalidResponse")
        /// A typed call (``Tether/Client/call(_:as:parameters:headers:options:depth:)``) of a route
        /// that does not import the model's entity (another entity's route, or a data route).
        public static let entityMismatch = Kind("entityMismatch")
        public var description: String { name }
    }

    /// What kind of failure it is.
    public let kind: Kind
    /// The name of the route that was called.
    public let route: String
    /// The parameter at fault, if any.
    public let parameter: String?
    /// The HTTP status, for errors that come from a response.
    public let status: Int?
    /// The response headers, for errors that come from a response; empty otherwise.
    public let headers: HTTPHeaders
    /// The response body, for errors that come from a response (see ``bodyText`` and
    /// ``bodyJSON``); empty otherwise.
    public let body: Data
    /// A sentence saying what went wrong, naming the route and the parameter.
    public let message: String

    /// An error of `kind` in a call of `route`, with the parameter and the response concerned when
    /// there are some.
    public init(
        _ kind: Kind, route: String, parameter: String? = nil, status: Int? = nil, headers: HTTPHeaders = [:],
        body: Data = Data(), _ message: String
    ) {
        self.kind = kind
        self.route = route
        self.parameter = parameter
        self.status = status
        self.headers = headers
        self.body = body
        self.message = message
    }

    /// The body as UTF-8 text (an HTML error page, say).
    public var bodyText: String { String(decoding: body, as: UTF8.self) }

    /// The body parsed as JSON when the response says it is JSON and it parses; nil otherwise,
    /// so an HTML error page is never mistaken for JSON.
    public var bodyJSON: JSON? {
        guard let type = headers["Content-Type"]?.lowercased(), type.contains("json") else { return nil }
        return try? JSON(parsing: body)
    }

    public var description: String {
        var text = "route error (\(kind)) in '\(route)': \(message)"
        if let status { text += " [HTTP \(status)]" }
        return text
    }
}
