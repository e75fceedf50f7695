public import Foundation

/// What a fetch of a list brought: the objects in response order, the import's report and the
/// number of pages followed.
public struct FetchResult: Sendable {
    /// The stored objects of the list, in response order, as the import left them (a repeated
    /// object appears once).
    public var objects: [Object]
    /// What the import did: inserted, updated, unchanged and deleted objects, and diagnostics
    /// (empty when ``notModified``).
    public var importResult: ImportResult
    /// The pages fetched (1 for a list in one page, and for a `304 Not Modified`).
    public var pages: Int
    /// False when the list was cut by ``Pagination/maxPages`` while the server had more pages.
    public var isComplete: Bool
    /// True when the server answered `304 Not Modified` to a list fetched before in one page:
    /// nothing was imported, and ``objects`` are the stored objects of that earlier fetch.
    public var notModified: Bool
    /// The meta information of each page read, in page order, as the document format found it
    /// (JSON:API's top-level `meta`); empty when the documents have none.
    public var meta: [JSON] = []

    /// A result with these values, as a fetch returns it (for stubs in tests).
    public init(objects: [Object], importResult: ImportResult, pages: Int, isComplete: Bool = true, notModified: Bool = false) {
        self.objects = objects
        self.importResult = importResult
        self.pages = pages
        self.isComplete = isComplete
        self.notModified = notModified
    }
}

/// Every element of every page of a list, fetched before anything is imported.
struct FetchedPages {
    var items: [JSON] = []
    var pages = 0
    var isComplete = true
    /// The first page answered 304 to the validators it was sent with: its objects are the
    /// remembered ones, and ``items`` hold those of the pages after it (none when it was the last).
    var notModified = false
    /// What the documents include beside their primary data, page by page.
    var included: [IncludedObjects] = []
    /// The meta of each page that has one.
    var meta: [JSON] = []
    /// What the document format left out of the pages, page by page.
    var diagnostics: [ImportDiagnostic] = []
    /// The validators of the first page.
    var etag: String?
    var lastModified: String?
}

extension Client {
    // MARK: Sending

    /// Sends one request through the hooks and the transport of `entity` (its own, or the
    /// default). Throws a ``TransportError`` when no answer came, and an ``HTTPError`` for a
    /// status outside 200–299.
    ///
    /// Tether sets `Accept: application/json`, and `Content-Type: application/json` when there
    /// is a body, before the hooks run.
    public func send(_ method: HTTPMethod, _ url: URL, body: JSON? = nil, entity: String? = nil) async throws -> TransportResponse {
        try await send(TransportRequest(method: method, url: url, body: body?.serialized()), entity: entity)
    }

