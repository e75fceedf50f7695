import Foundation
import Tether
import TetherSQLite

#if canImport(SQLite3)
import SQLite3
#else
import BenchSQLite3
#endif

/// The timeline workload's rows: insert, update and unchanged passes into both stores and the
/// hand-written baseline, the timeline refresh (pages of 40 statuses into a store of N), and the
/// graph check that holds Tether's store against the baseline's database after every pass.
extension RowWorker {
    func runTimelineBaseline(_ row: inout Measurement) throws {
        let directory = try TemporaryDirectory()
        let database = try TimelineBaseline.createDatabase(at: directory.file("baseline.sqlite"))
        if let setup = setupFile { try TimelineBaseline.importStatuses(load(setup), into: database) }
        let data = try load(measuredFile)
        try row.time { try TimelineBaseline.importStatuses(data, into: database) }
        let stored = try database.scalar("SELECT count(*) FROM statuses")
        if stored < request.size { throw BenchmarkError("baseline stored \(stored) statuses, expected at least \(request.size)") }
    }

    func runTimeline(_ row: inout Measurement, verify: Bool) async throws {
        let n = request.size
        let directory = try TemporaryDirectory()
        let store: any Store = kind == .timelineMemory ? InMemoryStore() : try SQLiteStore(path: directory.file("timeline.sqlite"))
        let client = try TimelineImport.client(store: store)
        if let setup = setupFile {
            _ = try await TimelineImport.importStatuses(load(setup), into: client)
            await (store as? SQLiteStore)?.checkpoint()
        }
        let data = try load(measuredFile)
        var pendingBefore = Set<String>()
        if verify { pendingBefore = try await TimelineGraph.pendingReferences(client) }
        let result = try await row.time { try await TimelineImport.importStatuses(data, into: client) }
        if verify && request.pass == "unchanged" {
            // Not a failure: the result reports nothing, but the store may have rewritten them.
            let after = try await TimelineGraph.pendingReferences(client)
            let rewritten = after.subtracting(pendingBefore).count
            if rewritten > 0 {
                FileHandle.standardError.write(Data(("note: the unchanged re-import deleted and inserted again \(rewritten) "
                    + "of \(after.count) pending references (\(pendingBefore.count) before)\n").utf8))
            }
        }
        let statuses = { (list: ObjectIDList) in list.reduce(0) { $0 + ($1.entity == "Status" ? 1 : 0) } }
        switch request.pass {
        case "insert":
            if statuses(result.inserted) < n { throw BenchmarkError("Tether inserted \(statuses(result.inserted)) statuses, expected at least \(n)") }
        case "update":
            if statuses(result.updated) == 0 { throw BenchmarkError("Tether updated no status") }
        default:
            if !result.updated.isEmpty || !result.inserted.isEmpty || !result.deleted.isEmpty {
                throw BenchmarkError("an unchanged re-import changed something: inserted \(TimelineGraph.byEntity(result.inserted)), "
                    + "updated \(TimelineGraph.byEntity(result.updated)), deleted \(TimelineGraph.byEntity(result.deleted))")
            }
        }
        if verify {
            // The same payloads through the baseline (not timed), then the two graphs compared.
            let database = try TimelineBaseline.createDatabase(at: directory.file("check.sqlite"))
            if let setup = setupFile { try TimelineBaseline.importStatuses(load(setup), into: database) }
            try TimelineBaseline.importStatuses(data, into: database)
            try await TimelineGraph.check(client, against: database, sample: 400)
        }
    }

