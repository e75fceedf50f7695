import Foundation
import Tether

// tether-bench: Tether's import against the hand-written JSONDecoder + SQLite baseline of issue 6.

/// The default batch size of the streaming rows (declared before `usage`, which prints it).
let defaultBatch = 10_000

let usage = """
    usage: tether-bench [--sizes 1000,10000,100000] [--runs 3] [--seed 42] [--batch 10000] [--input FILE]
                        [--only GROUPS] [--smoke] [--write FILE]

      --sizes LIST   repository counts to generate (default 1000,10000,100000). Sizes above 100k run
                     only the streaming rows (`stream`) unless --only names other groups
      --runs N       timed runs per row; the table shows the median (default 3)
      --seed S       seed of the generated workload (default 42)
      --batch N      batch size of the streaming file import (ImportOptions.batchSize, default \(defaultBatch))
      --input FILE   import this JSON file (an array of GitHub repositories) instead of generated data:
                     an insert pass and an unchanged re-import
      --only GROUPS  comma-separated subset of: parse, baseline, tether, stream, stall, live, issues,
                     refresh, typed, timeline, saves, formats, paths (default: all), or single
                     kinds: \(Kind.allCases.map(\.rawValue).joined(separator: ", "))
      --smoke        N = 1000, one run (for CI)
      --write FILE   write the generated workload of the first size to FILE (streaming) and exit; with
                     --only issues (or timeline), that workload (and its update to FILE.v2)

    Each row runs in its own child process, so its peak RSS is its own.
    """

let largeSize = 100_000

struct Options {
    var sizes = [1_000, 10_000, 100_000]
    var runs = 3
    var seed: UInt64 = 42
    var batchSize = defaultBatch
    var input: String?
    var write: String?
    var kinds: [Kind] = Kind.allCases
    var explicitKinds = false

    init(_ arguments: [String]) throws {
        var rest = arguments[...]
        func value(_ flag: String) throws -> String {
            guard let v = rest.popFirst() else { throw BenchmarkError("\(flag) needs a value\n\(usage)") }
            return v
        }
        while let argument = rest.popFirst() {
            switch argument {
            case "--sizes":
                let list = try value(argument).split(separator: ",").map { Int($0.replacingOccurrences(of: "_", with: "")) }
                guard !list.isEmpty, list.allSatisfy({ ($0 ?? 0) > 0 }) else { throw BenchmarkError("bad --sizes\n\(usage)") }
                sizes = list.map { $0! }
            case "--runs":
                guard let n = Int(try value(argument)), n > 0 else { throw BenchmarkError("bad --runs\n\(usage)") }
                runs = n
            case "--seed":
                guard let s = UInt64(try value(argument)) else { throw BenchmarkError("bad --seed\n\(usage)") }
                seed = s
            case "--batch":
                guard let n = Int(try value(argument).replacingOccurrences(of: "_", with: "")), n > 0 else {
                    throw BenchmarkError("bad --batch\n\(usage)")
                }
                batchSize = n
            case "--input": input = try value(argument)
            case "--write": write = try value(argument)
            case "--only":
                var selected = Set<Kind>()
                for name in try value(argument).split(separator: ",").map(String.init) {
                    if let group = Kind.groups[name] {
                        selected.formUnion(group)
                    } else if let kind = Kind(rawValue: name) {
                        selected.insert(kind)
                    } else {
                        throw BenchmarkError("bad --only: \(name)\n\(usage)")
                    }
                }
                kinds = Kind.allCases.filter(selected.contains)
                explicitKinds = true
            case "--smoke":
                sizes = [1_000]
                runs = 1
            case "--help", "-h":
                print(usage)
                exit(0)
            default:
                throw BenchmarkError("unknown option \(argument)\n\(usage)")
            }
        }
    }

    /// The kinds measured at `size`: above 100k only the streaming ones, unless asked for.
    func kinds(at size: Int) -> [Kind] {
        size > largeSize && !explicitKinds ? kinds.filter(\.isStreaming) : kinds
    }
}

