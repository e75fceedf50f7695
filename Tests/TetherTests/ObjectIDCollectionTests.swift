import Foundation
import Testing
@testable import Tether
import TetherTestSupport


private func id(_ entity: String, _ row: Int64) -> ObjectID { ObjectID(entity: entity, rowID: row) }

@Suite struct ObjectIDSetTests {
    @Test func consecutiveInsertsFormOneRun() {
        var set = ObjectIDSet()
        for row in Int64(1)...10_000 { #expect(set.insert(id("User", row)).inserted) }
        #expect(set.count == 10_000)
        #expect(set.runCount == 1)
        #expect(set.rowIDRanges(of: "User") == [1...10_000])
        #expect(set.contains(id("User", 1)) && set.contains(id("User", 10_000)))
        #expect(!set.contains(id("User", 0)) && !set.contains(id("User", 10_001)) && !set.contains(id("Repo", 5)))
    }

    @Test func insertAndRemoveAnswerLikeSet() {
        var set: ObjectIDSet = [id("User", 1)]
        let again = set.insert(id("User", 1))
        #expect(!again.inserted)
        #expect(again.memberAfterInsert == id("User", 1))
        #expect(set.remove(id("User", 2)) == nil)
        #expect(set.remove(id("Repo", 1)) == nil)
        #expect(set.remove(id("User", 1)) == id("User", 1))
        #expect(set.isEmpty)
        #expect(set.entities.isEmpty)
        #expect(set == ObjectIDSet())
    }

    @Test func removeSplitsARunAndInsertJoinsIt() {
        var set = ObjectIDSet((1...10).map { id("User", $0) })
        set.remove(id("User", 5))
        #expect(set.rowIDRanges(of: "User") == [1...4, 6...10])
        set.remove(id("User", 1))
        set.remove(id("User", 10))
        #expect(set.rowIDRanges(of: "User") == [2...4, 6...9])
        #expect(set.count == 7)
        set.insert(id("User", 5))
        #expect(set.rowIDRanges(of: "User") == [2...9])
        set.insert(id("User", 11))
        set.insert(id("User", 0))
        #expect(set.rowIDRanges(of: "User") == [0...0, 2...9, 11...11])
        set.insert(id("User", 10))
        set.insert(id("User", 1))
        #expect(set.rowIDRanges(of: "User") == [0...11])
        #expect(set.count == 12)
    }

    @Test func iteratesByEntityNameThenRowID() {
        let ids = [id("User", 3), id("Repository", 9), id("User", 1), id("Label", 2), id("Repository", 1), id("User", 2)]
        let set = ObjectIDSet(ids)
        #expect(Array(set) == ids.sorted())
        #expect(set.entities == ["Label", "Repository", "User"])
        #expect(set.first == id("Label", 2))
        #expect(set.map(\.rowID) == [2, 1, 9, 1, 2, 3])
        #expect(set.description == "[Label#2, Repository#1, Repository#9, User#1...3]")
    }

    @Test func equalityIsSameElements() {
        let a: ObjectIDSet = [id("User", 1), id("User", 2), id("User", 3), id("Repo", 7)]
        var b = ObjectIDSet()
        for row in [3, 9, 1, 2] as [Int64] { b.insert(id("User", row)) }
        b.insert(id("Repo", 7))
        #expect(a != b)
        b.remove(id("User", 9))
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        // A set emptied of an entity equals one that never had it.
        b.insert(id("Zed", 1))
        b.remove(id("Zed", 1))
        #expect(a == b)
        #expect(Set([a, b]).count == 1)
    }

    @Test func extremeRowIDs() {
        var set: ObjectIDSet = [id("User", .max), id("User", .min), id("User", .max - 1), id("User", .min + 1)]
        #expect(set.rowIDRanges(of: "User") == [Int64.min...(Int64.min + 1), (Int64.max - 1)...Int64.max])
        #expect(set.remove(id("User", .max)) != nil)
        #expect(set.remove(id("User", .min)) != nil)
        #expect(Array(set) == [id("User", .min + 1), id("User", .max - 1)])
        let other: ObjectIDSet = [id("User", .max), id("User", .max - 1)]
        #expect(Array(set.union(other)) == [id("User", .min + 1), id("User", .max - 1), id("User", .max)])
        #expect(Array(other.subtracting(set)) == [id("User", .max)])
    }

    @Test func setAlgebraMatchesSet() {
        var rng = SeededRandom(seed: 7)
        for _ in 0..<50 {
            func randomIDs() -> [ObjectID] {
                (0..<Int.random(in: 0...60, using: &rng)).map { _ in
                    id(["A", "B", "C"].randomElement(using: &rng)!, Int64.random(in: 0..<40, using: &rng))
                }
            }
            let (x, y) = (randomIDs(), randomIDs())
            let (a, b) = (ObjectIDSet(x), ObjectIDSet(y))
            let (s, t) = (Set(x), Set(y))
            #expect(Array(a.union(b)) == s.union(t).sorted())
            #expect(Array(a.intersection(b)) == s.intersection(t).sorted())
            #expect(Array(a.subtracting(b)) == s.subtracting(t).sorted())
            #expect(Array(a.symmetricDifference(b)) == s.symmetricDifference(t).sorted())
            #expect(Array(a.union(y)) == s.union(t).sorted())
            #expect(Array(a.subtracting(y)) == s.subtracting(t).sorted())
            #expect(a.union(b).count == s.union(t).count)
            #expect(a.isSubset(of: b) == s.isSubset(of: t))
            #expect(a.isSuperset(of: b) == s.isSuperset(of: t))
            #expect(a.isDisjoint(with: b) == s.isDisjoint(with: t))
            #expect((a == b) == (s == t))
            var c = a
            c.formUnion(b)
            #expect(c == a.union(b))
            c.subtract(b)
            #expect(c == a.subtracting(b))
        }
    }

    @Test func randomOperationsMatchSet() {
        var rng = SeededRandom(seed: 42)
        var set = ObjectIDSet()
        var reference = Set<ObjectID>()
        for step in 0..<40_000 {
            let member = id(["Owner", "Repository"].randomElement(using: &rng)!, Int64.random(in: 0..<3_000, using: &rng))
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<5:
                let (a, b) = (set.insert(member), reference.insert(member))
                #expect(a.inserted == b.inserted)
            case 5..<8:
                #expect(set.remove(member) == reference.remove(member))
            default:
                #expect(set.contains(member) == reference.contains(member))
            }
            if step % 5_000 == 0 {
                #expect(Array(set) == reference.sorted())
            }
        }
        #expect(set.count == reference.count)
        #expect(Array(set) == reference.sorted())
        #expect(set == ObjectIDSet(reference.shuffled(using: &rng)))
    }