    /// Sends a request through the client's pipeline: `Accept: application/json` (and a JSON
    /// `Content-Type` when there is a body) unless the request sets its own, then the request hooks,
    /// then the entity's transport. A non-2xx answer throws ``HTTPError``; a failed exchange
    /// ``TransportError``. Idempotent requests answered 429/502/503/504, or whose connection was
    /// lost, are sent again as the builder's ``RetryPolicy`` says (twice by default).
    public func send(_ request: TransportRequest, entity: String? = nil) async throws -> TransportResponse {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await sendOnce(request, entity: entity, attempt: attempt)
            } catch let error as HTTPError {
                guard let wait = remote.retries.delay(before: attempt, method: request.method, after: error) else {
                    if error.status >= 400 { reportFailure(of: request, entity: entity, status: error.status, error) }
                    throw error
                }
                events.emit(.retry(RetryEvent(method: request.method, url: Redaction.url(request.url), entity: entity, attempt: attempt + 1,
                                              delay: wait, status: error.status, reason: "status \(error.status)")))
                try await Task.sleep(for: wait)
            } catch let error as TransportError {
                guard let wait = remote.retries.delay(before: attempt, method: request.method, after: error) else {
                    reportFailure(of: request, entity: entity, status: nil, error)
                    throw error
                }
                events.emit(.retry(RetryEvent(method: request.method, url: Redaction.url(request.url), entity: entity, attempt: attempt + 1,
                                              delay: wait, status: nil, reason: "\(error.kind)")))
                try await Task.sleep(for: wait)
            } catch {
                reportFailure(of: request, entity: entity, status: nil, error)
                throw error
            }
        }
    }

    private func reportFailure(of request: TransportRequest, entity: String?, status: Int?, _ error: any Error) {
        events.emit(.failure(FailureEvent(operation: .request, entity: entity, method: request.method, url: Redaction.url(request.url),
                                          status: status, error: error)))
    }

    private func sendOnce(_ request: TransportRequest, entity: String?, attempt: Int) async throws -> TransportResponse {
        var request = request
        let format = documentFormat(for: entity)
        if request.headers["Accept"] == nil { request.headers["Accept"] = format.accept }
        if request.body != nil, request.headers["Content-Type"] == nil {
            request.headers["Content-Type"] = format.contentType
        }
        if request.responseLimit == nil { request.responseLimit = remote.responseLimit }
        if request.deadline == nil { request.deadline = remote.deadline }
        for hook in remote.hooks {
            do {
                try await hook.prepare(&request)
            } catch let error as CancellationError {
                throw error
            } catch {
                // Its text may quote the credential an earlier hook set: scrubbed, as a transport's.
                throw RequestHookError(hook: hook, request: request, underlying: error)
            }
        }
        guard let transport = transport(for: entity) else {
            throw RequestError(.noTransport, entity: entity, "no transport is set\(entity.map { " for \($0)" } ?? "") in the builder")
        }
        let (method, url) = (request.method, request.url)
        let start = events.isActive ? ContinuousClock.now : nil
        func report(_ response: TransportResponse?, _ error: TransportError?) {
            guard let start else { return }
            events.emit(.request(RequestEvent(
                method: method, url: Redaction.url(url), entity: entity, status: response?.status, duration: start.duration(to: .now),
                requestBytes: request.body?.count ?? 0, responseBytes: response?.body.count ?? 0, attempt: attempt,
                error: error.map { "\($0)" })))
        }
        let response: TransportResponse
        do {
            response = try await transport.send(withinDeadline: request)
        } catch let error as TransportError {
            // A transport's own message may hold the request's secrets too.
            let error = error.scrubbed(of: request)
            report(nil, error)
            throw error
        } catch is CancellationError {
            let error = TransportError(.cancelled, method: method, url: url, "the request was cancelled")
            report(nil, error)
            throw error
        } catch {
            // A custom transport's error may hold the request: its text keeps none of its secrets.
            let error = TransportError(.other, method: method, url: url, Redaction.scrub("\(error)", of: request))
            report(nil, error)
            throw error
        }
        if let limit = request.responseLimit, response.body.count > limit {
            // A transport that does not stop at the limit itself: its answer is still refused.
            let error = TransportError(
                .responseTooLarge, method: method, url: url, status: response.status, limit: .responseBytes(limit),
                "the answer (HTTP \(response.status), \(response.body.count) bytes) is larger than the response limit of "
                    + "\(TransportLimit.bytes(limit)); nothing was parsed")
            report(nil, error)
            throw error
        }
        report(response, nil)
        guard response.isSuccess else {
            throw HTTPError(request: request, response: response,
                            body: format.errorBody(status: response.status, data: response.body, contentType: response.headers["Content-Type"]))
        }
        return response
    }

    /// The JSON body of a successful response, or nil when it is empty. A body whose
    /// `Content-Type` is not JSON (an HTML page) is a ``JSONParseError``, never parsed as JSON.
    public static func jsonBody(of response: TransportResponse) throws(JSONParseError) -> JSON? {
        let body = response.body
        if body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return nil }
        if let type = response.headers["Content-Type"], !RemoteURL.isJSONContentType(type) {
            throw JSONParseError(offset: 0, message: "expected a JSON response, got Content-Type '\(type)' (\(body.count) bytes)")
        }
        return try JSON(parsing: body)
    }

    /// The URL of a template for an object (or for no object, when the template has no variables).
    public func url(_ template: URLTemplate, for id: ObjectID? = nil) async throws -> URL {
        let evaluator = TemplateEvaluator(client: self)
        let baseURL = self.baseURL
        return try await store.read { reader in
            var subject: TemplateSubject?
            if let id {
                guard let object = try reader.object(id) else {
                    throw RequestError(.objectNotFound, entity: id.entity, "\(id) is not in the store")
                }
                subject = TemplateSubject(object)
            }
            return try evaluator.url(template, for: subject, baseURL: baseURL, reader: reader)
        }
    }

    // MARK: Fetching

    /// GETs one object and imports it (find-or-create by identity, then update). Variables of the
    /// template are read from `source`. Returns the stored object.
    public func fetchObject(_ entity: String, from template: URLTemplate, for source: ObjectID? = nil) async throws -> Object {
        try checkEntity(entity)
        return try await fetchObject(entity, url: try await self.url(template, for: source))
    }

    /// GETs one object from a template filled with plain values (a login typed by the user, an
    /// id from a deep link), escaped as templates escape object values, without a placeholder
    /// object: `fetchObject("User", at: "/users/:login", values: ["login": .string(login)])`.
    /// `x/../../admin` stays one segment (`x%2F..%2F..%2Fadmin`).
    public func fetchObject(_ entity: String, at template: URLTemplate, values: [String: Value]) async throws -> Object {
        try checkEntity(entity)
        return try await fetchObject(entity, url: try url(template, values: values))
    }

    /// The URL of `template` with plain values for its variables (by variable name), each
    /// escaped as one path segment.
    public func url(_ template: URLTemplate, values: [String: Value]) throws -> URL {
        var texts: [JSONKeyPath: String] = [:]
        for variable in template.variables {
            guard let value = values[variable.description] else {
                throw RequestError(.missingValue, member: variable.description,
                                   "the URL template '\(template)' needs a value for ':\(variable)'; nothing was sent")
            }
            let text: String
            switch value {
            case .string(let s): text = s
            case .int(let i): text = String(i)
            case .double(let d): text = String(d)
            case .decimal(let d): text = "\(d)"
            case .bool(let b): text = b ? "true" : "false"
            case .date(let d): text = ISO8601.format(d, fractionalSeconds: false)
            case .data(let d): text = d.base64EncodedString()
            case .uuid(let u): text = u.uuidString
            case .url(let u): text = u.absoluteString
            case .array, .map, .json:
                throw RequestError(.unsupported, member: variable.description,
                                   "the URL template '\(template)' names ':\(variable)', which holds \(value); a path segment is one value, not an array, a map or JSON; nothing was sent")
            }
            texts[variable] = text
        }
        let url = try template.url(baseURL: baseURL, values: texts)
        try TemplateEvaluator.checkStoredURL(url, template: template, values: texts, entity: nil, baseURL: baseURL, pageHosts: remote.pageHosts)
        return url
    }

    private func fetchObject(_ entity: String, url: URL) async throws -> Object {
        let response = try await send(.get, url, entity: entity)
        guard let body = try Self.jsonBody(of: response) else {
            throw RequestError(.emptyResponse, entity: entity, "GET \(url.absoluteString) answered \(response.status) with an empty body")
        }
        let (json, document) = try oneObjectDocument(in: body, of: entity, .item, what: "GET \(RemoteURL.redacted(url).absoluteString)")
        let importer = try Importer(client: self, options: importOptions.single)
        return try await writeImport(entity, bytes: response.body.count, { writer in
            let result = try importer.run([(entity, json)], including: Self.payloads(document.included), reported: document.diagnostics, in: writer)
            guard let id = result.objects.first, let object = try writer.object(id) else {
                throw ImportError(path: .root, entity: entity, message: "the response of GET \(url.absoluteString) holds no importable \(entity)")
            }
            try Self.confirm(id, by: response, in: writer)
            return (object, result)
        }, result: \.1).0
    }

    /// GETs a list, following every page (DRF's `{"count", "next", "results"}` envelope and
    /// `Link: <…>; rel="next"` headers), then imports all pages in **one** transaction: a page
    /// that fails leaves the store untouched.
    ///
    /// `options` (the client's default when nil) apply to the union of the pages: with
    /// ``ImportOptions/deleteMissing``, what no page holds is deleted within its scope, once,
    /// after the last page; a failed request or an unreadable page deletes nothing.
    public func fetchObjects(
        _ entity: String, from template: URLTemplate, for source: ObjectID? = nil, options: ImportOptions? = nil
    ) async throws -> FetchResult {
        defer { (options ?? importOptions).progress?.finish() }
        try checkEntity(entity)
        return try await fetchObjects(entity, url: try await self.url(template, for: source), options: options)
    }

    /// GETs a list (every page) from a template filled with plain values, escaped as templates
    /// escape object values: `fetchObjects("Repository", at: "/users/:login/repos", values: ["login": .string(login)])`.
    public func fetchObjects(
        _ entity: String, at template: URLTemplate, values: [String: Value], options: ImportOptions? = nil
    ) async throws -> FetchResult {
        defer { (options ?? importOptions).progress?.finish() }
        try checkEntity(entity)
        return try await fetchObjects(entity, url: try url(template, values: values), options: options)
    }

    private func fetchObjects(_ entity: String, url: URL, options: ImportOptions?) async throws -> FetchResult {
        let options = options ?? importOptions
        let key = "\(entity) \(url.absoluteString)"
        let known = listValidators[key]
        var fetched = try await fetchPages(url, entity: entity, progress: options.progress, deleting: options.deleteMissing != nil,
                                           validators: known, operation: .list)
        var carried: [ObjectID] = []
        if fetched.notModified, let known {
            // The first page is unchanged on the server; the store must still hold what it held,
            // and (when deleting what the list lacks, from a list of that page alone) nothing more
            // within the scope. Otherwise the list is fetched whole again, as it is when later
            // pages are to be imported with deleteMissing (which needs every object of the list).
            let more = !fetched.items.isEmpty
            let objects = try await store.read { reader -> [Object]? in
                let objects = try reader.objects(known.ids)
                guard objects.count == known.ids.count else { return nil }
                if more { return options.deleteMissing == nil ? objects : nil }
                if let scope = options.deleteMissing {
                    let inScope = try scope.objects(of: entity, in: reader)
                    guard Set(inScope).isSubset(of: known.ids) else { return nil }
                }
                return objects
            }
            if let objects, !more { return FetchResult(objects: objects, importResult: ImportResult(), pages: 1, notModified: true) }
            if objects != nil {
                carried = known.ids
            } else {
                fetched = try await fetchPages(url, entity: entity, progress: options.progress, deleting: options.deleteMissing != nil, operation: .list)
            }
        }
        let pages = fetched
        let importer = try Importer(client: self, options: options, remembering: true)
        let result = try await writeImport(entity, importer: importer, { [carried] writer in
            // What the pages include is imported first, in the same session.
            let result = try importer.run([(entity, JSON.array(pages.items))], including: Self.payloads(pages.included),
                                          reported: pages.diagnostics, in: writer)
            // The unchanged first page's objects, then the later pages' (an object on both once).
            var seen = Set<ObjectID>()
            let ids = (carried + Array(result.objects)).filter { seen.insert($0).inserted }
            let objects = try writer.objects(ids)
            if objects.count < ids.count {
                throw RequestError(.objectNotFound, entity: entity,
                                   "an object of the unchanged first page of GET \(RemoteURL.redacted(url).absoluteString) was deleted while the list was fetched; nothing was imported")
            }
            var fetched = FetchResult(objects: objects, importResult: result, pages: pages.pages, isComplete: pages.isComplete)
            fetched.meta = pages.meta
            return fetched
        }, result: \.importResult)
        listValidators.remember(key, fetched, ids: result.objects.map(\.id))
        return result
    }

    /// GETs the objects of a relationship (every page), imports them and sets the relationship
    /// of `id` to exactly those objects, in one transaction. The URL is `template`, else the
    /// server's related link when the store keeps one (``RelationshipLinkAttributes``; JSON:API's
    /// `relationships.<name>.links.related`, followed only on the base URL's origin or a page
    /// host), else the one registered with ``Builder/relationshipResource(_:for:of:)``.
    ///
    /// Objects no longer listed are unlinked; with ``ImportOptions/deleteMissing`` they are
    /// deleted. Whatever scope `options` (or the client's default) gives, it is narrowed to this
    /// list: `.related(relationship, of: id)`. Never anything outside it.
    public func fetchRelationship(
        _ relationship: String, of id: ObjectID, from template: URLTemplate? = nil, options: ImportOptions? = nil
    ) async throws -> FetchResult {
        defer { (options ?? importOptions).progress?.finish() }
        let (declared, url) = try await relationshipListURL(relationship, of: id, template: template)
        var options = options ?? importOptions
        let key = "\(id) \(relationship) \(url.absoluteString)"
        let known = listValidators[key]
        // The relationship is set to exactly the list: a list cut short would unlink the rest.
        var fetched = try await fetchPages(url, entity: declared.destination, progress: options.progress, deleting: true, validators: known,
                                           operation: .relationship)
        var carried: [ObjectID] = []
        if fetched.notModified, let known {
            // The first page is unchanged on the server: trusted while the relationship still
            // links what it held (then the pages after it, if any, are imported after it; with
            // deleteMissing the list is fetched whole again).
            let more = !fetched.items.isEmpty, deleting = options.deleteMissing != nil
            let objects = try await store.read { reader -> [Object]? in
                guard try reader.object(id) != nil else {
                    throw RequestError(.objectNotFound, entity: id.entity, "\(id) was deleted while its \(relationship) were fetched")
                }
                let linked = try reader.related(relationship, of: id)
                return linked == known.ids && !(more && deleting) ? try reader.objects(linked) : nil
            }
            if let objects, !more { return FetchResult(objects: objects, importResult: ImportResult(), pages: 1, notModified: true) }
            if objects != nil {
                carried = known.ids
            } else {
                fetched = try await fetchPages(url, entity: declared.destination, progress: options.progress, deleting: true, operation: .relationship)
            }
        }
        if options.deleteMissing != nil { options.deleteMissing = .related(relationship, of: id) }
        let pages = fetched
        let importer = try Importer(client: self, options: options, remembering: true)
        let result = try await writeImport(declared.destination, importer: importer, { [carried] writer in
            guard try writer.object(id) != nil else {
                throw RequestError(.objectNotFound, entity: id.entity, "\(id) was deleted while its \(relationship) were fetched")
            }
            let result = try importer.run([(declared.destination, JSON.array(pages.items))], including: Self.payloads(pages.included),
                                          reported: pages.diagnostics, in: writer)
            // The unchanged first page's objects, then the later pages' (an object on both once).
            var seen = Set<ObjectID>()
            let listed = (carried + Array(result.objects)).filter { seen.insert($0).inserted }
            let objects = try writer.objects(listed)
            if objects.count < listed.count {
                throw RequestError(.objectNotFound, entity: declared.destination,
                                   "an object of the unchanged first page of \(id)'s \(relationship) was deleted while the list was fetched; nothing was imported")
            }
            let targets = declared.isToMany ? listed : Array(listed.prefix(1))
            try writer.setRelated(relationship, of: id, to: targets)
            var fetched = FetchResult(objects: objects, importResult: result, pages: pages.pages)
            fetched.meta = pages.meta
            return (fetched, try writer.related(relationship, of: id))
        }, result: \.0.importResult)
        listValidators.remember(key, fetched, ids: result.1)
        return result.0
    }

    /// Where the identity of `entity` is read in JSON: per identity attribute, its key path and fallbacks.
    func identityKeyPaths(_ entity: String) -> [[JSONKeyPath]] {
        mapping[entity]?.identity.map { [$0.keyPath] + $0.fallbackKeyPaths } ?? []
    }

    /// Follows the pages of a list from `first`, as the entity's ``Pagination`` says; returns
    /// every element. `deleting` says whether the caller deletes what the list lacks: a list cut
    /// by the pagination's page cap is then an error, before anything is written.
    /// `validators` (of the same list fetched before) are sent with the first page; a 304 to them
    /// is a result with `notModified` set.
    func fetchPages(
        _ first: URL, entity: String, progress reporter: ProgressReporter? = nil, deleting: Bool = false,
        validators: ListValidators.Entry? = nil, operation: DocumentOperation = .list
    ) async throws -> FetchedPages {
        var fetched = FetchedPages()
        var progress = ImportProgress(phase: .fetching)
        let pagination = remote.pagination(for: entity)
        let start = pagination.firstURL(first)
        var next: URL? = start
        var visited = Set<String>()
        while let url = next {
            try Task.checkCancellation()
            guard visited.insert(url.absoluteString).inserted else { break }
            if let cap = pagination.maxPages, fetched.pages >= cap {
                fetched.isComplete = false
                if deleting {
                    throw RequestError(.incompleteList, entity: entity,
                        "GET \(RemoteURL.redacted(start).absoluteString) has more than the \(cap) pages its pagination reads; "
                            + "objects missing from a cut list cannot be deleted (raise the pagination's limit or leave deleteMissing off); nothing was imported")
                }
                break
            }
            guard fetched.pages < remote.maxPages else {
                throw RequestError(.noRoute, entity: entity, "more than \(remote.maxPages) pages from \(RemoteURL.redacted(start).absoluteString); raise the builder's maxPages")
            }
            var request = TransportRequest(method: .get, url: url)
            if fetched.pages == 0, let validators {
                if let etag = validators.etag { request.headers["If-None-Match"] = etag }
                if let lastModified = validators.lastModified { request.headers["If-Modified-Since"] = lastModified }
            }
            let response: TransportResponse
            do {
                response = try await send(request, entity: entity)
            } catch let error as HTTPError where error.status == 404 && pagination.endsOnNotFound(page: fetched.pages + 1) {
                break
            } catch let error as HTTPError where error.status == 304 && fetched.pages == 0 && validators != nil {
                // The first page is unchanged: its objects are the remembered ones. That says
                // nothing of the pages after it (an object added since lands there), so the list
                // goes on from it as the page would have led on.
                let known = validators!
                fetched.pages = 1
                fetched.notModified = true
                fetched.etag = known.etag
                fetched.lastModified = known.lastModified
                if let reporter {
                    progress.pages = 1
                    reporter.report(progress)
                }
                next = try pagination.next(after: url, first: start, page: 1, count: known.count, body: nil, shapeNext: nil,
                                           headers: error.headers, entity: entity, what: "page 1 of GET \(RemoteURL.redacted(url).absoluteString)")
                if let link = next { try checkPageLink(link, from: start, page: 1, entity: entity) }
                continue
            }
            fetched.pages += 1
            if fetched.pages == 1 {
                fetched.etag = response.headers["ETag"]
                fetched.lastModified = response.headers["Last-Modified"]
            }
            if let reporter {
                progress.pages = fetched.pages
                progress.bytes += response.body.count
                reporter.report(progress)
            }
            let what = "page \(fetched.pages) of GET \(RemoteURL.redacted(url).absoluteString)"
            let body = try Self.jsonBody(of: response)
            var count = 0
            var shapeNext: String?
            if let body {
                let document = try document(body, of: entity, operation, what: what)
                fetched.items.append(contentsOf: document.objects)
                fetched.included.append(contentsOf: document.included)
                if let meta = document.meta { fetched.meta.append(meta) }
                fetched.diagnostics.append(contentsOf: document.diagnostics)
                count = document.objects.count
                shapeNext = document.next
            }
            next = try pagination.next(after: url, first: start, page: fetched.pages, count: count, body: body, shapeNext: shapeNext,
                                       headers: response.headers, entity: entity, what: what,
                                       objects: count > 0 ? [fetched.items[fetched.items.count - count], fetched.items[fetched.items.count - 1]] : [],
                                       identity: identityKeyPaths(entity))
            if let link = next { try checkPageLink(link, from: start, page: fetched.pages, entity: entity) }
        }
        return fetched
    }

    /// A next-page link is followed only on the scheme, host and port of the first request (or
    /// on a host of ``RemoteConfiguration/pageHosts``, with the same scheme): the request hooks
    /// would give any other host the client's credentials.
    func checkPageLink(_ link: URL, from first: URL, page: Int, entity: String) throws(RequestError) {
        if isTrustedLink(link, from: first) { return }
        let (a, b) = (Self.origin(first), Self.origin(link))
        throw RequestError(
            .untrustedLink, entity: entity,
            "page \(page) of GET \(RemoteURL.redacted(first).absoluteString) links its next page to \(b.scheme)://\(b.host)\(b.port.map { ":\($0)" } ?? ""), "
                + "not to \(a.scheme)://\(a.host)\(a.port.map { ":\($0)" } ?? ""); Tether follows next links only on the same scheme, host and port, "
                + "so that no credentials go elsewhere (allow another host of the same scheme with the builder's pageHosts(_:)); nothing was imported")
    }

    static func origin(_ url: URL) -> (scheme: String, host: String, port: Int?) {
        let scheme = url.scheme?.lowercased() ?? ""
        let port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : nil)
        return (scheme, url.host?.lowercased() ?? "", port)
    }

    /// Whether a link the server gave (a next page, a `Location`) may be followed with the
    /// client's credentials: the same scheme, host and port as `first`, or a host of
    /// ``RemoteConfiguration/pageHosts`` with the same scheme.
    func isTrustedLink(_ link: URL, from first: URL) -> Bool {
        let (a, b) = (Self.origin(first), Self.origin(link))
        if a.scheme == b.scheme, a.host == b.host, a.port == b.port { return true }
        return a.scheme == b.scheme && remote.pageHosts.contains(b.host)
    }

    // MARK: Helpers

    /// The identity of a stored object escaped as one path segment.
    func identitySegment(of id: ObjectID, attributes: [AttributeMapping]) async throws -> String {
        let evaluator = TemplateEvaluator(client: self)
        return try await store.read { reader in
            guard let object = try reader.object(id) else {
                throw RequestError(.objectNotFound, entity: id.entity, "\(id) is not in the store; nothing was sent")
            }
            // A composite identity is one segment per attribute, in the identity's order.
            return try attributes.map { attribute in
                guard let value = object.values[attribute.name] else {
                    throw RequestError(.missingValue, entity: id.entity, member: attribute.name, "\(id) has no \(attribute.name); nothing was sent")
                }
                let text = evaluator.string(value, attribute)
                guard !text.isEmpty else {
                    throw RequestError(.missingValue, entity: id.entity, member: attribute.name, "\(id) has an empty \(attribute.name); nothing was sent")
                }
                return URLTemplate.escapeSegment(text)
            }.joined(separator: "/")
        }
    }

    func checkEntity(_ entity: String) throws(RequestError) {
        guard mapping[entity] != nil else { throw RequestError(.unknownEntity, entity: entity, "unknown entity '\(entity)'") }
    }

    /// The registered route of an entity, or `/<resource path>`.
    func resource(for entity: String) throws(RequestError) -> ResourceRoute {
        if let route = remote.resources[entity] { return route }
        guard let mapping = mapping[entity] else { throw RequestError(.unknownEntity, entity: entity, "unknown entity '\(entity)'") }
        return ResourceRoute(collection: URLTemplate("/" + URLTemplate.escapeSegment(mapping.resourcePath).replacingOccurrences(of: ":", with: "::")))
    }

    func itemTemplate(for entity: String) throws(RequestError) -> URLTemplate {
        let route = try resource(for: entity)
        if let item = route.item { return item }
        guard let mapping = mapping[entity], !mapping.identity.isEmpty else {
            throw RequestError(.noRoute, entity: entity,
                "\(entity) has no identity to put in an item URL; register an item URL with resource(_:item:for:)")
        }
        // A composite identity: one segment per attribute, in the identity's order
        // (`/repositories/:owner/:name`).
        return mapping.identity.reduce(route.collection) { $0.appendingSegment(.variable($1.keyPath)) }
    }

    func itemURL(of id: ObjectID) async throws -> URL {
        writeURL(try await url(try itemTemplate(for: id.entity), for: id), entity: id.entity)
    }

    /// `url` without the query parameters that page the lists of `entity`: a write (or the
    /// URL of one object) never carries them, though the template it comes from is a list's.
    func writeURL(_ url: URL, entity: String) -> URL {
        remote.pagination(for: entity).withoutPagingParameters(url)
    }

    func collectionRequest(for id: ObjectID, options: ExportOptions) async throws -> (URL, JSON) {
        let template = try resource(for: id.entity).collection
        let evaluator = TemplateEvaluator(client: self)
        let baseURL = self.baseURL
        return try await store.read { [self] reader in
            guard let object = try reader.object(id) else {
                throw RequestError(.objectNotFound, entity: id.entity, "\(id) is not in the store")
            }
            let url = writeURL(try evaluator.url(template, for: TemplateSubject(object), baseURL: baseURL, reader: reader), entity: id.entity)
            let body = try exportJSON(entity: object.entity, values: object.values, id: id, related: [:], options: options, reader: reader,
                                      omitting: remote.readOnly[id.entity] ?? [])
            return (url, body)
        }
    }

    func relationshipRoute(_ name: String, of entity: String, template: URLTemplate?) throws(RequestError) -> (Relationship, URLTemplate) {
        guard let declared = schema[entity]?.relationship(named: name) else {
            throw RequestError(.unknownRelationship, entity: entity, member: name, "\(entity) has no relationship '\(name)'")
        }
        guard let route = template ?? remote.relationshipResources[entity]?[name] else {
            throw RequestError(.noRoute, entity: entity, member: name,
                               "no URL is registered for \(entity).\(name); use relationshipResource(_:for:of:)")
        }
        return (declared, route)
    }

    static func firstObject(_ json: JSON) -> JSON {
        if case .array(let elements) = json, let first = elements.first { return first }
        return json
    }

    /// Merges an answer into `id`, giving it the answer's identity first so the import finds it.
    static func merge(
        _ json: JSON, into id: ObjectID, mapping: Mapping, identity: any IdentityStrategy, importer: Importer, writer: any StoreWriter
    ) throws -> Object {
        guard let object = try writer.object(id) else {
            throw RequestError(.objectNotFound, entity: id.entity, "\(id) is not in the store")
        }
        guard let entity = mapping[id.entity] else {
            throw RequestError(.unknownEntity, entity: id.entity, "unknown entity '\(id.entity)'")
        }
        guard case .object = json else {
            throw ImportError(path: .root, entity: entity.name, message: "expected an object, found \(json.typeName)")
        }
        if !entity.identity.isEmpty {
            var setting: [String: Value] = [:]
            var values: [Value] = []
            for attribute in entity.identity {
                guard let raw = json[attribute.keyPath], let value = importer.identityValue(raw, for: attribute) else {
                    throw ImportError(path: JSONPath(attribute.keyPath.components.map { .key($0) }), entity: entity.name,
                                      attribute: attribute.name, message: "the answer carries no usable identity '\(attribute.keyPath)'")
                }
                values.append(value)
                if object.values[attribute.name] != value { setting[attribute.name] = value }
            }
            if !setting.isEmpty {
                let key = IdentityKey(values)
                // A stale copy of the same server object (fetched meanwhile) gives way to this one.
                if let other = try writer.objects(entity.name, identities: [key])[key], other.id != id {
                    try writer.delete(other.id)
                }
                try writer.update(id, setting: setting, clearing: [])
            }
        }
        _ = try importer.run([(entity.name, json)], in: writer)
        guard let merged = try writer.object(id) else {
            throw RequestError(.objectNotFound, entity: id.entity, "\(id) vanished during the merge")
        }
        return merged
    }
}

