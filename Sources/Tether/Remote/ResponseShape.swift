import Foundation

/// Where the objects are in a server's response (RestKit's response descriptors, Siesta's
/// content transformers), declared per entity or as the client's default with
/// ``Client/Builder/responseShape(_:for:)-(_,String?)``.
///
/// ```swift
/// builder.responseShape(.keyPath("resources"), for: "User")     // {"resources": [...]}
/// builder.responseShape(.keyPath("data.items"))                  // every entity: {"data": {"items": [...]}}
/// builder.responseShape(.custom { json in json["payload"]?["rows"] ?? .array([]) }, for: "Log")
/// ```
///
/// A response without the declared shape is an ``ImportError`` with the JSON path, never an import
/// of nothing: nothing is imported, and no link is cleared.
///
/// Strategies and your own calls read a body the same way with ``Client/objects(in:as:shape:request:)``.
public struct ResponseShape: Sendable, Hashable, CustomStringConvertible {
    enum Storage: Sendable {
        case automatic
        case keyPath(JSONKeyPath)
        case object
        /// A closure, and a token that makes each custom shape equal only to itself.
        case custom(@Sendable (JSON) throws -> JSON, UUID)
    }

    let storage: Storage

    public static func == (lhs: ResponseShape, rhs: ResponseShape) -> Bool {
        switch (lhs.storage, rhs.storage) {
        case (.automatic, .automatic), (.object, .object): true
        case (.keyPath(let a), .keyPath(let b)): a == b
        case (.custom(_, let a), .custom(_, let b)): a == b
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch storage {
        case .automatic: hasher.combine(0)
        case .object: hasher.combine(1)
        case .keyPath(let path): hasher.combine(path)
        case .custom(_, let token): hasher.combine(token)
        }
    }

    /// A top-level array; DRF's page `{"count", "next", "results": [...]}`; or, for one object,
    /// the object. A list fetch answered by an object that is neither a DRF page nor an object of
    /// the entity (it lacks the entity's identity) is an error: declare the shape. The default.
    public static let automatic = ResponseShape(storage: .automatic)

    /// The objects (an array, or one object) at a key path of a top-level object: `"resources"`,
    /// `"data.items"`. A page's next link is still read from a `Link` header.
    public static func keyPath(_ keyPath: JSONKeyPath) -> ResponseShape { ResponseShape(storage: .keyPath(keyPath)) }

    /// The whole response is one object (never a list).
    public static let object = ResponseShape(storage: .object)

    /// Your own: `transform` returns the objects (an array, or one object) from the response's
    /// JSON, or throws to reject the response.
    public static func custom(_ transform: @escaping @Sendable (JSON) throws -> JSON) -> ResponseShape {
        ResponseShape(storage: .custom(transform, UUID()))
    }

    /// Whether a closure reads the body (it takes a ``JSON`` tree).
    var isCustom: Bool {
        if case .custom = storage { return true }
        return false
    }

    public var description: String {
        switch storage {
        case .automatic: "automatic"
        case .keyPath(let path): "keyPath(\(path))"
        case .object: "object"
        case .custom: "custom"
        }
    }

    /// What a response body holds, read by this shape.
    struct Page {
        var items: [JSON]
        /// DRF's `next`, when the shape reads it.
        var next: String?
        /// Whether the objects came as a list (an array), not as one object.
        var isList = true
    }

    /// The objects of `body` for `entity` (the key paths of each identity attribute, its
    /// fallbacks after it, in `identity`). `list` says whether a list was asked for; `what` names
    /// the request in errors.
    func read(_ body: JSON, entity: String, identity: [[JSONKeyPath]], list: Bool, what: String) throws -> Page {
        let value: JSON
        if case .custom(let transform, _) = storage {
            value = try transform(body)
            guard value.isArray || value.isObject else {
                throw ImportError(path: .root, entity: entity,
                                  message: "\(what): expected \(entity) objects (an array or an object) at \(JSONPath.root), found \(value.typeName)")
            }
            let items = value.isArray ? value.elements : [value]
            try Self.checkIdentity(items, entity: entity, identity: identity, what: what, shape: "the custom shape")
        } else {
            value = try objects(in: body, entity: entity, identity: identity, list: list, what: what)!
        }
        var page = Page(items: value.isArray ? value.elements : [value], isList: value.isArray)
        if case .automatic = storage, case .object(let members) = body, case .array? = members["results"] {
            page.next = members["next"]?.stringValue
        }
        return page
    }

    /// Where this shape finds the objects of `entity` in `body`: an array of them, or one object;
    /// checked as ``read(_:entity:identity:list:what:)`` says. Works on any source the import
    /// engine reads (a ``JSON`` tree, or bytes on a tape, so that an enveloped list is imported
    /// from its bytes without a tree). Nil for a custom shape: its closure takes a ``JSON`` tree.
    func objects<V: ImportValue>(in body: V, entity: String, identity: [[JSONKeyPath]], list: Bool, what: String) throws -> V? {
        func keys(_ value: V) -> String { value.materialize().objectValue.map { $0.keys.sorted().joined(separator: ", ") } ?? "" }
        switch storage {
        case .custom:
            return nil
        case .object:
            guard body.isObject else {
                throw ImportError(path: .root, entity: entity, message: "\(what): expected one \(entity) object, found \(body.typeName)")
            }
            try Self.checkIdentity([body], entity: entity, identity: identity, what: what, shape: "the response")
            return body
        case .keyPath(let keyPath):
            guard body.isObject else {
                throw ImportError(path: .root, entity: entity,
                                  message: "\(what): expected an object holding the \(entity) objects at '\(keyPath)', found \(body.typeName)")
            }
            let path = JSONPath(keyPath.components.map(JSONPath.Component.key))
            guard let value = Self.value(at: keyPath, in: body) else {
                // A server that wraps its lists but not its items (`GET /users/1`, the answer to a
                // create): one object of the entity, bare.
                if !list, Self.carriesIdentity(body, identity) { return body }
                throw ImportError(path: path, entity: entity, message: "\(what): no '\(keyPath)' in the response, which holds the keys \(keys(body))")
            }
            guard value.isArray || value.isObject else {
                throw ImportError(path: path, entity: entity,
                                  message: "\(what): expected \(entity) objects (an array or an object) at \(path), found \(value.typeName)")
            }
            try Self.checkIdentity(value.isArray ? value.elements : [value], entity: entity, identity: identity, what: what, shape: "'\(keyPath)'")
            return value
        case .automatic:
            if body.isArray {
                try Self.checkIdentity(body.elements, entity: entity, identity: identity, what: what, shape: "the array")
                return body
            }
            guard body.isObject else {
                throw ImportError(path: .root, entity: entity, message: "\(what): expected an object or an array, found \(body.typeName)")
            }
            if let results = body.member(ImportKey("results")), results.isArray {
                try Self.checkIdentity(results.elements, entity: entity, identity: identity, what: what, shape: "'results'")
                return results
            }
            // One object of the entity: it has the entity's identity. Anything else (an
            // envelope of another shape) must be declared rather than imported as nothing.
            if list, !identity.isEmpty, identity.contains(where: { paths in paths.allSatisfy { Self.value(at: $0, in: body) == nil } }) {
                throw ImportError(
                    path: .root, entity: entity,
                    message: "\(what): expected a list of \(entity) objects, found an object with the keys "
                        + "\(keys(body)) and no \(identity.compactMap(\.first).map(\.description).joined(separator: ", ")); "
                        + "declare where the objects are with the builder's responseShape(.keyPath(…), for: \"\(entity)\")")
            }
            return body
        }
    }

    /// The value at `keyPath` in `value` (nil when a key is missing or a step is not an object).
    static func value<V: ImportValue>(at keyPath: JSONKeyPath, in value: V) -> V? {
        var current = value
        for component in keyPath.components {
            guard let next = current.member(ImportKey(component)) else { return nil }
            current = next
        }
        return current
    }

    /// Whether `object` has a value at every identity attribute's key path (or a fallback of it).
    static func carriesIdentity<V: ImportValue>(_ object: V, _ identity: [[JSONKeyPath]]) -> Bool {
        guard object.isObject else { return false }
        return identity.allSatisfy { paths in paths.contains { path in value(at: path, in: object).map { !$0.isNull } ?? false } }
    }

    /// The objects a shape read must hold at least one object of the entity: a document in which
    /// none carries the entity's identity (an index document, an envelope of another shape) is
    /// not the entity's, whatever shape read it, and is never imported as nothing (which would
    /// set a relationship to no objects, or delete what the list "lacks").
    static func checkIdentity<V: ImportValue>(_ items: [V], entity: String, identity: [[JSONKeyPath]], what: String, shape: String) throws {
        guard !identity.isEmpty, !items.isEmpty, !items.contains(where: { carriesIdentity($0, identity) }) else { return }
        let keys = Set(items.prefix(20).flatMap { $0.materialize().objectValue.map { Array($0.keys) } ?? [] }).sorted()
        let found = keys.isEmpty
            ? "\(items.count) value\(items.count == 1 ? "" : "s") that are not objects"
            : "\(items.count) object\(items.count == 1 ? "" : "s") with the keys \(keys.prefix(12).joined(separator: ", "))\(keys.count > 12 ? ", …" : "")"
        throw ImportError(
            path: .root, entity: entity,
            message: "\(what): \(shape) holds no \(entity) object: none of its \(found) carries "
                + "\(identity.compactMap(\.first).map { "'\($0)'" }.joined(separator: ", ")); nothing was imported and no link was changed; "
                + "declare where the objects are (the builder's responseShape or documentFormat)")
    }
}

extension Client {
    /// The objects of `entity` in a response body, read by `shape` (nil: the one declared for
    /// `entity`, see ``Client/Builder/responseShape(_:for:)-(_,String?)``), as a list fetch reads them: an
    /// object that is not of the entity (no identity) and not a declared envelope is an
    /// ``ImportError``. Returns an array, or the one object when the objects came as one.
    /// `request` names the request in errors (`GET /api/users`).
    public func objects(in body: JSON, as entity: String, shape: ResponseShape? = nil, request: String) throws -> JSON {
        let page = try (shape ?? remote.responseShape(for: entity)).read(
            body, entity: entity, identity: identityKeyPaths(entity), list: true, what: request)
        return page.isList || page.items.count != 1 ? .array(page.items) : page.items[0]
    }
}
