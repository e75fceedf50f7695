import Foundation
import Testing
import Tether
import TetherSQLite
import TetherTestSupport

/// Labels shared by hundreds of issues (past the 128 partners at which the in-memory store keeps a
/// to-many side in segments): both stores hold the same issues for each label, in the same order,
/// through imports that move issues between labels, deletions, and a label's issues set whole.
@Suite struct FanInTests {
    static let schema = issuesAndLabels

    static func issues(_ ids: some Sequence<Int>, labels: (Int) -> [Int]) -> JSON {
        .array(ids.map { i in .object(["id": .int(Int64(i)), "labels": .array(labels(i).map { .object(["id": .int(Int64($0))]) })]) })
    }

    /// Each label's issues by `id`, in the store's order.
    static func graph(_ store: any Store) async throws -> [Int64: [Int64]] {
        try await store.read { reader in
            let labels = try reader.fetch(Query("Label"))
            let related = try reader.related("issues", of: labels.map(\.id))
            var graph: [Int64: [Int64]] = [:]
            for label in labels {
                graph[label["id", as: Int64.self]!] = try (related[label.id] ?? []).map { try #require(reader.object($0)?["id", as: Int64.self]) }
            }
            return graph
        }
    }

    @Test func bothStoresKeepTheSameIssuesInTheSameOrder() async throws {
        let directory = try TemporaryDirectory()
        let stores: [any Store] = [InMemoryStore(), try SQLiteStore(path: directory.path())]
        let clients = try stores.map { try Client.Builder(schema: Self.schema).store($0).build() }
        var random = SeededRandom(seed: 7)
        func importBoth(_ payload: JSON) async throws {
            for client in clients {
                let result = try await client.import(payload, as: "Issue")
                #expect(result.diagnostics.isEmpty)
            }
        }
        // 900 issues over 4 labels: about 340 issues each.
        try await importBoth(Self.issues(0..<900) { i in [i % 4, (i / 4) % 4].uniqued() })
        var deleted = Set<Int>()
        for round in 0..<12 {
            // A page of issues moves between labels (some leave every label, some gain one).
            let page = (0..<40).map { _ in Int.random(in: 0..<900, using: &random) }.filter { !deleted.contains($0) }.uniqued()
            let labels = page.map { _ in (0..<Int.random(in: 0...3, using: &random)).map { _ in Int.random(in: 0..<4, using: &random) }.uniqued() }
            let labelsOf = Dictionary(uniqueKeysWithValues: zip(page, labels))
            try await importBoth(Self.issues(page) { labelsOf[$0]! })
            // A few issues are deleted.
            let gone = (0..<3).map { _ in Int.random(in: 0..<900, using: &random) }.filter { !deleted.contains($0) }.uniqued()
            deleted.formUnion(gone)
            for store in stores {
                try await store.write { writer in
                    let found = try writer.find("Issue", identities: gone.map { IdentityKey(.int(Int64($0))) }, attributes: [])
                    for row in found { try writer.delete(try #require(row?.id)) }
                }
            }
            // Every third round, one label's issues are set whole: every other one it has, reversed.
            if round % 3 == 2 {
                for store in stores {
                    try await store.write { writer in
                        let label = try #require(writer.find("Label", identities: [IdentityKey(.int(Int64(round % 4)))], attributes: [])[0]).id
                        let issues = try writer.related("issues", of: [label])[label] ?? []
                        try writer.setRelated("issues", of: label, to: issues.enumerated().filter { $0.offset % 2 == 0 }.map(\.element).reversed())
                    }
                }
            }
            let memory = try await Self.graph(stores[0])
            let sqlite = try await Self.graph(stores[1])
            #expect(memory == sqlite, "round \(round)")
            #expect(memory.values.contains { $0.count > 128 }, "round \(round): a label past one segment")
        }
    }
}

private extension Array where Element: Hashable {
    func uniqued() -> [Element] {
        var seen = Set<Element>()
        return filter { seen.insert($0).inserted }
    }
}
