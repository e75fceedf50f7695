import Foundation
import Synchronization
import Testing
import Tether

/// Pending references are found by identity, never by reading them all (issue 38): what a page
/// import reads does not depend on how many pending references the store holds.
@Suite struct PendingReferenceCostTests {
    static let schema = try! Schema {
        Entity("Status", identity: "id") {
            Attribute("id", .string)
            Attribute("text", .string)
            Relationship.toOne("inReplyTo", "Status", inverse: "replies")
            Relationship.toMany("replies", "Status", inverse: "inReplyTo")
            Relationship.toMany("mentions", "Account", inverse: "mentionedIn", ordered: true)
        }
        Entity("Account", identity: "id") {
            Attribute("id", .string)
            Relationship.toMany("mentionedIn", "Status", inverse: "mentions")
        }
    }

    static func client(_ store: CountingStore) throws -> Client {
        try Client.Builder(schema: schema).store(store)
            .keyMapping(KeyOverrides([:], foreignKeys: ["Status": ["inReplyTo": "in_reply_to_id", "mentions": "mention_ids"]]))
            .build()
    }

    /// Objects read by one page: 40 statuses, some replying to statuses never fetched (pending),
    /// some replying to one an earlier page left pending, one bringing a status others wait for.
    static func pageReads(pending: Int) async throws -> (reads: Int, replies: Int) {
        let store = CountingStore()
        let client = try client(store)
        // The store holds `pending` references that never resolve.
        var background: [String] = []
        for i in 0..<pending { background.append(#"{"id": "b\#(i)", "in_reply_to_id": "gone\#(i)", "mention_ids": ["ghost\#(i)"]}"#) }
        _ = try await client.import(Data(("[" + background.joined(separator: ",") + "]").utf8), as: "Status")
        _ = try await client.import(Data(#"[{"id": "w1", "in_reply_to_id": "target"}, {"id": "w2", "mention_ids": ["a1", "late"]}]"#.utf8), as: "Status")

        var page: [String] = [#"{"id": "target", "text": "arrives"}"#, #"{"id": "late", "mention_ids": []}"#]
        for i in 0..<38 { page.append(#"{"id": "p\#(i)", "in_reply_to_id": "never\#(i % 5)", "mention_ids": ["a\#(i % 3)"]}"#) }
        let before = store.counts.objectsRead.load(ordering: .relaxed)
        _ = try await client.import(Data(("[" + page.joined(separator: ",") + "]").utf8), as: "Status")
        let reads = store.counts.objectsRead.load(ordering: .relaxed) - before

        let target = try #require(try await client.object("Status", identity: .string("target")))
        return (reads, try await client.related("replies", of: target.id).count)
    }

    @Test func whatAPageReadsDoesNotGrowWithThePendingReferencesStored() async throws {
        let few = try await Self.pageReads(pending: 1_000)
        let many = try await Self.pageReads(pending: 20_000)
        #expect(few.replies == 1, "the pending reply was linked")
        #expect(many.replies == 1)
        #expect(few.reads == many.reads, "objects read by one page with 1,000 and 20,000 pending references stored: \(few.reads) and \(many.reads)")
        #expect(few.reads < 200)
    }
}
