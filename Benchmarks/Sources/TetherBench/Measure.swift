import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Peak resident memory, from /proc/self/status (Linux). Elsewhere: not measured.
enum Memory {
    /// Resets the kernel's peak-RSS counter (VmHWM) to the current RSS, so the next reading
    /// covers only what runs in between. Returns false when the kernel does not allow it.
    @discardableResult
    static func resetPeak() -> Bool {
        #if os(Linux)
        // Hand memory freed by earlier rows back to the kernel first, or glibc keeps it resident
        // and it counts in the next row's peak.
        if let symbol = dlsym(nil, "malloc_trim") {
            _ = unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)(0)
        }
        guard let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return false }
        defer { try? handle.close() }
        do {
            try handle.write(contentsOf: Data("5".utf8))
            return true
        } catch {
            return false
        }
        #else
        return false
        #endif
    }

    /// The peak resident set size in bytes since the last reset, or nil when unknown.
    static func peakBytes() -> Int? {
        #if os(Linux)
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if fields.count >= 2, let kilobytes = Int(fields[1]) { return kilobytes * 1024 }
        }
        return nil
        #else
        return nil
        #endif
    }
}

/// One measured row: several timed runs of the same work.
struct Measurement {
    let size: Int
    let group: String
    let pass: String
    let objects: Int
    let bytes: Int
    var durations: [Duration] = []
    var peakBytes: Int?
    /// Why the row could not be measured (its child process failed).
    var failure: String?
    /// The peak could not be reset before the pass, so it covers the pass's setup too.
    var peakIncludesSetup = false

    var median: Duration {
        guard !durations.isEmpty else { return .zero }
        let sorted = durations.sorted()
        return sorted[sorted.count / 2]
    }

    var seconds: Double { durations.isEmpty ? .nan : median.seconds }

    /// The duration below which `percent`% of the runs fall (nearest rank).
    func percentile(_ percent: Int) -> Duration {
        guard !durations.isEmpty else { return .zero }
        let sorted = durations.sorted()
        let rank = Int((Double(percent) / 100 * Double(sorted.count)).rounded(.up))
        return sorted[min(sorted.count - 1, max(0, rank - 1))]
    }

    /// Times `work` once and folds the run into this row.
    @discardableResult
    mutating func time<T>(_ work: () throws -> T) rethrows -> T {
        Memory.resetPeak()
        let clock = ContinuousClock()
        let start = clock.now
        let result = try work()
        durations.append(clock.now - start)
        if let peak = Memory.peakBytes() { peakBytes = max(peakBytes ?? 0, peak) }
        return result
    }

    /// Times asynchronous `work` once and folds the run into this row.
    @discardableResult
    mutating func time<T>(_ work: () async throws -> T) async rethrows -> T {
        Memory.resetPeak()
        let clock = ContinuousClock()
        let start = clock.now
        let result = try await work()
        durations.append(clock.now - start)
        if let peak = Memory.peakBytes() { peakBytes = max(peakBytes ?? 0, peak) }
        return result
    }
}

/// A temporary directory removed when the value is discarded.
final class TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("tether-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> String { url.appendingPathComponent(name).path }

    deinit { try? FileManager.default.removeItem(at: url) }
}

enum Format {
    static func milliseconds(_ seconds: Double) -> String { String(format: "%.1f", seconds * 1000) }
    static func rate(_ perSecond: Double) -> String {
        perSecond >= 1e6 ? String(format: "%.2fM", perSecond / 1e6) : String(format: "%.0fk", perSecond / 1e3)
    }
    static func megabytes(_ bytes: Int) -> String { String(format: "%.1f", Double(bytes) / 1_048_576) }
    static func count(_ n: Int) -> String {
        n >= 1_000_000 && n % 1_000_000 == 0 ? "\(n / 1_000_000)M" : n >= 1000 && n % 1000 == 0 ? "\(n / 1000)k" : "\(n)"
    }

    static func pad(_ text: String, _ width: Int, left: Bool = false) -> String {
        let count = text.count
        guard count < width else { return text }
        let padding = String(repeating: " ", count: width - count)
        return left ? text + padding : padding + text
    }
}
