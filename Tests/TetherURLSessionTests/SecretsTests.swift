import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Tether
import TetherTesting

/// Credentials go only to the server that was asked, and never into a description, an error or a
/// recording (issue 18, item 1).
@Suite struct SecretsTests {
    static let token = "s3cr3t-t0ken-value"

    func client(_ stub: StubTransport, pageHosts: Set<String> = []) throws -> Client {
        try makeBuilder(transport: stub).requestHook(AuthorizationHook(credential: Self.token)).pageHosts(pageHosts).build()
    }

    @Test(arguments: [
        "https://evil.example/steal?page=2",  // another host
        "http://api.example.com/users?page=2",  // a downgrade to http
        "https://api.example.com:8443/users?page=2",  // another port
    ])
    func aNextLinkToAnotherOriginIsNotFollowed(_ link: String) async throws {
        let stub = StubTransport()
        stub.on(.get, "/users", headers: ["Link": "<\(link)>; rel=\"next\""], json: [["id": 1, "login": "a"]])
        stub.on(nil, nil, json: [["id": 2, "login": "b"]])
        let client = try client(stub)
        let error = await #expect(throws: RequestError.self) { _ = try await client.fetchObjects("User", from: "/users") }
        #expect(error?.kind == .untrustedLink)
        #expect(error?.message.contains("evil.example") == link.contains("evil"))
        #expect(stub.requests.count == 1, "only the first page was requested")
        #expect(try await client.count(Query("User")) == 0, "nothing was imported")
    }

    @Test func aDRFNextURLToAnotherHostIsNotFollowed() async throws {
        let stub = StubTransport()
        stub.on(.get, "/users", json: ["count": 2, "next": "http://evil.example/api/users?page=2", "results": [["id": 1, "login": "a"]]])
        stub.on(nil, nil, json: ["count": 2, "next": nil, "results": [["id": 2, "login": "b"]]])
        let client = try client(stub)
        let error = await #expect(throws: RequestError.self) { _ = try await client.fetchObjects("User", from: "/users") }
        #expect(error?.kind == .untrustedLink)
        #expect(stub.requests.map(\.url.host) == ["api.example.com"])
        // The same list on a relationship.
        let owner = try await seed(client, "User", [["id": 9, "login": "owner"]])[0]
        let relationshipError = await #expect(throws: RequestError.self) {
            _ = try await client.fetchRelationship("repositories", of: owner.id, from: "/users")
        }
        #expect(relationshipError?.kind == .untrustedLink)
    }

    @Test func pagesOnTheSameOriginAndOnAllowedHostsAreFollowed() async throws {
        let stub = StubTransport()
        stub.on(.get, "/users", headers: ["Link": "</users?page=2>; rel=\"next\""], json: [["id": 1, "login": "a"]])
        stub.on(.get, "/users?page=2", headers: ["Link": "<https://cdn.example.com/users?page=3>; rel=\"next\""], json: [["id": 2, "login": "b"]])
        stub.on(.get, "/users?page=3", json: [["id": 3, "login": "c"]])
        let refused = try client(stub)
        await #expect(throws: RequestError.self) { _ = try await refused.fetchObjects("User", from: "/users") }
        let allowed = try client(stub, pageHosts: ["CDN.example.com"])
        let result = try await allowed.fetchObjects("User", from: "/users")
        #expect(result.pages == 3)
        #expect(result.objects.count == 3)
    }

    @Test func descriptionsHideCredentials() throws {
        var request = TransportRequest(
            method: .get, url: URL(string: "https://me:pa55word@api.example.com/users?access_token=\(Self.token)&page=2")!,
            headers: ["Authorization": "Bearer \(Self.token)", "X-Api-Key": Self.token, "Accept": "application/json"])
        request.body = Data("{}".utf8)
        for text in [request.description, String(reflecting: request), "\(request)", request.headers.description, String(reflecting: request.headers)] {
            #expect(!text.contains(Self.token), "\(text)")
            #expect(!text.contains("pa55word"), "\(text)")
        }
        var dumped = ""
        dump(request, to: &dumped)
        #expect(!dumped.contains(Self.token))
        #expect(request.description.contains("page=2"))
        #expect(request.description.contains("Accept: application/json"))
        let redacted = Redaction.url(request.url)
        #expect(redacted.absoluteString == "https://api.example.com/users?access_token=%3Credacted%3E&page=2")
        #expect(Redaction.url(URL(string: "https://api.example.com/users?page=2")!).absoluteString == "https://api.example.com/users?page=2")
    }

    /// A custom transport whose error prints the request it failed on.
    struct LeakyTransport: Transport {
        struct Failure: Error, CustomStringConvertible {
            let request: TransportRequest
            var description: String {
                "failed: \(request.headers["Authorization"] ?? "") at \(request.url.absoluteString) \(request.headers.fields.map(\.value))"
            }
        }
        func send(_ request: TransportRequest) async throws -> TransportResponse { throw Failure(request: request) }
    }

    @Test func aTransportErrorCarriesNoSecret() async throws {
        let client = try Client.Builder(schema: trackerSchema()).naming(SnakeCaseNaming())
            .transport(LeakyTransport()).baseURL(stubBase)
            .requestHook(AuthorizationHook(credential: Self.token))
            .build()
        let error = await #expect(throws: TransportError.self) {
            _ = try await client.send(.get, URL(string: "https://api.example.com/users?api_key=\(Self.token)x")!)
        }
        let text = error.map { "\($0)" } ?? ""
        #expect(!text.contains(Self.token), "\(text)")
        #expect(text.contains("<redacted>"))
        #expect(error?.url.absoluteString.contains(Self.token) == false)
    }

    @Test func anHTTPErrorHidesAQueryToken() async throws {
        let stub = StubTransport()
        stub.on(.get, "/users", status: 401, json: ["message": "Bad credentials"])
        let client = try client(stub)
        let error = await #expect(throws: HTTPError.self) {
            _ = try await client.send(.get, URL(string: "https://api.example.com/users?access_token=\(Self.token)")!)
        }
        #expect(error?.description.contains(Self.token) == false)
        #expect(error?.url.query == "access_token=%3Credacted%3E")
    }

    @Test func recordingsHideQueryTokensAndStillReplay() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tether-secrets-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let live = StubTransport()
        live.on(.get, "/users", headers: ["Set-Cookie": "session=\(Self.token)"], json: [["id": 1, "login": "a"]])
        let url = URL(string: "https://api.example.com/users?client_secret=\(Self.token)&per_page=5")!
        let recorder = try RecordingTransport(wrapping: live, folder: folder)
        _ = try await recorder.send(TransportRequest(method: .get, url: url, headers: ["Cookie": "id=\(Self.token)"]))
        for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            #expect(!text.contains(Self.token), "\(text)")
            #expect(text.contains("per_page=5"))
        }
        let replay = try ReplayTransport(folder: folder)
        let response = try await replay.send(TransportRequest(method: .get, url: url))
        #expect(response.status == 200)
    }
}
