import Foundation

/// The social-network home timeline workload: an array of N statuses as Mastodon's
/// `GET /api/v1/timelines/home` returns them, compact JSON with snake_case keys, string ids
/// (digits) and HTML content escaped as Rails writes it (`\u003cp\u003e…`), about 3.4 KB a status.
///
/// - Every status nests its `account`, drawn Zipf-like from N/50 accounts (at least 20): a few
///   accounts write most statuses, as on a real timeline. An account owns 0–3 profile `fields`
///   (an ordered list of name/value objects without identity) and 0–2 custom `emojis`.
/// - 30% are boosts: `reblog` nests the boosted status (Status → Status) with its own account;
///   boosted statuses come from a pool of N/3, so a popular one is boosted more than once.
/// - 20% of the others are replies: `in_reply_to_id` names, 85% of the time, a status that is not
///   in the payload (it stays a pending reference), else an older status of the same payload.
/// - `mentions` (accounts by id, nested as id/username/url/acct), `tags` (identified by `name`,
///   300 of them), `media_attachments` (string ids), and owned objects without identity: a link
///   `card` and a `poll` with its ordered `options`.
///
/// Each status is drawn from its own seed, so any status of any version can be generated alone
/// (the timeline refresh draws pages of 40). `version` 1 is the first import; a later version
/// keeps every id, author, boost, reply target, mention, tag, media and card and changes every
/// status's counters and poll votes, edits 10% of the statuses (content, `edited_at`), changes the
/// follower counts of a third of the accounts and the profile fields of a tenth (values; the number
/// of fields of a twentieth).
struct TimelineWorkload {
    let count: Int
    let seed: UInt64
    let version: Int

    static func accountCount(_ n: Int) -> Int { max(20, n / 50) }
    static func boostPool(_ n: Int) -> Int { max(1, n / 3) }
    static let tagCount = 300

    static func statusID(_ i: Int) -> String { String(112_000_000_000_000_000 - i * 1_013) }
    static func boostedID(_ j: Int) -> String { String(111_000_000_000_000_000 - j * 977) }
    static func elsewhereID(_ k: Int) -> String { String(110_000_000_000_000_000 - k * 991) }
    static func accountID(_ a: Int) -> String { String(109_000_000_000_000 + a * 37) }
    static func tagName(_ t: Int) -> String {
        "\(Workload.words[t % Workload.words.count])\(Workload.words[(t / Workload.words.count) % Workload.words.count])\(t / 100)"
    }
    static func username(_ a: Int) -> String {
        "\(Workload.words[a % Workload.words.count])_\(Workload.words[(a / Workload.words.count) % Workload.words.count])\(a)"
    }
    static func acct(_ a: Int) -> String { a % 10 < 3 ? "\(username(a))@\(instance(a))" : username(a) }
    static func instance(_ a: Int) -> String { a % 10 < 3 ? "social\(a % 7).example" : "mastodon.example" }
    static func accountURL(_ a: Int) -> String { "https://\(instance(a))/@\(username(a))" }

    /// Writes the workload to `path` in chunks of about 1 MiB; returns the bytes written.
    @discardableResult
    func write(to path: String) throws -> Int {
        guard FileManager.default.createFile(atPath: path, contents: nil),
              let handle = FileHandle(forWritingAtPath: path)
        else { throw BenchmarkError("cannot create \(path)") }
        defer { try? handle.close() }
        var written = 0
        var out = [UInt8]()
        out.reserveCapacity(1 << 20 + 16384)
        out.append(UInt8(ascii: "["))
        for i in 0..<count {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "\n"))
            Self.writeStatus(i, count: count, seed: seed, version: version, into: &out)
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

