import Foundation
import Synchronization
import Testing
import Tether
import TetherTesting

/// Retries of idempotent requests (issue 20): statuses, Retry-After, bounds, and never a POST.
@Suite struct RetryTests {
    /// A stub answering the given statuses in turn (then 200 with one user), counting requests.
    static func stub(_ statuses: [(Int, HTTPHeaders)]) -> StubTransport {
        let stub = StubTransport()
        let answered = Mutex(0)
        stub.on(nil, "/users") { _ in
            let n = answered.withLock { n in defer { n += 1 }; return n }
            if n < statuses.count {
                var headers = statuses[n].1
                headers["Content-Type"] = "application/json"
                return TransportResponse(status: statuses[n].0, headers: headers, body: Data(#"{"message": "busy"}"#.utf8))
            }
            return TransportResponse(status: 200, headers: ["Content-Type": "application/json"], body: Data(#"[{"id": 1, "login": "ada"}]"#.utf8))
        }
        return stub
    }

    @Test func retriesBusyAnswersHonouringRetryAfter() async throws {
        let stub = Self.stub([(503, [:]), (429, ["Retry-After": "1"])])
        let client = try makeBuilder(transport: stub).retries(RetryPolicy(baseDelay: .milliseconds(10))).build()
        let clock = ContinuousClock()
        let start = clock.now
        let fetched = try await client.fetchObjects("User", from: "/users")
        #expect(fetched.objects.count == 1)
        #expect(stub.requests.count == 3)
        #expect(clock.now - start >= .seconds(1), "waited as Retry-After said")
    }

    @Test func boundedAndNeverLongerThanMaxDelay() async throws {
        let stub = Self.stub([(503, [:]), (503, [:]), (503, [:]), (503, [:])])
        let client = try makeBuilder(transport: stub).retries(RetryPolicy(maxRetries: 2, baseDelay: .milliseconds(1))).build()
        let error = await #expect(throws: HTTPError.self) { _ = try await client.fetchObjects("User", from: "/users") }
        #expect(error?.status == 503)
        #expect(stub.requests.count == 3, "one attempt and two retries")

        let patient = Self.stub([(503, ["Retry-After": "3600"])])
        let capped = try makeBuilder(transport: patient).retries(RetryPolicy(maxDelay: .seconds(5))).build()
        await #expect(throws: HTTPError.self) { _ = try await capped.fetchObjects("User", from: "/users") }
        #expect(patient.requests.count == 1, "an hour's Retry-After is not waited for")
    }

    @Test func notAPostNorAClientError() async throws {
        let stub = Self.stub([(503, [:]), (400, [:])])
        let client = try makeBuilder(transport: stub).retries(RetryPolicy(baseDelay: .milliseconds(1))).build()
        await #expect(throws: HTTPError.self) { _ = try await client.send(.post, URL(string: "https://api.example.com/users")!, body: ["login": "x"]) }
        #expect(stub.requests.count == 1, "a POST is not retried")
        let error = await #expect(throws: HTTPError.self) { _ = try await client.fetchObjects("User", from: "/users") }
        #expect(error?.status == 400, "400 is not retried")
        #expect(stub.requests.count == 2)
        #expect(RetryPolicy.retryAfter("Wed, 21 Oct 2015 07:28:00 GMT", now: Date(timeIntervalSince1970: 1_445_412_470)) == .seconds(10))
    }
}
