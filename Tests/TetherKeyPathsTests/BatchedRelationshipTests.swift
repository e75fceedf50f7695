import Foundation
import Synchronization
import Testing
import Tether
import TetherKeyPaths

/// A store that counts the batched relationship reads of its readers.
private final class CountingStore: Store {
    let base = InMemoryStore()
    let relatedCalls = Mutex<[String]>([])

    func prepare(for schema: Schema) throws { try base.prepare(for: schema) }
    func read<T: Sendable>(_ body: @Sendable (any StoreReader) throws -> T) async throws -> T {
        try await base.read { reader in try body(CountingReader(base: reader, store: self)) }
    }
    func write<T: Sendable>(_ body: @Sendable (any StoreWriter) throws -> T) async throws -> T {
        try await base.write(body)
    }
    func changes() -> AsyncStream<ChangeSet> { base.changes() }

    struct CountingReader: StoreReader {
        let base: any StoreReader
        let store: CountingStore
        func objects(_ entity: String, identities: [IdentityKey]) throws -> [IdentityKey: Object] {
            try base.objects(entity, identities: identities)
        }
        func object(_ id: ObjectID) throws -> Object? { try base.object(id) }
        func fetch(_ query: Query) throws -> [Object] { try base.fetch(query) }
        func count(_ query: Query) throws -> Int { try base.count(query) }
        func related(_ relationship: String, of ids: [ObjectID]) throws -> [ObjectID: [ObjectID]] {
            store.relatedCalls.withLock { $0.append("\(relationship)×\(ids.count)") }
            return try base.related(relationship, of: ids)
        }
    }
}

@Test func relationshipsAreReadOncePerRelationshipPerLevel() async throws {
    let store = CountingStore()
    let client = try Client.Builder(models: [userMapping, repositoryMapping]).store(store).build()
    var users: [JSON] = []
    for u in 1...20 {
        let repos: [JSON] = (0..<3).map { r in ["id": .int(Int64(u * 100 + r)), "full_name": .string("u\(u)/r\(r)")] }
        users.append(["id": .int(Int64(u)), "login": .string("user\(u)"), "repos": .array(repos)])
    }
    _ = try await client.import(JSON.array(users), as: "User")

    let fetched = try await client.fetch(userMapping, sortedBy: [.ascending(\.id)])
    #expect(fetched.count == 20)
    #expect(fetched.allSatisfy { $0.repositories.count == 3 })
    #expect(fetched[4].repositories.map(\.fullName) == ["u5/r0", "u5/r1", "u5/r2"])
    #expect(store.relatedCalls.withLock { $0 } == ["repositories×20"])

    store.relatedCalls.withLock { $0 = [] }
    let repos = try await client.fetch(repositoryMapping, depth: 2)
    #expect(repos.count == 60)
    #expect(repos.allSatisfy { $0.owner?.repositories.count == 3 })
    // Level 1: 60 repositories' owners in one call; level 2: the 20 owners' repositories in one call.
    #expect(store.relatedCalls.withLock { $0 } == ["owner×60", "repositories×20"])
}
