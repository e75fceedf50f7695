import Foundation
import Tether
import TetherSQLite

/// The timeline imported typed against the string form (issue 41: a self-referential model's
/// typed import within 10% of the string form's time): the N statuses of the timeline's insert
/// payload into a new SQLite store, by `client.import(data, as: "Status")` and by
/// `client.importReport(data, as: Status.self)` (a final class model whose `reblog` is a
/// `Status?`, read back at depth 1), in one process, the passes alternating round by round.
enum TimelineTyped {
    static let passes = ["string import", "typed import"]

    /// A status as an app declares it: a final class, because it holds a status (a boost's
    /// original) as a struct cannot; a partial view of the entity.
    final class Status: EntityModel {
        static var entityName: String { "Status" }
        let id: String
        let createdAt: Date?
        let content: String?
        let repliesCount: Int64?
        let account: Account?
        let reblog: Status?
    }

    struct Account: EntityModel {
        static var entityName: String { "Account" }
        var id: String
        var username: String?
        var acct: String?
    }

    /// One pass: a new store, the payload imported, one duration.
    static func run(_ pass: String, payload: Data, count: Int, into row: inout Measurement) async throws {
        let directory = try TemporaryDirectory()
        let client = try TimelineImport.client(store: try SQLiteStore(path: directory.file("typed.sqlite")))
        let clock = ContinuousClock()
        let start = clock.now
        let statuses: Int
        if pass == "typed import" {
            let imported = try await client.importReport(payload, as: Status.self)
            statuses = imported.models.count
            row.durations.append(clock.now - start)
            // A boost's original is a Status model of its own.
            if !imported.models.contains(where: { $0.reblog != nil }) { throw BenchmarkError("no typed status holds its boost's original") }
        } else {
            let result = try await client.import(payload, as: "Status")
            statuses = result.objects.count
            row.durations.append(clock.now - start)
        }
        if statuses < count { throw BenchmarkError("\(pass) returned \(statuses) statuses, expected at least \(count)") }
    }
}

extension RowWorker {
    /// Both passes of the typed timeline kind, alternating as the typed-fetch passes do.
    func runTimelineTyped(peakIsPerPass: Bool) async throws -> RowResult {
        let n = request.size
        let payload = try load(request.first)
        var rows = TimelineTyped.passes.map { Measurement(size: n, group: kind.group, pass: $0, objects: n, bytes: payload.count) }
        for round in 0..<request.runs {
            let order = round % 2 == 0 ? Array(rows.indices) : rows.indices.reversed()
            for index in order { try await TimelineTyped.run(rows[index].pass, payload: payload, count: n, into: &rows[index]) }
        }
        return RowResult(
            seconds: [], peakBytes: nil, peakIsPerPass: peakIsPerPass,
            passes: rows.map { RowResult.PassResult(pass: $0.pass, seconds: $0.durations.map(\.seconds), peakBytes: $0.peakBytes) })
    }
}
