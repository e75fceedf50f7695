import Foundation
import Testing
import Tether
@testable import TetherSQLite

/// The SQLite store writes an import's links in set operations: the statements it runs per object
/// do not grow with the number of objects, and the work per link does not grow with the number of
/// links its target already has (a label shared by thousands of issues). Counted with the writing
/// connection's statement meter (statements run, SQLite virtual-machine steps), not timed.
@Suite struct LinkWriteCostTests {
    static let schema = try! Schema {
        Entity("Issue", identity: "id") {
            Attribute("id", .int64)
            Attribute("title", .string)
            Relationship.toOne("user", "User", inverse: "issues")
            Relationship.toMany("labels", "Label", inverse: "issues", ordered: true)
            Relationship.toMany("assignees", "User", inverse: "assignments")
        }
        Entity("User", identity: "id") {
            Attribute("id", .int64)
            Relationship.toMany("issues", "Issue", inverse: "user")
            Relationship.toMany("assignments", "Issue", inverse: "assignees")
        }
        Entity("Label", identity: "id") {
            Attribute("id", .int64)
            Relationship.toMany("issues", "Issue", inverse: "labels")
        }
    }

    /// Issues `first ..< first + count`, each with a user, 1-3 of five shared labels and 0-2 assignees;
    /// `version` changes the labels and assignees.
    static func issues(_ range: Range<Int>, version: Int = 0) -> JSON {
        .array(range.map { i in
            let labels = (0..<(1 + (i + version) % 3)).map { JSON.object(["id": .int(Int64((i + $0 * 2 + version) % 5))]) }
            let assignees = (0..<((i + version) % 3)).map { JSON.object(["id": .int(Int64(100 + (i * 7 + $0 + version) % 40))]) }
            return .object(["id": .int(Int64(i)), "title": .string("issue \(i)"), "user": .object(["id": .int(Int64(100 + i % 40))]),
                            "labels": .array(labels), "assignees": .array(assignees)])
        })
    }

    /// The statements and steps of importing `payload` into `store`.
    static func metered(_ store: SQLiteStore, _ client: Client, _ payload: JSON) async throws -> (statements: Int, steps: Int, result: ImportResult, bySQL: String) {
        store.meterWrites(true)
        defer { store.meterWrites(false) }
        let result = try await client.import(payload, as: "Issue")
        #expect(result.diagnostics.isEmpty)
        let meter = store.writeMeter
        return (meter.statements, meter.steps, result, store.writeMeterBySQL)
    }

    @Test func statementsPerObjectDoNotGrowWithTheNumberOfObjects() async throws {
        var perObject: [Int: Double] = [:]
        for n in [300, 3_000] {
            let directory = try TemporaryDirectory()
            let store = try SQLiteStore(path: directory.path())
            let client = try Client.Builder(schema: Self.schema).store(store).build()
            let insert = try await Self.metered(store, client, Self.issues(0..<n))
            #expect(insert.result.inserted.count >= n)
            // Every issue's labels and assignees change: the links that go and come.
            let update = try await Self.metered(store, client, Self.issues(0..<n, version: 1))
            #expect(update.result.updated.filter { $0.entity == "Issue" }.count == n)
            perObject[n] = Double(insert.statements + update.statements) / Double(n)
            // The same payload again writes nothing: no link, no row.
            let again = try await Self.metered(store, client, Self.issues(0..<n, version: 1))
            #expect(again.result.updated.isEmpty && again.result.inserted.isEmpty)
            #expect(store.writingStatements == 0, "an unchanged import wrote:\n\(again.bySQL)")
            // A few dozen links per statement: far fewer statements than objects.
            if n == 3_000 {
                #expect(insert.statements < n / 5, "insert of \(n): \(insert.statements) statements\n\(insert.bySQL)")
                #expect(update.statements < n / 4, "update of \(n): \(update.statements) statements\n\(update.bySQL)")
            }
            // The graph is the payload's.
            let issue = try #require(try await client.object("Issue", identity: .int(7)))
            #expect(try await client.related("labels", of: issue.id).map { $0["id"] } == [.int(3), .int(0), .int(2)])
            #expect(Set(try await client.related("assignees", of: issue.id).map { $0["id"] }) == [.int(110), .int(111)])
        }
        #expect(perObject[3_000]! <= perObject[300]! * 1.1, "statements per object: \(perObject)")
    }

