import Foundation
import Tether
import TetherKeyPaths

// AGEntityMapper's Task and Project.
struct Task: KeyPathModel, Equatable {
    var id: Int64 = 0
    var desc: String = ""
    var done = false
    var dueDate: Date?
    var priority: Priority = .normal
    var project: Project?
}

enum Priority: String, KeyPathValue { case low, normal, high }

struct Project: KeyPathModel, Equatable {
    var id: Int64 = 0
    var title = ""
    var tasks: [Task] = []
}

let taskMapping: KeyPathMapping<Task> = KeyPathMapping("Task", identity: \.id) {
    $0.map("id", to: \.id)
    $0.map("description", to: \.desc, named: "desc")
    $0.map("done", to: \.done)
    $0.map("due_date", to: \.dueDate, named: "dueDate")
    $0.map("priority", to: \.priority)
    $0.toOne("project", \.project, mapping: projectMapping, foreignKey: "project_id")
}

let projectMapping: KeyPathMapping<Project> = KeyPathMapping("Project", identity: \.id) {
    $0.map("id", to: \.id)
    $0.map("title", to: \.title)
    $0.toMany("tasks", \.tasks, mapping: taskMapping, inverse: "project")
}

// GitHub's users and repositories: a model without a default initializer uses a factory.
struct User: Sendable, Equatable {
    var login: String
    var id: Int = 0
    var avatarURL: URL?
    var repositories: [Repository] = []
}

struct Repository: KeyPathModel, Equatable {
    var id: Int = 0
    var fullName = ""
    var stars = 0
    var ownerLogin: String?
    var owner: User?
    var note = ""   // not mapped: local only
}

let userMapping: KeyPathMapping<User> = KeyPathMapping("User", identity: \.id, make: { User(login: "") }) {
    $0.map("id", to: \.id)
    $0.map("login", to: \.login)
    $0.map("avatar_url", to: \.avatarURL, named: "avatarURL")
    $0.toMany("repos", \.repositories, mapping: repositoryMapping, named: "repositories", inverse: "owner")
}

let repositoryMapping: KeyPathMapping<Repository> = KeyPathMapping("Repository", identity: \.id) {
    $0.map("id", to: \.id)
    $0.map("full_name", to: \.fullName, named: "fullName")
    $0.map("stargazers_count", to: \.stars, named: "stars")
    $0.map("owner.login", to: \.ownerLogin, named: "ownerLogin")
    $0.toOne("owner", \.owner, mapping: userMapping)
}
