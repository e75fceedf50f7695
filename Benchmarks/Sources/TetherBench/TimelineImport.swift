import Foundation
import Tether

/// Tether's side of the home-timeline workload: Mastodon's status, account, tag and media
/// attachment (identified by `id`, or `name` for tags), a self-referential to-one (`reblog`), a
/// to-one by id that mostly stays pending (`inReplyTo`, from `in_reply_to_id`), many-to-many
/// (`mentions`, `tags`), and owned objects without identity: an account's `fields` and `emojis`,
/// a status's `card` and `poll`, a poll's `options`.
enum TimelineImport {
    static let entities = ["Status", "Account", "Tag", "MediaAttachment", "Field", "Emoji", "Card", "Poll", "PollOption"]

    static let schema: Schema = {
        do {
            return try Schema {
                Entity("Status", identity: "id") {
                    Attribute("id", .string)
                    Attribute("createdAt", .date)
                    Attribute("inReplyToAccountID", .string)
                    Attribute("sensitive", .bool)
                    Attribute("spoilerText", .string)
                    Attribute("visibility", .string)
                    Attribute("language", .string)
                    Attribute("uri", .string)
                    Attribute("url", .string)
                    Attribute("repliesCount", .int64)
                    Attribute("reblogsCount", .int64)
                    Attribute("favouritesCount", .int64)
                    Attribute("editedAt", .date)
                    Attribute("content", .string)
                    Relationship.toOne("account", "Account", inverse: "statuses")
                    Relationship.toOne("reblog", "Status", inverse: "reblogs")
                    Relationship.toMany("reblogs", "Status", inverse: "reblog")
                    Relationship.toOne("inReplyTo", "Status", inverse: "replies")
                    Relationship.toMany("replies", "Status", inverse: "inReplyTo")
                    Relationship.toMany("mentions", "Account", inverse: "mentionedIn")
                    Relationship.toMany("tags", "Tag", inverse: "statuses")
                    Relationship.toMany("mediaAttachments", "MediaAttachment", inverse: "status", ordered: true)
                    Relationship.toOne("card", "Card", inverse: "status")
                    Relationship.toOne("poll", "Poll", inverse: "status")
                }
                Entity("Account", identity: "id") {
                    Attribute("id", .string)
                    Attribute("username", .string)
                    Attribute("acct", .string)
                    Attribute("displayName", .string)
                    Attribute("locked", .bool)
                    Attribute("bot", .bool)
                    Attribute("createdAt", .date)
                    Attribute("note", .string)
                    Attribute("url", .string)
                    Attribute("avatar", .string)
                    Attribute("header", .string)
                    Attribute("followersCount", .int64)
                    Attribute("followingCount", .int64)
                    Attribute("statusesCount", .int64)
                    Attribute("lastStatusAt", .string)
                    Relationship.toMany("statuses", "Status", inverse: "account")
                    Relationship.toMany("mentionedIn", "Status", inverse: "mentions")
                    Relationship.toMany("fields", "Field", inverse: "account", ordered: true)
                    Relationship.toMany("emojis", "Emoji", inverse: "account")
                }
                Entity("Field") {
                    Attribute("name", .string)
                    Attribute("value", .string)
                    Attribute("verifiedAt", .date)
                    Relationship.toOne("account", "Account", inverse: "fields")
                }
                Entity("Emoji") {
                    Attribute("shortcode", .string)
                    Attribute("url", .string)
                    Attribute("staticURL", .string)
                    Attribute("visibleInPicker", .bool)
                    Relationship.toOne("account", "Account", inverse: "emojis")
                }
                Entity("Tag", identity: "name") {
                    Attribute("name", .string)
                    Attribute("url", .string)
                    Relationship.toMany("statuses", "Status", inverse: "tags")
                }
                Entity("MediaAttachment", identity: "id") {
                    Attribute("id", .string)
                    Attribute("type", .string)
                    Attribute("url", .string)
                    Attribute("previewURL", .string)
                    Attribute("mediaDescription", .string)
                    Attribute("blurhash", .string)
                    Relationship.toOne("status", "Status", inverse: "mediaAttachments")
                }
                Entity("Card") {
                    Attribute("url", .string)
                    Attribute("title", .string)
                    Attribute("cardDescription", .string)
                    Attribute("type", .string)
                    Attribute("authorName", .string)
                    Attribute("providerName", .string)
                    Attribute("image", .string)
                    Attribute("width", .int64)
                    Attribute("height", .int64)
                    Relationship.toOne("status", "Status", inverse: "card")
                }
                Entity("Poll") {
                    Attribute("expiresAt", .date)
                    Attribute("expired", .bool)
                    Attribute("multiple", .bool)
                    Attribute("votesCount", .int64)
                    Attribute("votersCount", .int64)
                    Relationship.toOne("status", "Status", inverse: "poll")
                    Relationship.toMany("options", "PollOption", inverse: "poll", ordered: true)
                }
                Entity("PollOption") {
                    Attribute("title", .string)
                    Attribute("votesCount", .int64)
                    Relationship.toOne("poll", "Poll", inverse: "options")
                }
            }
        } catch {
            fatalError("the timeline schema is invalid: \(error)")
        }
    }()

