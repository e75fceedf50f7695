import Testing
import Tether
import TetherSQLite
import TetherTesting

/// The store conformance suite against SQLiteStore, each check on a new file.
@Suite struct SQLiteConformanceTests {
    @Test(arguments: StoreConformance.Check.allCases)
    func conformance(_ check: StoreConformance.Check) async throws {
        let directory = try TemporaryDirectory()
        try await StoreConformance { try SQLiteStore(path: directory.path()) }.run(check)
    }
}
