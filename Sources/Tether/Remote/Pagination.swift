import Foundation

/// How a list is paged on the server, chosen per entity or as the client's default with
/// ``Client/Builder/pagination(_:for:)``. Every page of a list is fetched before anything is
/// imported, and the pages are imported in one transaction: a failed page writes nothing, and
/// ``ImportOptions/deleteMissing`` applies to the union of the pages.
///
/// ```swift
/// builder.pagination(.nextLink(at: "meta.next"), for: "Event")               // {"meta": {"next": "…"}, …}
/// builder.pagination(.cursor(at: "next_cursor", parameter: "cursor"))          // ?cursor=… until no cursor
/// builder.pagination(.pages(parameter: "page", size: 100, sizeParameter: "per_page"), for: "Issue")
/// builder.pagination(.offset(limit: 50))                                        // ?offset=0&limit=50, 50, 100, …
/// ```
///
/// Next links are followed only on the scheme, host and port of the first request (see
/// ``Client/Builder/pageHosts(_:)``); page and cursor parameters are set on the first request's
/// URL, so they never leave it.
public struct Pagination: Sendable, Hashable, CustomStringConvertible {
    enum Style: Sendable, Hashable {
        case automatic
        case nextLink(JSONKeyPath)
        case cursor(JSONKeyPath, parameter: String)
        case pages(parameter: String, first: Int, size: Int?, sizeParameter: String?)
        case offset(parameter: String, limit: Int, limitParameter: String)
        /// The identity of the page's last (or first) object, sent as `parameter`, while the body
        /// says so at `hasMore`.
        case objectCursor(hasMore: JSONKeyPath, parameter: String, last: Bool)
        case none
    }

    let style: Style
    /// The most pages a fetch reads; nil for the builder's ``Client/Builder/maxPages(_:)`` (a
    /// server that never stops is then an error). A list cut by this cap is a ``FetchResult``
    /// with `isComplete == false`, and is refused when ``ImportOptions/deleteMissing`` is set.
    public var maxPages: Int?

    /// A `Link: <…>; rel="next"` header (GitHub), or DRF's `"next"` in its `{"count", "next",
    /// "results"}` page. The default.
    public static let automatic = Pagination(style: .automatic)

    /// The next page's URL at a key path of the body (`"next"`, `"links.next"`, `"meta.next_page_url"`):
    /// a missing, `null` or empty value is the last page. A `Link` header is not read.
    public static func nextLink(at keyPath: JSONKeyPath) -> Pagination { Pagination(style: .nextLink(keyPath)) }

    /// A cursor at a key path of the body (`"next_cursor"`, `"meta.cursor"`), sent back as the
    /// query parameter `parameter` of the first URL: a missing, `null`, `false` or empty cursor
    /// is the last page (Slack's and Stripe's style).
    public static func cursor(at keyPath: JSONKeyPath, parameter: String) -> Pagination {
        Pagination(style: .cursor(keyPath, parameter: parameter))
    }

    /// Numbered pages: `?page=1`, `?page=2`, … (from `first`, with `sizeParameter=size` when both
    /// are given), until a page holds fewer than `size` objects (or none, when `size` is nil), or a
    /// page after the first answers 404 (the end, for servers such as Laravel's or Rails'
    /// kaminari configured so).
    public static func pages(parameter: String = "page", first: Int = 1, size: Int? = nil, sizeParameter: String? = nil) -> Pagination {
        Pagination(style: .pages(parameter: parameter, first: first, size: size.map { max(1, $0) }, sizeParameter: sizeParameter))
    }

    /// Offset and limit: `?offset=0&limit=50`, then `offset=50`, … until a page holds fewer
    /// than `limit` objects, or a page after the first answers 404.
    public static func offset(parameter: String = "offset", limit: Int, limitParameter: String = "limit") -> Pagination {
        Pagination(style: .offset(parameter: parameter, limit: max(1, limit), limitParameter: limitParameter))
    }

    /// Stripe's cursor of the last object: while the page says `"has_more": true` (at `hasMore`),
    /// the next page is the first URL with `starting_after=<identity of the page's last object>`
    /// (`parameter`). An empty page, or `has_more` false or missing, is the last.
    ///
    /// ```swift
    /// builder.responseShape(.keyPath("data"), for: "Customer")   // {"object": "list", "data": [...], "has_more": true}
    ///     .pagination(.startingAfter(), for: "Customer")          // ?starting_after=cus_123
    /// ```
    public static func startingAfter(hasMore: JSONKeyPath = "has_more", parameter: String = "starting_after") -> Pagination {
        Pagination(style: .objectCursor(hasMore: hasMore, parameter: parameter, last: true))
    }

