import Foundation
import Tether

// tether-bench: Tether's import against the hand-written JSONDecoder + SQLite baseline of issue 6.

let usage = """
    usage: tether-bench [--sizes 1000,10000,100000] [--runs 3] [--seed 42] [--input FILE] [--only GROUPS] [--smoke]

      --sizes LIST   repository counts to generate (default 1000,10000,100000; add 1000000 for 1M)
      --runs N       timed runs per row; the table shows the median (default 3)
      --seed S       seed of the generated workload (default 42)
      --input FILE   import this JSON file (an array of GitHub repositories) instead of generated data:
                     an insert pass and an unchanged re-import
      --only GROUPS  comma-separated subset of: parse, baseline, tether, stream (default: all);
                     `parser` runs Tether's JSONParser alone (for profiling)
      --smoke        N = 1000, one run (for CI)
      --write FILE   write the generated workload of the first size to FILE and exit
    """

struct Options {
    var sizes = [1_000, 10_000, 100_000]
    var runs = 3
    var seed: UInt64 = 42
    var input: String?
    var write: String?
    var groups: Set<String> = ["parse", "baseline", "tether", "stream"]

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
            case "--input": input = try value(argument)
            case "--write": write = try value(argument)
            case "--only":
                groups = Set(try value(argument).split(separator: ",").map(String.init))
                guard groups.isSubset(of: ["parse", "parser", "baseline", "tether", "stream"]) else { throw BenchmarkError("bad --only\n\(usage)") }
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
}

/// The payloads of one size: the first import, and the update (or the same bytes again).
struct Payload {
    let size: Int
    let label: String
    let first: Data
    let update: Data?
}

struct Suite {
    let options: Options
    var rows: [Measurement] = []

    mutating func run(_ payload: Payload) async throws {
        let n = payload.size
        let bytes = payload.first.count
        if options.groups.contains("parse") { try runParse(payload) }
        if options.groups.contains("parser") {
            var row = Measurement(size: n, group: "JSON parse only", pass: "JSONParser (Tether)", objects: n, bytes: bytes)
            for _ in 0..<options.runs { try row.time { _ = try JSONParser.parse(payload.first) } }
            rows.append(row)
        }

        // Hand-written baseline: JSONDecoder + SQLite upserts.
        if options.groups.contains("baseline") {
            var insert = Measurement(size: n, group: "baseline: JSONDecoder+SQLite", pass: "insert", objects: n, bytes: bytes)
            var update = Measurement(size: n, group: "baseline: JSONDecoder+SQLite", pass: "update", objects: n, bytes: bytes)
            var unchanged = Measurement(size: n, group: "baseline: JSONDecoder+SQLite", pass: "unchanged", objects: n, bytes: bytes)
            for _ in 0..<options.runs {
                let directory = try TemporaryDirectory()
                let database = try Baseline.createDatabase(at: directory.file("baseline.sqlite"))
                try insert.time { try Baseline.importRepositories(payload.first, into: database) }
                if let changed = payload.update {
                    try update.time { try Baseline.importRepositories(changed, into: database) }
                }
                try unchanged.time { try Baseline.importRepositories(payload.update ?? payload.first, into: database) }
                let stored = try database.scalar("SELECT count(*) FROM repositories")
                if stored != n { throw BenchmarkError("baseline stored \(stored) repositories, expected \(n)") }
            }
            rows.append(insert)
            if payload.update != nil { rows.append(update) }
            rows.append(unchanged)
        }

        // Tether, into each store.
        if options.groups.contains("tether") {
            for store in TetherImport.stores {
                try await runTether(payload, storeName: store.name, makeStore: store.make)
            }
        }

        // Tether streaming a file (`client.import(contentsOf:)`) into the in-memory store, insert pass.
        if options.groups.contains("stream") {
            var row = Measurement(size: n, group: "Tether: file, in-memory", pass: "insert", objects: n, bytes: bytes)
            let directory = try TemporaryDirectory()
            let file = URL(fileURLWithPath: directory.file("repositories.json"))
            try payload.first.write(to: file)
            for _ in 0..<options.runs {
                let client = try TetherImport.client(store: InMemoryStore())
                let result = try await row.time { try await client.import(contentsOf: file, as: "Repository") }
                if result.objects.count != n { throw BenchmarkError("Tether imported \(result.objects.count) repositories, expected \(n)") }
            }
            rows.append(row)
        }
    }

