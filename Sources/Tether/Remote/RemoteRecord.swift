import Foundation
import Synchronization

/// What Tether keeps about the server's copy of one object, in the store beside the object
/// (``StoreWriter/setRemoteRecord(_:of:)``), so that it survives restarts:
/// - the validators of the last answer that carried the object (`ETag`, `Last-Modified`), sent
///   back as `If-None-Match` by a refresh and as `If-Match` by a save;
/// - for each attribute or relationship changed with
///   ``Client/updateLocally(_:setting:clearing:relating:)`` since the server last confirmed the
///   object, the JSON the server confirmed (`null`: unset). A save sends exactly the properties
///   whose JSON differs from it now.
/// - whether the server accepted a create of the object without saying what it made (no body,
///   no readable `Location`): such an object has no server identity, and is not the server's
///   (``Client/isUnconfirmed(_:)``).
struct RemoteRecord: Equatable {
    var etag: String?
    var lastModified: String?
    var confirmed: [String: JSON] = [:]
    var unconfirmed = false

    init() {}

    /// The record stored as `data` (nil: none).
    init(_ data: Data?, of id: ObjectID) throws {
        guard let data else { return }
        do {
            let json = try JSON(parsing: data)
            etag = json["etag"]?.stringValue
            lastModified = json["lastModified"]?.stringValue
            confirmed = json["confirmed"]?.objectValue ?? [:]
            unconfirmed = json["unconfirmed"] == .bool(true)
        } catch {
            throw StoreError(.storage, entity: id.entity, "the remote record of \(id) is unreadable: \(error)")
        }
    }

    var isEmpty: Bool { etag == nil && lastModified == nil && confirmed.isEmpty && !unconfirmed }

    /// The bytes to store, or nil for an empty record (none is kept).
    var data: Data? {
        guard !isEmpty else { return nil }
        var members: [String: JSON] = [:]
        if let etag { members["etag"] = .string(etag) }
        if let lastModified { members["lastModified"] = .string(lastModified) }
        if !confirmed.isEmpty { members["confirmed"] = .object(confirmed) }
        if unconfirmed { members["unconfirmed"] = .bool(true) }
        return JSON.object(members).serialized()
    }

    /// Takes the validators of an answer that carried the whole object (none: the old ones no
    /// longer hold).
    mutating func takeValidators(of response: TransportResponse) {
        etag = response.headers["ETag"]
        lastModified = response.headers["Last-Modified"]
        unconfirmed = false
    }

    /// The record of `id`; nil when the store keeps none (``StoreError/Kind/unsupported``).
    static func read(_ id: ObjectID, in reader: any StoreReader) throws -> RemoteRecord? {
        do {
            return try RemoteRecord(reader.remoteRecord(of: id), of: id)
        } catch let error as StoreError where error.kind == .unsupported {
            return nil
        }
    }

    /// Stores `record` for `id` when it differs from `old` (nil: the store keeps none).
    static func write(_ record: RemoteRecord, replacing old: RemoteRecord?, of id: ObjectID, in writer: any StoreWriter) throws {
        guard let old, old != record else { return }
        try writer.setRemoteRecord(record.data, of: id)
    }
}

/// A save refused with `412 Precondition Failed`: the object changed on the server since this
/// client last read it (its `ETag` no longer matches). Nothing was written; the store still
/// holds the local changes.
///
/// Choose:
/// - keep the server's copy: ``Client/refresh(_:)`` (the local changes are dropped);
/// - keep yours: ``Client/save(_:overriding:options:)`` sends them again over the server's version.
public struct ConflictError: Error, Sendable, CustomStringConvertible {
    /// The object whose save was refused; the store still holds its local changes.
    public let id: ObjectID
    /// The save's method (`PATCH` or `PUT`).
    public let method: HTTPMethod
    /// The object's item URL, as the save sent it (the error's description redacts it).
    public let url: URL
    /// 412.
    public let status: Int
    /// The body that was refused: the local changes.
    public let local: JSON
    /// The server's current copy of the object (a GET of its URL after the refusal), or nil
    /// when it could not be read (``serverError`` says why).
    public let server: JSON?
    /// The server's current `ETag`, when it gave one.
    public let serverETag: String?
    /// Why the server's copy could not be read.
    public let serverError: String?

    public var description: String {
        "\(method) \(RemoteURL.redacted(url).absoluteString) answered \(status): \(id) changed on the server since it was read; "
            + "nothing was written (keep the server's copy with refresh(_:), or yours with save(_:overriding:))"
            + (serverError.map { "; the server's copy could not be read: \($0)" } ?? "")
    }
}

/// A create the server accepted (a 2xx answer to the POST) without saying what it made: no
/// body, and no `Location` Tether could read the object from. The object stays in the store
/// (nothing the app wrote is lost) **marked as not confirmed by the server**
/// (``Client/isUnconfirmed(_:)``): it has no server identity, so it cannot be saved, refreshed
/// or deleted through its URL. Do not send it again: the server has it. Fetching the list brings
/// the server's copy; then drop the local one with ``Client/deleteLocally(_:)``.
public struct UnconfirmedCreateError: Error, Sendable, CustomStringConvertible {
    /// The object that was sent; kept in the store, marked as not confirmed.
    public let id: ObjectID
    /// The collection URL it was posted to (the description redacts it).
    public let url: URL
    /// The status of the answer to the POST (201, 202, 204, …).
    public let status: Int
    /// Why the object could not be confirmed (no `Location`, or what reading it gave).
    public let reason: String

    public var description: String {
        "POST \(RemoteURL.redacted(url).absoluteString) answered \(status): the server accepted \(id) but \(reason); "
            + "\(id) has no server identity and is kept, marked as not confirmed by the server (do not send it again: the server has it)"
    }
}

/// The validators (`ETag`, `Last-Modified`) of the lists a client fetched in one page, with the
/// objects each held, by URL (and relationship), for the life of the client: fetching the same
/// list again sends them back, and a `304 Not Modified` imports nothing. A list of several pages
/// keeps none (a page's validator says nothing of the other pages).
final class ListValidators: Sendable {
    struct Entry: Sendable {
        var etag: String?
        var lastModified: String?
        /// The objects of the page, in its order.
        var ids: [ObjectID]
        /// The elements the page held (what its pagination counts to find the next page): a
        /// `304` says the page is unchanged, and nothing of the pages after it, which a fetch
        /// then goes on to as the page would have led on (a list that grew onto a second page).
        var count: Int
    }

    private let entries = Mutex<[String: Entry]>([:])

    subscript(key: String) -> Entry? {
        entries.withLock { $0[key] }
    }

    /// Remembers the validators of a list fetched from `fetched` (forgets them when it has none,
    /// or several pages).
    func remember(_ key: String, _ fetched: FetchedPages, ids: [ObjectID]) {
        let entry: Entry? = fetched.pages == 1 && fetched.isComplete && (fetched.etag != nil || fetched.lastModified != nil)
            ? Entry(etag: fetched.etag, lastModified: fetched.lastModified, ids: ids, count: fetched.items.count) : nil
        entries.withLock { $0[key] = entry }
    }
}
