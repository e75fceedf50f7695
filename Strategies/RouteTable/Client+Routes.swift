import Foundation
public import Tether

/// What a route call got back.
public struct RouteResult: Sendable {
    /// The route that was called.
    public let route: Route
    /// The request that was sent.
    public let request: TransportRequest
    /// The HTTP status of the response (2xx: other statuses throw an `HTTPError`).
    public let status: Int
    /// The response headers (`ETag`, `Link`, rate limits).
    public let headers: HTTPHeaders
    /// The parsed response body; nil for an empty body (a 204, say).
    public let json: JSON?
    /// What the import did; nil for a ``Route/Kind/data`` route, which never touches the store.
    public let importResult: ImportResult?
    /// The top-level imported objects, in payload order (for an envelope: entity by entity, in
    /// schema order). Empty for a data route.
    public let objects: [Object]
}

extension Client {
    /// Calls a route that imports objects and returns those of `type`'s entity as typed models
    /// (`EntityModel`), in payload order, filled `depth` levels deep: what
    /// ``call(_:parameters:headers:options:)`` imported, read back as structs.
    ///
    /// ```swift
    /// let user = try await client.call("getUser", as: User.self, parameters: ["id": 42]).first
    /// let users = try await client.call("sync", as: User.self)   // the users of an envelope
    /// ```
    ///
    /// A route of another entity, or a data route, is a ``RouteError`` (`.entityMismatch`)
    /// before anything is sent.
    public func call<M: EntityModel>(
        _ route: String, as type: M.Type, parameters: [String: JSON] = [:], headers: HTTPHeaders = [:],
        options: ImportOptions? = nil, depth: Int = 1
    ) async throws -> [M] {
        if let definition = self.extension(RouteTable.self)?[route] {
            switch definition.kind {
            case .data:
                throw RouteError(.entityMismatch, route: route,
                                 "'\(route)' is a data route: it imports nothing to read as \(M.self); call(_:parameters:) returns its JSON")
            case .objects where definition.entity != M.entityName:
                throw RouteError(.entityMismatch, route: route,
                                 "'\(route)' imports \(definition.entity ?? "no entity"), not \(M.entityName) (\(M.self))")
            case .objects, .envelope:
                break
            }
        }
        let result = try await call(route, parameters: parameters, headers: headers, options: options)
        return try await models(result.objects.lazy.filter { $0.id.entity == M.entityName }.map(\.id), as: M.self, depth: depth)
    }

    /// Calls the route named `route` of the client's ``RouteTable``.
    ///
    /// Path variables are filled from `parameters`, each percent-escaped as exactly one path
    /// segment; the remaining parameters go in the query string (GET, DELETE, HEAD) or in a JSON
    /// object body (POST, PUT, PATCH). The URL is relative to the client's `baseURL`, and the
    /// request goes through `Client.transport(for:)` of the route's entity.
    ///
    /// The request goes through the client's pipeline (`Client.send(_:entity:)`): request
    /// hooks such as authentication apply. A non-2xx answer throws the core `HTTPError`
    /// (status, headers, decoded error body) and writes nothing; a failed exchange throws
    /// `TransportError`. Otherwise the JSON is imported (``Route/Kind/objects``
    /// and ``Route/Kind/envelope``, in one transaction) or handed back (``Route/Kind/data``).
    public func call(
        _ route: String, parameters: [String: JSON] = [:], headers: HTTPHeaders = [:], options: ImportOptions? = nil
    ) async throws -> RouteResult {
        guard let table = self.extension(RouteTable.self) else {
            throw RouteError(.unknownRoute, route: route, "the client has no route table; register one with Client.Builder.routes(_:)")
        }
        guard let definition = table[route] else {
            throw RouteError(.unknownRoute, route: route, "the route table has no route named '\(route)'")
        }
        let request = try RouteRequest.make(definition, parameters: parameters, headers: headers, baseURL: baseURL)
        guard transport(for: definition.entity) != nil else {
            throw RouteError(.noTransport, route: route, "no transport is set for \(definition.entity ?? "the client")")
        }
        let response = try await send(request, entity: definition.entity)
        var json: JSON?
        if !response.body.isEmpty {
            do {
                json = try JSON(parsing: response.body)
            } catch {
                throw RouteError(
                    .invalidResponse, route: route, status: response.status, headers: response.headers, body: response.body,
                    "the response is not JSON: \(error)")
            }
        }
        func result(_ importResult: ImportResult?, _ objects: [Object]) -> RouteResult {
            RouteResult(
                route: definition, request: request, status: response.status, headers: response.headers, json: json,
                importResult: importResult, objects: objects)
        }
        switch definition.kind {
        case .data:
            return result(nil, [])
        case .objects:
            guard let json, let entity = definition.entity else { return result(ImportResult(), []) }
            let payload = try self.objects(in: json, as: entity, shape: definition.shape,
                                           request: "route '\(route)' (\(request.method) \(request.url.path))")
            let imported = try await self.import(payload, as: entity, options: options)
            return result(imported, try await objects(Array(imported.objects)))
        case .envelope:
            guard let json else { return result(ImportResult(), []) }
            guard case .object(let members) = json else {
                throw RouteError(
                    .invalidResponse, route: route, status: response.status, headers: response.headers, body: response.body,
                    "an envelope must be a JSON object of entity names, found \(json.typeName)")
            }
            let entityOf = { (key: String) in definition.envelopeKeys[key] ?? (self.schema[key] != nil ? key : nil) }
            if let unknown = members.keys.sorted().first(where: { entityOf($0) == nil }) {
                throw RouteError(
                    .invalidResponse, route: route, parameter: unknown, status: response.status, headers: response.headers,
                    body: response.body, "the envelope names '\(unknown)', which is not an entity of the schema"
                        + " (map its keys to entities with the route's envelopeKeys: [\"\(unknown)\": \"Entity\"])")
            }
            let keyOf = Dictionary(members.keys.map { (entityOf($0)!, $0) }, uniquingKeysWith: { a, _ in a })
            let payloads = schema.entities.compactMap { entity in keyOf[entity.name].flatMap { members[$0] }.map { (entity: entity.name, json: $0) } }
            let imported = try await self.import(payloads, options: options)
            return result(imported, try await objects(Array(imported.objects)))
        }
    }

