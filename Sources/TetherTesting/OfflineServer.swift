import Foundation
public import Tether
import Synchronization

/// A small REST server in memory, as a `Transport`, for testing what an app does offline and
/// when the network fails half way: it can refuse connections (offline), process a request and
/// lose its answer, refuse the next request of a method with a status (409, 412, 422, 503), and
/// honour (or ignore) `Idempotency-Key`.
///
/// Collections are the first path segment (`/issues`, `/comments`); an item is
/// `/<collection>/<id>`. `POST` assigns the next integer `id` and answers 201 with the object;
/// `GET` answers the list or the item; `PATCH` merges the body (412 when `If-Match` names
/// another version: each item has an `ETag`); `PUT` replaces it; `DELETE` answers 204, or 404.
///
/// ```swift
/// let server = OfflineServer()
/// server.isOffline = true                      // every request: connection refused
/// let client = try Client.Builder(models: [Issue.self]).transport(server).writes(.localFirst()).build()
/// ```
public final class OfflineServer: Transport, Sendable {
    private struct State {
        var collections: [String: [Int64: [String: JSON]]] = [:]
        var versions: [String: Int] = [:]
        var nextID: Int64 = 1
        var offline = false
        var honoursIdempotencyKeys = true
        var losesNextAnswers = 0
        var refusals: [(method: HTTPMethod, status: Int)] = []
        var answered: [String: TransportResponse] = [:]
        var log: [TransportRequest] = []
    }

    private let state = Mutex(State())

    /// An empty server; ids start at `firstID`.
    public init(firstID: Int64 = 1) { state.withLock { $0.nextID = firstID } }

    /// Whether every request fails with a refused connection (`TransportError.Kind.connectionRefused`).
    public var isOffline: Bool {
        get { state.withLock { $0.offline } }
        set { state.withLock { $0.offline = newValue } }
    }

    /// Whether a `POST` with an `Idempotency-Key` already answered gets the same answer again,
    /// creating nothing (true by default).
    public var honoursIdempotencyKeys: Bool {
        get { state.withLock { $0.honoursIdempotencyKeys } }
        set { state.withLock { $0.honoursIdempotencyKeys = newValue } }
    }

    /// The next `count` requests are processed, and their answers lost
    /// (`TransportError.Kind.connectionLost`).
    public func loseNextAnswers(_ count: Int = 1) { state.withLock { $0.losesNextAnswers += count } }

    /// The next request of `method` is refused with `status`, and not processed.
    public func refuseNext(_ method: HTTPMethod, status: Int) { state.withLock { $0.refusals.append((method, status)) } }

    /// Every request that reached the server (not those refused while offline), in order.
    public var requests: [TransportRequest] { state.withLock { $0.log } }

    /// The objects of a collection, by id.
    public func objects(in collection: String) -> [Int64: [String: JSON]] { state.withLock { $0.collections[collection] ?? [:] } }

    /// Puts an object into a collection (its `id` member is set), as another client would.
    @discardableResult
    public func put(_ object: [String: JSON], in collection: String) -> Int64 {
        state.withLock { state in
            var object = object
            let id: Int64
            if let given = object["id"]?.int64Value {
                id = given
                state.nextID = max(state.nextID, given + 1)
            } else {
                id = state.nextID
                state.nextID += 1
            }
            object["id"] = .int(id)
            state.collections[collection, default: [:]][id] = object
            state.versions["\(collection)/\(id)", default: 0] += 1
            return id
        }
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        let (response, lost) = try state.withLock { state -> (TransportResponse, Bool) in
            if state.offline {
                throw TransportError(.connectionRefused, method: request.method, url: request.url, "the server is offline")
            }
            state.log.append(request)
            if let index = state.refusals.firstIndex(where: { $0.method == request.method }) {
                let status = state.refusals.remove(at: index).status
                return (Self.json(["error": .string("refused with \(status)")], status: status), false)
            }
            let answer = Self.handle(request, &state)
            let lost = state.losesNextAnswers > 0
            if lost { state.losesNextAnswers -= 1 }
            return (answer, lost)
        }
        if lost { throw TransportError(.connectionLost, method: request.method, url: request.url, "the connection was lost after the request was sent") }
        return response
    }

    private static func json(_ object: [String: JSON], status: Int, etag: String? = nil) -> TransportResponse {
        var headers: HTTPHeaders = ["Content-Type": "application/json"]
        if let etag { headers["ETag"] = etag }
        return TransportResponse(status: status, headers: headers, body: JSON.object(object).serialized())
    }

    private static func handle(_ request: TransportRequest, _ state: inout State) -> TransportResponse {
        let segments = request.url.path.split(separator: "/").map(String.init)
        guard let collection = segments.first else { return json(["error": "no collection"], status: 404) }
        let body = request.body.flatMap { try? JSON(parsing: $0) }?.objectValue ?? [:]
        func etag(_ id: Int64) -> String { "\"\(state.versions["\(collection)/\(id)", default: 0])\"" }
        if segments.count == 1 {
            switch request.method {
            case .get:
                let list = (state.collections[collection] ?? [:]).sorted { $0.key < $1.key }.map { JSON.object($0.value) }
                return TransportResponse(status: 200, headers: ["Content-Type": "application/json"], body: JSON.array(list).serialized())
            case .post:
                let key = request.headers["Idempotency-Key"]
                if let key, state.honoursIdempotencyKeys, let earlier = state.answered[key] { return earlier }
                var object = body
                let id = state.nextID
                state.nextID += 1
                object["id"] = .int(id)
                state.collections[collection, default: [:]][id] = object
                state.versions["\(collection)/\(id)"] = 1
                let answer = json(object, status: 201, etag: etag(id))
                if let key { state.answered[key] = answer }
                return answer
            default:
                return json(["error": "method not allowed"], status: 405)
            }
        }
        guard let id = Int64(segments[1]), var object = state.collections[collection]?[id] else {
            return json(["error": "not found"], status: 404)
        }
        if let expected = request.headers["If-Match"], expected != etag(id), request.method != .get {
            return json(["error": "precondition failed"], status: 412)
        }
        switch request.method {
        case .get:
            return json(object, status: 200, etag: etag(id))
        case .patch, .put:
            if request.method == .put { object = ["id": .int(id)] }
            for (key, value) in body where key != "id" { object[key] = value }
            state.collections[collection]?[id] = object
            state.versions["\(collection)/\(id)", default: 0] += 1
            return json(object, status: 200, etag: etag(id))
        case .delete:
            state.collections[collection]?[id] = nil
            return TransportResponse(status: 204)
        default:
            return json(["error": "method not allowed"], status: 405)
        }
    }
}
