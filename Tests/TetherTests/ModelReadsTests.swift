import Foundation
import Testing
@testable import Tether

/// What typed reads remember for typed saves (`ModelReads`): each read's rows as one batch,
/// searched when a save asks, bounded by the rows kept.
@Suite struct ModelReadsTests {
    static let names = ["login", "email"]

    static func id(_ row: Int64, _ entity: String = "User") -> ObjectID { ObjectID(entity: entity, rowID: row) }

    /// A row read of users `rows` (in that order), each with the login `"u<row>"` and `email`.
    static func read(_ rows: [Int64], email: String) -> ([ObjectID], ModelReads.Batch) {
        let ids = rows.map { id($0) }
        let values: [Value?] = rows.flatMap { [Value.string("u\($0)"), .string(email)] as [Value?] }
        return (ids, ModelReads.Batch(names: names, values: values, count: ids.count))
    }

    static func record(_ reads: ModelReads, _ rows: [Int64], email: String) {
        let (ids, batch) = read(rows, email: email)
        reads.record(ids, batch)
    }

    static func emails(_ reads: ModelReads, _ row: Int64) -> [Value??] {
        reads.states(of: id(row)).map { $0.value(of: "email") }
    }

    @Test func aReadIsFoundPerObjectInRowOrderOrNot() {
        let reads = ModelReads()
        Self.record(reads, Array(1...5), email: "ordered")
        Self.record(reads, [9, 7, 8], email: "unordered")
        let state = reads.states(of: Self.id(2)).first
        #expect(state?.value(of: "login") == .some(.string("u2")))
        #expect(state?.value(of: "email") == .some(.string("ordered")))
        #expect(state?.value(of: "name") == nil)   // not read: says nothing
        #expect(Self.emails(reads, 7) == [.some(.string("unordered"))])
        #expect(reads.states(of: Self.id(6)).isEmpty)
        #expect(reads.states(of: Self.id(2, "Repository")).isEmpty)
    }

    @Test func theSameObjectsReadAgainWithTheSameValuesAddNothing() {
        let reads = ModelReads()
        for _ in 0..<100 {
            Self.record(reads, Array(1...50), email: "a@x")
            Self.record(reads, Array(51...60), email: "b@x")
        }
        #expect(reads.keptRows == 60)
        // One value changed: the read is kept, beside the one before it.
        let (ids, _) = Self.read(Array(1...50), email: "a@x")
        var values: [Value?] = (1...50).flatMap { [Value.string("u\($0)"), .string("a@x")] as [Value?] }
        values[1] = .string("c@x")
        reads.record(ids, ModelReads.Batch(names: Self.names, values: values, count: 50))
        #expect(reads.keptRows == 110)
        #expect(Self.emails(reads, 1) == [.some(.string("a@x")), .some(.string("c@x"))])
        #expect(Self.emails(reads, 2) == [.some(.string("a@x"))])   // the same state in both reads: once
    }

    @Test func eachDistinctStateIsFoundOldestFirstUpToTheLimitPerObject() {
        let reads = ModelReads(statesPerObject: 3)
        for email in ["a", "b", "c", "d", "b"] { Self.record(reads, [1], email: email) }
        // The three newest distinct states.
        #expect(Self.emails(reads, 1) == [.some(.string("c")), .some(.string("d")), .some(.string("b"))])
    }

    @Test func pastTheCapacityTheOldestReadsAreForgottenAndTheNewestKept() {
        let reads = ModelReads(capacity: 100)
        for start in stride(from: Int64(1), through: 201, by: 50) { Self.record(reads, Array(start...(start + 49)), email: "e") }
        #expect(reads.keptRows == 100)
        #expect(reads.states(of: Self.id(150)).isEmpty)
        #expect(reads.states(of: Self.id(151)).count == 1)
        #expect(reads.states(of: Self.id(250)).count == 1)
        // A read larger than the capacity is kept alone.
        Self.record(reads, Array(1000...1300), email: "big")
        #expect(reads.keptRows == 301)
        #expect(reads.states(of: Self.id(250)).isEmpty)
        #expect(Self.emails(reads, 1300) == [.some(.string("big"))])
    }