    /// Tether's import into one kind of store: insert pass, update pass, unchanged re-import.
    mutating func runTether(_ payload: Payload, storeName: String, makeStore: () throws -> any Store) async throws {
        let n = payload.size
        let bytes = payload.first.count
        let group = "Tether: \(storeName)"
        var insert = Measurement(size: n, group: group, pass: "insert", objects: n, bytes: bytes)
        var update = Measurement(size: n, group: group, pass: "update", objects: n, bytes: bytes)
        var unchanged = Measurement(size: n, group: group, pass: "unchanged", objects: n, bytes: bytes)
        for _ in 0..<options.runs {
            let client = try TetherImport.client(store: makeStore())
            let first = try await insert.time { try await TetherImport.importRepositories(payload.first, into: client) }
            if first.objects.count != n { throw BenchmarkError("Tether imported \(first.objects.count) repositories, expected \(n)") }
            if let changed = payload.update {
                let second = try await update.time { try await TetherImport.importRepositories(changed, into: client) }
                if second.updated.count < n { throw BenchmarkError("Tether updated \(second.updated.count) objects, expected at least \(n)") }
            }
            let third = try await unchanged.time {
                try await TetherImport.importRepositories(payload.update ?? payload.first, into: client)
            }
            if !third.updated.isEmpty || !third.inserted.isEmpty {
                throw BenchmarkError("an unchanged re-import changed \(third.updated.count) and inserted \(third.inserted.count) objects")
            }
            let stored = try await client.count(Query("Repository"))
            if stored != n { throw BenchmarkError("Tether stored \(stored) repositories, expected \(n)") }
            try await checkLinks(client, repositories: first.objects, expected: n)
        }
        rows.append(insert)
        if payload.update != nil { rows.append(update) }
        rows.append(unchanged)
    }

    /// Every repository has one owner, and the owners' inverse to-many lists hold each repository once.
    func checkLinks(_ client: Client, repositories: [ObjectID], expected n: Int) async throws {
        var linked = 0
        for user in try await client.fetch(Query("User")) {
            for repository in try await client.related("repositories", of: user.id) {
                guard try await client.related("owner", of: repository.id).map(\.id) == [user.id] else {
                    throw BenchmarkError("\(repository.id) is listed under \(user.id) but its owner differs")
                }
                linked += 1
            }
        }
        if linked != n { throw BenchmarkError("owners list \(linked) repositories, expected \(n)") }
    }

    /// JSON parsing alone: Foundation's two parsers against Tether's.
    mutating func runParse(_ payload: Payload) throws {
        let n = payload.size
        let data = payload.first
        var serialization = Measurement(size: n, group: "JSON parse only", pass: "JSONSerialization", objects: n, bytes: data.count)
        var decoder = Measurement(size: n, group: "JSON parse only", pass: "JSONDecoder→structs", objects: n, bytes: data.count)
        var tether = Measurement(size: n, group: "JSON parse only", pass: "JSONParser (Tether)", objects: n, bytes: data.count)
        for _ in 0..<options.runs {
            // Each result is counted and dropped inside its closure, so no row holds another's tree.
            let a = try serialization.time { (try JSONSerialization.jsonObject(with: data) as? [Any])?.count }
            guard a == n else { throw BenchmarkError("JSONSerialization read the wrong count") }
            let b = try decoder.time { try Baseline.decoder().decode([Baseline.Repository].self, from: data).count }
            guard b == n else { throw BenchmarkError("JSONDecoder read the wrong count") }
            let c = try tether.time { try JSONParser.parse(data).arrayValue?.count }
            guard c == n else { throw BenchmarkError("JSONParser read the wrong count") }
        }
        rows += [serialization, decoder, tether]
    }