    @Test func workPerLinkDoesNotGrowWithTheLinksItsTargetHas() async throws {
        var stepsPerLink: [Int: Double] = [:]
        for fanIn in [200, 8_000] {
            let directory = try TemporaryDirectory()
            let store = try SQLiteStore(path: directory.path())
            let client = try Client.Builder(schema: Self.schema).store(store).build()
            // One label shared by `fanIn` issues ...
            let shared = JSON.array((0..<fanIn).map { .object(["id": .int(Int64($0)), "labels": .array([.object(["id": .int(1)])])]) })
            _ = try await client.import(shared, as: "Issue")
            // ... then 200 new issues linked to it, each with its own label after it.
            let new = JSON.array((0..<200).map { i in
                .object(["id": .int(Int64(1_000_000 + i)), "labels": .array([.object(["id": .int(1)]), .object(["id": .int(Int64(10 + i))])])])
            })
            let metered = try await Self.metered(store, client, new)
            stepsPerLink[fanIn] = Double(metered.steps) / 400
            let label = try #require(try await client.object("Label", identity: .int(1)))
            let issues = try await client.related("issues", of: label.id)
            #expect(issues.count == fanIn + 200)
            // The new issues come last among the label's, in the order they were linked.
            let expected: [Value?] = (0..<200).map { Value.int(Int64(1_000_000 + $0)) }
            let newest: [Value?] = issues.suffix(200).map { $0["id"] }
            #expect(newest == expected)
        }
        #expect(stepsPerLink[8_000]! < stepsPerLink[200]! * 1.25, "SQLite steps per link: \(stepsPerLink)")
    }

