import Foundation

/// The GitHub issues workload of issue 23: an array of N issues as `GET /repos/:owner/:repo/issues`
/// returns them (the seed article's `GHIssue`), compact JSON with snake_case keys.
///
/// Every issue has a nested `user`, a nullable nested `assignee` (the first of `assignees`), an
/// `assignees` array of 0–3 users, a `labels` array of 0–5 labels (many-to-many: 60 labels shared
/// by all issues) and a nullable `milestone` with a nested `creator` user. There are 1,000 users
/// and 20 milestones. Each issue is drawn from its own seed, so any issue of any version can be
/// generated alone (the page-refresh rows draw pages of 30).
///
/// `version` 1 is the first import; every later version keeps each issue's id, number, author,
/// milestone and state and changes its counters (`comments`), title, `updated_at`, labels and
/// assignees — the update pass.
struct IssuesWorkload {
    let count: Int
    let seed: UInt64
    let version: Int

    static let userCount = 1_000
    static let labelCount = 60
    static let milestoneCount = 20
    static let repository = "octo-org/octo-repo"

    static let labelNames = [
        "bug", "enhancement", "question", "documentation", "duplicate", "wontfix", "invalid", "help wanted",
        "good first issue", "performance", "security", "regression", "linux", "macos", "ios", "sqlite", "memory",
        "networking", "parser", "import", "export", "sync", "ui", "tests", "ci", "build", "release", "breaking",
        "api", "docs", "design", "discussion", "blocked", "needs info", "needs review", "in progress", "p0", "p1",
        "p2", "p3", "area: core", "area: store", "area: remote", "area: schema", "area: naming", "area: json",
        "area: tests", "area: examples", "area: docs", "area: bench", "swift 6", "concurrency", "crash", "leak",
        "flaky", "refactor", "cleanup", "dependencies", "infra", "triage",
    ]