/// The remote operations of one relationship of one object
/// (``Client/relationship(_:of:)->RelationshipResource``).
///
/// Requests go through the transport of the relationship's destination entity.
public struct RelationshipResource: Sendable {
    /// The client whose URLs, transports and store the operations use.
    public let client: Client
    /// The relationship's name in the source's entity (`repositories`); its URL is the one
    /// registered with ``Client/Builder/relationshipResource(_:for:of:)``.
    public let relationship: String
    /// The object whose relationship it is; the URL's variables are read from it.
    public let source: ObjectID

    /// GETs every page of the relationship URL, imports the objects and sets the relationship to
    /// exactly them (objects no longer listed are unlinked, not deleted).
    @discardableResult
    public func list() async throws -> FetchResult {
        try await client.fetchRelationship(relationship, of: source)
    }

    /// Adds `target` to the relationship on the server, then links it locally. How is the
    /// document format's (``DocumentFormat/relationshipRequest(_:relationshipURL:target:)``):
    /// plain JSON POSTs `target`'s JSON to the relationship URL (with the foreign key of a to-one
    /// inverse set to the source, `owner_id` for `User.repositories`) and merges the answer into
    /// `target` (it gets its server identity if it had none); JSON:API POSTs a linkage
    /// (`{"data": [{"type": "tags", "id": "8"}]}`) to the relationship's own URL.
    ///
    /// A local-first client (``Client/Builder/writes(_:)``) links it locally at once and records
    /// the add in its ``Client/outbox``; nothing is sent here.
    @discardableResult
    public func add(_ target: ObjectID, options: ExportOptions = ExportOptions()) async throws -> Object {
        if client.outboxOptions != nil {
            let (relationship, source) = (relationship, source)
            return try await client.writeLocalFirst { recorder in
                try recorder.link(source, relationship, target, add: true)
                guard let object = try recorder.writer.object(target) else {
                    throw RequestError(.objectNotFound, entity: target.entity, "\(target) is not in the store")
                }
                return object
            }
        }
        return try await sendAdd(target, options: options)
    }

