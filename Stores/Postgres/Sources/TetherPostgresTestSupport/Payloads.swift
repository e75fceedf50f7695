import Foundation
import PostgresNIO
import Tether

/// What the many-writers tests (Tests/TetherPostgresTests) and their child process
/// (Sources/TetherPostgresWorker) share: the schema, the overlapping payloads, and the server's
/// settings from a URL. Not a product.
package enum Payloads {
    /// Repositories with their owners (to-one, one of 37 users), and issues with three labels
    /// each (an ordered many-to-many, of 17 labels).
    package static let schema = try! Schema {
        Entity("Repository", identity: "id") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Attribute("stars", .int64)
            Relationship.toOne("owner", "User", inverse: "repositories")
        }
        Entity("User", identity: "id") {
            Attribute("id", .int64)
            Attribute("login", .string)
            Relationship.toMany("repositories", "Repository", inverse: "owner")
        }
        Entity("Issue", identity: "id") {
            Attribute("id", .int64)
            Attribute("title", .string)
            Relationship.toMany("labels", "Label", inverse: "issues", ordered: true)
        }
        Entity("Label", identity: "id") {
            Attribute("id", .int64)
            Attribute("name", .string)
            Relationship.toMany("issues", "Issue", inverse: "labels")
        }
    }

    /// The repositories of `ids`, each with its owner nested (`i % 37`).
    package static func repositories(_ ids: Range<Int>) -> JSON {
        .array(ids.map { i in
            .object(["id": .int(Int64(i)), "name": .string("repo \(i)"), "stars": .int(Int64(i * 3)),
                     "owner": .object(["id": .int(Int64(i % 37)), "login": .string("user\(i % 37)")])])
        })
    }

    /// The labels of issue `issue`, in order.
    package static func labels(of issue: Int) -> [Int] { [issue % 7, (issue / 7) % 7 + 7, 20 + issue % 3] }

    /// The issues of `ids`, each with its labels nested.
    package static func issues(_ ids: Range<Int>) -> JSON {
        .array(ids.map { i in
            .object(["id": .int(Int64(i)), "title": .string("issue \(i)"),
                     "labels": .array(labels(of: i).map { .object(["id": .int(Int64($0)), "name": .string("label \($0)")]) })])
        })
    }

    /// The first repository of page `page` of writer `writer`: every page overlaps the other
    /// writers' (writer w starts at w * 100, pages advance by half a page).
    package static func start(writer: Int, page: Int, size: Int) -> Int { writer * 100 + page * (size / 2) }

    /// A pool's settings for a `postgres://user[:password]@host[:port]/database` URL (no TLS:
    /// the test servers listen on loopback).
    package static func configuration(url: String, maximumConnections: Int, applicationName: String? = nil) -> PostgresClient.Configuration? {
        guard let components = URLComponents(string: url), let host = components.host else { return nil }
        var configuration = PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: components.user ?? "postgres",
            password: components.password, database: String(components.path.dropFirst()), tls: .disable)
        configuration.options.maximumConnections = maximumConnections
        if let applicationName { configuration.options.additionalStartupParameters = [("application_name", applicationName)] }
        return configuration
    }
}