    @Test func manyRunsInRandomOrderMergeBack() {
        // Every other row id in random order (many runs, many chunks), then the gaps.
        var rng = SeededRandom(seed: 1)
        var set = ObjectIDSet()
        for row in stride(from: Int64(0), to: 100_000, by: 2).shuffled(using: &rng) { set.insert(id("Repository", row)) }
        #expect(set.runCount == 50_000)
        #expect(set.count == 50_000)
        #expect(set.contains(id("Repository", 99_998)) && !set.contains(id("Repository", 99_999)))
        for row in stride(from: Int64(1), to: 100_000, by: 2).shuffled(using: &rng) { set.insert(id("Repository", row)) }
        #expect(set.runCount == 1)
        #expect(set.rowIDRanges(of: "Repository") == [0...99_999])
        // Removing in random order splits and shrinks runs until nothing is left.
        for row in (Int64(0)..<100_000).shuffled(using: &rng) { set.remove(id("Repository", row)) }
        #expect(set.isEmpty && set.runCount == 0)
    }

    @Test func changeSetTakesSetsAndArrayLiterals() {
        let changes = ChangeSet(inserted: [id("User", 1), id("User", 2)], deleted: ObjectIDSet([id("Repo", 4)]))
        #expect(changes.entities == ["User", "Repo"])
        #expect(!changes.isEmpty)
        #expect(changes.inserted.runCount == 1)
        #expect(ChangeSet().isEmpty)
    }
}

@Suite struct ObjectIDListTests {
    @Test func consecutiveAppendsFormOneRun() {
        var list = ObjectIDList()
        for row in Int64(1)...10_000 { list.append(id("User", row)) }
        #expect(list.count == 10_000)
        #expect(list.runCount == 1)
        #expect(list[0] == id("User", 1))
        #expect(list[9_999] == id("User", 10_000))
        #expect(list.description == "[User#1...10000]")
    }

    @Test func keepsOrderAndDuplicates() {
        let ids = [id("Repo", 1), id("User", 1), id("Repo", 2), id("Repo", 3), id("User", 1), id("User", 2), id("Repo", 3)]
        let list = ObjectIDList(ids)
        #expect(Array(list) == ids)
        #expect(list.indices.map { list[$0] } == ids)
        #expect(list.runCount == 5)  // Repo#1, User#1, Repo#2...3, User#1...2, Repo#3
        #expect(list == ObjectIDList(ids))
        #expect(list != ObjectIDList(ids.reversed()))
        #expect(list.hashValue == ObjectIDList(ids).hashValue)
        #expect(Array(list.prefix(2)) == [id("Repo", 1), id("User", 1)])
        #expect(list.last == id("Repo", 3))
    }

    @Test func arrayLiteralsAndEmptiness() {
        var list: ObjectIDList = []
        #expect(list.isEmpty && list.first == nil && list.count == 0)
        list.append(id("User", 5))
        #expect(list == [id("User", 5)])
        list.append(contentsOf: [id("User", 6), id("User", 8)])
        #expect(list == [id("User", 5), id("User", 6), id("User", 8)])
        #expect(list.runCount == 2)
        list.removeAll()
        #expect(list == [])
    }

