import Foundation
import Tether
import TetherSQLite

/// A fresh directory for one test's database files, removed when the value goes away.
final class TemporaryDirectory: Sendable {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("tether-sqlite-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func path(_ name: String = "store.sqlite") -> String { url.appendingPathComponent(name).path }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// Issues with their labels in order, and each label's issues: the smallest schema of a
/// many-to-many target shared by many objects.
let issuesAndLabels = try! Schema {
    Entity("Issue", identity: "id") {
        Attribute("id", .int64)
        Relationship.toMany("labels", "Label", inverse: "issues", ordered: true)
    }
    Entity("Label", identity: "id") {
        Attribute("id", .int64)
        Relationship.toMany("issues", "Issue", inverse: "labels")
    }
}