    /// A file of format 1 (join tables keyed by `(a, b)`, indexed on `b`) or 2 (also indexed on
    /// `(b, b_pos)` and `(a, a_pos)`, every side with positions): a read-only store reads it as it
    /// is; a writable one rebuilds its join tables in their shapes (format 3), keeping the links and
    /// the order of the ordered side, even positions that tie.
    @Test(arguments: [1, 2]) func aFileOfAnEarlierFormatIsRebuilt(format: Int) async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path()
        do {
            let store = try SQLiteStore(path: path)
            let client = try Client.Builder(schema: Self.schema).store(store).build()
            _ = try await client.import(Self.issues(0..<20), as: "Issue")
            // Back to the earlier format, as Tether wrote join tables then.
            try await store.writeSQL { db in
                for table in ["Issue.labels", "Issue.assignees"] {
                    try db.execute(#"CREATE TABLE "old" ("a" INTEGER NOT NULL, "b" INTEGER NOT NULL, "a_pos" INTEGER NOT NULL, "b_pos" INTEGER NOT NULL, PRIMARY KEY ("a", "b")) WITHOUT ROWID"#)
                    try db.execute("""
                        INSERT INTO "old" SELECT "a", "b", row_number() OVER (PARTITION BY "a" ORDER BY "a_pos", "b") - 1,
                            row_number() OVER (PARTITION BY "b" ORDER BY "a") - 1 FROM "\(table)"
                        """)
                    try db.execute("DROP TABLE \"\(table)\"")
                    try db.execute("ALTER TABLE \"old\" RENAME TO \"\(table)\"")
                    if format == 1 {
                        try db.execute("CREATE INDEX \"_tether_join_\(table)\" ON \"\(table)\" (\"b\")")
                    } else {
                        try db.execute("CREATE INDEX \"_tether_join_\(table)\" ON \"\(table)\" (\"b\", \"b_pos\")")
                        try db.execute("CREATE INDEX \"_tether_join_a_\(table)\" ON \"\(table)\" (\"a\", \"a_pos\")")
                    }
                }
                // Issue 7's labels (2, 4) with the same position: the rebuild orders them by the label's
        // row (label 2 was stored first).
                try db.execute(#"UPDATE "Issue.labels" SET "a_pos" = 5 WHERE "a" = (SELECT "rowid" FROM "Issue" WHERE "id" = 7)"#)
                guard case .string(let layout)? = try db.rows("SELECT value FROM _tether_schema WHERE key = 'layout'").first?["value"] else {
                    Issue.record("no layout")
                    return
                }
                try db.execute("UPDATE _tether_schema SET value = ? WHERE key = 'layout'",
                               [.string(layout.replacingOccurrences(of: "\"format\":3", with: "\"format\":\(format)"))])
            }
            store.close()
        }
        // A read-only store reads it as it is.
        let readOnly = try SQLiteStore(path: path, readOnly: true)
        let reader = try Client.Builder(schema: Self.schema).store(readOnly).build()
        let issue = try #require(try await reader.object("Issue", identity: .int(7)))
        // (In either order: their positions tie.)
        #expect(Set(try await reader.related("labels", of: issue.id).map { $0["id"] }) == [.int(2), .int(4)])
        let readOnlyAssignees = try await reader.related("assignees", of: issue.id).map { $0["id"] }
        readOnly.close()
        // A writable store rebuilds it.
        let store = try SQLiteStore(path: path)
        let client = try Client.Builder(schema: Self.schema).store(store).build()
        let schema = try await store.readSQL { db in
            try db.rows("SELECT name, sql FROM sqlite_master WHERE name LIKE 'Issue.%' OR name LIKE '_tether_join%' ORDER BY name")
                .map { row -> String in
                    guard case .string(let name)? = row["name"], case .string(let sql)? = row["sql"] else { return "?" }
                    return "\(name): \(sql)"
                }
        }
        #expect(schema == [
            #"Issue.assignees: CREATE TABLE "Issue.assignees" ("a" INTEGER NOT NULL, "b" INTEGER NOT NULL, "a_pos" INTEGER NOT NULL, "b_pos" INTEGER NOT NULL, PRIMARY KEY ("a", "b")) WITHOUT ROWID"#,
            #"Issue.labels: CREATE TABLE "Issue.labels" ("a" INTEGER NOT NULL, "b" INTEGER NOT NULL, "a_pos" INTEGER NOT NULL, "b_pos" INTEGER NOT NULL, PRIMARY KEY ("a", "a_pos")) WITHOUT ROWID"#,
            #"_tether_join_Issue.assignees: CREATE INDEX "_tether_join_Issue.assignees" ON "Issue.assignees" ("b", "a")"#,
            #"_tether_join_Issue.labels: CREATE UNIQUE INDEX "_tether_join_Issue.labels" ON "Issue.labels" ("b", "a")"#,
        ], "\(schema)")
        let positions = try await store.readSQL { db in
            try db.rows(#"SELECT "a_pos", "b_pos" FROM "Issue.labels" WHERE "a" = (SELECT "rowid" FROM "Issue" WHERE "id" = 7) ORDER BY "a_pos""#)
                .map { [$0["a_pos"], $0["b_pos"]] }
        }
        #expect(positions == [[.int(0), .int(0)], [.int(1), .int(0)]])
        let migrated = try #require(try await client.object("Issue", identity: .int(7)))
        #expect(try await client.related("labels", of: migrated.id).map { $0["id"] } == [.int(2), .int(4)])
        #expect(Set(try await client.related("assignees", of: migrated.id).map { $0["id"] }) == Set(readOnlyAssignees))
        #expect(try await client.count(Query("Issue")) == 20)
        _ = try await client.import(Self.issues(0..<20, version: 1), as: "Issue")
        let again = try #require(try await client.object("Issue", identity: .int(7)))
        #expect(try await client.related("labels", of: again.id).map { $0["id"] } == [.int(3), .int(0), .int(2)])
    }
}