    /// Rails' snake_case keys, as the issues workload maps them: explicit overrides of the names
    /// that differ, and the reply target as a foreign key (`in_reply_to_id`).
    static let keys = KeyOverrides(
        [
            "Status": [
                "createdAt": "created_at", "inReplyToAccountID": "in_reply_to_account_id", "spoilerText": "spoiler_text",
                "repliesCount": "replies_count", "reblogsCount": "reblogs_count", "favouritesCount": "favourites_count",
                "editedAt": "edited_at", "mediaAttachments": "media_attachments",
            ],
            "Account": [
                "displayName": "display_name", "createdAt": "created_at", "followersCount": "followers_count",
                "followingCount": "following_count", "statusesCount": "statuses_count", "lastStatusAt": "last_status_at",
            ],
            "Field": ["verifiedAt": "verified_at"],
            "Emoji": ["staticURL": "static_url", "visibleInPicker": "visible_in_picker"],
            "MediaAttachment": ["previewURL": "preview_url", "mediaDescription": "description"],
            "Card": ["cardDescription": "description", "authorName": "author_name", "providerName": "provider_name"],
            "Poll": ["expiresAt": "expires_at", "votesCount": "votes_count", "votersCount": "voters_count"],
            "PollOption": ["votesCount": "votes_count"],
        ],
        foreignKeys: ["Status": ["inReplyTo": "in_reply_to_id"]])

    static func client(store: any Store) throws -> Client {
        try Client.Builder(schema: schema).keyMapping(keys).store(store).build()
    }

    static func importStatuses(_ data: Data, into client: Client) async throws -> ImportResult {
        try check(await client.import(data, as: "Status"))
    }

    /// Pending references (reply targets not stored yet) are expected; any other diagnostic fails the row.
    private static func check(_ result: ImportResult) throws -> ImportResult {
        if let first = result.diagnostics.first(where: { $0.problem != .pendingReference }) {
            throw BenchmarkError("Tether reported \(result.diagnostics.count) diagnostics, first: \(first)")
        }
        return result
    }
}

/// The hand-written baseline for the timeline: `JSONDecoder` into structs, then, in one
/// transaction, prepared upserts of the distinct accounts (their fields and emojis replaced), the
/// mentioned accounts (username, acct, url), tags, statuses (boosted ones first; reply targets as a
/// plain column), media, and per status its join rows, card, poll and options replaced.
enum TimelineBaseline {
    struct Field: Decodable {
        let name: String
        let value: String
        let verifiedAt: Date?
    }

    struct Emoji: Decodable {
        let shortcode: String
        let url: String
        let staticUrl: String
        let visibleInPicker: Bool
    }

    struct Account: Decodable {
        let id: String
        let username: String
        let acct: String
        let displayName: String
        let locked: Bool
        let bot: Bool
        let createdAt: Date
        let note: String
        let url: String
        let avatar: String
        let header: String
        let followersCount: Int64
        let followingCount: Int64
        let statusesCount: Int64
        let lastStatusAt: String?
        let emojis: [Emoji]
        let fields: [Field]
    }

    struct Mention: Decodable {
        let id: String
        let username: String
        let url: String
        let acct: String
    }

