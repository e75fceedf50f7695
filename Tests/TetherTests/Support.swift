import Foundation
import Synchronization
import Tether

/// Reads a JSON fixture copied into this test target (see Fixtures/*/README.md for sources).
func fixture(_ path: String) throws -> Data {
    let url = Bundle.module.resourceURL!.appendingPathComponent("Fixtures").appendingPathComponent(path)
    return try Data(contentsOf: url)
}

/// The `response` of the first recorded exchange of an octokit fixture.
func octokitResponse(_ name: String, index: Int = 0) throws -> JSON {
    let records = try JSON(parsing: fixture("octokit/\(name).json"))
    return records[index]!["response"]!
}


/// A store that counts the calls Tether makes, wrapping an ``InMemoryStore``.
final class CountingStore: Store {
    let base = InMemoryStore()
    let counts = Counts()
    /// Whether its transactions report the base's ``StoreWriter/version`` (so that imports
    /// remember nested objects between them); the other tests count every lookup.
    let reportsVersion: Bool

    init(reportsVersion: Bool = false) { self.reportsVersion = reportsVersion }

    final class Counts: Sendable {
        let lookups = Atomic(0)
        let lookupsByEntity = Mutex<[String: Int]>([:])
        /// The identities looked up, by entity.
        let identitiesByEntity = Mutex<[String: Int]>([:])
        let relatedReads = Atomic(0)
        let writes = Atomic(0)
        /// The objects reads handed back (fetches, lookups by identity, single objects): what an
        /// import had to read, whatever the store holds besides.
        let objectsRead = Atomic(0)
    }

    func prepare(for schema: Schema) throws { try base.prepare(for: schema) }
    func read<T: Sendable>(_ body: @Sendable (any StoreReader) throws -> T) async throws -> T {
        let counts = self.counts
        return try await base.read { try body(CountingReader(base: $0, counts: counts, reportsVersion: false)) }
    }
    func write<T: Sendable>(_ body: @Sendable (any StoreWriter) throws -> T) async throws -> T {
        let counts = self.counts
        counts.writes.add(1, ordering: .relaxed)
        let reportsVersion = self.reportsVersion
        return try await base.write { try body(CountingReader(base: $0, counts: counts, reportsVersion: reportsVersion)) }
    }
    func changes() -> AsyncStream<ChangeSet> { base.changes() }

    final class CountingReader: StoreWriter {
        let base: any StoreReader
        let counts: Counts
        let reportsVersion: Bool
        init(base: any StoreReader, counts: Counts, reportsVersion: Bool) {
            self.base = base
            self.counts = counts
            self.reportsVersion = reportsVersion
        }
        var writer: any StoreWriter { base as! (any StoreWriter) }
        var version: StoreVersion? { reportsVersion ? writer.version : nil }
        func objects(_ entity: String, identities: [IdentityKey]) throws -> [IdentityKey: Object] {
            counts.lookups.add(1, ordering: .relaxed)
            counts.lookupsByEntity.withLock { $0[entity, default: 0] += 1 }
            counts.identitiesByEntity.withLock { $0[entity, default: 0] += identities.count }
            let found = try base.objects(entity, identities: identities)
            counts.objectsRead.add(found.count, ordering: .relaxed)
            return found
        }
        func object(_ id: ObjectID) throws -> Object? {
            let object = try base.object(id)
            if object != nil { counts.objectsRead.add(1, ordering: .relaxed) }
            return object
        }
        func fetch(_ query: Query) throws -> [Object] {
            let objects = try base.fetch(query)
            counts.objectsRead.add(objects.count, ordering: .relaxed)
            return objects
        }
        func count(_ query: Query) throws -> Int { try base.count(query) }
        func related(_ relationship: String, of ids: [ObjectID]) throws -> [ObjectID: [ObjectID]] {
            counts.relatedReads.add(1, ordering: .relaxed)
            return try base.related(relationship, of: ids)
        }
        func insert(_ entity: String, values: [String: Value]) throws -> Object { try writer.insert(entity, values: values) }
        func update(_ id: ObjectID, setting values: [String: Value], clearing cleared: Set<String>) throws {
            try writer.update(id, setting: values, clearing: cleared)
        }
        func delete(_ id: ObjectID) throws { try writer.delete(id) }
        func setRelated(_ relationship: String, of id: ObjectID, to targets: [ObjectID]) throws {
            try writer.setRelated(relationship, of: id, to: targets)
        }
    }
}

/// Users and their repositories, by `id`: the smallest schema of the remote tests.
let usersAndRepositories = try! Schema {
    Entity("User") {
        Attribute("id", .int64)
        Attribute("login", .string)
        Relationship.toMany("repositories", "Repository", inverse: "owner")
    }
    Entity("Repository") {
        Attribute("id", .int64)
        Attribute("name", .string)
        Relationship.toOne("owner", "User", inverse: "repositories")
    }
}