    /// A page of statuses: `indices`, each in `version(index)`, as one JSON array (a workload of
    /// `count` statuses: its accounts and boosted statuses).
    static func page(_ indices: some Sequence<Int>, count: Int, seed: UInt64, version: (Int) -> Int) -> Data {
        var out: [UInt8] = [UInt8(ascii: "[")]
        for (k, i) in indices.enumerated() {
            if k > 0 { out.append(UInt8(ascii: ",")) }
            writeStatus(i, count: count, seed: seed, version: version(i), into: &out)
        }
        out.append(UInt8(ascii: "]"))
        return Data(out)
    }

    /// A Zipf-like draw in 0..<n (log-uniform: rank r with a chance about 1/(r+1)).
    static func zipf(_ g: inout SeededGenerator, _ n: Int) -> Int {
        let u = Double(g.next() >> 11) / Double(UInt64(1) << 53)
        return min(n - 1, max(0, Int(pow(Double(n + 1), u)) - 1))
    }

    private static func structure(_ seed: UInt64, _ salt: UInt64, _ i: Int) -> SeededGenerator {
        SeededGenerator(seed: seed ^ salt ^ (UInt64(i) &* 0x9E37_79B9_7F4A_7C15))
    }

    private static func changes(_ seed: UInt64, _ salt: UInt64, _ i: Int, _ version: Int) -> SeededGenerator {
        SeededGenerator(seed: seed ^ salt ^ (UInt64(i) &* 0xD1B5_4A32_D192_ED03) ^ (UInt64(version) &* 0x2545_F491_4F6C_DD1D))
    }

    static let statusSalt: UInt64 = 0x5151_0000_0000_0001
    static let boostedSalt: UInt64 = 0x7272_0000_0000_0002
    static let accountSalt: UInt64 = 0x1313_0000_0000_0003

    /// The author of top-level status `i` (its structure's first draw).
    static func author(ofStatus i: Int, count: Int, seed: UInt64) -> Int {
        var s = structure(seed, statusSalt, i)
        return zipf(&s, accountCount(count))
    }

    static func writeStatus(_ i: Int, count: Int, seed: UInt64, version: Int, into out: inout [UInt8]) {
        var s = structure(seed, statusSalt, i)
        let accounts = accountCount(count)
        let author = zipf(&s, accounts)
        var w = CompactWriter(out: out)
        out = []
        if s.chance(30) {
            // A boost: an empty shell around the boosted status.
            let j = s.below(boostPool(count))
            writeBody(id: statusID(i), author: author, seed: seed, salt: statusSalt, index: i, count: count, version: version,
                      boost: j, reply: nil, into: &w)
        } else {
            var reply: (id: String, account: String)?
            if s.chance(20) {
                if !s.chance(85), i + 1 < count {
                    let target = i + 1 + s.below(min(50, count - i - 1))
                    reply = (statusID(target), accountID(Self.author(ofStatus: target, count: count, seed: seed)))
                } else {
                    reply = (elsewhereID(s.below(1_000_000)), accountID(zipf(&s, accounts)))
                }
            }
            writeBody(id: statusID(i), author: author, seed: seed, salt: statusSalt, index: i, count: count, version: version,
                      boost: nil, reply: reply, into: &w)
        }
        out = w.out
    }

