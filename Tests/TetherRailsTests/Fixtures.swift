import Foundation
import Tether

/// Reads the files of `Fixtures/` (copied from octokit/fixtures, see Fixtures/README.md).
enum Fixtures {
    struct Missing: Error, CustomStringConvertible {
        let name: String
        var description: String { "fixture '\(name)' is not in the test bundle" }
    }

    static func url(_ name: String, _ ext: String) throws -> URL {
        guard let url = Bundle.module.url(forResource: name, withExtension: ext, subdirectory: "Fixtures") else {
            throw Missing(name: "\(name).\(ext)")
        }
        return url
    }

    /// The `response` bodies of a recorded octokit scenario, in recording order.
    static func responses(_ scenario: String) throws -> [JSON] {
        let records = try JSON(parsing: Data(contentsOf: url(scenario, "json")))
        return (records.arrayValue ?? []).compactMap { $0["response"] }
    }

    /// The keys of `github-keys.txt`.
    static func githubKeys() throws -> [String] {
        let text = try String(contentsOf: url("github-keys", "txt"), encoding: .utf8)
        return text.split(separator: "\n").map(String.init).filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }
}
