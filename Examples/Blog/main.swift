// Blog: a JSON:API client in builder lines only, against the project's JSON:API server
// (Tests/Servers/jsonapi: djangorestframework-jsonapi, a blog of people, articles, tags and
// comments, dasherized member names, `include=`, `links.next` pages of two).
//
// It lists the articles with their authors and tags (every page, `included` imported in the same
// transaction), creates an article linked to an author and a tag, saves a change (a PATCH of only
// the title, with `type` and `id`), adds, removes and replaces its tags through the
// relationship's own URL, lists Ada's articles from the link the server gave (not a URL of its
// own), reads notes whose `commentable` is an article or a tag (a polymorphic relationship), shows
// the field errors of an invalid create, and deletes the article, printing each request it sends.
//
//     bash .ci/servers.sh start jsonapi   # or: bash Tests/Servers/jsonapi/start.sh 8100
//     swift run Blog                      # TETHER_JSONAPI_URL overrides http://127.0.0.1:8100/api
//     bash .ci/servers.sh stop jsonapi

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Tether
import TetherJSONAPI
import TetherURLSession

struct Article: EntityModel {
    var id: Int64
    var title: String?
    var bodyText: String?
    var author: Person?
    var tags: [Tag] = []
}

struct Person: EntityModel {
    var id: Int64
    var name: String?
    var articles: [Article] = []
    var articlesLink: String?          // the server's link to them: relationships.articles.links.related
    var articleCount: Int?             // relationships.articles.meta.count

    static func describe(_ model: inout ModelDescription<Self>) {
        model.jsonKey(\.articlesLink, "relationships.articles.links.related")
        model.jsonKey(\.articleCount, "relationships.articles.meta.count")
    }
}

struct Tag: EntityModel {
    var id: Int64
    var name: String?
}

struct Note: EntityModel {
    var id: Int64
    var body: String?
    var commentedArticle: Article?     // "commentable" when its type is "articles"
    var commentedTag: Tag?             // "commentable" when its type is "tags"
}

// MARK: Options

let usage = """
    usage: swift run Blog
      Lists the blog's articles with their authors and tags, creates, saves, tags and deletes an
      article on the JSON:API server of Tests/Servers (bash .ci/servers.sh start jsonapi).
      TETHER_JSONAPI_URL names the server, default http://127.0.0.1:8100/api.
    """
for argument in CommandLine.arguments.dropFirst() {
    if argument == "--help" || argument == "-h" {
        print(usage)
        exit(0)
    }
    FileHandle.standardError.write(Data("Blog: unknown option \(argument)\n\(usage)\n".utf8))
    exit(2)
}

let environment = ProcessInfo.processInfo.environment
let base = URL(string: environment["TETHER_JSONAPI_URL"].flatMap { $0.isEmpty ? nil : $0 } ?? "http://127.0.0.1:8100/api")!

let client = try Client.Builder(models: [Article.self, Person.self, Tag.self, Note.self])
    .jsonAPI(polymorphic: [PolymorphicRelationship("commentable", of: "Note", as: ["commentedArticle", "commentedTag"])])
    .transport(URLSessionTransport(timeout: 20))
    .baseURL(base)
    .onEvent { event in
        // Each request as it went: method, path and status.
        if case .request(let request) = event {
            let query = request.url.query.map { "?\($0)" } ?? ""
            print("  \(request.method) \(request.url.path)\(query) -> \(request.status.map(String.init) ?? "no answer")")
        }
    }
    .build()

// Every page of the articles, with their authors and tags.
let listed = try await client.fetchObjects("Article", from: "/articles?include=author,tags")
print("listed \(listed.objects.count) articles in \(listed.pages) pages, with \(try await client.count(Query("Person"))) people and \(try await client.count(Query("Tag"))) tags")
for article in try await client.fetch(Article.self, depth: 1).sorted(by: { $0.id < $1.id }).prefix(3) {
    print("  \(article.id): \"\(article.title ?? "")\" by \(article.author?.name ?? "nobody"), tagged \(article.tags.isEmpty ? "(none)" : article.tags.compactMap(\.name).joined(separator: ", "))")
}

// A new article by Ada, tagged swift.
let ada = try await client.fetchObject("Person", from: "/people/1")
let swift = try await client.fetchObject("Tag", from: "/tags/1")
let json = try await client.fetchObject("Tag", from: "/tags/3")
let draft = try await client.insertLocally("Article", values: ["title": .string("Told with Tether"), "bodyText": .string("JSON:API in one builder line.")],
                                           related: ["author": [ada.id], "tags": [swift.id]])
let created = try await client.create(draft.id, options: ExportOptions(omitIdentity: true))
print("created article \(created["id", as: Int64.self].map(String.init) ?? "?") by \(ada["name", as: String.self] ?? "?")")

try await client.updateLocally(created.id, setting: ["title": .string("Told with Tether, revised")])
try await client.save(created.id)

let tags = client.relationship("tags", of: created.id)
try await tags.add(json.id)
try await tags.remove(swift.id)
try await tags.replace(with: [swift.id, json.id])
let now = try await tags.list()
print("tags of the article: \(now.objects.compactMap { $0["name", as: String.self] }.joined(separator: ", "))")

// Ada's articles, from the related link the server gave (/api/writers/1/writings), which no
// template of the client's predicts; the relationship's meta says how many.
let counted = try await client.fetchModel(Person.self, from: "/people/1").articleCount
let written = try await client.relationship("articles", of: ada.id).list()
print("Ada's articles from the server's link: \(written.objects.count) (the relationship's meta said \(counted.map(String.init) ?? "nothing"))")

// Notes on an article or a tag: one polymorphic relationship, placed by its linkage's type.
_ = try await client.fetchObjects("Note", from: "/notes")
for note in try await client.fetch(Note.self, depth: 1).sorted(by: { $0.id < $1.id }).prefix(3) {
    let on = note.commentedArticle.map { "article \"\($0.title ?? "")\"" } ?? note.commentedTag.map { "tag \($0.name ?? "")" } ?? "nothing"
    print("note \(note.id) is on \(on)")
}

do {
    try await client.create("Article", values: ["title": .string("")])
} catch let error as HTTPError {
    print("invalid create: HTTP \(error.status), title: \(error.body.messages(for: "title").joined(separator: "; "))")
}

let status = try await client.delete(created.id)
print("deleted the article (HTTP \(status)); stored articles: \(try await client.count(Query("Article")))")