    /// ``add(_:options:)`` of a client that writes immediately, and the outbox's add: `headers`
    /// go with the request (an idempotency key).
    func sendAdd(_ target: ObjectID, options: ExportOptions, headers: HTTPHeaders = [:]) async throws -> Object {
        // The list's URL, without the parameters that page it (`?per_page=3`), or the server's links.
        let (declared, urls) = try await client.relationshipURLs(relationship, of: source)
        let request = try client.documentFormat(for: declared.destination).relationshipRequest(.add, urls: urls, target: nil)
        // The body is the target as if already linked: a to-one inverse (`owner_id`) names the source.
        var linked: [String: [ObjectID]] = [:]
        if let inverse = declared.inverse, client.schema[declared.destination]?.relationship(named: inverse)?.isToMany == false {
            linked[inverse] = [source]
        }
        let mapped = client.mapping[source.entity]?.relationship(relationship)
        let body = try await client.store.read { [client, linked] reader in
            guard let object = try reader.object(target) else {
                throw RequestError(.objectNotFound, entity: target.entity, "\(target) is not in the store")
            }
            let identity = client.identityJSON(of: object.entity, values: object.values)
            return try client.exportJSON(entity: object.entity, values: object.values, id: target, related: linked, options: options, reader: reader,
                                         omitting: client.remote.readOnly[target.entity] ?? [], operation: .add,
                                         relationship: mapped, targets: identity.map { [$0] } ?? [])
        }
        let response = try await client.send(
            TransportRequest(method: request.method, url: request.url, headers: headers, body: request.hasBody ? body.serialized() : nil),
            entity: declared.destination)
        let json = request.answerIsTarget ? try Client.jsonBody(of: response) : nil
        let importer = try Importer(client: client, options: client.importOptions.single)
        let (mapping, identity, relationship, source) = (client.mapping, client.identityStrategy, relationship, source)
        let answer = try json.map { try client.oneObject(in: $0, of: declared.destination, .add, what: "the answer to \(request.method) \(RemoteURL.redacted(request.url).absoluteString)") }
        return try await client.store.write { writer in
            var object: Object
            if let answer {
                _ = try Client.importIncluded(answer.1, importer: importer, in: writer)
                object = try Client.merge(answer.0, into: target, mapping: mapping, identity: identity, importer: importer, writer: writer)
            } else if let stored = try writer.object(target) {
                object = stored
            } else {
                throw RequestError(.objectNotFound, entity: target.entity, "\(target) is not in the store")
            }
            guard try writer.object(source) != nil else {
                throw RequestError(.objectNotFound, entity: source.entity, "\(source) is not in the store")
            }
            var linked = try writer.related(relationship, of: source)
            if declared.isToMany {
                if !linked.contains(target) { linked.append(target) }
            } else {
                linked = [target]
            }
            try writer.setRelated(relationship, of: source, to: linked)
            object = try writer.object(target) ?? object
            return object
        }
    }

