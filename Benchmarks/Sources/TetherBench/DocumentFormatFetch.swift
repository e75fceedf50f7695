import Foundation
import Tether
import TetherJSONAPI

/// Fetching the repositories workload as plain JSON and as a JSON:API document (issue 39): the
/// same N repositories and their owners, answered by an in-process transport, fetched with
/// `fetchObjects` into a fresh in-memory store (insert) and again (unchanged), the passes
/// alternating round by round in one process. Plain JSON is the workload's array (owners nested);
/// JSON:API is `data` (attributes, owner linkage) with the owners once each in `included`.
/// Both are parsed and imported in the timed call; the target is JSON:API ≤ 1.3× plain JSON.
enum DocumentFormatFetch {
    static let passes = ["plain insert", "JSON:API insert", "plain unchanged", "JSON:API unchanged"]

    /// Answers every request with one body.
    struct Answer: Transport {
        let body: Data
        let contentType: String
        func send(_ request: TransportRequest) async throws -> TransportResponse {
            TransportResponse(status: 200, headers: ["Content-Type": contentType], body: body)
        }
    }

    /// The two bodies of one workload.
    struct Bodies {
        let plain: Data
        let jsonAPI: Data
    }

    /// The JSON:API document of the workload's plain array.
    static func bodies(plain: Data) throws -> Bodies {
        guard case .array(let repositories) = try JSON(parsing: plain) else { throw BenchmarkError("the workload is not an array") }
        var data: [JSON] = []
        data.reserveCapacity(repositories.count)
        var owners: [String: JSON] = [:]
        var order: [String] = []
        func id(_ json: JSON?) -> JSON {
            switch json {
            case .int(let i)?: .string(String(i))
            case let other?: other
            case nil: .null
            }
        }
        for repository in repositories {
            guard case .object(var attributes) = repository else { throw BenchmarkError("a repository is not an object") }
            let repositoryID = id(attributes.removeValue(forKey: "id"))
            var relationships: [String: JSON] = [:]
            if case .object(var owner)? = attributes.removeValue(forKey: "owner") {
                let ownerID = id(owner.removeValue(forKey: "id"))
                relationships["owner"] = ["data": ["type": "users", "id": ownerID]]
                if case .string(let key) = ownerID, owners[key] == nil {
                    owners[key] = ["type": "users", "id": ownerID, "attributes": .object(owner)]
                    order.append(key)
                }
            }
            data.append(["type": "repositories", "id": repositoryID, "attributes": .object(attributes), "relationships": .object(relationships)])
        }
        let document: JSON = ["data": .array(data), "included": .array(order.map { owners[$0]! }), "links": ["next": .null]]
        return Bodies(plain: plain, jsonAPI: document.serialized())
    }

    static func client(_ body: Data, jsonAPI: Bool) throws -> Client {
        var builder = Client.Builder(schema: TetherImport.schema)
            .keyMapping(TetherImport.keys)
            .store(InMemoryStore())
            .baseURL(URL(string: "https://bench.example")!)
            .transport(Answer(body: body, contentType: jsonAPI ? JSONAPIFormat.mediaType : "application/json"))
        if jsonAPI { builder = builder.documentFormat(JSONAPIFormat(types: ["Repository": "repositories", "User": "users"])) }
        return try builder.build()
    }

    /// One round: each pass once, in `order`.
    static func run(_ pass: String, _ clients: inout [String: Client], _ bodies: Bodies, count: Int, into row: inout Measurement) async throws {
        let jsonAPI = pass.hasPrefix("JSON:API")
        let key = jsonAPI ? "JSON:API" : "plain"
        if pass.hasSuffix("insert") { clients[key] = try client(jsonAPI ? bodies.jsonAPI : bodies.plain, jsonAPI: jsonAPI) }
        guard let client = clients[key] else { throw BenchmarkError("\(pass) ran before its insert pass") }
        let result = try await row.time { try await client.fetchObjects("Repository", from: "/repositories") }
        if result.objects.count != count { throw BenchmarkError("\(pass): fetched \(result.objects.count) repositories, expected \(count)") }
        if let first = result.importResult.diagnostics.first { throw BenchmarkError("\(pass): \(first)") }
        if pass.hasSuffix("insert"), result.importResult.inserted.count < count {
            throw BenchmarkError("\(pass): inserted \(result.importResult.inserted.count), expected at least \(count)")
        }
        if pass.hasSuffix("unchanged"), !result.importResult.updated.isEmpty || !result.importResult.inserted.isEmpty {
            throw BenchmarkError("\(pass): \(result.importResult.updated.count) updated, \(result.importResult.inserted.count) inserted on a re-fetch of the same list")
        }
    }
}
