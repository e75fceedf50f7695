import Foundation
import Testing
import Tether
import TetherSQLite

/// Dates a store cannot keep faithfully are refused on every write path, with the same error on
/// both stores (issue 37, item 16): a NaN date read back as nil from SQLite and as NaN from the
/// in-memory store, and dates outside years 1 to 9999 were exported as bare numbers.
@Suite struct LocalWriteValueTests {
    static let schema = try! Schema {
        Entity("Event", identity: "id") {
            Attribute("id", .int64)
            Attribute("at", .date)
        }
    }

    static let unkeepable: [Date] = [
        Date(timeIntervalSince1970: .nan), Date(timeIntervalSince1970: .infinity), Date(timeIntervalSince1970: -.infinity),
        Date(timeIntervalSince1970: 253_402_300_800),   // 10000-01-01
        Date(timeIntervalSince1970: -62_135_596_801),   // before 0001-01-01
    ]

    @Test(arguments: ["memory", "sqlite"])
    func unkeepableDatesAreRefusedOnEveryWritePath(_ kind: String) async throws {
        let folder = try TemporaryDirectory()
        let store: any Store = kind == "memory" ? InMemoryStore() : try SQLiteStore(path: folder.path())
        let client = try Client.Builder(schema: Self.schema).store(store).build()
        let kept = try await client.insertLocally("Event", values: ["id": .int(1), "at": .date(Date(timeIntervalSince1970: 0))])
        for date in Self.unkeepable {
            await #expect(throws: StoreError.self) { try await client.insertLocally("Event", values: ["id": .int(2), "at": .date(date)]) }
            do {
                _ = try await client.updateLocally(kept.id, setting: ["at": .date(date)])
                Issue.record("\(date.timeIntervalSince1970) was stored")
            } catch let error as StoreError {
                #expect(error.kind == .invalidValue)
                #expect(error.description.contains("Event.at"))
            }
            try await store.write { writer in
                var batch = UpdateBatch(entity: "Event", attributes: ["at"])
                batch.append(kept.id, [.date(date)])
                #expect(throws: StoreError.self) { try writer.update(batch) }
            }
        }
        #expect(try await client.count(Query("Event")) == 1)
        #expect(try await client.object(kept.id)?["at"] == .date(Date(timeIntervalSince1970: 0)))
        // The edges of the range are kept.
        for edge in [Date(timeIntervalSince1970: 253_402_300_799), Date(timeIntervalSince1970: -62_135_596_800)] {
            let object = try await client.updateLocally(kept.id, setting: ["at": .date(edge)])
            #expect(object["at"] == .date(edge))
        }
    }
}