    /// A store holding N statuses (the first payload), then pages of 40 statuses as a home
    /// timeline refresh gives them: 36 new ones, then 4 already stored with new counters; one
    /// import a page, one duration a page. The Tether rows' first run ends with the graph check.
    func runTimelineRefresh(_ row: inout Measurement, verify: Bool) async throws {
        let directory = try TemporaryDirectory()
        let pages = TimelineRefresh.pages(size: request.size, seed: request.seed)
        let clock = ContinuousClock()
        if kind == .timelineRefreshFloor {
            try await runPageFloor(&row, first: load(request.first), pages: pages, client: { try TimelineImport.client(store: $0) },
                                   importPage: { _ = try await TimelineImport.importStatuses($0, into: $1) })
            return
        }
        if kind == .timelineRefreshBaseline {
            let database = try TimelineBaseline.createDatabase(at: directory.file("baseline.sqlite"))
            try TimelineBaseline.importStatuses(load(request.first), into: database)
            let statements = try TimelineBaseline.Statements(database)
            for page in pages {
                let start = clock.now
                try TimelineBaseline.importStatuses(page, into: database, statements: statements)
                row.durations.append(clock.now - start)
            }
            return
        }
        let store: any Store = kind == .timelineRefreshMemory ? InMemoryStore() : try SQLiteStore(path: directory.file("refresh.sqlite"))
        let client = try TimelineImport.client(store: store)
        _ = try await TimelineImport.importStatuses(load(request.first), into: client)
        await (store as? SQLiteStore)?.checkpoint()
        for page in pages {
            let start = clock.now
            let result = try await TimelineImport.importStatuses(page, into: client)
            row.durations.append(clock.now - start)
            let inserted = result.inserted.reduce(0) { $0 + ($1.entity == "Status" ? 1 : 0) }
            if inserted < TimelineRefresh.newPerPage {
                throw BenchmarkError("a page inserted \(inserted) statuses, expected at least \(TimelineRefresh.newPerPage)")
            }
        }
        if verify {
            let database = try TimelineBaseline.createDatabase(at: directory.file("check.sqlite"))
            try TimelineBaseline.importStatuses(load(request.first), into: database)
            for page in pages { try TimelineBaseline.importStatuses(page, into: database) }
            try await TimelineGraph.check(client, against: database, sample: 400)
        }
    }
}

/// The timeline refresh's shape: pages of 40 statuses, 36 new and 4 stored ones changed.
enum TimelineRefresh {
    static let pageCount = 100
    static let pageSize = 40
    static let newPerPage = 36

    /// Page p: statuses N + 36p ..< N + 36(p + 1), then 4 stored statuses spread over the store;
    /// all in version 2 + p (the stored ones' counters, polls and some profiles change each page).
    static func pages(size n: Int, seed: UInt64) -> [Data] {
        (0..<pageCount).map { p in
            let fresh = (0..<newPerPage).map { n + p * newPerPage + $0 }
            let repeated = (0..<(pageSize - newPerPage)).map { ((p * (pageSize - newPerPage) + $0) * 7_919) % n }
            return TimelineWorkload.page(fresh + repeated, count: n, seed: seed, version: { _ in 2 + p })
        }
    }
}

/// The graph check: Tether's store, read back through Tether's API, against the baseline's
/// database: the count of every entity (owned objects included), and for a sample of statuses
/// and accounts their attributes and links.
enum TimelineGraph {
    static let tables = [
        "Status": "statuses", "Account": "accounts", "Tag": "tags", "MediaAttachment": "media", "Field": "account_fields",
        "Emoji": "account_emojis", "Card": "cards", "Poll": "polls", "PollOption": "poll_options",
    ]

    static func byEntity(_ list: some Sequence<ObjectID>) -> String {
        var counts: [String: Int] = [:]
        for id in list { counts[id.entity, default: 0] += 1 }
        return counts.isEmpty ? "nothing" : counts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
    }

    /// The stored pending references, one string each: the object of Tether's own entity that
    /// keeps it (`_TetherPendingTarget`, one per object named and not stored) and the reference
    /// (source and relationship), so that one deleted and inserted again reads as another.
    static func pendingReferences(_ client: Client) async throws -> Set<String> {
        var references = Set<String>()
        for record in (try? await client.fetch(Query("_TetherPendingTarget"))) ?? [] {
            guard case .string(let text)? = record["references"],
                let entries = try? JSONDecoder().decode([[String]].self, from: Data(text.utf8)) else { continue }
            for entry in entries { references.insert("\(record.id) \(entry.joined(separator: " "))") }
        }
        return references
    }

