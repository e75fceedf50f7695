import Dispatch
import Foundation
import Logging
import PostgresNIO
import Synchronization
import Testing
import Tether
import TetherPostgres

/// Failures of the server reach the app as structured errors, and leave nothing half-written.
@Suite(.enabled(if: TestDatabase.enabled, "TETHER_POSTGRES_URL is not set"))
struct FailureTests {
    static let schema = try! Schema {
        Entity("Repository", identity: "id") {
            Attribute("id", .int64)
            Attribute("name", .string)
        }
    }

    /// Terminates the connection of `transaction` from another connection, and waits until done
    /// (the body runs on a thread of the store's own, so it may wait here; a detached task does
    /// not run on that thread).
    static func terminate(_ transaction: PostgresTransaction, using client: PostgresClient) throws {
        let pid = try transaction.rows("SELECT pg_backend_pid() AS pid")[0]["pid"]!
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            _ = try? await client.withConnection { connection in
                try await connection.query(PostgresQuery(unsafeSQL: "SELECT pg_terminate_backend($1)", binds: {
                    var binds = PostgresBindings()
                    if case .int(let pid) = pid { binds.append(Int32(pid)) }
                    return binds
                }()), logger: TestDatabase.logger).get()
            }
            done.signal()
        }
        done.wait()
    }

    /// A connection killed in the middle of an import, every time it is run (`maximumAttempts`
    /// times): nothing of the import is stored, and the write throws a storage error that names
    /// what failed.
    @Test func aConnectionLostAtEveryAttemptRollsBackAndSaysSo() async throws {
        let namespace = TestDatabase.namespace("lost")
        defer { Task { await TestDatabase.drop([namespace]) } }
        let client = try TestDatabase.client()
        let store = PostgresStore(client: client, namespace: namespace, maximumAttempts: 3)
        try store.prepare(for: Self.schema)
        try await store.migrate()
        let attempts = Atomic(0)
        do {
            try await store.writeSQL { transaction in
                attempts.add(1, ordering: .relaxed)
                var batch = InsertBatch(entity: "Repository", attributes: ["id", "name"])
                for i in 0..<1000 { batch.append([.int(Int64(i)), .string("repo \(i)")]) }
                _ = try transaction.insert(batch)
                try Self.terminate(transaction, using: client)
                var more = InsertBatch(entity: "Repository", attributes: ["id", "name"])
                more.append([.int(5000), .string("after")])
                _ = try transaction.insert(more)
            }
            Issue.record("the write on a terminated connection did not throw")
        } catch let error as StoreError {
            #expect(error.kind == .storage, "\(error)")
            #expect(error.message.contains("Repository") || error.message.contains("inserting"), "\(error)")
            print("FailureTests: \(error)")
        }
        #expect(attempts.load(ordering: .relaxed) == 3)
        #expect(store.counters.retries == 2)
        let count = try await store.read { try $0.count(Query("Repository")) }
        #expect(count == 0)
        // The store goes on with other connections.
        try await store.write { _ = try $0.insert("Repository", values: ["id": .int(1), "name": .string("one")]) }
        #expect(try await store.read { try $0.count(Query("Repository")) } == 1)
    }

    /// A connection killed once in the middle of an import: PostgreSQL rolled that attempt back,
    /// and the store runs the write again on another connection; what is stored is the second
    /// attempt's, once.
    @Test func aWriteWhoseConnectionIsLostRunsAgainOnAnother() async throws {
        let namespace = TestDatabase.namespace("lostonce")
        defer { Task { await TestDatabase.drop([namespace]) } }
        let client = try TestDatabase.client()
        let store = PostgresStore(client: client, namespace: namespace)
        try store.prepare(for: Self.schema)
        try await store.migrate()
        let attempts = Atomic(0)
        try await store.writeSQL { transaction in
            let attempt = attempts.add(1, ordering: .relaxed).newValue
            var batch = InsertBatch(entity: "Repository", attributes: ["id", "name"])
            for i in 0..<100 { batch.append([.int(Int64(i)), .string("attempt \(attempt)")]) }
            _ = try transaction.insert(batch)
            if attempt == 1 { try Self.terminate(transaction, using: client) }
            var more = InsertBatch(entity: "Repository", attributes: ["id", "name"])
            more.append([.int(5000), .string("attempt \(attempt)")])
            _ = try transaction.insert(more)
        }
        #expect(attempts.load(ordering: .relaxed) == 2)
        #expect(try await store.read { try $0.count(Query("Repository")) } == 101)
        #expect(try await store.read { try $0.count(Query("Repository", where: .equal("name", .string("attempt 2")))) } == 101)
    }

    /// A read whose connection is killed midway is read again on another connection: the
    /// caller gets its answer, not an error.
    @Test func aReadWhoseConnectionIsLostReadsAgainOnAnother() async throws {
        let namespace = TestDatabase.namespace("lostread")
        defer { Task { await TestDatabase.drop([namespace]) } }
        let client = try TestDatabase.client()
        let store = PostgresStore(client: client, namespace: namespace)
        try store.prepare(for: Self.schema)
        try await store.write { _ = try $0.insert("Repository", values: ["id": .int(1), "name": .string("one")]) }
        let attempts = Atomic(0)
        let count = try await store.readSQL { transaction in
            if attempts.add(1, ordering: .relaxed).newValue == 1 { try Self.terminate(transaction, using: client) }
            return try transaction.count(Query("Repository"))
        }
        #expect(count == 1)
        #expect(attempts.load(ordering: .relaxed) == 2)
    }

    /// A schema the namespace cannot follow is refused by the migration, naming what changed.
    @Test func anIncompatibleSchemaIsRefused() async throws {
        let namespace = TestDatabase.namespace("incompatible")
        defer { Task { await TestDatabase.drop([namespace]) } }
        let client = try TestDatabase.client()
        let first = PostgresStore(client: client, namespace: namespace)
        try first.prepare(for: Self.schema)
        try await first.write { _ = try $0.insert("Repository", values: ["id": .int(1), "name": .string("one")]) }
        let changed = try Schema {
            Entity("Repository", identity: "id") {
                Attribute("id", .int64)
                Attribute("name", .int64)
                Attribute("stars", .int64)
            }
        }
        let second = PostgresStore(client: client, namespace: namespace)
        try second.prepare(for: changed)
        await #expect(throws: StoreError.self) { try await second.migrate() }
        do {
            try await second.migrate()
        } catch let error as StoreError {
            #expect(error.kind == .incompatibleSchema)
            #expect(error.member == "name")
        }
        // An additive change migrates and keeps the data.
        let added = try Schema {
            Entity("Repository", identity: "id") {
                Attribute("id", .int64)
                Attribute("name", .string)
                Attribute("stars", .int64)
            }
        }
        let third = PostgresStore(client: client, namespace: namespace)
        try third.prepare(for: added)
        try await third.migrate()
        let object = try await third.read { try $0.objects("Repository", identities: [IdentityKey(.int(1))]).values.first }
        #expect(object?.values == ["id": .int(1), "name": .string("one")])
    }
}
