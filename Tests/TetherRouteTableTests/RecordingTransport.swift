import Foundation
import Synchronization
import Tether

/// A private transport double: records every request and answers with a canned response chosen
/// by method and path (without the query).
final class RecordingTransport: Transport {
    private let state: Mutex<(requests: [TransportRequest], responses: [String: TransportResponse])>

    init(_ responses: [String: TransportResponse] = [:]) {
        state = Mutex((requests: [], responses: responses))
    }

    var requests: [TransportRequest] { state.withLock { $0.requests } }

    func respond(_ method: HTTPMethod, _ path: String, with response: TransportResponse) {
        state.withLock { $0.responses["\(method) \(path)"] = response }
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let path = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? ""
        return state.withLock { state in
            state.requests.append(request)
            return state.responses["\(request.method) \(path)"]
                ?? TransportResponse(status: 404, headers: ["Content-Type": "text/html"], body: Data("<h1>Not Found</h1>".utf8))
        }
    }
}

extension TransportResponse {
    static func json(_ text: String, status: Int = 200) -> TransportResponse {
        TransportResponse(status: status, headers: ["Content-Type": "application/json"], body: Data(text.utf8))
    }
}
