import Foundation
import Testing
import Tether
import TetherSQLite
import TetherTestSupport

/// Labels shared by hundreds of issues (past the 128 partners at which the in-memory store keeps a
/// to-many side in segments): both stores hold the same issues for each label (an unordered side:
/// compared as sets) and the same labels for each issue, in order, through imports that move issues
/// between labels, deletions, and a label's issues set whole.
@Suite struct FanInTests {
    static let schema = issuesAndLabels

    static func issues(_ ids: some Sequence<Int>, labels: (Int) -> [Int]) -> JSON {
        .array(ids.map { i in .object(["id": .int(Int64(i)), "labels": .array(labels(i).map { .object(["id": .int(Int64($0))]) })]) })
    }

    /// Each label's issues by `id` (sorted: the side is unordered), and each issue's labels in order.
    static func graph(_ store: any Store) async throws -> [String: [Int64: [Int64]]] {
        try await store.read { reader in
            var graph: [String: [Int64: [Int64]]] = [:]
            for (entity, relationship) in [("Label", "issues"), ("Issue", "labels")] {
                let objects = try reader.fetch(Query(entity))
                let related = try reader.related(relationship, of: objects.map(\.id))
                for object in objects {
                    let ids = try (related[object.id] ?? []).map { try #require(reader.object($0)?["id", as: Int64.self]) }
                    graph[relationship, default: [:]][object["id", as: Int64.self]!] = entity == "Label" ? ids.sorted() : ids
                }
            }
            return graph
        }
    }

    @Test func bothStoresKeepTheSameLinks() async throws {
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
                        // (By `id`: the stores keep this unordered side in orders of their own.)
                        let issues = try (writer.related("issues", of: [label])[label] ?? [])
                            .map { (id: $0, key: try #require(writer.object($0)?["id", as: Int64.self])) }.sorted { $0.key < $1.key }
                        try writer.setRelated("issues", of: label, to: issues.enumerated().filter { $0.offset % 2 == 0 }.map(\.element.id).reversed())
                    }
                }
            }
            let memory = try await Self.graph(stores[0])
            let sqlite = try await Self.graph(stores[1])
            #expect(memory == sqlite, "round \(round): \(Self.differences(memory, sqlite))")
            #expect(memory["issues", default: [:]].values.contains { $0.count > 128 }, "round \(round): a label past one segment")
        }
    }
}

extension FanInTests {
    /// Where two graphs differ: relationship, object, and each store's targets.
    static func differences(_ one: [String: [Int64: [Int64]]], _ two: [String: [Int64: [Int64]]]) -> [String] {
        Set(one.keys).union(two.keys).sorted().flatMap { relationship in
            Set(one[relationship, default: [:]].keys).union(two[relationship, default: [:]].keys).sorted().compactMap { id in
                let (a, b) = (one[relationship]?[id], two[relationship]?[id])
                return a == b ? nil : "\(relationship) of \(id): \(a ?? []) against \(b ?? [])"
            }
        }
    }
}

private extension Array where Element: Hashable {
    func uniqued() -> [Element] {
        var seen = Set<Element>()
        return filter { seen.insert($0).inserted }
    }
}