    /// Removes `target` from the relationship on the server (plain JSON: `DELETE <relationship
    /// URL>/<target identity>`, a composite identity as one segment per attribute,
    /// `…/octocat/hello-world`; JSON:API: `DELETE` of the relationship with a linkage body). A
    /// 200, 202, 204, 404 or 410 answer unlinks `target` from the source locally (the object
    /// itself stays). Returns the HTTP status.
    ///
    /// A local-first client (``Client/Builder/writes(_:)``) unlinks it locally at once and
    /// records the remove in its ``Client/outbox`` (an add of the same link that was never sent
    /// and this remove cancel out); it returns 0: no request was made.
    @discardableResult
    public func remove(_ target: ObjectID) async throws -> Int {
        if client.outboxOptions != nil {
            let (relationship, source) = (relationship, source)
            try await client.writeLocalFirst { recorder in try recorder.link(source, relationship, target, add: false) }
            return 0
        }
        return try await sendRemove(target)
    }

    /// ``remove(_:)`` of a client that writes immediately, and the outbox's remove.
    func sendRemove(_ target: ObjectID) async throws -> Int {
        let (declared, urls) = try await client.relationshipURLs(relationship, of: source)
        guard let destination = client.mapping[declared.destination], !destination.identity.isEmpty else {
            throw RequestError(.noRoute, entity: declared.destination, "\(declared.destination) has no identity to put in the URL; nothing was sent")
        }
        let segment = try await client.identitySegment(of: target, attributes: destination.identity)
        let request = try client.documentFormat(for: declared.destination).relationshipRequest(.remove, urls: urls, target: segment)
        var body: Data?
        if request.hasBody { body = try await linkageBody(.remove, [target], destination: declared.destination).serialized() }
        let status: Int
        do {
            status = try await client.send(TransportRequest(method: request.method, url: request.url, body: body), entity: declared.destination).status
        } catch let error as HTTPError where error.isNotFound {
            status = error.status
        }
        let (relationship, source) = (relationship, source)
        try await client.store.write { writer in
            guard try writer.object(source) != nil else { return }
            let linked = try writer.related(relationship, of: source)
            if linked.contains(target) { try writer.setRelated(relationship, of: source, to: linked.filter { $0 != target }) }
        }
        return status
    }

