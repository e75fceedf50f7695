// The three models of the SLRESTfulCoreData article (GHUser, GHRepository, GHIssue), as Codable
// structs. Each property name is the article's; the JSON key comes from the Rails naming with the
// two conventions the article registers once (`identifier` <-> `id`, `URL` <-> `url`, see
// main.swift): `identifier` is `id`, `avatarURL` is `avatar_url`, `gravatarIdentifier` is
// `gravatar_id`, `createdAt` is `created_at`. Only what no convention can say is described.

import Foundation
import Tether

/// `GET /users/:login`. Identified by `identifier` (the JSON `id`): the identity the Rails naming
/// gives every entity that declares none.
struct User: EntityModel {
    var identifier: Int64
    var login: String
    var name: String?
    var company: String?
    var blog: String?
    var email: String?
    var type: String?
    var avatarURL: URL?
    var gravatarIdentifier: String?
    var createdAt: Date?
    /// `GET /users/:login/repos`, registered once as this relationship's URL.
    var repositories: [Repository] = []
}

/// `GET /repos/:full_name`; a user's list is `GET /users/:login/repos`.
struct Repository: EntityModel {
    var identifier: Int64
    var name: String
    var fullName: String
    var repositoryDescription: String?
    var `private`: Bool?
    var fork: Bool?
    var htmlURL: URL?
    var cloneURL: URL?
    var homepage: String?
    var openIssuesCount: Int64?
    var subscribersCount: Int64?
    var createdAt: Date?
    /// The nested `owner` object: the same `User` object as the one fetched by login.
    var owner: User?
    var issues: [Issue] = []

    static func describe(_ model: inout ModelDescription<Self>) {
        // The article's one exception: `description` is taken (by NSObject there).
        model.jsonKey(\.repositoryDescription, "description")
    }
}

/// CRUD base `/repos/:repository.full_name/issues`, one issue at `…/issues/:number`.
struct Issue: EntityModel {
    var repositoryURL: URL?
    var number: Int64?
    var title: String
    var body: String?
    var state: String?
    var htmlURL: URL?
    var comments: Int64?
    var createdAt: Date?
    var updatedAt: Date?
    var closedAt: Date?
    var repository: Repository?

    static func describe(_ model: inout ModelDescription<Self>) {
        // The article identifies issues by `number` alone, but a number is unique only within
        // its repository (the recordings hold two issues #1). `repository_url` + `number` is
        // the issue's identity on GitHub: it is in every issue JSON.
        model.identity(\.repositoryURL, \.number)
        // Set by the server; GitHub takes the repository from the URL, not from a `repository_id`.
        model.readOnly(\.repositoryURL)
        model.readOnly(\.number)
        model.readOnly(\.htmlURL)
        model.readOnly(\.comments)
        model.readOnly(\.createdAt)
        model.readOnly(\.updatedAt)
        model.readOnly(\.closedAt)
        model.readOnly(\.repository)
    }
}