/// The payload files of one size: the first import, and the update (nil: re-import the first);
/// the issues workload's beside them when issues rows run.
struct Payload {
    let size: Int
    let first: String
    let update: String?
    var missing: String? = nil
    let bytes: Int
    var issues: (first: String, update: String, bytes: Int)? = nil
    var timeline: (first: String, update: String, bytes: Int)? = nil
}

struct Suite {
    let options: Options
    var rows: [Measurement] = []
    var inputs: [String] = []

    var failures: [Measurement] { rows.filter { $0.failure != nil } }

    /// Runs every row of `payload`, each in a fresh child process.
    mutating func run(_ payload: Payload) {
        for kind in options.kinds(at: payload.size) {
            if kind.isIssues && payload.issues == nil { continue }
            if kind.isTimeline && payload.timeline == nil { continue }
            if !kind.isIssues && !kind.isTimeline && payload.first.isEmpty { continue }
            if kind.alternatesPasses {
                runAlternating(kind, payload)
                continue
            }
            let hasUpdate = kind.isIssues || kind.isTimeline || payload.update != nil
            for pass in kind.passes(hasUpdate: hasUpdate, hasMissing: !kind.isIssues && !kind.isTimeline && payload.missing != nil) {
                var row = Measurement(size: payload.size, group: kind.group, pass: pass,
                                      objects: kind.isRefresh ? IssuesRefresh.pageSize
                                          : kind.isTimelineRefresh ? TimelineRefresh.pageSize : payload.size,
                                      bytes: kind.isIssues ? payload.issues!.bytes
                                          : kind.isTimeline ? payload.timeline!.bytes : payload.bytes)
                var request = RowRequest(
                    kind: kind.rawValue, pass: pass, size: payload.size, first: payload.first, update: payload.update,
                    missing: payload.missing, runs: options.runs, batchSize: options.batchSize, seed: options.seed)
                if let issues = payload.issues, kind.isIssues {
                    request.first = issues.first
                    request.update = issues.update
                    request.missing = nil
                }
                if let timeline = payload.timeline, kind.isTimeline {
                    request.first = timeline.first
                    request.update = timeline.update
                    request.missing = nil
                }
                let clock = ContinuousClock()
                let start = clock.now
                do {
                    let result = try ChildProcess.run(request)
                    row.durations = result.seconds.map { Duration.seconds($0) }
                    row.peakBytes = result.peakBytes
                    if !result.peakIsPerPass { row.peakIncludesSetup = true }
                } catch {
                    row.failure = "\(error)"
                }
                let took = (clock.now - start).seconds
                let summary = row.failure.map { "FAILED: \($0)" }
                    ?? "\(Format.milliseconds(row.seconds)) ms, peak \(row.peakBytes.map(Format.megabytes) ?? "n/a") MB"
                // Progress goes to stderr, unbuffered, so a long run shows where it is.
                FileHandle.standardError.write(Data((
                    "  \(Format.pad(Format.count(row.size), 5)) \(Format.pad(row.group, 31, left: true)) "
                    + "\(Format.pad(pass, 20, left: true)) \(summary)  [\(String(format: "%.1f", took)) s]\n").utf8))
                rows.append(row)
            }
        }
    }

