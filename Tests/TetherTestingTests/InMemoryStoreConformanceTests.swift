import Testing
import Tether
import TetherTesting

/// The store conformance suite against the core's in-memory store.
@Suite struct InMemoryStoreConformanceTests {
    @Test(arguments: StoreConformance.Check.allCases)
    func conformance(_ check: StoreConformance.Check) async throws {
        try await StoreConformance { InMemoryStore() }.run(check)
    }

    @Test func runAllReportsNoFailures() async throws {
        try await StoreConformance { InMemoryStore() }.run()
    }
}
