import Foundation
import Testing
import Tether
import TetherTesting

@Suite struct HTTPErrorTests {
    /// The first record of an octokit fixture file as a response.
    func fixtureResponse(_ file: String, index: Int = 0) throws -> TransportResponse {
        let records = try JSON(parsing: Data(contentsOf: fixturesFolder.appendingPathComponent(file)))
        let record = try #require(records[index])
        var headers = HTTPHeaders()
        for (name, value) in record["headers"]?.objectValue ?? [:] {
            headers.add(name: name, value: value.stringValue ?? value.description)
        }
        let body: Data
        switch record["response"] {
        case .string(let text)?: body = Data(text.utf8)
        case let json?: body = json.serialized()
        case nil: body = Data()
        }
        return TransportResponse(status: Int(record["status"]?.int64Value ?? 0), headers: headers, body: body)
    }

    @Test func decodesGitHubValidationErrors() throws {
        let response = try fixtureResponse("github-errors.json")
        let error = HTTPError(method: .post, url: URL(string: "https://api.github.com/repos/o/r/labels")!, response: response)
        #expect(error.status == 422)
        #expect(error.body.isJSON)
        #expect(error.body.message == "Validation Failed")
        #expect(error.body.messages(for: "color") == ["invalid"])
        #expect(error.headers["X-GitHub-Media-Type"] == "github.v3; format=json")
        #expect(error.description.contains("color: invalid"))
    }

    @Test func anHTMLBodyIsNotMistakenForJSON() throws {
        var response = try fixtureResponse("github-markdown.json")
        response.status = 500
        let error = HTTPError(method: .post, url: URL(string: "https://api.github.com/markdown")!, response: response)
        #expect(!error.body.isJSON)
        #expect(error.body.text?.hasPrefix("<h3") == true)
        #expect(error.body.fieldErrors.isEmpty)
        #expect(error.description.contains("text/html"))
        // An HTML page that happens to parse (a JSON string literal, say) stays text.
        let tricky = TransportResponse(status: 404, headers: ["Content-Type": "text/html"], body: Data(#"{"detail":"x"}"#.utf8))
        #expect(ErrorBody(data: tricky.body, contentType: tricky.headers["Content-Type"]).json == nil)
        // A 200 HTML answer where JSON was expected is a parse error, not a JSON value.
        #expect(throws: JSONParseError.self) { _ = try Client.jsonBody(of: response) }
    }

    @Test func decodesDRFAndRailsShapes() {
        func body(_ text: String, _ type: String? = "application/json") -> ErrorBody {
            ErrorBody(data: Data(text.utf8), contentType: type)
        }
        let drf = body(#"{"login":["This field is required."],"email":["Enter a valid email address."]}"#)
        #expect(drf.messages(for: "login") == ["This field is required."])
        #expect(drf.messages(for: "email") == ["Enter a valid email address."])
        #expect(drf.message == nil)
        #expect(body(#"{"detail":"No User matches the given query."}"#).message == "No User matches the given query.")
        #expect(body(#"{"non_field_errors":["The fields owner_id, name must make a unique set."]}"#).messages(for: "non_field_errors").count == 1)
        #expect(body(#"{"owner":{"login":["bad"]}}"#).messages(for: "owner.login") == ["bad"])
        let rails = body(#"{"login":["has already been taken","can't be blank"]}"#, "application/json; charset=utf-8")
        #expect(rails.messages(for: "login") == ["has already been taken", "can't be blank"])
        let rails404 = body(#"{"status":404,"error":"Not Found"}"#)
        #expect(rails404.message == "Not Found")
        #expect(rails404.fieldErrors.isEmpty)
        #expect(body(#"{"errors":{"name":["is too short"]}}"#).messages(for: "name") == ["is too short"])
        let empty = body("", "text/html")
        #expect(empty.isEmpty)
        #expect(!empty.isJSON)
        #expect(body("not json", nil).text == "not json")
    }

    @Test func errorsNeverCarryTheAuthorizationHeader() async throws {
        let secret = "s3cr3t-token-value"
        let stub = StubTransport()
        stub.on(.get, "/users/1", status: 401, json: ["message": "Bad credentials"])
        let client = try makeBuilder(transport: stub).requestHook(AuthorizationHook(scheme: "token", credential: secret)).build()
        let user = try await seed(client, "User", ["id": 1])[0]
        let error = await #expect(throws: HTTPError.self) { try await client.refresh(user.id) }
        let e = try #require(error)
        #expect(stub.requests.first?.headers["Authorization"] == "token \(secret)")
        #expect(e.body.message == "Bad credentials")
        var dumped = ""
        dump(e, to: &dumped)
        for text in [e.description, String(reflecting: e), "\(e)", dumped, e.localizedDescription] {
            #expect(!text.contains(secret))
        }
        // Also when no answer came at all, and for the hook itself.
        let failing = try makeBuilder(transport: StubTransport()).requestHook(AuthorizationHook(credential: secret)).build()
        let failed = try await seed(failing, "User", ["id": 1])[0]
        let transportError = await #expect(throws: TransportError.self) { try await failing.refresh(failed.id) }
        var dumpedTransport = ""
        dump(transportError, to: &dumpedTransport)
        #expect(!dumpedTransport.contains(secret) && !"\(String(describing: transportError))".contains(secret))
        var dumpedHook = ""
        dump(AuthorizationHook(credential: secret), to: &dumpedHook)
        #expect(!dumpedHook.contains(secret) && !"\(AuthorizationHook(credential: secret))".contains(secret))
    }
}
