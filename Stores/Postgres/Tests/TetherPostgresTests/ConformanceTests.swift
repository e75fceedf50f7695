import Testing
import Tether
import TetherPostgres
import TetherTesting

/// The store conformance suite against PostgresStore, each check in new namespaces of the server.
@Suite(.enabled(if: TestDatabase.enabled, "TETHER_POSTGRES_URL is not set"))
struct PostgresConformanceTests {
    @Test(arguments: StoreConformance.Check.allCases)
    func conformance(_ check: StoreConformance.Check) async throws {
        let client = try TestDatabase.client()
        let namespaces = Namespaces(check.rawValue)
        do {
            try await StoreConformance { PostgresStore(client: client, namespace: namespaces.next()) }.run(check)
        } catch {
            await namespaces.drop()
            throw error
        }
        await namespaces.drop()
    }
}
