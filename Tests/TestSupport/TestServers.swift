import Foundation

/// Where the integration tests find the test servers of `Tests/Servers`: the variable
/// (`TETHER_DRF_URL`), else the file `bash .ci/servers.sh start` writes in `.build` (one
/// `NAME=URL` a line, removed by `stop`), so that after starting the servers a plain
/// `swift test` runs the integration tests too.
package enum TestServers {
    /// The file `.ci/servers.sh start` writes: `<repository>/.build/tether-servers.env`.
    package static let file = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent(".build/tether-servers.env")

    /// The URL for `variable`: the environment's, else the started servers' file's; nil when
    /// neither names one.
    package static func url(_ variable: String) -> URL? {
        if let value = ProcessInfo.processInfo.environment[variable] {
            return value.isEmpty ? nil : URL(string: value)
        }
        guard let text = try? String(contentsOf: file, encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2, parts[0] == variable { return URL(string: parts[1]) }
        }
        return nil
    }
}
