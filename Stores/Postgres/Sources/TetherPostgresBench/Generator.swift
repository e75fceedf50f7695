// A copy of Benchmarks/Sources/TetherBench/Generator.swift (the Tether benchmark's workload), so
// that the PostgreSQL rows measure the same repositories; keep the two in step.
import Foundation

/// SplitMix64: a tiny, fast, deterministic random number generator.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
    mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
}

/// The GitHub-shaped workload of issue 6: an array of N repositories with snake_case keys, as
/// `GET /users/:user/repos` returns them, pretty-printed like the real API.
///
/// Each of the N/10 owners appears on about ten repositories (owners are drawn at random, so
/// uniquing matters). `version` 1 is the first import; version 2 keeps every id, name and owner
/// and changes the counters and dates of every repository, which makes the update pass.
struct Workload {
    let count: Int
    let seed: UInt64
    let version: Int
    /// Leaves out every tenth repository (the delete-missing pass's payload: the others exactly as
    /// in the same version, 10% missing).
    var missingTenth = false

    var ownerCount: Int { max(1, count / 10) }

    static let words = [
        "swift", "json", "rest", "client", "store", "object", "mapper", "sync", "cache", "fast", "tiny", "async",
        "http", "server", "kit", "core", "data", "model", "graph", "query", "stream", "parser", "lite", "db",
        "network", "layer", "bridge", "toolkit", "engine", "runtime", "plugin", "widget", "linux", "cloud", "api",
    ]
    static let prose = [
        "a", "the", "simple", "library", "for", "and", "with", "written", "in", "Swift", "that", "makes", "it",
        "easy", "to", "build", "apps", "using", "modern", "lightweight", "framework", "fast", "tool", "your",
        "projects", "support", "of", "on", "Linux", "macOS", "iOS", "from", "JSON", "REST", "APIs", "café", "naïve",
    ]
    static let languages = ["Swift", "Ruby", "JavaScript", "Go", "Python", "C", "Objective-C", "Rust", "Shell", "Java"]

    /// Writes the workload to `path`, streaming: at most about 1 MiB is held in memory, so the
    /// 1M file (about 860 MB) is generated in constant memory. Returns the number of bytes written.
    @discardableResult
    func write(to path: String) throws -> Int {
        guard FileManager.default.createFile(atPath: path, contents: nil),
              let handle = FileHandle(forWritingAtPath: path)
        else { throw BenchmarkError("cannot create \(path)") }
        defer { try? handle.close() }
        var written = 0
        try generate { chunk in
            try handle.write(contentsOf: chunk)
            written += chunk.count
        }
        return written
    }

    /// The JSON bytes of the workload, in memory (small sizes and tests only).
    func data() throws -> Data {
        var data = Data()
        try generate { data.append(contentsOf: $0) }
        return data
    }

    /// Produces the workload in chunks of about 1 MiB.
    func generate(_ sink: ([UInt8]) throws -> Void) throws {
        let flushAt = 1 << 20
        var out = [UInt8]()
        out.reserveCapacity(flushAt + 4096)
        // The structure (names, owners) comes from `seed`; the mutable fields from `seed ^ version`.
        var structure = SeededGenerator(seed: seed)
        var changes = SeededGenerator(seed: seed ^ UInt64(version) &* 0x2545_F491_4F6C_DD1D)
        out.append(contentsOf: "[\n".utf8)
        var skipped = [UInt8]()
        var first = true
        for i in 0..<count {
            if missingTenth && i % 10 == 9 {
                // Drawn all the same, so that the repositories kept are those of the full payload.
                skipped.removeAll(keepingCapacity: true)
                writeRepository(i, structure: &structure, changes: &changes, into: &skipped)
                continue
            }
            if !first { out.append(contentsOf: ",\n".utf8) }
            first = false
            writeRepository(i, structure: &structure, changes: &changes, into: &out)
            if out.count >= flushAt {
                try sink(out)
                out.removeAll(keepingCapacity: true)
            }
        }
        out.append(contentsOf: "\n]\n".utf8)
        try sink(out)
    }

