import Foundation
import Tether

/// Tether's side of the issues workload: GitHub's issue, user, label and milestone, with every
/// relationship kind — to-one kept as a column (`user`, `assignee`, `milestone`, `creator`),
/// many-to-many (`assignees`), ordered many-to-many (`labels`, shared by thousands of issues).
enum IssuesImport {
    static let schema: Schema = {
        do {
            return try Schema {
                Entity("Issue", identity: "id") {
                    Attribute("id", .int64)
                    Attribute("number", .int64)
                    Attribute("title", .string)
                    Attribute("body", .string)
                    Attribute("state", .string)
                    Attribute("locked", .bool)
                    Attribute("comments", .int64)
                    Attribute("url", .string)
                    Attribute("htmlURL", .string)
                    Attribute("createdAt", .date)
                    Attribute("updatedAt", .date)
                    Attribute("closedAt", .date)
                    Attribute("authorAssociation", .string)
                    Relationship.toOne("user", "User", inverse: "createdIssues")
                    Relationship.toOne("assignee", "User", inverse: "assignedIssues")
                    Relationship.toMany("assignees", "User", inverse: "assignments")
                    Relationship.toMany("labels", "Label", inverse: "issues", ordered: true)
                    Relationship.toOne("milestone", "Milestone", inverse: "issues")
                }
                Entity("User", identity: "id") {
                    Attribute("id", .int64)
                    Attribute("login", .string)
                    Attribute("avatarURL", .string)
                    Attribute("gravatarID", .string)
                    Attribute("url", .string)
                    Attribute("htmlURL", .string)
                    Attribute("type", .string)
                    Attribute("siteAdmin", .bool)
                    Relationship.toMany("createdIssues", "Issue", inverse: "user")
                    Relationship.toMany("assignedIssues", "Issue", inverse: "assignee")
                    Relationship.toMany("assignments", "Issue", inverse: "assignees")
                    Relationship.toMany("createdMilestones", "Milestone", inverse: "creator")
                }
                Entity("Label", identity: "id") {
                    Attribute("id", .int64)
                    Attribute("name", .string)
                    Attribute("color", .string)
                    Attribute("isDefault", .bool)
                    Attribute("labelDescription", .string)
                    Attribute("url", .string)
                    Relationship.toMany("issues", "Issue", inverse: "labels")
                }
                Entity("Milestone", identity: "id") {
                    Attribute("id", .int64)
                    Attribute("number", .int64)
                    Attribute("title", .string)
                    Attribute("milestoneDescription", .string)
                    Attribute("state", .string)
                    Attribute("openIssues", .int64)
                    Attribute("closedIssues", .int64)
                    Attribute("url", .string)
                    Attribute("createdAt", .date)
                    Attribute("updatedAt", .date)
                    Attribute("dueOn", .date)
                    Relationship.toOne("creator", "User", inverse: "createdMilestones")
                    Relationship.toMany("issues", "Issue", inverse: "milestone")
                }
            }
        } catch {
            fatalError("the issues schema is invalid: \(error)")
        }
    }()

    static let keys = KeyOverrides([
        "Issue": [
            "htmlURL": "html_url", "createdAt": "created_at", "updatedAt": "updated_at", "closedAt": "closed_at",
            "authorAssociation": "author_association",
        ],
        "User": ["avatarURL": "avatar_url", "gravatarID": "gravatar_id", "htmlURL": "html_url", "siteAdmin": "site_admin"],
        "Label": ["isDefault": "default", "labelDescription": "description"],
        "Milestone": [
            "milestoneDescription": "description", "openIssues": "open_issues", "closedIssues": "closed_issues",
            "createdAt": "created_at", "updatedAt": "updated_at", "dueOn": "due_on",
        ],
    ])

    static func client(store: any Store) throws -> Client {
        try Client.Builder(schema: schema).keyMapping(keys).store(store).build()
    }

    static func importIssues(_ data: Data, into client: Client) async throws -> ImportResult {
        try check(await client.import(data, as: "Issue"))
    }

    static func importIssues(file path: String, batchSize: Int, into client: Client) async throws -> ImportResult {
        try check(await client.import(contentsOf: URL(fileURLWithPath: path), as: "Issue", options: ImportOptions(batchSize: batchSize)))
    }

    private static func check(_ result: ImportResult) throws -> ImportResult {
        if let first = result.diagnostics.first {
            throw BenchmarkError("Tether reported \(result.diagnostics.count) diagnostics, first: \(first)")
        }
        return result
    }
}

/// The hand-written baseline for issues: `JSONDecoder` into structs, then, in one transaction,
/// prepared upserts of the distinct users, labels and milestones and of the issues (to-one links as
/// columns), and the join tables of labels and assignees rewritten per issue (delete, insert).
enum IssuesBaseline {
    struct User: Decodable {
        let login: String
        let id: Int64
        let avatarUrl: String
        let gravatarId: String
        let url: String
        let htmlUrl: String
        let type: String
        let siteAdmin: Bool
    }