    struct Tag: Decodable {
        let name: String
        let url: String
    }

    struct Media: Decodable {
        let id: String
        let type: String
        let url: String
        let previewUrl: String
        let description: String?
        let blurhash: String?
    }

    struct Card: Decodable {
        let url: String
        let title: String
        let description: String
        let type: String
        let authorName: String
        let providerName: String
        let image: String?
        let width: Int64
        let height: Int64
    }

    struct PollOption: Decodable {
        let title: String
        let votesCount: Int64
    }

    struct Poll: Decodable {
        let expiresAt: Date?
        let expired: Bool
        let multiple: Bool
        let votesCount: Int64
        let votersCount: Int64?
        let options: [PollOption]
    }

    /// A class: a status nests the status it boosts.
    final class Status: Decodable {
        let id: String
        let createdAt: Date
        let inReplyToId: String?
        let inReplyToAccountId: String?
        let sensitive: Bool
        let spoilerText: String
        let visibility: String
        let language: String?
        let uri: String
        let url: String?
        let repliesCount: Int64
        let reblogsCount: Int64
        let favouritesCount: Int64
        let editedAt: Date?
        let content: String
        let reblog: Status?
        let account: Account
        let mediaAttachments: [Media]
        let mentions: [Mention]
        let tags: [Tag]
        let card: Card?
        let poll: Poll?
    }

    static func createDatabase(at path: String) throws -> SQLiteDatabase {
        let database = try SQLiteDatabase(path: path)
        try database.execute(
            """
            PRAGMA journal_mode = WAL;
            PRAGMA synchronous = NORMAL;
            CREATE TABLE IF NOT EXISTS accounts (
                id TEXT PRIMARY KEY, username TEXT NOT NULL, acct TEXT, display_name TEXT, locked INTEGER, bot INTEGER,
                created_at REAL, note TEXT, url TEXT, avatar TEXT, header TEXT, followers_count INTEGER,
                following_count INTEGER, statuses_count INTEGER, last_status_at TEXT) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS account_fields (
                account_id TEXT NOT NULL, position INTEGER NOT NULL, name TEXT, value TEXT, verified_at REAL,
                PRIMARY KEY (account_id, position)) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS account_emojis (
                account_id TEXT NOT NULL, position INTEGER NOT NULL, shortcode TEXT, url TEXT, static_url TEXT,
                visible_in_picker INTEGER, PRIMARY KEY (account_id, position)) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS tags (name TEXT PRIMARY KEY, url TEXT) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS statuses (
                id TEXT PRIMARY KEY, created_at REAL, in_reply_to_id TEXT, in_reply_to_account_id TEXT, sensitive INTEGER,
                spoiler_text TEXT, visibility TEXT, language TEXT, uri TEXT, url TEXT, replies_count INTEGER,
                reblogs_count INTEGER, favourites_count INTEGER, edited_at REAL, content TEXT,
                account_id TEXT REFERENCES accounts(id), reblog_id TEXT REFERENCES statuses(id)) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS statuses_account ON statuses (account_id);
            CREATE INDEX IF NOT EXISTS statuses_reblog ON statuses (reblog_id);
            CREATE INDEX IF NOT EXISTS statuses_reply ON statuses (in_reply_to_id);
            CREATE TABLE IF NOT EXISTS status_mentions (
                status_id TEXT NOT NULL, account_id TEXT NOT NULL, position INTEGER NOT NULL,
                PRIMARY KEY (status_id, account_id)) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS status_mentions_account ON status_mentions (account_id);
            CREATE TABLE IF NOT EXISTS status_tags (
                status_id TEXT NOT NULL, tag_name TEXT NOT NULL, position INTEGER NOT NULL,
                PRIMARY KEY (status_id, tag_name)) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS status_tags_tag ON status_tags (tag_name);
            CREATE TABLE IF NOT EXISTS media (
                id TEXT PRIMARY KEY, status_id TEXT, position INTEGER, type TEXT, url TEXT, preview_url TEXT,
                description TEXT, blurhash TEXT) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS media_status ON media (status_id);
            CREATE TABLE IF NOT EXISTS cards (
                status_id TEXT PRIMARY KEY, url TEXT, title TEXT, description TEXT, type TEXT, author_name TEXT,
                provider_name TEXT, image TEXT, width INTEGER, height INTEGER) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS polls (
                status_id TEXT PRIMARY KEY, expires_at REAL, expired INTEGER, multiple INTEGER, votes_count INTEGER,
                voters_count INTEGER) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS poll_options (
                status_id TEXT NOT NULL, position INTEGER NOT NULL, title TEXT, votes_count INTEGER,
                PRIMARY KEY (status_id, position)) WITHOUT ROWID;
            """)
        return database
    }