    /// Replaces the relationship's targets on the server with exactly `targets` (JSON:API:
    /// `PATCH` of the relationship with a linkage body; plain JSON has no such request: a
    /// ``RequestError``), then locally. Returns the HTTP status.
    ///
    /// A local-first client (``Client/Builder/writes(_:)``) relinks locally at once and records
    /// a remove of each target no longer linked and an add of each new one in its
    /// ``Client/outbox``; it returns 0: no request was made.
    @discardableResult
    public func replace(with targets: [ObjectID]) async throws -> Int {
        if client.outboxOptions != nil {
            let (relationship, source) = (relationship, source)
            try await client.writeLocalFirst { recorder in
                let current = try recorder.writer.related(relationship, of: source)
                for target in current where !targets.contains(target) { try recorder.link(source, relationship, target, add: false) }
                for target in targets where !current.contains(target) { try recorder.link(source, relationship, target, add: true) }
            }
            return 0
        }
        let (declared, urls) = try await client.relationshipURLs(relationship, of: source)
        let request = try client.documentFormat(for: declared.destination).relationshipRequest(.replace, urls: urls, target: nil)
        if !declared.isToMany && targets.count > 1 {
            throw RequestError(.unsupported, entity: source.entity, member: relationship,
                               "\(source.entity).\(relationship) is to-one: it cannot be replaced with \(targets.count) objects; nothing was sent")
        }
        var body: Data?
        if request.hasBody { body = try await linkageBody(.replace, targets, destination: declared.destination).serialized() }
        let status = try await client.send(TransportRequest(method: request.method, url: request.url, body: body),
                                           entity: declared.destination).status
        let (relationship, source) = (relationship, source)
        try await client.store.write { writer in
            guard try writer.object(source) != nil else {
                throw RequestError(.objectNotFound, entity: source.entity, "\(source) was deleted while its \(relationship) were replaced")
            }
            try writer.setRelated(relationship, of: source, to: try writer.objects(targets).map(\.id))
        }
        return status
    }