    struct Label: Decodable {
        let id: Int64
        let url: String
        let name: String
        let color: String
        let `default`: Bool
        let description: String?
    }

    struct Milestone: Decodable {
        let url: String
        let id: Int64
        let number: Int64
        let title: String
        let description: String?
        let creator: User
        let openIssues: Int64
        let closedIssues: Int64
        let state: String
        let createdAt: Date
        let updatedAt: Date
        let dueOn: Date?
    }

    struct Issue: Decodable {
        let url: String
        let htmlUrl: String
        let id: Int64
        let number: Int64
        let title: String
        let user: User
        let labels: [Label]
        let state: String
        let locked: Bool
        let assignee: User?
        let assignees: [User]
        let milestone: Milestone?
        let comments: Int64
        let createdAt: Date
        let updatedAt: Date
        let closedAt: Date?
        let authorAssociation: String
        let body: String?
    }

    static func createDatabase(at path: String) throws -> SQLiteDatabase {
        let database = try SQLiteDatabase(path: path)
        try database.execute(
            """
            PRAGMA journal_mode = WAL;
            PRAGMA synchronous = NORMAL;
            CREATE TABLE IF NOT EXISTS users (
                id INTEGER PRIMARY KEY, login TEXT NOT NULL, avatar_url TEXT, gravatar_id TEXT, url TEXT, html_url TEXT,
                type TEXT, site_admin INTEGER);
            CREATE TABLE IF NOT EXISTS labels (
                id INTEGER PRIMARY KEY, name TEXT NOT NULL, color TEXT, is_default INTEGER, description TEXT, url TEXT);
            CREATE TABLE IF NOT EXISTS milestones (
                id INTEGER PRIMARY KEY, number INTEGER, title TEXT, description TEXT, state TEXT, open_issues INTEGER,
                closed_issues INTEGER, url TEXT, created_at REAL, updated_at REAL, due_on REAL,
                creator_id INTEGER REFERENCES users(id));
            CREATE TABLE IF NOT EXISTS issues (
                id INTEGER PRIMARY KEY, number INTEGER, title TEXT, body TEXT, state TEXT, locked INTEGER, comments INTEGER,
                url TEXT, html_url TEXT, created_at REAL, updated_at REAL, closed_at REAL, author_association TEXT,
                user_id INTEGER REFERENCES users(id), assignee_id INTEGER REFERENCES users(id),
                milestone_id INTEGER REFERENCES milestones(id));
            CREATE INDEX IF NOT EXISTS issues_user ON issues (user_id);
            CREATE INDEX IF NOT EXISTS issues_assignee ON issues (assignee_id);
            CREATE INDEX IF NOT EXISTS issues_milestone ON issues (milestone_id);
            CREATE TABLE IF NOT EXISTS issue_labels (
                issue_id INTEGER NOT NULL, label_id INTEGER NOT NULL, position INTEGER NOT NULL,
                PRIMARY KEY (issue_id, label_id)) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS issue_labels_label ON issue_labels (label_id);
            CREATE TABLE IF NOT EXISTS issue_assignees (
                issue_id INTEGER NOT NULL, user_id INTEGER NOT NULL, position INTEGER NOT NULL,
                PRIMARY KEY (issue_id, user_id)) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS issue_assignees_user ON issue_assignees (user_id);
            """)
        return database
    }

    /// Prepared statements, reused across imports into one database (as an app keeps them).
    final class Statements {
        let user, label, milestone, issue, deleteLabels, insertLabel, deleteAssignees, insertAssignee: SQLiteDatabase.Statement

        init(_ database: SQLiteDatabase) throws {
            user = try database.prepare(
                """
                INSERT INTO users (id, login, avatar_url, gravatar_id, url, html_url, type, site_admin) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET login = excluded.login, avatar_url = excluded.avatar_url,
                    gravatar_id = excluded.gravatar_id, url = excluded.url, html_url = excluded.html_url,
                    type = excluded.type, site_admin = excluded.site_admin
                """)
            label = try database.prepare(
                """
                INSERT INTO labels (id, name, color, is_default, description, url) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET name = excluded.name, color = excluded.color,
                    is_default = excluded.is_default, description = excluded.description, url = excluded.url
                """)
            milestone = try database.prepare(
                """
                INSERT INTO milestones (id, number, title, description, state, open_issues, closed_issues, url, created_at,
                    updated_at, due_on, creator_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET number = excluded.number, title = excluded.title,
                    description = excluded.description, state = excluded.state, open_issues = excluded.open_issues,
                    closed_issues = excluded.closed_issues, url = excluded.url, created_at = excluded.created_at,
                    updated_at = excluded.updated_at, due_on = excluded.due_on, creator_id = excluded.creator_id
                """)
            issue = try database.prepare(
                """
                INSERT INTO issues (id, number, title, body, state, locked, comments, url, html_url, created_at, updated_at,
                    closed_at, author_association, user_id, assignee_id, milestone_id)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET number = excluded.number, title = excluded.title, body = excluded.body,
                    state = excluded.state, locked = excluded.locked, comments = excluded.comments, url = excluded.url,
                    html_url = excluded.html_url, created_at = excluded.created_at, updated_at = excluded.updated_at,
                    closed_at = excluded.closed_at, author_association = excluded.author_association,
                    user_id = excluded.user_id, assignee_id = excluded.assignee_id, milestone_id = excluded.milestone_id
                """)
            deleteLabels = try database.prepare("DELETE FROM issue_labels WHERE issue_id = ?")
            insertLabel = try database.prepare("INSERT INTO issue_labels (issue_id, label_id, position) VALUES (?, ?, ?)")
            deleteAssignees = try database.prepare("DELETE FROM issue_assignees WHERE issue_id = ?")
            insertAssignee = try database.prepare("INSERT INTO issue_assignees (issue_id, user_id, position) VALUES (?, ?, ?)")
        }
    }