    /// Writes the workload to `path` in chunks of about 1 MiB (constant memory at 1M); returns the bytes written.
    @discardableResult
    func write(to path: String) throws -> Int {
        guard FileManager.default.createFile(atPath: path, contents: nil),
              let handle = FileHandle(forWritingAtPath: path)
        else { throw BenchmarkError("cannot create \(path)") }
        defer { try? handle.close() }
        var written = 0
        var out = [UInt8]()
        out.reserveCapacity(1 << 20 + 8192)
        out.append(UInt8(ascii: "["))
        for i in 0..<count {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "\n"))
            Self.writeIssue(i, seed: seed, version: version, into: &out)
            if out.count >= 1 << 20 {
                try handle.write(contentsOf: out)
                written += out.count
                out.removeAll(keepingCapacity: true)
            }
        }
        out.append(contentsOf: "\n]\n".utf8)
        try handle.write(contentsOf: out)
        return written + out.count
    }

    /// A page of issues: `indices`, each in `version(index)`, as one JSON array.
    static func page(_ indices: some Sequence<Int>, seed: UInt64, version: (Int) -> Int) -> Data {
        var out: [UInt8] = [UInt8(ascii: "[")]
        for (k, i) in indices.enumerated() {
            if k > 0 { out.append(UInt8(ascii: ",")) }
            writeIssue(i, seed: seed, version: version(i), into: &out)
        }
        out.append(UInt8(ascii: "]"))
        return Data(out)
    }

    static func issueID(_ i: Int) -> Int { 300_000_000 + i * 11 }
    static func userID(_ u: Int) -> Int { 1_000 + u * 7 }
    static func labelID(_ l: Int) -> Int { 9_000_000 + l * 13 }
    static func milestoneID(_ m: Int) -> Int { 4_000_000 + m * 17 }
    static func login(_ u: Int) -> String {
        "\(Workload.words[u % Workload.words.count])-\(Workload.words[(u / Workload.words.count) % Workload.words.count])\(u)"
    }

    static func writeIssue(_ i: Int, seed: UInt64, version: Int, into out: inout [UInt8]) {
        // What stays: from the issue's own seed. What a new version changes: from that and the version.
        var structure = SeededGenerator(seed: seed ^ (UInt64(i) &* 0x9E37_79B9_7F4A_7C15))
        var changes = SeededGenerator(seed: seed ^ (UInt64(i) &* 0xD1B5_4A32_D192_ED03) ^ (UInt64(version) &* 0x2545_F491_4F6C_DD1D))
        let number = i + 1
        let author = structure.below(userCount)
        let milestone: Int? = structure.chance(30) ? nil : structure.below(milestoneCount)
        let closed = structure.chance(40)
        let created = 1_400_000_000 + structure.below(300_000_000)
        let bodyLength = structure.chance(20) ? 0 : 5 + structure.below(30)
        let body = bodyLength == 0 ? nil : (0..<bodyLength).map { _ in Workload.prose[structure.below(Workload.prose.count)] }.joined(separator: " ")
        let titleLength = 3 + changes.below(8)
        let title = (0..<titleLength).map { _ in Workload.prose[changes.below(Workload.prose.count)] }.joined(separator: " ")
        let updated = created + 1 + changes.below(50_000_000)
        var labels: [Int] = []
        for _ in 0..<changes.below(6) {
            let label = changes.below(labelCount)
            if !labels.contains(label) { labels.append(label) }
        }
        var assignees: [Int] = []
        for _ in 0..<changes.below(4) {
            let user = changes.below(userCount)
            if !assignees.contains(user) { assignees.append(user) }
        }
        let url = "https://api.github.com/repos/\(repository)/issues/\(number)"
        var w = CompactWriter(out: out)
        out = []
        w.open()
        w.field("url", url)
        w.field("repository_url", "https://api.github.com/repos/\(repository)")
        w.field("html_url", "https://github.com/\(repository)/issues/\(number)")
        w.field("id", issueID(i))
        w.field("node_id", "MDU6SXNzdWU\(issueID(i))")
        w.field("number", number)
        w.field("title", title)
        w.key("user")
        writeUser(author, into: &w)
        w.key("labels")
        w.openArray()
        for (k, label) in labels.enumerated() {
            if k > 0 { w.comma() }
            w.open()
            w.field("id", labelID(label))
            w.field("node_id", "MDU6TGFiZWw\(labelID(label))")
            w.field("url", "https://api.github.com/repos/\(repository)/labels/\(labelNames[label].replacingOccurrences(of: " ", with: "%20"))")
            w.field("name", labelNames[label])
            w.field("color", String(format: "%06x", (label * 2_654_435_761) & 0xFF_FFFF))
            w.field("default", label < 7)
            w.field("description", label % 3 == 0 ? nil : "Issues about \(labelNames[label])", last: true)
            w.close()
        }
        w.closeArray()
        w.field("state", closed ? "closed" : "open")
        w.field("locked", false)
        w.key("assignee")
        if let first = assignees.first { writeUser(first, into: &w) } else { w.null() }
        w.key("assignees")
        w.openArray()
        for (k, user) in assignees.enumerated() {
            if k > 0 { w.comma() }
            writeUser(user, into: &w, last: true)
        }
        w.closeArray()
        w.key("milestone")
        if let milestone {
            w.open()
            w.field("url", "https://api.github.com/repos/\(repository)/milestones/\(milestone + 1)")
            w.field("id", milestoneID(milestone))
            w.field("number", milestone + 1)
            w.field("title", "v\(milestone / 4).\(milestone % 4)")
            w.field("description", milestone % 2 == 0 ? nil : "Milestone \(milestone + 1)")
            w.key("creator")
            writeUser(milestone * 37 % userCount, into: &w)
            w.field("open_issues", 10 + milestone * 3)
            w.field("closed_issues", 100 + milestone * 7)
            w.field("state", milestone < 15 ? "closed" : "open")
            w.field("created_at", Workload.iso8601(1_350_000_000 + milestone * 3_000_000))
            w.field("updated_at", Workload.iso8601(1_360_000_000 + milestone * 3_000_000))
            w.field("due_on", milestone % 5 == 0 ? nil : Workload.iso8601(1_370_000_000 + milestone * 3_000_000), last: true)
            w.close()
            w.comma()
        } else {
            w.null()
        }
        w.field("comments", changes.below(200))
        w.field("created_at", Workload.iso8601(created))
        w.field("updated_at", Workload.iso8601(updated))
        w.field("closed_at", closed ? Workload.iso8601(created + 1 + structure.below(40_000_000)) : nil)
        w.field("author_association", author % 5 == 0 ? "MEMBER" : "CONTRIBUTOR")
        w.field("body", body, last: true)
        w.close()
        out = w.out
    }

    private static func writeUser(_ u: Int, into w: inout CompactWriter, last: Bool = false) {
        let login = login(u)
        w.open()
        w.field("login", login)
        w.field("id", userID(u))
        w.field("node_id", "MDQ6VXNlcj\(userID(u))")
        w.field("avatar_url", "https://avatars.githubusercontent.com/u/\(userID(u))?v=4")
        w.field("gravatar_id", "")
        w.field("url", "https://api.github.com/users/\(login)")
        w.field("html_url", "https://github.com/\(login)")
        w.field("type", u % 50 == 0 ? "Bot" : "User")
        w.field("site_admin", u == 0, last: true)
        w.close()
        if !last { w.comma() }
    }
}

/// Appends compact JSON (no whitespace) to a byte array; the caller places commas between
/// members (`field` does, unless `last`) and array elements.
struct CompactWriter {
    var out: [UInt8]

    mutating func open() { out.append(UInt8(ascii: "{")) }
    mutating func close() { out.append(UInt8(ascii: "}")) }
    mutating func openArray() { out.append(UInt8(ascii: "[")) }
    mutating func closeArray() { out.append(contentsOf: "],".utf8) }
    mutating func comma() { out.append(UInt8(ascii: ",")) }
    mutating func null() { out.append(contentsOf: "null,".utf8) }

    mutating func key(_ key: String) {
        out.append(UInt8(ascii: "\""))
        out.append(contentsOf: key.utf8)
        out.append(contentsOf: "\":".utf8)
    }

    mutating func field(_ name: String, _ int: Int, last: Bool = false) {
        key(name)
        out.append(contentsOf: String(int).utf8)
        if !last { comma() }
    }

    mutating func field(_ name: String, _ bool: Bool, last: Bool = false) {
        key(name)
        out.append(contentsOf: (bool ? "true" : "false").utf8)
        if !last { comma() }
    }

    mutating func field(_ name: String, _ string: String?, last: Bool = false) {
        key(name)
        if let string {
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: string.utf8)  // generated text needs no escaping
            out.append(UInt8(ascii: "\""))
        } else {
            out.append(contentsOf: "null".utf8)
        }
        if !last { comma() }
    }
}