    private func objects(_ ids: [ObjectID]) async throws -> [Object] {
        guard !ids.isEmpty else { return [] }
        return try await store.read { reader in try reader.objects(ids) }
    }
}

/// Builds the request of a route call.
enum RouteRequest {
    static func make(_ route: Route, parameters: [String: JSON], headers: HTTPHeaders, baseURL: URL?) throws -> TransportRequest {
        let template: PathTemplate
        do {
            template = try PathTemplate(route.path)
        } catch {
            throw RouteError(.unknownRoute, route: route.name, "invalid path template '\(route.path)': \(error.message)")
        }
        var remaining = parameters
        var path = ""
        for part in template.parts {
            switch part {
            case .literal(let text):
                path += text
            case .variable(let name):
                guard let value = remaining.removeValue(forKey: name), !value.isNull else {
                    throw RouteError(
                        .missingParameter, route: route.name, parameter: name,
                        "the path variable ':\(name)' of '\(route.path)' has no value")
                }
                guard let text = scalarText(value), !text.isEmpty, text != ".", text != ".." else {
                    throw RouteError(
                        .invalidParameter, route: route.name, parameter: name,
                        "the value of ':\(name)' cannot be a path segment: \(value)")
                }
                path += URLTemplate.escapeSegment(text)
            }
        }
        guard let baseURL else {
            throw RouteError(.unknownRoute, route: route.name, "the client has no base URL")
        }
        var base = baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        var url = base + (path.hasPrefix("/") ? path : "/" + path)

        var request = TransportRequest(method: route.method, url: baseURL, headers: headers)
        let sendsBody = [HTTPMethod.post, .put, .patch].contains(route.method)
        if sendsBody {
            if !remaining.isEmpty { request.body = JSON.object(remaining).serialized() }
        } else {
            var items: [String] = []
            for name in remaining.keys.sorted() {
                let value = remaining[name]!
                let values: [JSON] = value.arrayValue ?? [value]
                for element in values where !element.isNull {
                    guard let text = scalarText(element) else {
                        throw RouteError(
                            .invalidParameter, route: route.name, parameter: name,
                            "the query parameter '\(name)' must be a string, number, boolean or an array of them")
                    }
                    items.append(URLTemplate.escapeSegment(name) + "=" + URLTemplate.escapeSegment(text))
                }
            }
            if !items.isEmpty { url += "?" + items.joined(separator: "&") }
        }
        guard let resolved = URL(string: url) else {
            throw RouteError(.invalidParameter, route: route.name, "the URL '\(url)' is not valid")
        }
        request.url = resolved
        return request
    }

    private static func scalarText(_ json: JSON) -> String? {
        switch json {
        case .string(let s): s
        case .int(let i): String(i)
        case .double(let d): "\(d)"
        case .bool(let b): b ? "true" : "false"
        case .null, .array, .object: nil
        }
    }
}

extension RemoteSource {
    /// The objects a route of the client's route table returns (an `.objects` route), as the
    /// source of a remote-backed observation (`Client.observe(_:sectionedBy:reading:from:refresh:)`):
    /// each refresh calls the route with `parameters` and deletes what it no longer lists within
    /// the observed query's condition.
    ///
    /// ```swift
    /// let users = client.observe(Query("User", sortedBy: [.ascending("name")]), from: .route("users"))
    /// ```
    public static func route(_ name: String, parameters: [String: JSON] = [:]) -> RemoteSource {
        let described = parameters.keys.sorted().map { "\($0)=\(parameters[$0]!)" }.joined(separator: "&")
        return RemoteSource(key: "route \(name)" + (described.isEmpty ? "" : "?\(described)")) { client, options in
            _ = try await client.call(name, parameters: parameters, options: options)
        }
    }
}