    /// Runs every pass of `kind` in one child process (alternating round by round) and adds a
    /// row per pass.
    mutating func runAlternating(_ kind: Kind, _ payload: Payload) {
        var request = RowRequest(
            kind: kind.rawValue, pass: "all", size: payload.size, first: payload.first, update: payload.update,
            missing: nil, runs: options.runs, batchSize: options.batchSize, seed: options.seed)
        if let timeline = payload.timeline, kind.isTimeline {
            request.first = timeline.first
            request.update = timeline.update
        }
        let clock = ContinuousClock()
        let start = clock.now
        var rows = kind.passes(hasUpdate: false).map {
            Measurement(size: payload.size, group: kind.group, pass: $0, objects: payload.size, bytes: 0)
        }
        do {
            let result = try ChildProcess.run(request)
            for pass in result.passes ?? [] {
                guard let index = rows.firstIndex(where: { $0.pass == pass.pass }) else { continue }
                rows[index].durations = pass.seconds.map { Duration.seconds($0) }
                rows[index].peakBytes = pass.peakBytes
                if !result.peakIsPerPass { rows[index].peakIncludesSetup = true }
            }
            for index in rows.indices where rows[index].durations.isEmpty { rows[index].failure = "the child reported no runs" }
        } catch {
            for index in rows.indices { rows[index].failure = "\(error)" }
        }
        let took = (clock.now - start).seconds
        for row in rows {
            let summary = row.failure.map { "FAILED: \($0)" }
                ?? "\(Format.milliseconds(row.seconds)) ms, peak \(row.peakBytes.map(Format.megabytes) ?? "n/a") MB"
            FileHandle.standardError.write(Data((
                "  \(Format.pad(Format.count(row.size), 5)) \(Format.pad(row.group, 31, left: true)) "
                + "\(Format.pad(row.pass, 20, left: true)) \(summary)  [\(String(format: "%.1f", took)) s, all passes]\n").utf8))
        }
        self.rows.append(contentsOf: rows)
    }

    /// The document-format rows: JSON:API over plain JSON, same pass, same run.
    func printDocumentFormats() {
        let formats = rows.filter { $0.group == Kind.documentFormats.group && $0.failure == nil }
        guard !formats.isEmpty else { return }
        print("\nJSON:API over plain JSON (fetchObjects of the same repositories and owners; one process, passes alternating; target ≤ 1.30×):")
        for size in Set(formats.map(\.size)).sorted() {
            for pass in ["insert", "unchanged"] {
                guard let plain = formats.first(where: { $0.size == size && $0.pass == "plain \(pass)" }),
                    let jsonAPI = formats.first(where: { $0.size == size && $0.pass == "JSON:API \(pass)" }) else { continue }
                print("  N=\(Format.pad(Format.count(size), 5, left: true)) \(Format.pad(pass, 10, left: true)) "
                    + "plain \(Format.milliseconds(plain.seconds)) ms, JSON:API \(Format.milliseconds(jsonAPI.seconds)) ms: "
                    + String(format: "%.2f×", jsonAPI.seconds / plain.seconds))
            }
        }
    }

    /// The typed-fetch rows: time per row, and Tether typed over GRDB for each depth, per round
    /// (the passes of a round ran next to each other) and over the best runs.
    /// The saves rows: time per save, and a local-first save over an online one, per round.
    func printSaves() {
        let saves = rows.filter { $0.group == Kind.saves.group && $0.failure == nil }
        guard !saves.isEmpty else { return }
        print("\nSaves (one process, passes alternating round by round; µs per save, median of \(options.runs)):")
        for size in Set(saves.map(\.size)).sorted() {
            let here = saves.filter { $0.size == size }
            guard let online = here.first(where: { $0.pass == "online save" }), let queued = here.first(where: { $0.pass == "local-first save" })
            else { continue }
            let rounds = zip(queued.durations, online.durations).map { $0.seconds / $1.seconds }.sorted()
            print(String(format: "  N=%@ online %.1f µs, local-first %.1f µs: local-first / online %.2f× (median of the rounds' ratios)",
                         Format.count(size), online.seconds * 1e6 / Double(size), queued.seconds * 1e6 / Double(size), rounds[rounds.count / 2]))
        }
    }

