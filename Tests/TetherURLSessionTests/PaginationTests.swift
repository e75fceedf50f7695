import Foundation
import Testing
@testable import Tether
import TetherTesting
import TetherURLSession

/// Pagination styles other than GitHub's and DRF's (issue 20), against a small real server the
/// test starts (`Fixtures/dialect_server.py`: 23 users, paged four ways).
@Suite(.serialized) struct PaginationTests {
    static func client(_ server: DialectServer, _ pagination: Pagination, shape: ResponseShape? = nil) throws -> Client {
        var builder = try makeBuilder(transport: URLSessionTransport(timeout: 10), baseURL: server.base).pagination(pagination, for: "User")
        if let shape { builder = builder.responseShape(shape, for: "User") }
        return try builder.build()
    }

    static func logins(_ result: FetchResult) -> [String] {
        result.objects.compactMap { if case .string(let login)? = $0["login"] { login } else { nil } }
    }

    static let all = (1...23).map { "user\($0)" }

    @Test func aCursorInTheBody() async throws {
        let server = try await DialectServer()
        let client = try Self.client(server, .cursor(at: "meta.next_cursor", parameter: "cursor"), shape: .keyPath("data"))
        let result = try await client.fetchObjects("User", from: "/cursor/users")
        #expect(result.pages == 3)
        #expect(Self.logins(result) == Self.all)
        #expect(try await server.log().map(\.path) == ["/cursor/users", "/cursor/users?cursor=10", "/cursor/users?cursor=20"])
    }

    @Test func aNextURLAtAKeyPath() async throws {
        let server = try await DialectServer()
        let client = try Self.client(server, .nextLink(at: "links.next"), shape: .keyPath("users"))
        let result = try await client.fetchObjects("User", from: "/next/users")
        #expect(result.pages == 3)
        #expect(Self.logins(result) == Self.all)
    }

    @Test func numberedPagesUntilAShortPage() async throws {
        let server = try await DialectServer()
        let client = try Self.client(server, .pages(size: 10, sizeParameter: "per_page"))
        let result = try await client.fetchObjects("User", from: "/pages/users")
        #expect(result.pages == 3)
        #expect(Self.logins(result) == Self.all)
        #expect(try await server.log().map(\.path)
                == ["/pages/users?page=1&per_page=10", "/pages/users?page=2&per_page=10", "/pages/users?page=3&per_page=10"])
    }

    @Test func numberedPagesUntilA404() async throws {
        let server = try await DialectServer()
        // No page size known: the pages run until the server answers 404 past the last.
        let client = try Self.client(server, .pages())
        let result = try await client.fetchObjects("User", from: "/pages/users")
        #expect(result.pages == 3)
        #expect(Self.logins(result) == Self.all)
        #expect(try await server.log().map(\.path).last == "/pages/users?page=4")
        // A 404 on the first page is still an error: the list itself is not there.
        let error = await #expect(throws: HTTPError.self) { _ = try await client.fetchObjects("User", from: "/pages/nothing") }
        #expect(error?.status == 404)
    }

    @Test func offsetAndLimit() async throws {
        let server = try await DialectServer()
        let client = try Self.client(server, .offset(limit: 8), shape: .keyPath("items"))
        let result = try await client.fetchObjects("User", from: "/offset/users")
        #expect(result.pages == 3)
        #expect(Self.logins(result) == Self.all)
        #expect(try await server.log().map(\.path)
                == ["/offset/users?offset=0&limit=8", "/offset/users?offset=8&limit=8", "/offset/users?offset=16&limit=8"])
    }

    @Test func deleteMissingAppliesToTheUnionOfPages() async throws {
        let server = try await DialectServer()
        let client = try Self.client(server, .cursor(at: "meta.next_cursor", parameter: "cursor"), shape: .keyPath("data"))
        try await client.import(JSON(parsing: Data(#"[{"id": 1, "login": "old"}, {"id": 99, "login": "gone"}]"#.utf8)), as: "User")
        let result = try await client.fetchObjects("User", from: "/cursor/users", options: ImportOptions(deleteMissing: .all))
        #expect(result.pages == 3)
        #expect(try await client.count(Query("User")) == 23)
        #expect(try await client.object("User", identity: .int(99)) == nil)
        #expect(try await client.object("User", identity: .int(23))?["login"] == .string("user23"))
    }

    @Test func aCapCutsTheListAndRefusesToDelete() async throws {
        let server = try await DialectServer()
        let client = try Self.client(server, Pagination.pages(size: 10, sizeParameter: "per_page").limited(to: 2))
        let result = try await client.fetchObjects("User", from: "/pages/users")
        #expect(result.pages == 2)
        #expect(!result.isComplete)
        #expect(result.objects.count == 20)

        // Deleting what a cut list lacks would delete what the server still has: refused, nothing written.
        try await client.import(JSON(parsing: Data(#"[{"id": 99, "login": "kept"}]"#.utf8)), as: "User")
        let before = try await client.count(Query("User"))
        let error = await #expect(throws: RequestError.self) {
            _ = try await client.fetchObjects("User", from: "/pages/users", options: ImportOptions(deleteMissing: .all))
        }
        #expect(error?.kind == .incompleteList)
        #expect(try await client.count(Query("User")) == before)
        #expect(try await client.object("User", identity: .int(99)) != nil)
    }

    @Test func aWrongCursorTypeIsAnErrorWithItsPath() async throws {
        let server = try await DialectServer()
        // `meta` is an object, not a cursor.
        let client = try Self.client(server, .cursor(at: "meta", parameter: "cursor"), shape: .keyPath("data"))
        let error = await #expect(throws: ImportError.self) { _ = try await client.fetchObjects("User", from: "/cursor/users") }
        #expect(error?.path.description == "$.meta")
        #expect(try await client.count(Query("User")) == 0)
    }

    @Test func noneReadsOnePage() async throws {
        let server = try await DialectServer()
        let client = try Self.client(server, .none, shape: .keyPath("data"))
        let result = try await client.fetchObjects("User", from: "/cursor/users")
        #expect(result.pages == 1)
        #expect(result.objects.count == 10)
    }

    @Test func pageParametersKeepTheQueryOfTheTemplate() {
        let url = Pagination.setting([("page", "2"), ("q", "a b&c")], in: URL(string: "https://x.test/items?q=old&sort=name&page=1")!)
        #expect(url.absoluteString == "https://x.test/items?q=a%20b%26c&sort=name&page=2")
    }
}
