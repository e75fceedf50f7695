import Foundation
import Synchronization
import Testing
@testable import Tether
import TetherTestSupport

/// What an import remembers for the next import on the same client (`RememberedObjects`): the
/// nested objects it stored, taken as stored while nothing else has committed since, and
/// forgotten when anything has.
@Suite struct RememberedObjectsTests {
    let store = CountingStore(reportsVersion: true)

    func makeClient(_ store: some Store, options: ImportOptions = ImportOptions()) throws -> Client {
        try Client.Builder(schema: ImportTests.schema).store(store).importOptions(options).build()
    }

    /// Repositories 10, 11, … each owned by user 1 with the login given.
    static func page(_ logins: [String], names: String = "r") -> Data {
        Data(("[" + logins.enumerated().map { #"{"id": \#($0 + 10), "name": "\#(names)\#($0)", "owner": {"id": 1, "login": "\#($1)"}}"# }
            .joined(separator: ", ") + "]").utf8)
    }

    /// The users the imports since the last call looked up.
    func userLookups() -> Int { store.counts.identitiesByEntity.withLock { $0.removeValue(forKey: "User") ?? 0 } }

    func login(_ client: Client) async throws -> Value? {
        defer { _ = userLookups() }  // not the import's
        return try await client.object("User", identity: .int(1))?["login"]
    }

    @Test func aNestedObjectTheLastImportStoredIsNotLookedUpAgain() async throws {
        let client = try makeClient(store)
        let first = try await client.import(Self.page(["a", "a", "a"]), as: "Repository")
        #expect(first.inserted.count == 4)
        #expect(userLookups() == 1)
        // The same page again: the owner is taken as stored.
        let again = try await client.import(Self.page(["a", "a", "a"]), as: "Repository")
        #expect(again.unchanged.count == 4)
        #expect(userLookups() == 0)
        // The repositories changed, their owner did not.
        let renamed = try await client.import(Self.page(["a", "a", "a"], names: "s"), as: "Repository")
        #expect(renamed.updated.count == 3)
        #expect(renamed.unchanged.count == 1)
        #expect(userLookups() == 0)
        for repository in try await client.fetch(Query("Repository")) {
            #expect(try await client.related("owner", of: repository.id).count == 1)
        }
        // The owner changed: looked up, and updated.
        let changed = try await client.import(Self.page(["b", "b", "b"], names: "s"), as: "Repository")
        #expect(changed.updated.count == 1)
        #expect(userLookups() == 1)
        #expect(try await login(client) == .string("b"))
    }

    /// What committed between two imports, whatever it is, makes the second look everything up
    /// and apply it: the owner's login is the page's again, and the repositories link the owner
    /// that is stored.
    enum Between: CaseIterable, Sendable {
        case storeWrite, delete, emptyWrite, otherClient, prepareAgain
    }

    @Test(arguments: Between.allCases)
    func aCommitBetweenImportsIsNotTrusted(_ between: Between) async throws {
        let client = try makeClient(store)
        _ = try await client.import(Self.page(["a", "a"]), as: "Repository")
        _ = userLookups()
        let user = try #require(try await client.object("User", identity: .int(1))).id
        switch between {
        case .storeWrite:
            try await store.write { try $0.update(user, setting: ["login": .string("x")], clearing: []) }
        case .delete:
            try await store.write { try $0.delete(user) }
        case .emptyWrite:
            try await store.write { _ in }
        case .otherClient:
            _ = try await makeClient(store).import(Self.page(["x"]), as: "Repository")
        case .prepareAgain:
            _ = try makeClient(store)
        }
        _ = userLookups()
        let again = try await client.import(Self.page(["a", "a"]), as: "Repository")
        #expect(userLookups() == 1)
        #expect(try await login(client) == .string("a"))
        let owner = try #require(try await client.object("User", identity: .int(1))).id
        for repository in try await client.fetch(Query("Repository")) {
            #expect(try await client.related("owner", of: repository.id).map(\.id) == [owner])
        }
        #expect(again.objects.count == 2)
    }

    /// An import that fails leaves nothing remembered: its transaction wrote nothing, and what
    /// the import before it remembered still holds.
    @Test func aFailedImportLeavesNothingRemembered() async throws {
        let client = try makeClient(store)
        _ = try await client.import(Self.page(["a"]), as: "Repository")
        _ = userLookups()
        // The first batch stores the owner as "b"; the second fails, and the import rolls back.
        let failing = Data(#"[{"id": 10, "owner": {"id": 1, "login": "b"}}, {"name": "no id"}]"#.utf8)
        await #expect(throws: ImportError.self) {
            try await client.import(failing, as: "Repository", options: ImportOptions(policy: .fail, batchSize: 1))
        }
        #expect(try await login(client) == .string("a"))
        // What the failed import would have remembered ("b", at the version after it) is not
        // kept: after another commit, a page naming "b" is applied.
        try await store.write { _ in }
        _ = try await client.import(Self.page(["b"]), as: "Repository")
        #expect(try await login(client) == .string("b"))
        // What that import remembered holds for the next, while nothing commits in between.
        _ = try await client.import(Self.page(["b"]), as: "Repository")
        #expect(userLookups() == 0)
    }

    /// An import that does not write everything it maps leaves nothing remembered, and one that
    /// converts values otherwise takes nothing.
    @Test func importsThatWriteOrConvertOtherwiseRememberNothing() async throws {
        let client = try makeClient(store)
        _ = try await client.import(Self.page(["a"]), as: "Repository")
        _ = userLookups()
        // Nested objects are not updated: the owner keeps "a", and nothing is remembered.
        _ = try await client.import(Self.page(["b"]), as: "Repository", options: ImportOptions(updateRelationships: false))
        #expect(try await login(client) == .string("a"))
        _ = try await client.import(Self.page(["b"]), as: "Repository")
        #expect(userLookups() == 1)
        #expect(try await login(client) == .string("b"))
        // Other conversions: looked up again.
        _ = try await client.import(Self.page(["b"]), as: "Repository", options: ImportOptions(coercion: .strict))
        #expect(userLookups() == 1)
        // Tombstones: looked up, and nothing left remembered.
        let tombstones = ImportOptions(tombstones: [Tombstone("deleted", equals: true)])
        _ = try await client.import(Self.page(["b"]), as: "Repository", options: tombstones)
        #expect(userLookups() == 1)
        _ = try await client.import(Self.page(["b"]), as: "Repository")
        #expect(userLookups() == 1)
    }

    /// An import that deletes anything leaves nothing remembered.
    @Test func anImportThatDeletesLeavesNothingRemembered() async throws {
        let client = try makeClient(store)
        _ = try await client.import(Self.page(["a", "a"]), as: "Repository")
        let deleting = try await client.import(Self.page(["a"]), as: "Repository", options: ImportOptions(deleteMissing: .all))
        #expect(deleting.deleted.count == 1)
        _ = userLookups()
        _ = try await client.import(Self.page(["a"]), as: "Repository")
        #expect(userLookups() == 1)
    }

    /// Each client remembers its own imports: two clients over one store, importing the same
    /// pages in turn, each see the other's commits and apply their page again.
    @Test func twoClientsImportingInTurnSeeEachOthersChanges() async throws {
        let first = try makeClient(store)
        let second = try makeClient(store)
        for _ in 0..<3 {
            _ = try await first.import(Self.page(["a"]), as: "Repository")
            #expect(try await login(first) == .string("a"))
            _ = try await second.import(Self.page(["c"]), as: "Repository")
            #expect(try await login(second) == .string("c"))
        }
    }

    /// Random imports, writes, deletes, other clients' imports and failed imports: a client that
    /// remembers between imports leaves the store as a fresh client per import leaves another.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func rememberingChangesNothingThatIsStored(seed: UInt64) async throws {
        var random = SeededRandom(seed: seed)
        let remembering = InMemoryStore(), fresh = InMemoryStore()
        let client = try makeClient(remembering), other = try makeClient(remembering)
        let logins = ["a", "b", "c"]
        func page() -> Data {
            let first = Int.random(in: 10...20, using: &random)
            let items = (first..<(first + Int.random(in: 1...6, using: &random))).map { id in
                let owner = Int.random(in: 1...4, using: &random)
                return #"{"id": \#(id), "name": "n\#(Int.random(in: 0...2, using: &random))", "owner": {"id": \#(owner), "login": "\#(logins.randomElement(using: &random)!)"}}"#
            }
            return Data(("[" + items.joined(separator: ", ") + "]").utf8)
        }
        func state(_ store: some Store) async throws -> [String] {
            try await store.read { reader in
                let users = try reader.fetch(Query("User")).map { "user \($0["id"]!) \($0["login"].map { "\($0)" } ?? "-")" }
                let repositories = try reader.fetch(Query("Repository")).map { repository in
                    let owner = try reader.related("owner", of: repository.id).first.flatMap { try reader.object($0)?["id"] }
                    return "repository \(repository["id"]!) \(repository["name"].map { "\($0)" } ?? "-") owner \(owner.map { "\($0)" } ?? "-")"
                }
                return (users + repositories).sorted()
            }
        }
        func onBoth(_ body: @Sendable (any StoreWriter) throws -> Void) async throws {
            try await remembering.write(body)
            try await fresh.write(body)
        }
        for step in 0..<120 {
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<5:
                let data = page()
                _ = try await client.import(data, as: "Repository")
                _ = try await makeClient(fresh).import(data, as: "Repository")
            case 5:
                let data = page()
                _ = try await other.import(data, as: "Repository")
                _ = try await makeClient(fresh).import(data, as: "Repository")
            case 6:
                let user = Int64.random(in: 1...4, using: &random), login = logins.randomElement(using: &random)!
                try await onBoth { writer in
                    if let found = try writer.objects("User", identities: [IdentityKey(.int(user))]).values.first {
                        try writer.update(found.id, setting: ["login": .string(login)], clearing: [])
                    }
                }
            case 7:
                let entity = Bool.random(using: &random) ? "User" : "Repository"
                let id = Int64.random(in: entity == "User" ? 1...4 : 10...26, using: &random)
                try await onBoth { writer in
                    if let found = try writer.objects(entity, identities: [IdentityKey(.int(id))]).values.first { try writer.delete(found.id) }
                }
            case 8:
                let failing = Data(#"[{"id": 10, "owner": {"id": 1, "login": "z"}}, {"name": "no id"}]"#.utf8)
                let options = ImportOptions(policy: .fail, batchSize: 1)
                await #expect(throws: ImportError.self) { try await client.import(failing, as: "Repository", options: options) }
                await #expect(throws: ImportError.self) { try await makeClient(fresh).import(failing, as: "Repository", options: options) }
            default:
                try await onBoth { _ in }
            }
            let expected = try await state(fresh)
            #expect(try await state(remembering) == expected, "step \(step)")
        }
    }

    /// A store that reports no version: nothing is remembered between imports.
    @Test func aStoreWithoutVersionsRemembersNothing() async throws {
        let store = CountingStore()
        let client = try makeClient(store)
        _ = try await client.import(Self.page(["a"]), as: "Repository")
        _ = try await client.import(Self.page(["a"]), as: "Repository")
        #expect(store.counts.identitiesByEntity.withLock { $0["User"] } == 2)
    }
}