    /// Stripe's cursor of the first object, paging backwards: while `has_more`, the next page is
    /// the first URL with `ending_before=<identity of the page's first object>`.
    public static func endingBefore(hasMore: JSONKeyPath = "has_more", parameter: String = "ending_before") -> Pagination {
        Pagination(style: .objectCursor(hasMore: hasMore, parameter: parameter, last: false))
    }

    /// One request; links in the response are not followed.
    public static let none = Pagination(style: .none)

    /// The same pagination, reading at most `count` pages (see ``maxPages``).
    public func limited(to count: Int) -> Pagination {
        var copy = self
        copy.maxPages = max(1, count)
        return copy
    }

    public var description: String {
        let base: String
        switch style {
        case .automatic: base = "automatic"
        case .nextLink(let path): base = "nextLink(at: \(path))"
        case .cursor(let path, let parameter): base = "cursor(at: \(path), parameter: \(parameter))"
        case .pages(let parameter, let first, let size, let sizeParameter):
            base = "pages(parameter: \(parameter), first: \(first)\(size.map { ", size: \($0)" } ?? "")\(sizeParameter.map { ", sizeParameter: \($0)" } ?? ""))"
        case .offset(let parameter, let limit, let limitParameter): base = "offset(parameter: \(parameter), limit: \(limit), limitParameter: \(limitParameter))"
        case .objectCursor(let hasMore, let parameter, let last):
            base = "\(last ? "startingAfter" : "endingBefore")(hasMore: \(hasMore), parameter: \(parameter))"
        case .none: base = "none"
        }
        return maxPages.map { "\(base).limited(to: \($0))" } ?? base
    }

    /// The URL of the first page: `first`, with the page or offset parameters set.
    func firstURL(_ first: URL) -> URL {
        switch style {
        case .pages(let parameter, let number, let size, let sizeParameter):
            var items = [(parameter, String(number))]
            if let size, let sizeParameter { items.append((sizeParameter, String(size))) }
            return Self.setting(items, in: first)
        case .offset(let parameter, let limit, let limitParameter):
            return Self.setting([(parameter, "0"), (limitParameter, String(limit))], in: first)
        case .automatic, .nextLink, .cursor, .objectCursor, .none:
            return first
        }
    }

    /// Whether a 404 to page `page` (1-based) ends the list rather than failing the fetch.
    func endsOnNotFound(page: Int) -> Bool {
        switch style {
        case .pages, .offset: page > 1
        default: false
        }
    }

    /// The URL of the page after `url` (page number `page`, 1-based, holding `count` objects), or
    /// nil at the end. `shapeNext` is the next link the response shape read (DRF's `next`);
    /// `objects` are the page's first and last objects and `identity` where their identity is
    /// read (for cursors of an object).
    func next(
        after url: URL, first: URL, page: Int, count: Int, body: JSON?, shapeNext: String?, headers: HTTPHeaders,
        entity: String, what: String, objects: [JSON] = [], identity: [[JSONKeyPath]] = []
    ) throws -> URL? {
        func string(at keyPath: JSONKeyPath) throws -> String? {
            guard let body, let value = body[keyPath] else { return nil }
            switch value {
            case .null, .bool(false): return nil
            case .string(let text): return text.isEmpty ? nil : text
            case .int(let i): return String(i)
            default:
                throw ImportError(path: JSONPath(keyPath.components.map(JSONPath.Component.key)), entity: entity,
                                  message: "\(what): expected the next page at '\(keyPath)' as a string, found \(value.typeName)")
            }
        }
        switch style {
        case .none:
            return nil
        case .automatic:
            if let link = shapeNext, !link.isEmpty { return URL(string: link, relativeTo: url)?.absoluteURL }
            return LinkHeader.url(rel: "next", in: headers, relativeTo: url)
        case .nextLink(let keyPath):
            guard let link = try string(at: keyPath) else { return nil }
            guard let next = URL(string: link, relativeTo: url)?.absoluteURL else {
                throw ImportError(path: JSONPath(keyPath.components.map(JSONPath.Component.key)), entity: entity,
                                  message: "\(what): the next page '\(link)' at '\(keyPath)' is not a URL")
            }
            return next
        case .cursor(let keyPath, let parameter):
            guard let cursor = try string(at: keyPath) else { return nil }
            return Self.setting([(parameter, cursor)], in: first)
        case .pages(let parameter, let number, let size, let sizeParameter):
            if count == 0 { return nil }
            if let size, count < size { return nil }
            var items = [(parameter, String(number + page))]
            if let size, let sizeParameter { items.append((sizeParameter, String(size))) }
            return Self.setting(items, in: first)
        case .offset(let parameter, let limit, let limitParameter):
            // The offset after `page` full pages; a short page is the last.
            if count < limit { return nil }
            return Self.setting([(parameter, String(page * limit)), (limitParameter, String(limit))], in: first)
        case .objectCursor(let hasMore, let parameter, let last):
            guard count > 0, let body else { return nil }
            switch body[hasMore] {
            case .bool(true)?: break
            case nil, .null?, .bool(false)?: return nil
            case let other?:
                throw ImportError(path: JSONPath(hasMore.components.map(JSONPath.Component.key)), entity: entity,
                                  message: "\(what): expected true or false at '\(hasMore)', found \(other.typeName)")
            }
            guard let object = last ? objects.last : objects.first, identity.count == 1,
                let value = identity[0].lazy.compactMap({ object[$0] }).first
            else {
                throw ImportError(path: .root, entity: entity,
                                  message: "\(what): '\(hasMore)' says more pages follow, but the page's \(last ? "last" : "first") object has no single identity to send as '\(parameter)'")
            }
            let cursor: String
            switch value {
            case .string(let text): cursor = text
            case .int(let number): cursor = String(number)
            default:
                throw ImportError(path: .root, entity: entity,
                                  message: "\(what): the identity of the page's \(last ? "last" : "first") object is \(value.typeName), not a string or an integer to send as '\(parameter)'")
            }
            return Self.setting([(parameter, cursor)], in: first)
        }
    }