    private static func writeBody(
        id: String, author: Int, seed: UInt64, salt: UInt64, index: Int, count: Int, version: Int, boost: Int?,
        reply: (id: String, account: String)?, into w: inout CompactWriter
    ) {
        // What stays: from the status's own seed (drawn after the author and kind). What a version
        // changes: from that and the version.
        var s = SeededGenerator(seed: seed ^ salt ^ 0xABCD ^ (UInt64(index) &* 0x94D0_49BB_1331_11EB))
        var c = changes(seed, salt, index, version)
        let accounts = accountCount(count)
        let created = 1_700_000_000 - index * 37 - (salt == boostedSalt ? 86_400 : 0)
        let edited = version > 1 && boost == nil && c.chance(10)
        let url = "https://\(instance(author))/@\(username(author))/\(id)"
        w.open()
        w.field("id", id)
        w.field("created_at", Workload.iso8601(created))
        w.field("in_reply_to_id", reply?.id)
        w.field("in_reply_to_account_id", reply?.account)
        let shell = boost != nil
        w.field("sensitive", !shell && s.chance(5))
        w.field("spoiler_text", !shell && s.chance(5) ? "spoilers for \(Workload.prose[s.below(Workload.prose.count)])" : "")
        w.field("visibility", s.chance(90) ? "public" : "unlisted")
        w.field("language", shell ? nil : "en")
        w.field("uri", "https://\(instance(author))/users/\(username(author))/statuses/\(id)" + (shell ? "/activity" : ""))
        w.field("url", shell ? nil : url)
        w.field("replies_count", shell ? 0 : c.below(40))
        w.field("reblogs_count", shell ? 0 : c.below(200) + version)
        w.field("favourites_count", shell ? 0 : c.below(900) + version * 3)
        w.field("edited_at", edited ? Workload.iso8601(created + 600 + c.below(86_400)) : nil)
        w.field("favourited", false)
        w.field("reblogged", false)
        w.field("muted", false)
        w.field("bookmarked", false)
        var mentions: [Int] = []
        var tags: [Int] = []
        if !shell {
            if s.chance(45) {
                for _ in 0..<(1 + s.below(3)) {
                    let m = zipf(&s, accounts)
                    if m != author, !mentions.contains(m) { mentions.append(m) }
                }
            }
            if s.chance(40) {
                for _ in 0..<(1 + s.below(3)) {
                    let t = zipf(&s, tagCount)
                    if !tags.contains(t) { tags.append(t) }
                }
            }
        }
        // The content: mentions, prose, hashtags, as Rails escapes HTML in JSON.
        w.key("content")
        if shell {
            w.out.append(contentsOf: "\"\",".utf8)
        } else {
            var words = edited ? c : s
            var text = #"\u003cp\u003e"#
            for m in mentions {
                text += #"\u003cspan class=\"h-card\" translate=\"no\"\u003e\u003ca href=\"\#(accountURL(m))\" class=\"u-url mention\"\u003e@\u003cspan\u003e\#(username(m))\u003c/span\u003e\u003c/a\u003e\u003c/span\u003e "#
            }
            let length = 6 + words.below(24)
            for k in 0..<length {
                if k > 0 { text += k % 17 == 0 ? #"\u003c/p\u003e\u003cp\u003e"# : " " }
                text += Workload.prose[words.below(Workload.prose.count)]
                if k % 23 == 11 { text += #" \u0026amp; "# }
            }
            for t in tags {
                text += #" \u003ca href=\"https://mastodon.example/tags/\#(tagName(t))\" class=\"mention hashtag\" rel=\"tag\"\u003e#\u003cspan\u003e\#(tagName(t))\u003c/span\u003e\u003c/a\u003e"#
            }
            text += #"\u003c/p\u003e"#
            w.out.append(UInt8(ascii: "\""))
            w.out.append(contentsOf: text.utf8)
            w.out.append(contentsOf: "\",".utf8)
        }
        if let boost {
            w.key("reblog")
            var b = structure(seed, boostedSalt, boost)
            let boostedAuthor = zipf(&b, accounts)
            writeBody(id: boostedID(boost), author: boostedAuthor, seed: seed, salt: boostedSalt, index: boost, count: count,
                      version: version, boost: nil, reply: nil, into: &w)
            w.comma()
        } else {
            w.key("reblog")
            w.null()
        }
        w.key("application")
        if shell {
            w.null()
        } else {
            w.open()
            w.field("name", s.chance(50) ? "Web" : "Tusky")
            w.field("website", nil, last: true)
            w.close()
            w.comma()
        }
        w.key("account")
        writeAccount(author, seed: seed, version: version, into: &w)
        w.comma()
        w.key("media_attachments")
        w.openArray()
        if !shell, s.chance(20) {
            for k in 0..<(1 + s.below(4)) {
                if k > 0 { w.comma() }
                let mediaID = "\(id)\(k)"
                let width = 640 + s.below(1400), height = 480 + s.below(1000)
                w.open()
                w.field("id", mediaID)
                w.field("type", k == 3 ? "gifv" : "image")
                w.field("url", "https://files.\(instance(author))/media_attachments/files/\(mediaID)/original/\(mediaID).png")
                w.field("preview_url", "https://files.\(instance(author))/media_attachments/files/\(mediaID)/small/\(mediaID).png")
                w.field("remote_url", nil)
                w.field("preview_remote_url", nil)
                w.field("text_url", nil)
                w.key("meta")
                w.out.append(contentsOf: #"{"original":{"width":\#(width),"height":\#(height),"size":"\#(width)x\#(height)","aspect":1.5},"small":{"width":400,"height":300,"size":"400x300","aspect":1.3333333333333333}},"#.utf8)
                w.field("description", s.chance(60) ? "a photo of \(Workload.prose[s.below(Workload.prose.count)]) \(Workload.prose[s.below(Workload.prose.count)])" : nil)
                w.field("blurhash", "UFGun#WB00R*~qoft7WB_3ogIUWV%MWBRjof", last: true)
                w.close()
            }
        }
        w.closeArray()
        w.key("mentions")
        w.openArray()
        for (k, m) in mentions.enumerated() {
            if k > 0 { w.comma() }
            w.open()
            w.field("id", accountID(m))
            w.field("username", username(m))
            w.field("url", accountURL(m))
            w.field("acct", acct(m), last: true)
            w.close()
        }
        w.closeArray()
        w.key("tags")
        w.openArray()
        for (k, t) in tags.enumerated() {
            if k > 0 { w.comma() }
            w.open()
            w.field("name", tagName(t))
            w.field("url", "https://mastodon.example/tags/\(tagName(t))", last: true)
            w.close()
        }
        w.closeArray()
        w.key("emojis")
        w.openArray()
        w.closeArray()
        w.key("card")
        if !shell, s.chance(15) {
            let site = Workload.words[s.below(Workload.words.count)]
            w.open()
            w.field("url", "https://\(site).example/articles/\(id)")
            w.field("title", "How \(site) \(Workload.prose[s.below(Workload.prose.count)]) works")
            w.field("description", (0..<12).map { _ in Workload.prose[s.below(Workload.prose.count)] }.joined(separator: " "))
            w.field("type", "link")
            w.field("author_name", s.chance(50) ? username(s.below(accounts)) : "")
            w.field("author_url", "")
            w.field("provider_name", "\(site).example")
            w.field("provider_url", "")
            w.field("html", "")
            w.field("width", 400)
            w.field("height", 210)
            w.field("image", s.chance(70) ? "https://files.mastodon.example/cache/preview_cards/images/\(id).png" : nil)
            w.field("embed_url", "")
            w.field("blurhash", "UCFs7h00~qRjWBxuayof00M{t7M{-;t7WBj[", last: true)
            w.close()
            w.comma()
        } else {
            w.null()
        }
        w.key("poll")
        if !shell, s.chance(5) {
            let options = 2 + s.below(3)
            let votes = (0..<options).map { _ in c.below(500) }
            w.open()
            w.field("id", String(400_000 + index * 3 + (salt == boostedSalt ? 1 : 0)))
            w.field("expires_at", s.chance(80) ? Workload.iso8601(created + 86_400 * (1 + s.below(7))) : nil)
            w.field("expired", s.chance(50))
            w.field("multiple", s.chance(20))
            w.field("votes_count", votes.reduce(0, +))
            w.field("voters_count", max(0, votes.reduce(0, +) - c.below(10)))
            w.key("options")
            w.openArray()
            for k in 0..<options {
                if k > 0 { w.comma() }
                w.open()
                w.field("title", "\(Workload.prose[s.below(Workload.prose.count)]) \(k + 1)")
                w.field("votes_count", votes[k], last: true)
                w.close()
            }
            w.closeArray()
            w.key("emojis")
            w.openArray()
            w.closeArray()
            w.field("voted", false, last: true)
            w.close()
            w.comma()
        } else {
            w.null()
        }
        w.key("filtered")
        w.out.append(contentsOf: "[]".utf8)  // the last member
        w.close()
    }

    private static let fieldNames = ["Website", "Pronouns", "Location", "GitHub", "Matrix", "Blog"]

    static func writeAccount(_ a: Int, seed: UInt64, version: Int, into w: inout CompactWriter) {
        var s = structure(seed, accountSalt, a)
        let name = username(a)
        let created = 1_500_000_000 + s.below(150_000_000)
        w.open()
        w.field("id", accountID(a))
        w.field("username", name)
        w.field("acct", acct(a))
        w.field("display_name", "\(Workload.prose[s.below(Workload.prose.count)].capitalized) \(name) :blob:")
        w.field("locked", s.chance(10))
        w.field("bot", s.chance(3))
        w.field("discoverable", true)
        w.field("group", false)
        w.field("created_at", Workload.iso8601(created))
        let note = (0..<(4 + s.below(12))).map { _ in Workload.prose[s.below(Workload.prose.count)] }.joined(separator: " ")
        w.field("note", #"\u003cp\u003e\#(note)\u003c/p\u003e"#)
        w.field("url", accountURL(a))
        w.field("uri", "https://\(instance(a))/users/\(name)")
        w.field("avatar", "https://cdn.example/avatars/\(accountID(a)).png")
        w.field("avatar_static", "https://cdn.example/avatars/\(accountID(a)).png")
        w.field("header", "https://cdn.example/headers/\(accountID(a)).jpg")
        w.field("header_static", "https://cdn.example/headers/\(accountID(a)).jpg")
        w.field("followers_count", s.below(20_000) + (a % 3 == 0 ? version * 11 : 0))
        w.field("following_count", s.below(2_000))
        w.field("statuses_count", s.below(50_000))
        w.field("last_status_at", "2024-05-\(10 + a % 19)")
        w.key("emojis")
        w.openArray()
        for k in 0..<s.below(3) {
            if k > 0 { w.comma() }
            let code = "\(Workload.words[s.below(Workload.words.count)])_\(k)"
            w.open()
            w.field("shortcode", code)
            w.field("url", "https://files.mastodon.example/custom_emojis/images/\(code)/original.png")
            w.field("static_url", "https://files.mastodon.example/custom_emojis/images/\(code)/static.png")
            w.field("visible_in_picker", true, last: true)
            w.close()
        }
        w.closeArray()
        var fields = s.below(4)
        let changed = version > 1 && a % 10 == 0
        if version > 1 && a % 20 == 0 { fields = (fields + 1) % 4 }
        w.key("fields")
        w.openArray()
        for k in 0..<fields {
            if k > 0 { w.comma() }
            let site = Workload.words[(a + k) % Workload.words.count]
            let target = changed ? "\(site).example/v\(version)" : "\(site).example/\(name)"
            w.open()
            w.field("name", fieldNames[(a + k) % fieldNames.count])
            w.field("value", #"\u003ca href=\"https://\#(target)\" target=\"_blank\" rel=\"nofollow noopener noreferrer me\" translate=\"no\"\u003e\u003cspan class=\"invisible\"\u003ehttps://\u003c/span\u003e\u003cspan class=\"\"\u003e\#(target)\u003c/span\u003e\u003c/a\u003e"#)
            w.field("verified_at", (a + k) % 3 == 0 ? Workload.iso8601(created + 86_400) : nil, last: true)
            w.close()
        }
        w.closeArray()
        w.out.removeLast()  // the last member
        w.close()
    }
}