    @Test func forgettingAnObjectOrSomePropertiesCoversReadsBeforeItOnly() {
        let reads = ModelReads()
        Self.record(reads, [1, 2], email: "a@x")
        reads.forget(["email"], of: Self.id(1))
        #expect(reads.states(of: Self.id(1)).first?.value(of: "email") == nil)
        #expect(reads.states(of: Self.id(1)).first?.value(of: "login") == .some(.string("u1")))
        #expect(Self.emails(reads, 2) == [.some(.string("a@x"))])
        // The same read again after the forgetting is a new read: it says the email again.
        Self.record(reads, [1, 2], email: "a@x")
        #expect(reads.keptRows == 4)
        #expect(Self.emails(reads, 1) == [nil, .some(.string("a@x"))])
        reads.forget(Self.id(1))
        #expect(reads.states(of: Self.id(1)).isEmpty)
        #expect(reads.states(of: Self.id(2)).count == 1)
        Self.record(reads, [1], email: "after the save")
        #expect(Self.emails(reads, 1) == [.some(.string("after the save"))])
    }

    @Test func objectReadsKeepEveryAttributeAndTheirToOneTargets() {
        let reads = ModelReads()
        let repository = Object(id: Self.id(7, "Repository"), values: ["name": .string("tether")])
        let owner = Self.id(3)
        reads.record([repository], toOne: [repository.id: ["owner": owner]])
        let state = reads.states(of: repository.id).first
        #expect(state?.value(of: "name") == .some(.string("tether")))
        #expect(state?.value(of: "description") == .some(nil))   // an object read says what is unset
        #expect(state?.leads("owner", to: owner) == true)
        #expect(state?.leads("owner", to: Self.id(4)) == false)
        reads.forget(["owner"], of: repository.id)
        #expect(reads.states(of: repository.id).first?.leads("owner", to: owner) == false)
    }

    @Test func manySmallReadsStayBoundedAndSearchable() {
        let reads = ModelReads(capacity: 1000)
        for row in Int64(1)...5000 { Self.record(reads, [row], email: "e\(row)") }
        #expect(reads.keptRows == 1000)
        #expect(reads.states(of: Self.id(4000)).isEmpty)
        #expect(Self.emails(reads, 4001) == [.some(.string("e4001"))])
        for row in Int64(1)...3000 { reads.forget(Self.id(row)) }   // what forgetting keeps is pruned too
        Self.record(reads, [1], email: "x")
        #expect(Self.emails(reads, 1) == [.some(.string("x"))])
    }

    /// A row read through a `RowRecorder`, as ModelReader takes a query's rows.
    static func readRows(_ reads: ModelReads, _ rows: [Int64], email: (Int64) -> String, query: Int = 1) -> ModelReads.RowRecorder {
        var recorder = ModelReads.RowRecorder(names: names, candidate: reads.kept(query: query))
        for row in rows {
            let values: [Value?] = [.string("u\(row)"), .string(email(row))]
            recorder.add(id(row), values[...])
        }
        reads.record(recorder, query: query)
        return recorder
    }

    @Test func aQueryReadAgainComparesItsRowsAsTheyComeAndCopiesFromTheFirstDifference() {
        let reads = ModelReads()
        let first = Self.readRows(reads, Array(1...100), email: { _ in "a" })
        #expect(first.unchanged == nil)
        #expect(reads.keptRows == 100)
        // The same rows: nothing copied, nothing added.
        let again = Self.readRows(reads, Array(1...100), email: { _ in "a" })
        #expect(again.unchanged != nil)
        #expect(again.values.isEmpty)
        #expect(reads.keptRows == 100)
        // Row 60 changed: the read is kept whole (the 59 rows before it copied from the kept batch).
        let changed = Self.readRows(reads, Array(1...100), email: { $0 == 60 ? "b" : "a" })
        #expect(changed.unchanged == nil)
        #expect(changed.ids == (1...100).map { Self.id($0) })
        #expect(changed.values.count == 200)
        #expect(reads.keptRows == 200)
        #expect(Self.emails(reads, 60) == [.some(.string("a")), .some(.string("b"))])
        #expect(Self.emails(reads, 59) == [.some(.string("a"))])
        // Fewer rows, or other objects, are not the kept read either.
        #expect(Self.readRows(reads, Array(1...99), email: { $0 == 60 ? "b" : "a" }).unchanged == nil)
        #expect(Self.readRows(reads, Array(2...101), email: { _ in "a" }, query: 2).unchanged == nil)
        #expect(Self.emails(reads, 101) == [.some(.string("a"))])
    }

    @Test func anUnchangedReadAfterASaveStatesTheValuesAgain() {
        let reads = ModelReads()
        _ = Self.readRows(reads, [1, 2], email: { _ in "a" })
        reads.forget(Self.id(1))
        let again = Self.readRows(reads, [1, 2], email: { _ in "a" })
        #expect(again.unchanged != nil)   // compared, not copied
        #expect(Self.emails(reads, 1) == [.some(.string("a"))])   // yet read after the save: it counts
    }
}
