import Foundation
import Synchronization
import Testing
@testable import Tether
import TetherTesting

/// Issue 37, the parts that need no server (the real-server tests are
/// `TetherURLSessionTests/HostileServerTests`): numbers whose whole text would make a message of
/// their size.
@Suite struct LimitsTests {
    /// A 10,000-digit number out of range: its message shows the first 40 characters and the count.
    @Test func anOutOfRangeNumberIsCutInItsMessage() throws {
        let digits = "9" + String(repeating: "0", count: 9_999)
        for text in [digits, "[\(digits)]", #"{"n": -\#(digits).5}"#] {
            let error = #expect(throws: JSONParseError.self) { _ = try JSONParser.parse(Data(text.utf8)) }
            let message = error?.message ?? ""
            #expect(message.count < 120, "\(message.count) characters")
            #expect(message.contains("…(10000 digits)") || message.contains("…(10001 digits)"), "\(message)")
            #expect(message.contains("is out of range"))
            #expect("\(error.map { "\($0)" } ?? "")".count < 160)
        }
        let short = #expect(throws: JSONParseError.self) { _ = try JSONParser.parse(Data("1e400".utf8)) }
        #expect(short?.message == "number 1e400 is out of range")
    }
}
