import Foundation
import Testing
import Tether
import TetherSQLite

/// A source listed twice with the same pending ids is reported as a repeated object always is:
/// where its last occurrence names them, whatever the batch size. A fuzz finding (CI's import
/// target, issue 43's run): in batches of one, the first occurrence's diagnostics stayed once the
/// second restated the references it had kept (since unchanged re-imports leave pending
/// references alone).
@Suite struct PendingDiagnosticsRepeatTests {
    static let schema = try! Schema {
        Entity("Repo") {
            Attribute("id", .int64)
            Relationship.toMany("labels", "Label", inverse: "repos")
        }
        Entity("Label", identity: "name") {
            Attribute("name", .string)
            Relationship.toMany("repos", "Repo", inverse: "labels")
        }
    }

    static let payload = Data(#"""
        [{"id":1,"ls":[]},{"id":2,"label_ids":["ui","bug","nope"]},{"id":3,"label_idslabels":[]},{"id":2,"label_ids":["ui","bug","nope"]},{"id":3,"label_ids":null}]
        """#.utf8)

    func diagnostics(batchSize: Int?, file: Bool) async throws -> [String] {
        var options = ImportOptions()
        if let batchSize { options.batchSize = batchSize }
        let client = try Client.Builder(schema: Self.schema).importOptions(options).build()
        _ = try await client.import(Data(#"[{"name":"ui"},{"name":"bug"}]"#.utf8), as: "Label")
        let result: ImportResult
        if file {
            let folder = try TemporaryDirectory()
            let url = URL(fileURLWithPath: folder.path()).deletingLastPathComponent().appendingPathComponent("payload.json")
            try Self.payload.write(to: url)
            result = try await client.import(contentsOf: url, as: "Repo")
        } else {
            result = try await client.import(Self.payload, as: "Repo")
        }
        return result.diagnostics.map(\.description)
    }

    @Test(arguments: [1, 2, 3, 10_000])
    func everyBatchSizeReportsTheSame(_ size: Int) async throws {
        let reference = try await diagnostics(batchSize: nil, file: false)
        let file = try await diagnostics(batchSize: size, file: true)
        let bytes = try await diagnostics(batchSize: size, file: false)
        #expect(file == reference, "\(file) vs \(reference)")
        #expect(bytes == reference, "\(bytes) vs \(reference)")
    }
}