    private func writeRepository(
        _ i: Int, structure: inout SeededGenerator, changes: inout SeededGenerator, into out: inout [UInt8]
    ) {
        let owner = structure.below(ownerCount)
        let login = Self.login(owner)
        let name = "\(Self.words[structure.below(Self.words.count)])-\(Self.words[structure.below(Self.words.count)])-\(i)"
        let fullName = "\(login)/\(name)"
        var description: String?
        if !structure.chance(15) {
            let length = 6 + structure.below(10)
            description = (0..<length).map { _ in Self.prose[structure.below(Self.prose.count)] }.joined(separator: " ")
        }
        let isPrivate = structure.chance(5)
        let fork = structure.chance(20)
        let language: String? = structure.chance(20) ? nil : Self.languages[structure.below(Self.languages.count)]
        let created = 1_200_000_000 + structure.below(250_000_000)
        let updated = created + changes.below(200_000_000)
        let pushed = updated - changes.below(1_000_000)

        var w = Writer(out: out)
        out = []
        w.pad()
        w.open()
        w.field("id", int: 10_000_000 + i * 7)
        w.field("name", string: name)
        w.field("full_name", string: fullName)
        w.field("description", string: description)
        w.field("private", bool: isPrivate)
        w.field("fork", bool: fork)
        w.field("html_url", string: "https://github.com/\(fullName)")
        w.field("clone_url", string: "https://github.com/\(fullName).git")
        w.field("created_at", string: Self.iso8601(created))
        w.field("updated_at", string: Self.iso8601(updated))
        w.field("pushed_at", string: Self.iso8601(pushed))
        w.field("forks_count", int: changes.below(5_000))
        w.field("watchers_count", int: changes.below(50_000))
        w.field("size", int: changes.below(200_000))
        w.field("language", string: language)
        w.field("open_issues", int: changes.below(300))
        w.key("owner")
        w.open()
        w.field("login", string: login)
        w.field("id", int: Self.ownerID(owner))
        w.field("avatar_url", string: "https://avatars.githubusercontent.com/u/\(Self.ownerID(owner))?v=4")
        w.field("gravatar_id", string: "")
        w.field("url", string: "https://api.github.com/users/\(login)")
        w.field("type", string: owner % 13 == 0 ? "Organization" : "User")
        w.field("site_admin", bool: owner % 997 == 0, last: true)
        w.close(then: "\n")
        w.close(then: "")
        out = w.out
    }

    static func ownerID(_ owner: Int) -> Int { 500_000 + owner * 3 }

    static func login(_ owner: Int) -> String {
        "\(words[owner % words.count])\(words[(owner / words.count) % words.count])\(owner)"
    }

    /// `2011-01-26T19:01:12Z` for seconds since 1970 (UTC).
    static func iso8601(_ seconds: Int) -> String {
        let days = seconds / 86_400
        let rest = seconds % 86_400
        // Howard Hinnant's civil-from-days.
        let z = days + 719_468
        let era = z / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(year)-\(two(month))-\(two(day))T\(two(rest / 3600))"
            + ":\(two(rest / 60 % 60)):\(two(rest % 60))Z"
    }
}

/// Appends pretty-printed JSON (two-space indent, like api.github.com) to a byte array.
private struct Writer {
    var out: [UInt8]
    var indent = 1

    mutating func open() {
        out.append(UInt8(ascii: "{"))
        out.append(UInt8(ascii: "\n"))
        indent += 1
    }

    /// Closes an object; `then` follows the brace (",\n" or "\n" inside an object, "" at the top).
    mutating func close(then: String) {
        indent -= 1
        pad()
        out.append(UInt8(ascii: "}"))
        out.append(contentsOf: then.utf8)
    }

    mutating func pad() {
        for _ in 0..<(indent * 2) { out.append(UInt8(ascii: " ")) }
    }

    mutating func key(_ key: String) {
        pad()
        out.append(UInt8(ascii: "\""))
        out.append(contentsOf: key.utf8)
        out.append(contentsOf: "\": ".utf8)
    }

    mutating func end(_ last: Bool) {
        out.append(contentsOf: (last ? "\n" : ",\n").utf8)
    }

    mutating func field(_ name: String, int: Int, last: Bool = false) {
        key(name)
        out.append(contentsOf: String(int).utf8)
        end(last)
    }

    mutating func field(_ name: String, bool: Bool, last: Bool = false) {
        key(name)
        out.append(contentsOf: (bool ? "true" : "false").utf8)
        end(last)
    }

    mutating func field(_ name: String, string: String?, last: Bool = false) {
        key(name)
        if let string {
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: string.utf8)  // generated text needs no escaping
            out.append(UInt8(ascii: "\""))
        } else {
            out.append(contentsOf: "null".utf8)
        }
        end(last)
    }
}
