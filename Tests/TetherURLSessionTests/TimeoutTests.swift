import Foundation
import Testing
import Tether
import TetherURLSession

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A real timeout: a local socket that accepts connections (through the kernel's backlog) and never
/// answers, so the request waits until URLSession gives up.
@Suite struct TimeoutTests {
    /// Listens on 127.0.0.1 on a free port and never reads; closed when the value is dropped.
    final class SilentServer: Sendable {
        let descriptor: Int32
        let port: UInt16

        init() throws {
            #if canImport(Glibc)
            let stream = Int32(SOCK_STREAM.rawValue)
            #else
            let stream = SOCK_STREAM
            #endif
            let fd = socket(AF_INET, stream, 0)
            guard fd >= 0 else { throw POSIXError(.EIO) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = 0
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
            }
            guard bound == 0, listen(fd, 16) == 0 else {
                close(fd)
                throw POSIXError(.EADDRINUSE)
            }
            let named = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            guard named == 0 else {
                close(fd)
                throw POSIXError(.EIO)
            }
            descriptor = fd
            port = UInt16(bigEndian: address.sin_port)
        }

        deinit { close(descriptor) }
    }

    @Test func aServerThatNeverAnswersTimesOut() async throws {
        let server = try SilentServer()
        let transport = URLSessionTransport(timeout: 1)
        let url = try #require(URL(string: "http://127.0.0.1:\(server.port)/users"))
        let started = ContinuousClock.now
        let error = await #expect(throws: TransportError.self) {
            _ = try await transport.send(TransportRequest(method: .get, url: url))
        }
        #expect(error?.kind == .timeout)
        // A bound that catches a hang, not a slow machine: in a parallel test run the answer waits
        // for a thread of the busy pool (56 s seen in CI with a 1 s timeout).
        #expect(ContinuousClock.now - started < .seconds(180))
        _ = server
    }
}