    /// The prepared statements, reused across the imports of a refresh.
    struct Statements {
        let account, deleteFields, insertField, deleteEmojis, insertEmoji, mention, tag, status: SQLiteDatabase.Statement
        let deleteMentions, insertMention, deleteTags, insertTag, deleteMedia, insertMedia: SQLiteDatabase.Statement
        let deleteCard, insertCard, deletePoll, insertPoll, deleteOptions, insertOption: SQLiteDatabase.Statement

        init(_ database: SQLiteDatabase) throws {
            account = try database.prepare(
                """
                INSERT INTO accounts (id, username, acct, display_name, locked, bot, created_at, note, url, avatar, header,
                    followers_count, following_count, statuses_count, last_status_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET username = excluded.username, acct = excluded.acct,
                    display_name = excluded.display_name, locked = excluded.locked, bot = excluded.bot,
                    created_at = excluded.created_at, note = excluded.note, url = excluded.url, avatar = excluded.avatar,
                    header = excluded.header, followers_count = excluded.followers_count,
                    following_count = excluded.following_count, statuses_count = excluded.statuses_count,
                    last_status_at = excluded.last_status_at
                """)
            deleteFields = try database.prepare("DELETE FROM account_fields WHERE account_id = ?")
            insertField = try database.prepare(
                "INSERT INTO account_fields (account_id, position, name, value, verified_at) VALUES (?, ?, ?, ?, ?)")
            deleteEmojis = try database.prepare("DELETE FROM account_emojis WHERE account_id = ?")
            insertEmoji = try database.prepare(
                """
                INSERT INTO account_emojis (account_id, position, shortcode, url, static_url, visible_in_picker)
                VALUES (?, ?, ?, ?, ?, ?)
                """)
            mention = try database.prepare(
                """
                INSERT INTO accounts (id, username, acct, url) VALUES (?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET username = excluded.username, acct = excluded.acct, url = excluded.url
                """)
            tag = try database.prepare(
                "INSERT INTO tags (name, url) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET url = excluded.url")
            status = try database.prepare(
                """
                INSERT INTO statuses (id, created_at, in_reply_to_id, in_reply_to_account_id, sensitive, spoiler_text,
                    visibility, language, uri, url, replies_count, reblogs_count, favourites_count, edited_at, content,
                    account_id, reblog_id)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET created_at = excluded.created_at, in_reply_to_id = excluded.in_reply_to_id,
                    in_reply_to_account_id = excluded.in_reply_to_account_id, sensitive = excluded.sensitive,
                    spoiler_text = excluded.spoiler_text, visibility = excluded.visibility, language = excluded.language,
                    uri = excluded.uri, url = excluded.url, replies_count = excluded.replies_count,
                    reblogs_count = excluded.reblogs_count, favourites_count = excluded.favourites_count,
                    edited_at = excluded.edited_at, content = excluded.content, account_id = excluded.account_id,
                    reblog_id = excluded.reblog_id
                """)
            deleteMentions = try database.prepare("DELETE FROM status_mentions WHERE status_id = ?")
            insertMention = try database.prepare(
                "INSERT INTO status_mentions (status_id, account_id, position) VALUES (?, ?, ?)")
            deleteTags = try database.prepare("DELETE FROM status_tags WHERE status_id = ?")
            insertTag = try database.prepare("INSERT INTO status_tags (status_id, tag_name, position) VALUES (?, ?, ?)")
            deleteMedia = try database.prepare("DELETE FROM media WHERE status_id = ?")
            insertMedia = try database.prepare(
                """
                INSERT INTO media (id, status_id, position, type, url, preview_url, description, blurhash)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET status_id = excluded.status_id, position = excluded.position,
                    type = excluded.type, url = excluded.url, preview_url = excluded.preview_url,
                    description = excluded.description, blurhash = excluded.blurhash
                """)
            deleteCard = try database.prepare("DELETE FROM cards WHERE status_id = ?")
            insertCard = try database.prepare(
                """
                INSERT INTO cards (status_id, url, title, description, type, author_name, provider_name, image, width, height)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
            deletePoll = try database.prepare("DELETE FROM polls WHERE status_id = ?")
            insertPoll = try database.prepare(
                """
                INSERT INTO polls (status_id, expires_at, expired, multiple, votes_count, voters_count)
                VALUES (?, ?, ?, ?, ?, ?)
                """)
            deleteOptions = try database.prepare("DELETE FROM poll_options WHERE status_id = ?")
            insertOption = try database.prepare(
                "INSERT INTO poll_options (status_id, position, title, votes_count) VALUES (?, ?, ?, ?)")
        }
    }

    /// Decodes `data` and writes it; returns the number of top-level statuses.
    @discardableResult
    static func importStatuses(_ data: Data, into database: SQLiteDatabase, statements: Statements? = nil) throws -> Int {
        let statuses = try Baseline.decoder().decode([Status].self, from: data)
        let s = try statements ?? Statements(database)
        try database.execute("BEGIN")
        do {
            // Accounts first (a full account once per import), then the mentioned ones, then tags, then statuses, boosted ones first.
            var accounts = Set<String>(), mentioned = Set<String>(), tags = Set<String>(), written = Set<String>()
            func writeAccount(_ account: Account) throws {
                guard accounts.insert(account.id).inserted else { return }
                s.account.bind(1, account.id)
                s.account.bind(2, account.username)
                s.account.bind(3, account.acct)
                s.account.bind(4, account.displayName)
                s.account.bind(5, account.locked)
                s.account.bind(6, account.bot)
                s.account.bind(7, account.createdAt.timeIntervalSince1970)
                s.account.bind(8, account.note)
                s.account.bind(9, account.url)
                s.account.bind(10, account.avatar)
                s.account.bind(11, account.header)
                s.account.bind(12, account.followersCount)
                s.account.bind(13, account.followingCount)
                s.account.bind(14, account.statusesCount)
                s.account.bind(15, account.lastStatusAt)
                try s.account.run()
                s.deleteFields.bind(1, account.id)
                try s.deleteFields.run()
                for (position, field) in account.fields.enumerated() {
                    s.insertField.bind(1, account.id)
                    s.insertField.bind(2, Int64(position))
                    s.insertField.bind(3, field.name)
                    s.insertField.bind(4, field.value)
                    s.insertField.bind(5, field.verifiedAt?.timeIntervalSince1970)
                    try s.insertField.run()
                }
                s.deleteEmojis.bind(1, account.id)
                try s.deleteEmojis.run()
                for (position, emoji) in account.emojis.enumerated() {
                    s.insertEmoji.bind(1, account.id)
                    s.insertEmoji.bind(2, Int64(position))
                    s.insertEmoji.bind(3, emoji.shortcode)
                    s.insertEmoji.bind(4, emoji.url)
                    s.insertEmoji.bind(5, emoji.staticUrl)
                    s.insertEmoji.bind(6, emoji.visibleInPicker)
                    try s.insertEmoji.run()
                }
            }
            // The last occurrence of an account wins (in document order a boost's nested
            // account comes before the booster's), as in Tether.
            for status in statuses.reversed() {
                try writeAccount(status.account)
                if let reblog = status.reblog { try writeAccount(reblog.account) }
            }
            for status in statuses {
                for mention in status.mentions + (status.reblog?.mentions ?? []) where mentioned.insert(mention.id).inserted {
                    s.mention.bind(1, mention.id)
                    s.mention.bind(2, mention.username)
                    s.mention.bind(3, mention.acct)
                    s.mention.bind(4, mention.url)
                    try s.mention.run()
                }
                for tag in status.tags + (status.reblog?.tags ?? []) where tags.insert(tag.name).inserted {
                    s.tag.bind(1, tag.name)
                    s.tag.bind(2, tag.url)
                    try s.tag.run()
                }
            }
            func writeStatus(_ status: Status) throws {
                guard written.insert(status.id).inserted else { return }
                s.status.bind(1, status.id)
                s.status.bind(2, status.createdAt.timeIntervalSince1970)
                s.status.bind(3, status.inReplyToId)
                s.status.bind(4, status.inReplyToAccountId)
                s.status.bind(5, status.sensitive)
                s.status.bind(6, status.spoilerText)
                s.status.bind(7, status.visibility)
                s.status.bind(8, status.language)
                s.status.bind(9, status.uri)
                s.status.bind(10, status.url)
                s.status.bind(11, status.repliesCount)
                s.status.bind(12, status.reblogsCount)
                s.status.bind(13, status.favouritesCount)
                s.status.bind(14, status.editedAt?.timeIntervalSince1970)
                s.status.bind(15, status.content)
                s.status.bind(16, status.account.id)
                s.status.bind(17, status.reblog?.id)
                try s.status.run()
                s.deleteMentions.bind(1, status.id)
                try s.deleteMentions.run()
                for (position, mention) in status.mentions.enumerated() {
                    s.insertMention.bind(1, status.id)
                    s.insertMention.bind(2, mention.id)
                    s.insertMention.bind(3, Int64(position))
                    try s.insertMention.run()
                }
                s.deleteTags.bind(1, status.id)
                try s.deleteTags.run()
                for (position, tag) in status.tags.enumerated() {
                    s.insertTag.bind(1, status.id)
                    s.insertTag.bind(2, tag.name)
                    s.insertTag.bind(3, Int64(position))
                    try s.insertTag.run()
                }
                s.deleteMedia.bind(1, status.id)
                try s.deleteMedia.run()
                for (position, media) in status.mediaAttachments.enumerated() {
                    s.insertMedia.bind(1, media.id)
                    s.insertMedia.bind(2, status.id)
                    s.insertMedia.bind(3, Int64(position))
                    s.insertMedia.bind(4, media.type)
                    s.insertMedia.bind(5, media.url)
                    s.insertMedia.bind(6, media.previewUrl)
                    s.insertMedia.bind(7, media.description)
                    s.insertMedia.bind(8, media.blurhash)
                    try s.insertMedia.run()
                }
                s.deleteCard.bind(1, status.id)
                try s.deleteCard.run()
                if let card = status.card {
                    s.insertCard.bind(1, status.id)
                    s.insertCard.bind(2, card.url)
                    s.insertCard.bind(3, card.title)
                    s.insertCard.bind(4, card.description)
                    s.insertCard.bind(5, card.type)
                    s.insertCard.bind(6, card.authorName)
                    s.insertCard.bind(7, card.providerName)
                    s.insertCard.bind(8, card.image)
                    s.insertCard.bind(9, card.width)
                    s.insertCard.bind(10, card.height)
                    try s.insertCard.run()
                }
                s.deletePoll.bind(1, status.id)
                try s.deletePoll.run()
                s.deleteOptions.bind(1, status.id)
                try s.deleteOptions.run()
                if let poll = status.poll {
                    s.insertPoll.bind(1, status.id)
                    s.insertPoll.bind(2, poll.expiresAt?.timeIntervalSince1970)
                    s.insertPoll.bind(3, poll.expired)
                    s.insertPoll.bind(4, poll.multiple)
                    s.insertPoll.bind(5, poll.votesCount)
                    s.insertPoll.bind(6, poll.votersCount)
                    try s.insertPoll.run()
                    for (position, option) in poll.options.enumerated() {
                        s.insertOption.bind(1, status.id)
                        s.insertOption.bind(2, Int64(position))
                        s.insertOption.bind(3, option.title)
                        s.insertOption.bind(4, option.votesCount)
                        try s.insertOption.run()
                    }
                }
            }
            for status in statuses {
                if let reblog = status.reblog { try writeStatus(reblog) }
                try writeStatus(status)
            }
        } catch {
            try? database.execute("ROLLBACK")
            throw error
        }
        try database.execute("COMMIT")
        return statuses.count
    }
}
