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

/// The suite against a store that implements only the required methods, so that every default
/// implementation of the protocols (batch insert and update, find by identity) is checked too:
/// what a new store starts from.
@Suite struct DefaultImplementationsConformanceTests {
    final class MinimalStore: Store {
        let base = InMemoryStore()
        func prepare(for schema: Schema) throws { try base.prepare(for: schema) }
        func read<T: Sendable>(_ body: @Sendable (any StoreReader) throws -> T) async throws -> T {
            try await base.read { reader in try body(Reader(reader)) }
        }
        func write<T: Sendable>(_ body: @Sendable (any StoreWriter) throws -> T) async throws -> T {
            try await base.write { writer in try body(Writer(writer)) }
        }
        func changes() -> AsyncStream<ChangeSet> { base.changes() }

        /// Forwards the required reading methods only.
        class Reader: StoreReader {
            let reader: any StoreReader
            init(_ reader: any StoreReader) { self.reader = reader }
            func objects(_ e: String, identities: [IdentityKey]) throws -> [IdentityKey: Object] { try reader.objects(e, identities: identities) }
            func object(_ id: ObjectID) throws -> Object? { try reader.object(id) }
            func fetch(_ q: Query) throws -> [Object] { try reader.fetch(q) }
            func count(_ q: Query) throws -> Int { try reader.count(q) }
            func related(_ r: String, of ids: [ObjectID]) throws -> [ObjectID: [ObjectID]] { try reader.related(r, of: ids) }
        }

        /// Forwards the required writing methods only.
        final class Writer: Reader, StoreWriter {
            let writer: any StoreWriter
            init(_ writer: any StoreWriter) {
                self.writer = writer
                super.init(writer)
            }
            func insert(_ e: String, values: [String: Value]) throws -> Object { try writer.insert(e, values: values) }
            func update(_ id: ObjectID, setting v: [String: Value], clearing c: Set<String>) throws { try writer.update(id, setting: v, clearing: c) }
            func delete(_ id: ObjectID) throws { try writer.delete(id) }
            func setRelated(_ r: String, of id: ObjectID, to t: [ObjectID]) throws { try writer.setRelated(r, of: id, to: t) }
        }
    }

    @Test(arguments: StoreConformance.Check.allCases)
    func conformance(_ check: StoreConformance.Check) async throws {
        try await StoreConformance { MinimalStore() }.run(check)
    }
}