    /// The query parameters that page a list, which a write (a create, a save, a delete, an
    /// `add` or `remove` of a relationship) never carries: this pagination's own (its page,
    /// size, offset, limit or cursor parameter) and the names servers commonly page with
    /// (``pagingParameterNames``), compared without case.
    func isPagingParameter(_ name: String) -> Bool {
        let name = name.lowercased()
        if Self.pagingParameterNames.contains(name) { return true }
        switch style {
        case .pages(let parameter, _, _, let sizeParameter):
            return name == parameter.lowercased() || name == sizeParameter?.lowercased()
        case .offset(let parameter, _, let limitParameter):
            return name == parameter.lowercased() || name == limitParameter.lowercased()
        case .cursor(_, let parameter), .objectCursor(_, let parameter, _):
            return name == parameter.lowercased()
        case .automatic, .nextLink, .none:
            return false
        }
    }

    /// The query parameters that page lists on common servers (Rails, GitHub, DRF, Laravel,
    /// JSON:API, Stripe), left out of every write URL with those of the entity's pagination.
    public static let pagingParameterNames: Set<String> = [
        "page", "per_page", "perpage", "page_size", "pagesize", "limit", "offset", "cursor",
        "page[number]", "page[size]", "page[offset]", "page[limit]", "page[cursor]", "starting_after", "ending_before",
    ]

    /// `url` without its paging query parameters (``isPagingParameter(_:)``): the URL a write
    /// sends to, when the template it comes from is a list's (`/users/:id/repositories?per_page=3`).
    func withoutPagingParameters(_ url: URL) -> URL {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true),
            let query = components.percentEncodedQueryItems, !query.isEmpty
        else { return url }
        let kept = query.filter { !isPagingParameter($0.name.removingPercentEncoding ?? $0.name) }
        guard kept.count != query.count else { return url }
        components.percentEncodedQueryItems = kept.isEmpty ? nil : kept
        return components.url ?? url
    }

    /// `url` with the query parameters `items` set (replacing those of the same names).
    static func setting(_ items: [(String, String)], in url: URL) -> URL {
        func escape(_ text: String) -> String { URLTemplate.escapeSegment(text) }
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return url }
        var query = components.percentEncodedQueryItems ?? []
        for (name, value) in items {
            let item = URLQueryItem(name: escape(name), value: escape(value))
            if let index = query.firstIndex(where: { $0.name == item.name }) {
                query[index] = item
                query = query.enumerated().filter { $0.offset == index || $0.element.name != item.name }.map(\.element)
            } else {
                query.append(item)
            }
        }
        components.percentEncodedQueryItems = query
        return components.url ?? url
    }
}

extension Client.Builder {
    /// How the lists of `entity` are paged (``Pagination``), or of every entity's when `entity` is
    /// nil. The default, ``Pagination/automatic``, reads `Link` headers and DRF's `next`.
    public func pagination(_ pagination: Pagination, for entity: String? = nil) -> Self {
        var copy = self
        if let entity { copy.remote.paginations[entity] = pagination } else { copy.remote.pagination = pagination }
        return copy
    }
}