    func printTypedFetch() {
        let typed = rows.filter { $0.group == Kind.typedFetch.group && $0.failure == nil }
        guard !typed.isEmpty else { return }
        print("\nTyped fetch against GRDB (one process, passes alternating round by round; µs per row, median and best of \(options.runs)):")
        for size in Set(typed.map(\.size)).sorted() {
            let here = typed.filter { $0.size == size }
            func row(_ pass: String) -> Measurement? { here.first { $0.pass == pass } }
            for measured in here {
                let perRow = { (seconds: Double) in String(format: "%6.2f", seconds * 1e6 / Double(measured.objects)) }
                var line = "  N=\(Format.pad(Format.count(size), 5, left: true)) \(Format.pad(measured.pass, 14, left: true)) "
                    + "median \(perRow(measured.seconds)) µs, best \(perRow(measured.durations.min()!.seconds)) µs"
                if measured.pass.hasPrefix("typed"), let grdb = row(measured.pass.replacingOccurrences(of: "typed", with: "GRDB")) {
                    let rounds = zip(measured.durations, grdb.durations).map { $0.seconds / $1.seconds }.sorted()
                    let median = rounds[rounds.count / 2]
                    let best = measured.durations.min()!.seconds / grdb.durations.min()!.seconds
                    line += String(format: "   Tether typed / GRDB: %.2f× (median of the rounds' ratios), %.2f× (best / best)", median, best)
                }
                if measured.pass == "typed depth 0", let objects = row("Objects") {
                    let rounds = zip(measured.durations, objects.durations).map { $0.seconds / $1.seconds }.sorted()
                    line += String(format: "; / Objects: %.2f×", rounds[rounds.count / 2])
                }
                print(line)
            }
        }
    }

    func printTable() {
        let header = [
            Format.pad("N", 6), Format.pad("what", 31, left: true), Format.pad("pass", 20, left: true),
            Format.pad("median ms", 10), Format.pad("objects/s", 10), Format.pad("MB/s", 8), Format.pad("peak RSS MB", 12),
            Format.pad("vs baseline", 12),
        ].joined(separator: " ")
        print(header)
        print(String(repeating: "-", count: header.count))
        for row in rows {
            if let failure = row.failure {
                print("\(Format.pad(Format.count(row.size), 6)) \(Format.pad(row.group, 31, left: true)) "
                    + "\(Format.pad(row.pass, 20, left: true)) FAILED: \(failure)")
                continue
            }
            print([
                Format.pad(Format.count(row.size), 6), Format.pad(row.group, 31, left: true),
                Format.pad(row.pass, 20, left: true), Format.pad(Format.milliseconds(row.seconds), 10),
                Format.pad(Format.rate(Double(row.objects) / row.seconds), 10),
                Format.pad(String(format: "%.0f", Double(row.bytes) / 1_048_576 / row.seconds), 8),
                Format.pad((row.peakBytes.map(Format.megabytes) ?? "n/a") + (row.peakIncludesSetup ? "*" : ""), 12),
                Format.pad(speedup(of: row).map { String(format: "%.2f×", $0) } ?? "", 12),
            ].joined(separator: " "))
        }
        for workload in ["refresh", "timeline refresh"] {
            let refreshes = rows.filter { Self.workload(of: $0.group) == workload && $0.failure == nil }
            if refreshes.isEmpty { continue }
            if workload == "refresh" {
                print("\nPage refresh (\(IssuesRefresh.pages) pages of \(IssuesRefresh.pageSize) issues, half changed, into a store of N issues), per page:")
            } else {
                print("\nTimeline refresh (\(TimelineRefresh.pageCount) pages of \(TimelineRefresh.pageSize) statuses, "
                    + "\(TimelineRefresh.newPerPage) new, into a store of N statuses), per page:")
            }
            for row in refreshes {
                let base = refreshes.first { $0.size == row.size && $0.group.hasPrefix("baseline") }
                // The floor is SQLite's: a ratio for the SQLite store's rows only.
                let floor = row.group.contains("SQLite") ? refreshes.first { $0.size == row.size && $0.group.hasPrefix("floor") } : nil
                let ratio = [base.map { String(format: "%.2f× faster than the baseline's median", $0.seconds / row.seconds) },
                             floor.map { String(format: "%.2f× the floor's", row.seconds / $0.seconds) }]
                    .compactMap { $0 }.joined(separator: "; ")
                print("  N=\(Format.pad(Format.count(row.size), 5, left: true)) \(Format.pad(row.group, 36, left: true)) median "
                    + "\(Format.milliseconds(row.seconds)) ms, p99 \(Format.milliseconds(row.percentile(99).seconds)) ms "
                    + "(\(String(format: "%.2f", row.percentile(99).seconds / row.seconds))× the median)  \(row.group.hasPrefix("Tether") ? ratio : "")")
            }
        }
        if rows.contains(where: \.peakIncludesSetup) {
            print("* the kernel would not reset the peak-RSS counter: this peak includes the pass's setup")
        }
        printTypedFetch()
        printSaves()
        printDocumentFormats()
        let speedups = rows.filter { $0.group.hasPrefix("Tether") && $0.failure == nil }.compactMap { row in
            speedup(of: row).map { (row, $0) }
        }
        if !speedups.isEmpty {
            print("\nSpeedup of Tether over the hand-written baseline (same pass, same run; > 1 means Tether is faster):")
            for (row, factor) in speedups {
                print("  N=\(Format.pad(Format.count(row.size), 5, left: true)) \(Format.pad(row.group, 31, left: true)) "
                    + "\(Format.pad(row.pass, 10, left: true)) \(String(format: "%6.2f×", factor))")
            }
        }
    }

