import Foundation
import Synchronization
import Testing
@testable import Tether

/// The two-thread handoff under imports of bytes and files: order, errors, and stopping.
@Suite struct ReadAheadTests {
    struct Failure: Error, Equatable { let at: Int }

    @Test func batchesGrowToTheBatchSize() {
        func sizes(_ batchSize: Int, _ count: Int) -> [Int] {
            var sizes = Importer.BatchSizes(batchSize)
            return (0..<count).map { _ in sizes.next() }
        }
        #expect(sizes(10_000, 6) == [1_250, 2_500, 5_000, 10_000, 10_000, 10_000])
        #expect(sizes(5, 5) == [1, 2, 4, 5, 5])
        #expect(sizes(1, 3) == [1, 1, 1])
    }

    @Test func itemsArriveInOrderThenTheProducersError() throws {
        var consumed: [Int] = []
        let error = #expect(throws: Failure.self) {
            try readAhead(produce: { emit in
                for i in 0..<100 { try emit(i) }
                throw Failure(at: 100)
            }, consume: { consumed.append($0) })
        }
        #expect(error == Failure(at: 100))
        #expect(consumed == Array(0..<100))
    }

    @Test func theProducerRunsAheadOnAnotherThread() throws {
        let produced = Atomic<Int>(0)
        var sawOverlap = false
        try readAhead(produce: { emit in
            for i in 0..<3 {
                produced.add(1, ordering: .sequentiallyConsistent)
                try emit(i)
            }
        }, consume: { item in
            guard item == 0 else { return }
            // While item 0 is being consumed, the producer makes item 1 (it would never come if
            // the two ran one after the other).
            let deadline = Date().addingTimeInterval(10)
            while produced.load(ordering: .sequentiallyConsistent) < 2 && Date() < deadline { usleep(100) }
            let count = produced.load(ordering: .sequentiallyConsistent)
            sawOverlap = count >= 2
        })
        #expect(sawOverlap)
    }

    /// A consumer error stops the producer at its next handoff, and `readAhead` returns only
    /// after the producer's thread is done (it may use memory that dies with the call).
    @Test func aConsumerErrorStopsTheProducerBeforeReturning() throws {
        let produced = Atomic<Int>(0)
        let finished = Atomic<Bool>(false)
        let error = #expect(throws: Failure.self) {
            try readAhead(produce: { emit in
                defer { finished.store(true, ordering: .sequentiallyConsistent) }
                for i in 0... {
                    produced.add(1, ordering: .sequentiallyConsistent)
                    try emit(i)
                }
            }, consume: { item in
                if item == 3 { throw Failure(at: 3) }
            })
        }
        #expect(error == Failure(at: 3))
        let producerDone = finished.load(ordering: .sequentiallyConsistent)
        let count = produced.load(ordering: .sequentiallyConsistent)
        #expect(producerDone)
        // The producer is never more than one item ahead: items 0 to 3 were consumed, 4 was offered.
        #expect(count <= 5)
    }

    @Test func manyImportsAtOnceDoNotDeadlock() async throws {
        let schema = try Schema { Entity("User") { Attribute("id", .int64); Attribute("login", .string) } }
        let text = "[" + (1...50).map { #"{"id": \#($0), "login": "u\#($0)"}"# }.joined(separator: ", ") + "]"
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<16 {
                group.addTask {
                    let client = try Client.Builder(schema: schema).importOptions(ImportOptions(batchSize: 4)).build()
                    return try await client.import(Data(text.utf8), as: "User").inserted.count
                }
            }
            for try await inserted in group { #expect(inserted == 50) }
        }
    }
}
