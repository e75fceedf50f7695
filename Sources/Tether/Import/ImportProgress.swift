import Synchronization

/// How far an import, or a fetch and its import, has come.
public struct ImportProgress: Sendable, Hashable, CustomStringConvertible {
    /// Where the operation is: fetching pages, importing, or finished.
    public enum Phase: Sendable, Hashable {
        /// Pages are being fetched (``pages`` and ``bytes`` count them).
        case fetching
        /// Objects are being imported (``objects`` and ``bytes`` count them).
        case importing
        /// The operation ended: committed, failed or cancelled. The last report.
        case finished
    }

    /// Where the operation is; the counts below say how far it has come in it.
    public var phase: Phase
    /// Pages fetched so far (fetches only).
    public var pages = 0
    /// Top-level elements of the payload imported so far (written to the transaction; they are
    /// committed together at the end).
    public var objects = 0
    /// Bytes of JSON read so far: the response bodies while fetching, the payload while importing.
    public var bytes = 0
    /// The size of the payload being imported, when known (a file, `Data`).
    public var totalBytes: Int?

    /// A report with these counts (what a ``ProgressReporter`` receives; for tests of a progress
    /// display).
    public init(phase: Phase, pages: Int = 0, objects: Int = 0, bytes: Int = 0, totalBytes: Int? = nil) {
        self.phase = phase
        self.pages = pages
        self.objects = objects
        self.bytes = bytes
        self.totalBytes = totalBytes
    }

    /// The fraction of the payload imported, 0...1, when its size is known (1 when finished).
    public var fractionCompleted: Double? {
        if phase == .finished { return 1 }
        guard phase == .importing, let totalBytes, totalBytes > 0 else { return nil }
        return min(1, Double(bytes) / Double(totalBytes))
    }

    public var description: String {
        switch phase {
        case .fetching: "fetching: \(pages) page(s), \(bytes) bytes"
        case .importing: "importing: \(objects) objects, \(bytes)\(totalBytes.map { " of \($0)" } ?? "") bytes"
        case .finished: "finished: \(objects) objects"
        }
    }
}

/// Receives the ``ImportProgress`` of one operation: give it in ``ImportOptions/progress``, then
/// read ``updates`` (or pass a handler) to drive a progress bar.
///
/// ```swift
/// let progress = ProgressReporter()
/// Task { for await step in progress.updates { bar.show(step.fractionCompleted ?? 0) } }
/// try await client.import(contentsOf: file, as: "Repository", options: ImportOptions(progress: progress))
/// ```
///
/// Reports come at batch boundaries (``ImportOptions/batchSize`` objects) and after each page of
/// a fetch, from the thread doing the work: a handler must return quickly. ``updates`` keeps only
/// the newest report for a consumer that lags, and ends after the `.finished` one. A reporter is
/// for one operation: reports after `.finished` are dropped.
public final class ProgressReporter: Sendable, Hashable {
    private let handler: (@Sendable (ImportProgress) -> Void)?
    private let continuation: AsyncStream<ImportProgress>.Continuation
    /// Every report, newest kept for a slow consumer; ends after `.finished`.
    public let updates: AsyncStream<ImportProgress>
    private let state = Mutex<ImportProgress?>(nil)

    /// A reporter whose reports are read from ``updates``.
    public convenience init() { self.init(nil) }

    /// A reporter that also calls `handler` with each report.
    public init(_ handler: (@Sendable (ImportProgress) -> Void)?) {
        self.handler = handler
        (updates, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// The last report.
    public var latest: ImportProgress? { state.withLock { $0 } }

    func report(_ progress: ImportProgress) {
        let accepted = state.withLock { last -> Bool in
            if last?.phase == .finished { return false }
            last = progress
            return true
        }
        guard accepted else { return }
        handler?(progress)
        continuation.yield(progress)
        if progress.phase == .finished { continuation.finish() }
    }

    /// Reports the end of the operation, keeping the counts of the last report.
    func finish() {
        guard var last = latest ?? Optional(ImportProgress(phase: .importing)), last.phase != .finished else { return }
        last.phase = .finished
        report(last)
    }

    public static func == (lhs: ProgressReporter, rhs: ProgressReporter) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