    func printTable() {
        let header = [
            Format.pad("N", 6), Format.pad("what", 30, left: true), Format.pad("pass", 20, left: true),
            Format.pad("median ms", 10), Format.pad("objects/s", 10), Format.pad("MB/s", 8), Format.pad("peak RSS MB", 12),
            Format.pad("vs baseline", 12),
        ].joined(separator: " ")
        print(header)
        print(String(repeating: "-", count: header.count))
        for row in rows {
            print([
                Format.pad(Format.count(row.size), 6), Format.pad(row.group, 30, left: true),
                Format.pad(row.pass, 20, left: true), Format.pad(Format.milliseconds(row.seconds), 10),
                Format.pad(Format.rate(Double(row.objects) / row.seconds), 10),
                Format.pad(String(format: "%.0f", Double(row.bytes) / 1_048_576 / row.seconds), 8),
                Format.pad(row.peakBytes.map(Format.megabytes) ?? "n/a", 12),
                Format.pad(speedup(of: row).map { String(format: "%.2f×", $0) } ?? "", 12),
            ].joined(separator: " "))
        }
        let speedups = rows.filter { $0.group.hasPrefix("Tether") }.compactMap { row in
            speedup(of: row).map { (row, $0) }
        }
        if !speedups.isEmpty {
            print("\nSpeedup of Tether over the hand-written baseline (same pass, same run; > 1 means Tether is faster):")
            for (row, factor) in speedups {
                print("  N=\(Format.pad(Format.count(row.size), 5, left: true)) \(Format.pad(row.group, 22, left: true)) "
                    + "\(Format.pad(row.pass, 10, left: true)) \(String(format: "%6.2f×", factor))")
            }
        }
    }

    /// The baseline's median over this row's: for Tether rows against the baseline's same pass,
    /// for parse rows against JSONSerialization.
    func speedup(of row: Measurement) -> Double? {
        let reference: Measurement?
        if row.group.hasPrefix("Tether") {
            reference = rows.first { $0.size == row.size && $0.group.hasPrefix("baseline") && $0.pass == row.pass }
        } else if row.group == "JSON parse only", row.pass != "JSONSerialization" {
            reference = rows.first { $0.size == row.size && $0.group == row.group && $0.pass == "JSONSerialization" }
        } else {
            reference = nil
        }
        return reference.map { $0.seconds / row.seconds }
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
    let options = try Options(Array(CommandLine.arguments.dropFirst()))
    if let path = options.write {
        let data = Workload(count: options.sizes[0], seed: options.seed, version: 1).generate()
        try data.write(to: URL(fileURLWithPath: path))
        print("wrote \(options.sizes[0]) repositories, \(data.count) bytes, to \(path)")
        exit(0)
    }
    if !Memory.resetPeak() { print("note: cannot reset the peak-RSS counter; peak RSS is since process start") }
    print("tether-bench on \(machineDescription()); \(options.runs) run(s) per row, median shown")
    var suite = Suite(options: options)
    if let path = options.input {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        guard let count = try JSONParser.parse(data).arrayValue?.count else {
            throw BenchmarkError("\(path) is not a JSON array")
        }
        print("input: \(path), \(count) repositories, \(Format.megabytes(data.count)) MB")
        try await suite.run(Payload(size: count, label: path, first: data, update: nil))
    } else {
        for size in options.sizes {
            let first = Workload(count: size, seed: options.seed, version: 1).generate()
            let update = Workload(count: size, seed: options.seed, version: 2).generate()
            print("N = \(Format.count(size)): \(Format.megabytes(first.count)) MB of JSON, "
                + "\(Workload(count: size, seed: options.seed, version: 1).ownerCount) owner slots")
            try await suite.run(Payload(size: size, label: "generated", first: first, update: update))
        }
    }
    print()
    suite.printTable()
} catch {
    FileHandle.standardError.write(Data("tether-bench: \(error)\n".utf8))
    exit(1)
}