    @Test func extremeRowIDsDoNotOverflow() {
        let ids = [id("User", .max - 1), id("User", .max), id("User", .min), id("User", .min + 1)]
        let list = ObjectIDList(ids)
        #expect(Array(list) == ids)
        #expect(list.runCount == 2)
    }

    @Test func randomAppendsMatchArray() {
        var rng = SeededRandom(seed: 3)
        var list = ObjectIDList()
        var reference: [ObjectID] = []
        var next: [String: Int64] = ["Owner": 1, "Repository": 1]
        for _ in 0..<20_000 {
            let entity = Int.random(in: 0..<4, using: &rng) == 0 ? "Owner" : "Repository"
            // Mostly the next row id of the entity (as stores hand out), sometimes an earlier one.
            let row = Bool.random(using: &rng) || next[entity]! < 3
                ? next[entity]! : Int64.random(in: 1..<next[entity]!, using: &rng)
            if row == next[entity]! { next[entity]! += 1 }
            list.append(id(entity, row))
            reference.append(id(entity, row))
        }
        #expect(list.count == reference.count)
        #expect(Array(list) == reference)
        for _ in 0..<2_000 {
            let position = Int.random(in: 0..<reference.count, using: &rng)
            #expect(list[position] == reference[position])
        }
        #expect(list == ObjectIDList(reference))
        #expect(list.runCount < reference.count)
    }
}

@Suite struct RowStatusMapTests {
    @Test func randomUpdatesMatchADictionary() {
        var rng = SeededRandom(seed: 11)
        var map = RowStatusMap()
        var reference: [Int64: UInt8] = [:]
        let values: [UInt8?] = [0, 1, 2, 0x80, 0x81, 0x82, nil]
        for _ in 0..<20_000 {
            let row = Int64.random(in: -200..<2_000, using: &rng)
            if Bool.random(using: &rng) {
                let value = values.randomElement(using: &rng)!
                map[row] = value
                reference[row] = value
            }
            #expect(map[row] == reference[row])
        }
        for row in Int64(-300)..<2_100 { #expect(map[row] == reference[row]) }
    }
}

@Suite struct CompactImportBookkeepingTests {
    static let schema = try! Schema {
        Entity("Repository", identity: "id") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Relationship.toOne("owner", "User", inverse: "repositories")
        }
        Entity("User", identity: "id") {
            Attribute("id", .int64)
            Relationship.toMany("repositories", "Repository", inverse: "owner")
        }
    }

    /// The in-memory store numbers each entity's rows with its own counter (as SQLite does), so the
    /// repositories keep one run and the owners another, whatever the batches.
    @Test func aBigImportKeepsFewRuns() async throws {
        let client = try Client.Builder(schema: Self.schema).importOptions(ImportOptions(batchSize: 100)).build()
        let changes = client.store.changes()
        // 1,000 repositories of 10 owners, each owner first seen at repository 100 * k.
        let json = JSON.array((0..<1_000).map { i in
            ["id": .int(Int64(i)), "name": .string("r\(i)"), "owner": ["id": .int(Int64(i / 100))]]
        })
        let result = try await client.import(json, as: "Repository")
        #expect(result.objects.count == 1_000)
        #expect(result.objects.runCount == 1)
        #expect(result.objects.first == ObjectID(entity: "Repository", rowID: 1) && result.objects.last == ObjectID(entity: "Repository", rowID: 1_000))
        #expect(result.inserted.count == 1_010)
        // Payload order: each batch lists its first repository, then its owner, then the other 99
        // repositories: Repository#1, User#1, Repository#2...100, User#2, ... (21 runs).
        #expect(result.inserted.runCount == 21)
        #expect(result.inserted[0].entity == "Repository" && result.inserted[1].entity == "User")
        var iterator = changes.makeAsyncIterator()
        let change = try #require(await iterator.next())
        #expect(change.inserted.count == 1_010)
        // By entity, then row id: one run of repositories and one of owners.
        #expect(change.inserted.runCount == 2)
        #expect(Set(change.inserted) == Set(result.inserted))

        // Again, with one name changed: one updated, the rest unchanged, in payload order.
        var changed = json.arrayValue!
        changed[500] = ["id": .int(500), "name": .string("renamed"), "owner": ["id": .int(5)]]
        let again = try await client.import(JSON.array(changed), as: "Repository")
        #expect(again.objects == result.objects)
        #expect(again.inserted.isEmpty)
        #expect(again.updated == [result.objects[500]])
        #expect(again.unchanged.count == 1_009)
        let update = try #require(await iterator.next())
        #expect(update.updated == [result.objects[500]])
        #expect(update.inserted.isEmpty && update.deleted.isEmpty)
    }
}