    /// Which workload a row's group measures: rows are compared within one.
    static func workload(of group: String) -> String {
        group.contains("timeline refresh") ? "timeline refresh" : group.contains("refresh") ? "refresh"
            : group.contains("timeline") ? "timeline" : group.contains("issues") ? "issues" : "repositories"
    }

    /// The baseline's median over this row's: for Tether rows against the baseline's same pass,
    /// for parse rows against JSONSerialization.
    func speedup(of row: Measurement) -> Double? {
        let reference: Measurement?
        if row.group.hasPrefix("Tether") {
            reference = rows.first {
                $0.size == row.size && $0.group.hasPrefix("baseline") && $0.pass == row.pass && $0.failure == nil
                    && Self.workload(of: $0.group) == Self.workload(of: row.group)
            }
        } else if row.group == "JSON parse only", row.pass != "JSONSerialization" {
            reference = rows.first { $0.size == row.size && $0.group == row.group && $0.pass == "JSONSerialization" }
        } else {
            reference = nil
        }
        guard row.failure == nil, let reference, reference.failure == nil else { return nil }
        return reference.seconds / row.seconds
    }
}

func machineDescription() -> String {
    let info = ProcessInfo.processInfo
    #if os(Linux)
    let os = "Linux"
    #else
    let os = "Darwin"
    #endif
    return "\(os), \(info.activeProcessorCount) cores, \(Format.megabytes(Int(info.physicalMemory))) MB RAM"
}