    /// The format's body naming `targets` (a linkage), for a remove or a replace.
    private func linkageBody(_ operation: DocumentOperation, _ targets: [ObjectID], destination: String) async throws -> JSON {
        let mapped = client.mapping[source.entity]?.relationship(relationship)
        let client = self.client
        let identities = try await client.store.read { reader in
            try targets.map { target -> JSON in
                guard let object = try reader.object(target) else {
                    throw RequestError(.objectNotFound, entity: target.entity, "\(target) is not in the store")
                }
                guard let identity = client.identityJSON(of: object.entity, values: object.values) else {
                    if let names = client.mapping[object.entity]?.identity.map(\.name), names.count > 1 {
                        throw RequestError(.unsupported, entity: target.entity,
                            "\(target) is identified by \(names.count) attributes (\(names.joined(separator: ", "))); a linkage body names a target by one identity; nothing was sent")
                    }
                    throw RequestError(.missingValue, entity: target.entity, "\(target) has no identity to name it by; nothing was sent")
                }
                return identity
            }
        }
        return try client.writeBody(operation, entity: destination, identity: nil, members: [], relationship: mapped, targets: identities)
    }
}

/// Parses RFC 8288 `Link` headers: `<https://…?page=2>; rel="next", <…>; rel="last"`.
public enum LinkHeader {
    /// Every link of the headers, as (URL text, rel values).
    public static func links(in headers: HTTPHeaders) -> [(url: String, rels: [String])] {
        var links: [(String, [String])] = []
        for value in headers.values(for: "Link") {
            var rest = Substring(value)
            while let open = rest.firstIndex(of: "<"), let close = rest[open...].firstIndex(of: ">") {
                let target = String(rest[rest.index(after: open)..<close])
                var params = rest[rest.index(after: close)...]
                // parameters run to the next "<" that starts a new link (after a comma)
                if let next = params.firstIndex(of: "<") {
                    rest = params[next...]
                    params = params[..<next]
                } else {
                    rest = ""
                }
                var rels: [String] = []
                for param in params.split(separator: ";") {
                    let pair = param.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                    guard pair.count == 2, pair[0].lowercased() == "rel" else { continue }
                    let unquoted = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\", "))
                    rels.append(contentsOf: unquoted.split(separator: " ").map { $0.lowercased() })
                }
                links.append((target, rels))
            }
        }
        return links
    }

    /// The URL of the first link with `rel`, resolved against `base`.
    public static func url(rel: String, in headers: HTTPHeaders, relativeTo base: URL? = nil) -> URL? {
        let wanted = rel.lowercased()
        guard let link = links(in: headers).first(where: { $0.rels.contains(wanted) }) else { return nil }
        return URL(string: link.url, relativeTo: base)?.absoluteURL
    }
}
