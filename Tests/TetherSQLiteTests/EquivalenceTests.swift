import Foundation
import Testing
import Tether
import TetherSQLite

/// The same 10,000-object payload imported into each store gives the same object graph.
@Suite struct EquivalenceTests {
    static let schema = try! Schema {
        Entity("User", identity: "id") {
            Attribute("id", .int64)
            Attribute("login", .string)
            Attribute("score", .double)
            Attribute("joined", .date)
            Relationship.toMany("repositories", "Repository", inverse: "owner")
        }
        Entity("Repository", identity: "id") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Attribute("stars", .int32)
            Attribute("price", .decimal)
            Attribute("private", .bool)
            Relationship.toOne("owner", "User", inverse: "repositories")
            Relationship.toMany("topics", "Topic", inverse: "repositories", ordered: true)
        }
        Entity("Topic", identity: "name") {
            Attribute("name", .string)
            Relationship.toMany("repositories", "Repository", inverse: "topics")
        }
    }

    /// 7,000 repositories, 2,500 owners and 500 topics.
    static func payload() -> Data {
        var repositories: [String] = []
        for i in 0..<7000 {
            let user = i % 2500
            let topics = (0..<(i % 4)).map { #""topic-\#((i * 7 + $0 * 31) % 500)""# }
            let joined = 1_500_000_000.0 + Double(user) * 86_400.123
            repositories.append(#"""
            {"id": \#(i), "name": "repo-\#(i) ü", "stars": \#((i * 37) % 10_000), "price": "\#(i).\#(i % 100)", "private": \#(i % 3 == 0),
             "owner": {"id": \#(user), "login": "user\#(user)", "score": \#(Double(user) / 7), "joined": \#(joined)},
             "topics": [\#(topics.map { #"{"name": \#($0)}"# }.joined(separator: ", "))]}
            """#)
        }
        // Every topic appears at least once.
        repositories.append(#"{"id": 7000, "topics": [\#((0..<500).map { #"{"name": "topic-\#($0)"}"# }.joined(separator: ", "))]}"#)
        return Data(("[" + repositories.joined(separator: ",\n") + "]").utf8)
    }

    struct Graph: Equatable {
        var objects: [String: [IdentityKey: [String: Value]]] = [:]
        var links: [String: [IdentityKey: [IdentityKey]]] = [:]
    }

    func graph(_ client: Client) async throws -> Graph {
        var graph = Graph()
        for entity in client.schema.entities {
            let objects = try await client.fetch(Query(entity.name))
            func key(_ object: Object) -> IdentityKey { IdentityKey(entity.identity.map { object[$0]! }) }
            graph.objects[entity.name] = Dictionary(uniqueKeysWithValues: objects.map { (key($0), $0.values) })
            for relationship in entity.relationships {
                let destination = client.schema[relationship.destination]!
                let related = try await client.store.read { reader in
                    let map = try reader.related(relationship.name, of: objects.map(\.id))
                    return try map.mapValues { try reader.objects($0) }
                }
                var links: [IdentityKey: [IdentityKey]] = [:]
                for object in objects {
                    var targets = (related[object.id] ?? []).map { target in IdentityKey(destination.identity.map { target[$0]! }) }
                    if !relationship.isOrdered { targets.sort { $0.description < $1.description } }
                    if !targets.isEmpty { links[key(object)] = targets }
                }
                graph.links[entity.name + "." + relationship.name] = links
            }
        }
        return graph
    }

    /// In one batch, and in batches of 700 (mapped on a second thread while the last one is written).
    @Test(arguments: [10_000, 700])
    func tenThousandObjectsGiveIdenticalGraphs(batchSize: Int) async throws {
        let data = Self.payload()
        let directory = try TemporaryDirectory()
        let options = ImportOptions(batchSize: batchSize)
        let memory = try Client.Builder(schema: Self.schema).importOptions(options).build()
        let sqlite = try Client.Builder(schema: Self.schema).store(try SQLiteStore(path: directory.path())).importOptions(options).build()
        let a = try await memory.import(data, as: "Repository")
        let b = try await sqlite.import(data, as: "Repository")
        #expect(a.inserted.count == 10_001)
        #expect(b.inserted.count == a.inserted.count)
        #expect(a.diagnostics.isEmpty && b.diagnostics.isEmpty)
        let expected = try await graph(memory)
        let actual = try await graph(sqlite)
        #expect(actual.objects.mapValues(\.count) == ["User": 2500, "Repository": 7001, "Topic": 500])
        #expect(actual.links["Repository.topics"]?[IdentityKey(.int(7000))]?.count == 500)
        for entity in expected.objects.keys.sorted() {
            #expect(actual.objects[entity] == expected.objects[entity], "objects of \(entity)")
        }
        for relationship in expected.links.keys.sorted() {
            #expect(actual.links[relationship] == expected.links[relationship], "links of \(relationship)")
        }
        // Importing it again changes nothing in either store.
        let again = try await sqlite.import(data, as: "Repository")
        #expect(again.inserted.isEmpty && again.updated.isEmpty)
        #expect(try await graph(sqlite) == expected)
    }
}