do {
    let arguments = Array(CommandLine.arguments.dropFirst())
    if arguments.first == "--child", arguments.count == 2 {
        // A child process: run one row and report it on stdout.
        let request = try JSONDecoder().decode(RowRequest.self, from: Data(arguments[1].utf8))
        let result = try await RowWorker(request).run()
        print(ChildProcess.resultPrefix + String(decoding: try JSONEncoder().encode(result), as: UTF8.self))
        exit(0)
    }
    let options = try Options(arguments)
    if let path = options.write, options.explicitKinds, options.kinds.allSatisfy(\.isTimeline) {
        // The timeline workload: version 1 to FILE, version 2 (the update) beside it.
        let bytes = try TimelineWorkload(count: options.sizes[0], seed: options.seed, version: 1).write(to: path)
        try TimelineWorkload(count: options.sizes[0], seed: options.seed, version: 2).write(to: path + ".v2")
        print("wrote \(options.sizes[0]) statuses, \(bytes) bytes, to \(path) (and the update to \(path).v2)")
        exit(0)
    }
    if let path = options.write, options.explicitKinds, options.kinds.allSatisfy(\.isIssues) {
        // The issues workload: version 1 to FILE, version 2 (the update) beside it.
        let bytes = try IssuesWorkload(count: options.sizes[0], seed: options.seed, version: 1).write(to: path)
        try IssuesWorkload(count: options.sizes[0], seed: options.seed, version: 2).write(to: path + ".v2")
        print("wrote \(options.sizes[0]) issues, \(bytes) bytes, to \(path) (and the update to \(path).v2)")
        exit(0)
    }
    if let path = options.write {
        let bytes = try Workload(count: options.sizes[0], seed: options.seed, version: 1).write(to: path)
        print("wrote \(options.sizes[0]) repositories, \(bytes) bytes, to \(path)")
        exit(0)
    }
    print("tether-bench on \(machineDescription()); \(options.runs) run(s) per row, median shown; "
        + "streaming batch size \(options.batchSize); each row in its own process")
    var suite = Suite(options: options)
    if let path = options.input {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        guard let count = try JSONParser.parse(data).arrayValue?.count else {
            throw BenchmarkError("\(path) is not a JSON array")
        }
        print("input: \(path), \(count) repositories, \(Format.megabytes(data.count)) MB")
        suite.run(Payload(size: count, first: path, update: nil, bytes: data.count))
    } else {
        for size in options.sizes {
            // The workload goes to files (streamed, so 1M needs no memory); each row's child reads them.
            let directory = try TemporaryDirectory()
            let kinds = options.kinds(at: size)
            var issues: (first: String, update: String, bytes: Int)?
            if kinds.contains(where: \.isIssues) {
                let first = directory.file("issues-\(size)-v1.json"), update = directory.file("issues-\(size)-v2.json")
                let bytes = try IssuesWorkload(count: size, seed: options.seed, version: 1).write(to: first)
                try IssuesWorkload(count: size, seed: options.seed, version: 2).write(to: update)
                issues = (first, update, bytes)
                FileHandle.standardError.write(Data("N = \(Format.count(size)) issues: \(Format.megabytes(bytes)) MB of JSON\n".utf8))
                suite.inputs.append("N = \(Format.count(size)) issues: \(Format.megabytes(bytes)) MB of JSON")
            }
            var timeline: (first: String, update: String, bytes: Int)?
            if kinds.contains(where: \.isTimeline) {
                let first = directory.file("timeline-\(size)-v1.json"), update = directory.file("timeline-\(size)-v2.json")
                let bytes = try TimelineWorkload(count: size, seed: options.seed, version: 1).write(to: first)
                try TimelineWorkload(count: size, seed: options.seed, version: 2).write(to: update)
                timeline = (first, update, bytes)
                let line = "N = \(Format.count(size)) statuses: \(Format.megabytes(bytes)) MB of JSON "
                    + "(\(bytes / size) bytes a status), \(TimelineWorkload.accountCount(size)) accounts"
                FileHandle.standardError.write(Data((line + "\n").utf8))
                suite.inputs.append(line)
            }
            guard kinds.contains(where: { !$0.isIssues && !$0.isTimeline }) else {
                suite.run(Payload(size: size, first: "", update: nil, bytes: 0, issues: issues, timeline: timeline))
                continue
            }
            let first = directory.file("repositories-\(size)-v1.json")
            let update = directory.file("repositories-\(size)-v2.json")
            let bytes = try Workload(count: size, seed: options.seed, version: 1).write(to: first)
            try Workload(count: size, seed: options.seed, version: 2).write(to: update)
            let missing = directory.file("repositories-\(size)-v1-missing.json")
            if size <= largeSize { try Workload(count: size, seed: options.seed, version: 1, missingTenth: true).write(to: missing) }
            FileHandle.standardError.write(Data(("N = \(Format.count(size)): \(Format.megabytes(bytes)) MB of JSON, "
                + "\(Workload(count: size, seed: options.seed, version: 1).ownerCount) owner slots\n").utf8))
            suite.inputs.append("N = \(Format.count(size)): \(Format.megabytes(bytes)) MB of JSON")
            suite.run(Payload(size: size, first: first, update: update, missing: size <= largeSize ? missing : nil, bytes: bytes,
                              issues: issues, timeline: timeline))
        }
    }
    print()
    for input in suite.inputs { print(input) }
    suite.printTable()
    if !suite.failures.isEmpty {
        FileHandle.standardError.write(Data("tether-bench: \(suite.failures.count) row(s) failed\n".utf8))
        exit(1)
    }
} catch {
    FileHandle.standardError.write(Data("tether-bench: \(error)\n".utf8))
    exit(1)
}
