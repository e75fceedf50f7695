import Foundation
import Synchronization
import Testing
import Tether
import TetherSQLite
import TetherTesting

/// "Nothing lost, nothing duplicated" (issue 37, items 5–10) on both stores: what a stale typed
/// save sends, pages after a 304, a refresh after a refused save, creates answered without a
/// body, imports of enveloped lists, and the URLs writes go to.
@Suite struct NothingLostRemoteTests {
    struct Member: EntityModel {
        var id: Int64
        var name: String?
        var email: String?
        var repositories: [Repo] = []
    }

    struct Repo: EntityModel {
        var id: Int64?
        var title: String?
        var owner: Member?
    }

    static let base = URL(string: "https://api.example.com")!

    static func store(_ kind: String, _ folder: TemporaryDirectory) throws -> any Store {
        kind == "memory" ? InMemoryStore() : try SQLiteStore(path: folder.path())
    }

    static func builder(_ store: any Store, _ stub: StubTransport) throws -> Client.Builder {
        try Client.Builder(models: [Member.self, Repo.self])
            .store(store)
            .transport(stub)
            .baseURL(base)
            .resource("/members", for: "Member")
            .resource("/repos", for: "Repo")
    }

    static func json(_ text: String, status: Int = 200, _ headers: HTTPHeaders = [:]) -> TransportResponse {
        var headers = headers
        headers["Content-Type"] = "application/json"
        return TransportResponse(status: status, headers: headers, body: Data(text.utf8))
    }

    static func body(_ request: TransportRequest?) throws -> JSON {
        try JSON(parsing: try #require(request?.body))
    }

    // MARK: 10. Writes do not carry the paging parameters

    @Test(arguments: ["memory", "sqlite"])
    func writesLeaveOutThePagingParametersOfAListURL(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let stub = StubTransport()
        stub.on(.post, "/members/1/repos") { request in
            #expect(request.url.query == nil)
            return Self.json(#"{"id": 5, "title": "r"}"#, status: 201)
        }
        stub.on(.delete, "/members/1/repos/5", status: 204)
        stub.on(.post, "/repos", response: Self.json(#"{"id": 6, "title": "s"}"#, status: 201))
        stub.on(.patch, "/repos/6", response: Self.json(#"{"id": 6, "title": "t"}"#))
        let client = try Self.builder(try Self.store(kind, folder), stub)
            .relationshipResource("/members/:id/repos?per_page=3", for: "repositories", of: "Member")
            .resource("/repos?per_page=50&page=1&sort=name", for: "Repo")
            .build()
        let member = try #require(try await client.import(Data(#"[{"id": 1, "name": "a"}]"#.utf8), as: "Member").objects.first)
        let repo = try await client.insertLocally("Repo", values: ["title": .string("r")])
        let resource = client.relationship("repositories", of: member)
        let added = try await resource.add(repo.id)
        #expect(added["id"] == .int(5))
        #expect(try await resource.remove(repo.id) == 204)
        let created = try await client.create("Repo", values: ["title": .string("s")])
        try await client.updateLocally(created.id, setting: ["title": .string("t")])
        _ = try await client.save(created.id)
        let sent = stub.requests.map { "\($0.method.rawValue) \($0.url.path)\($0.url.query.map { "?" + $0 } ?? "")" }
        // Another parameter of the template (sort) is kept.
        #expect(sent == ["POST /members/1/repos", "DELETE /members/1/repos/5", "POST /repos?sort=name", "PATCH /repos/6?sort=name"])
    }
}

extension Data {
    fileprivate var utf8String: String { String(decoding: self, as: UTF8.self) }
}
