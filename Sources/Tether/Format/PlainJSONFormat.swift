public import Foundation

/// Plain JSON, the default ``DocumentFormat``: objects as the mapping writes them, found where the
/// entity's ``ResponseShape`` says (a top-level array, DRF's page, an envelope at a key path,
/// your own shape), DRF's `next` as the next page; request bodies of flat members (attributes at
/// their key paths, relationships as foreign keys); DRF, Rails and GitHub error bodies.
///
/// ```swift
/// builder.documentFormat(.plainJSON)      // what a builder has unless told otherwise
/// ```
public struct PlainJSONFormat: DocumentFormat {
    /// The plain JSON format; response shapes come from the builder.
    public init() {}

    /// `application/json`.
    public var accept: String { "application/json" }
    /// `application/json; charset=utf-8`.
    public var contentType: String { "application/json; charset=utf-8" }

    /// The objects where the request's ``DocumentRequest/responseShape`` says they are.
    public func read(_ body: JSON, _ request: DocumentRequest) throws -> Document {
        let list = request.operation == .list || request.operation == .relationship
        let page = try request.responseShape.read(
            body, entity: request.entity.name, identity: request.identityKeyPaths, list: list, what: request.description)
        return Document(objects: page.items, isList: page.isList, next: page.next)
    }

    /// A flat object: each member's value at its key path (nested key paths make nested objects).
    /// A relationship's add writes the target as if already linked.
    public func body(_ write: DocumentWrite) throws -> JSON {
        var body: [String: JSON] = [:]
        for member in write.members { JSONExport.set(member.value, at: member.keyPath, in: &body) }
        return .object(body)
    }

    /// Add: `POST <URL>` with the target's body, answered by the target. Remove: `DELETE
    /// <URL>/<target>`. Replace has no plain-JSON convention: a ``RequestError`` (`.unsupported`).
    public func relationshipRequest(_ operation: DocumentOperation, relationshipURL: URL, target: String?) throws -> RelationshipRequest {
        switch operation {
        case .add:
            return RelationshipRequest(method: .post, url: relationshipURL, hasBody: true, answerIsTarget: true)
        case .remove:
            guard let target else {
                throw RequestError(.unsupported, "a plain-JSON remove names one target in its URL")
            }
            var text = relationshipURL.absoluteString
            var query = ""
            if let q = text.firstIndex(of: "?") {
                query = String(text[q...])
                text = String(text[..<q])
            }
            guard let url = URL(string: text + (text.hasSuffix("/") ? "" : "/") + target + query) else {
                throw RequestError(.invalidURL, "cannot append '\(target)' to \(RemoteURL.redacted(relationshipURL).absoluteString)")
            }
            return RelationshipRequest(method: .delete, url: url, hasBody: false, answerIsTarget: false)
        default:
            throw RequestError(.unsupported,
                "plain JSON has no request that \(operation)s a relationship's targets; add and remove them one by one, "
                    + "or use a document format that has one (JSON:API's PATCH of the relationship)")
        }
    }

    /// DRF, Rails and GitHub error bodies (``ErrorBody/init(data:contentType:)``).
    public func errorBody(status: Int, data: Data, contentType: String?) -> ErrorBody {
        ErrorBody(data: data, contentType: contentType)
    }
}

extension DocumentFormat where Self == PlainJSONFormat {
    /// Plain JSON (``PlainJSONFormat``), the default.
    public static var plainJSON: PlainJSONFormat { PlainJSONFormat() }
}

extension Client.Builder {
    /// How the documents of `entity`'s requests are written (``DocumentFormat``), or of every
    /// entity's when `entity` is nil: ``PlainJSONFormat`` by default, `.jsonAPI` from
    /// `TetherJSONAPI`.
    public func documentFormat(_ format: some DocumentFormat, for entity: String? = nil) -> Self {
        var copy = self
        if let entity { copy.remote.documentFormats[entity] = format } else { copy.remote.documentFormat = format }
        return copy
    }
}