    static func check(_ client: Client, against database: SQLiteDatabase, sample: Int) async throws {
        var problems: [String] = []
        func differ(_ what: String, _ tether: some CustomStringConvertible, _ baseline: some CustomStringConvertible) {
            if problems.count < 20 { problems.append("\(what): Tether \(tether), baseline \(baseline)") }
        }
        // Counts per entity.
        var counts: [String] = []
        for entity in TimelineImport.entities {
            let tether = try await client.count(Query(entity))
            let baseline = Int(try database.scalar("SELECT count(*) FROM \(tables[entity]!)"))
            counts.append("\(entity) \(tether)")
            if tether != baseline { differ("count of \(entity)", tether, baseline) }
        }
        // The reply targets not stored are exactly Tether's pending references.
        let pending = try await pendingReferences(client).count
        let missing = Int(try database.scalar(
            "SELECT count(*) FROM statuses WHERE in_reply_to_id IS NOT NULL AND in_reply_to_id NOT IN (SELECT id FROM statuses)"))
        counts.append("pending references \(pending)")
        if pending != missing { differ("pending reply targets", pending, missing) }
        // A sample of statuses, boosted ones among them.
        let ids = try database.rows("SELECT id FROM statuses ORDER BY id").map { $0[0]! }
        for id in stride(from: 0, to: ids.count, by: max(1, ids.count / sample)).map({ ids[$0] }) {
            guard let status = try await client.object("Status", identity: .string(id)) else {
                differ("status \(id)", "missing", "stored")
                continue
            }
            func related(_ relationship: String, _ key: String = "id") async throws -> [String] {
                try await client.related(relationship, of: status.id).map { $0[key, as: String.self] ?? "?" }
            }
            let row = try database.rows(
                """
                SELECT content, favourites_count, reblogs_count, replies_count, spoiler_text, in_reply_to_account_id,
                    CAST(edited_at AS INTEGER), account_id, reblog_id, in_reply_to_id,
                    (SELECT count(*) FROM statuses t WHERE t.id = s.in_reply_to_id)
                FROM statuses s WHERE id = ?
                """, [id])[0]
            let values: [String?] = [
                status["content", as: String.self], status["favouritesCount", as: Int64.self].map { "\($0)" },
                status["reblogsCount", as: Int64.self].map { "\($0)" }, status["repliesCount", as: Int64.self].map { "\($0)" },
                status["spoilerText", as: String.self], status["inReplyToAccountID", as: String.self],
                status["editedAt", as: Date.self].map { "\(Int64($0.timeIntervalSince1970))" },
            ]
            for (k, name) in ["content", "favouritesCount", "reblogsCount", "repliesCount", "spoilerText", "inReplyToAccountID", "editedAt"].enumerated()
            where values[k] != row[k] {
                differ("status \(id) \(name)", values[k] ?? "nil", row[k] ?? "nil")
            }
            let account = try await related("account")
            if account != [row[7]!] { differ("status \(id) account", account, [row[7]!]) }
            let reblog = try await related("reblog")
            if reblog != (row[8].map { [$0] } ?? []) { differ("status \(id) reblog", reblog, row[8] ?? "nil") }
            // The reply target: linked when the baseline stores it, else none (pending).
            let reply = try await related("inReplyTo")
            let expectedReply = row[9].flatMap { row[10] == "1" ? [$0] : nil } ?? []
            if reply != expectedReply { differ("status \(id) inReplyTo (in_reply_to_id \(row[9] ?? "nil"))", reply, expectedReply) }
            let mentions = try await related("mentions").sorted()
            let baseMentions = try database.rows("SELECT account_id FROM status_mentions WHERE status_id = ? ORDER BY account_id", [id]).map { $0[0]! }
            if mentions != baseMentions { differ("status \(id) mentions", mentions, baseMentions) }
            let tags = try await related("tags", "name").sorted()
            let baseTags = try database.rows("SELECT tag_name FROM status_tags WHERE status_id = ? ORDER BY tag_name", [id]).map { $0[0]! }
            if tags != baseTags { differ("status \(id) tags", tags, baseTags) }
            let media = try await related("mediaAttachments")
            let baseMedia = try database.rows("SELECT id FROM media WHERE status_id = ? ORDER BY position", [id]).map { $0[0]! }
            if media != baseMedia { differ("status \(id) media", media, baseMedia) }
            let card = try await client.related("card", of: status.id).map { "\($0["url", as: String.self] ?? "nil") \($0["title", as: String.self] ?? "nil")" }
            let baseCard = try database.rows("SELECT url || ' ' || title FROM cards WHERE status_id = ?", [id]).map { $0[0]! }
            if card != baseCard { differ("status \(id) card", card, baseCard) }
            var poll: [String] = []
            for object in try await client.related("poll", of: status.id) {
                poll.append("votes \(object["votesCount", as: Int64.self].map { "\($0)" } ?? "nil")")
                for option in try await client.related("options", of: object.id) {
                    poll.append("\(option["title", as: String.self] ?? "nil"): \(option["votesCount", as: Int64.self].map { "\($0)" } ?? "nil")")
                }
            }
            var basePoll = try database.rows("SELECT 'votes ' || votes_count FROM polls WHERE status_id = ?", [id]).map { $0[0]! }
            basePoll += try database.rows(
                "SELECT title || ': ' || votes_count FROM poll_options WHERE status_id = ? ORDER BY position", [id]).map { $0[0]! }
            if poll != basePoll { differ("status \(id) poll", poll, basePoll) }
        }
        // A sample of accounts: their owned fields (in order) and emojis.
        let accounts = try database.rows("SELECT id, followers_count FROM accounts ORDER BY id")
        for row in stride(from: 0, to: accounts.count, by: max(1, accounts.count / (sample / 2))).map({ accounts[$0] }) {
            let id = row[0]!
            guard let account = try await client.object("Account", identity: .string(id)) else {
                differ("account \(id)", "missing", "stored")
                continue
            }
            let followers = account["followersCount", as: Int64.self].map { "\($0)" }
            if followers != row[1] { differ("account \(id) followersCount", followers ?? "nil", row[1] ?? "nil") }
            let fields = try await client.related("fields", of: account.id).map {
                "\($0["name", as: String.self] ?? "nil")=\($0["value", as: String.self] ?? "nil")"
            }
            let baseFields = try database.rows(
                "SELECT name || '=' || value FROM account_fields WHERE account_id = ? ORDER BY position", [id]).map { $0[0]! }
            if fields != baseFields { differ("account \(id) fields", fields, baseFields) }
            let emojis = try await client.related("emojis", of: account.id).map { $0["shortcode", as: String.self] ?? "nil" }.sorted()
            let baseEmojis = try database.rows(
                "SELECT shortcode FROM account_emojis WHERE account_id = ? ORDER BY shortcode", [id]).map { $0[0]! }
            if emojis != baseEmojis { differ("account \(id) emojis", emojis, baseEmojis) }
        }
        if !problems.isEmpty {
            throw BenchmarkError("GRAPH CHECK FAILED: Tether's store and the baseline differ (counts: \(counts.joined(separator: ", "))):\n    "
                + problems.joined(separator: "\n    "))
        }
        FileHandle.standardError.write(Data("graph check passed: \(counts.joined(separator: ", "))\n".utf8))
    }
}

extension SQLiteDatabase {
    /// The rows of `sql` with `arguments` bound in order, every column as text (nil for NULL).
    func rows(_ sql: String, _ arguments: [String] = []) throws -> [[String?]] {
        let statement = try prepare(sql)
        for (k, argument) in arguments.enumerated() { statement.bind(Int32(k + 1), argument) }
        var rows: [[String?]] = []
        let columns = sqlite3_column_count(statement.handle)
        while true {
            let step = sqlite3_step(statement.handle)
            if step == SQLITE_DONE { break }
            guard step == SQLITE_ROW else { throw Failure(message: lastError) }
            rows.append((0..<columns).map { column in
                sqlite3_column_text(statement.handle, column).map { String(cString: $0) }
            })
        }
        return rows
    }
}
