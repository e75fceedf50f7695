public import Tether

/// One entry of a ``RouteTable``: a name, an HTTP method, a path template, an entity and what to
/// do with the response.
///
/// ```swift
/// Route("getUser", .get, "/api/users/:user_id", entity: "User")
/// Route("userStats", .get, "/api/users/:id/stats", entity: "User", kind: .data)
/// Route("sync", .get, "/api/sync", kind: .envelope)
/// ```
///
/// Variables are written `:name` (letters, digits and `_`) and may sit inside a segment
/// (`/files/:name.json`).
public struct Route: Sendable, Hashable {
    /// What a route's response is.
    public enum Kind: Sendable, Hashable {
        /// An object or an array of objects of the route's entity, imported into the store
        /// (RSAPI's default).
        case objects
        /// Raw JSON handed back to the caller; the store is not touched (RSAPI's "DATA").
        case data
        /// A multi-entity envelope, `{"User": [...], "Group": [...]}`: each array is imported as
        /// the entity its key names, all in one transaction (RSAPI's "MANY").
        case envelope
    }

    /// The name the route is called by (`client.call("getUser")`); unique in its table.
    public var name: String
    /// The HTTP method of the request. A `POST`, `PUT` or `PATCH` sends the parameters that are
    /// not path variables as a JSON body; other methods send them as the query.
    public var method: HTTPMethod
    /// The path template, appended to the environment's base URL: literal text and `:variables`
    /// filled from the call's parameters (`/api/users/:user_id/stats`).
    public var path: String
    /// The entity of the response (``Kind/objects``), and the entity whose attributes the path
    /// variables name. Optional for ``Kind/data`` and ``Kind/envelope`` routes.
    public var entity: String?
    /// What the response is: objects to import (the default), raw JSON, or an envelope of several
    /// entities.
    public var kind: Kind
    /// For an ``Kind/objects`` route: where the objects are in the response (nil: the shape the
    /// client declares for the entity, `Client.Builder.responseShape(_:for:)`).
    public var shape: ResponseShape?
    /// For an ``Kind/envelope`` route: the entity of each key of the envelope that is not an
    /// entity's name (`["users": "User", "groups": "Group"]`).
    public var envelopeKeys: [String: String]

    /// A route named `name` sending `method` to `path`. `entity` is required for an ``Kind/objects``
    /// route; `shape` and `envelopeKeys` describe unusual responses (see the properties).
    public init(
        _ name: String, _ method: HTTPMethod, _ path: String, entity: String? = nil, kind: Kind = .objects,
        shape: ResponseShape? = nil, envelopeKeys: [String: String] = [:]
    ) {
        self.name = name
        self.method = method
        self.path = path
        self.entity = entity
        self.kind = kind
        self.shape = shape
        self.envelopeKeys = envelopeKeys
    }

    /// The variables of the path template, in order.
    public var variables: [String] {
        (try? PathTemplate(path).variables) ?? []
    }
}

/// A parsed path template: literal text and `:variables`.
struct PathTemplate: Sendable, Hashable {
    enum Part: Sendable, Hashable {
        case literal(String)
        case variable(String)
    }

    let parts: [Part]

    var variables: [String] {
        parts.compactMap { if case .variable(let name) = $0 { name } else { nil } }
    }

    /// Characters a template literal may contain: RFC 3986 path characters without `%`
    /// escapes' ambiguity: unreserved, sub-delims, `:`, `@`, `/` and `%`.
    private static let literalBytes: Set<UInt8> = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=@/%".utf8)

    init(_ template: String) throws(TemplateError) {
        var parts: [Part] = []
        var literal = ""
        var index = template.startIndex
        var seen = Set<String>()
        while index < template.endIndex {
            let character = template[index]
            if character == ":" {
                var end = template.index(after: index)
                while end < template.endIndex, template[end].isASCII, template[end].isLetter || template[end].isNumber || template[end] == "_" {
                    end = template.index(after: end)
                }
                let name = String(template[template.index(after: index)..<end])
                guard !name.isEmpty else { throw TemplateError("':' must be followed by a variable name") }
                guard seen.insert(name).inserted else { throw TemplateError("the variable ':\(name)' appears twice") }
                if !literal.isEmpty { parts.append(.literal(literal)) }
                literal = ""
                parts.append(.variable(name))
                index = end
            } else {
                guard character.utf8.allSatisfy(Self.literalBytes.contains) else {
                    throw TemplateError("'\(character)' is not allowed in a path template (put query parameters in the call's parameters)")
                }
                literal.append(character)
                index = template.index(after: index)
            }
        }
        if !literal.isEmpty { parts.append(.literal(literal)) }
        self.parts = parts
    }

    struct TemplateError: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }
}

/// Collects routes in a ``RouteTable`` declaration.
@resultBuilder
public enum RouteTableBuilder {
    /// Makes one route a part of the declaration.
    public static func buildExpression(_ route: Route) -> [Route] { [route] }
    /// Joins the parts of the declaration, in order.
    public static func buildBlock(_ parts: [Route]...) -> [Route] { parts.flatMap { $0 } }
    /// The routes a `for` loop declares, one iteration after the other.
    public static func buildArray(_ parts: [[Route]]) -> [Route] { parts.flatMap { $0 } }
    /// The routes of an `if` without `else`: none when the condition is false.
    public static func buildOptional(_ part: [Route]?) -> [Route] { part ?? [] }
    /// The routes of the first branch of an `if`-`else` or a `switch`.
    public static func buildEither(first part: [Route]) -> [Route] { part }
    /// The routes of the other branch of an `if`-`else` or a `switch`.
    public static func buildEither(second part: [Route]) -> [Route] { part }
}