    /// Decodes `data` and writes it; returns the number of issues.
    @discardableResult
    static func importIssues(_ data: Data, into database: SQLiteDatabase, statements: Statements? = nil) throws -> Int {
        let issues = try Baseline.decoder().decode([Issue].self, from: data)
        let s = try statements ?? Statements(database)
        try database.execute("BEGIN")
        do {
            var users = Set<Int64>(), labels = Set<Int64>(), milestones = Set<Int64>()
            func write(_ user: User) throws {
                guard users.insert(user.id).inserted else { return }
                s.user.bind(1, user.id)
                s.user.bind(2, user.login)
                s.user.bind(3, user.avatarUrl)
                s.user.bind(4, user.gravatarId)
                s.user.bind(5, user.url)
                s.user.bind(6, user.htmlUrl)
                s.user.bind(7, user.type)
                s.user.bind(8, user.siteAdmin)
                try s.user.run()
            }
            for issue in issues {
                try write(issue.user)
                for user in issue.assignees { try write(user) }
                if let assignee = issue.assignee { try write(assignee) }
                for label in issue.labels where labels.insert(label.id).inserted {
                    s.label.bind(1, label.id)
                    s.label.bind(2, label.name)
                    s.label.bind(3, label.color)
                    s.label.bind(4, label.default)
                    s.label.bind(5, label.description)
                    s.label.bind(6, label.url)
                    try s.label.run()
                }
                if let milestone = issue.milestone, milestones.insert(milestone.id).inserted {
                    try write(milestone.creator)
                    s.milestone.bind(1, milestone.id)
                    s.milestone.bind(2, milestone.number)
                    s.milestone.bind(3, milestone.title)
                    s.milestone.bind(4, milestone.description)
                    s.milestone.bind(5, milestone.state)
                    s.milestone.bind(6, milestone.openIssues)
                    s.milestone.bind(7, milestone.closedIssues)
                    s.milestone.bind(8, milestone.url)
                    s.milestone.bind(9, milestone.createdAt.timeIntervalSince1970)
                    s.milestone.bind(10, milestone.updatedAt.timeIntervalSince1970)
                    s.milestone.bind(11, milestone.dueOn?.timeIntervalSince1970)
                    s.milestone.bind(12, milestone.creator.id)
                    try s.milestone.run()
                }
            }
            for issue in issues {
                s.issue.bind(1, issue.id)
                s.issue.bind(2, issue.number)
                s.issue.bind(3, issue.title)
                s.issue.bind(4, issue.body)
                s.issue.bind(5, issue.state)
                s.issue.bind(6, issue.locked)
                s.issue.bind(7, issue.comments)
                s.issue.bind(8, issue.url)
                s.issue.bind(9, issue.htmlUrl)
                s.issue.bind(10, issue.createdAt.timeIntervalSince1970)
                s.issue.bind(11, issue.updatedAt.timeIntervalSince1970)
                s.issue.bind(12, issue.closedAt?.timeIntervalSince1970)
                s.issue.bind(13, issue.authorAssociation)
                s.issue.bind(14, issue.user.id)
                s.issue.bind(15, issue.assignee?.id)
                s.issue.bind(16, issue.milestone?.id)
                try s.issue.run()
                s.deleteLabels.bind(1, issue.id)
                try s.deleteLabels.run()
                for (position, label) in issue.labels.enumerated() {
                    s.insertLabel.bind(1, issue.id)
                    s.insertLabel.bind(2, label.id)
                    s.insertLabel.bind(3, Int64(position))
                    try s.insertLabel.run()
                }
                s.deleteAssignees.bind(1, issue.id)
                try s.deleteAssignees.run()
                for (position, user) in issue.assignees.enumerated() {
                    s.insertAssignee.bind(1, issue.id)
                    s.insertAssignee.bind(2, user.id)
                    s.insertAssignee.bind(3, Int64(position))
                    try s.insertAssignee.run()
                }
            }
        } catch {
            try? database.execute("ROLLBACK")
            throw error
        }
        try database.execute("COMMIT")
        return issues.count
    }
}
