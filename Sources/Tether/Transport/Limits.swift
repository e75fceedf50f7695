import Foundation
import Synchronization

/// A limit a hostile or broken server cannot push an exchange past: the size of the answer
/// (``TransportRequest/responseLimit``) and the time of the whole exchange
/// (``TransportRequest/deadline``). A ``TransportError`` that reached one carries it.
public enum TransportLimit: Sendable, Hashable, CustomStringConvertible {
    /// The most bytes an answer's body may have, after decompression.
    case responseBytes(Int)
    /// The most time an exchange may take, redirects and the whole body included.
    case deadline(Duration)

    /// `64 MiB (67108864 bytes)`, `2 s`.
    public var description: String {
        switch self {
        case .responseBytes(let bytes): Self.bytes(bytes)
        case .deadline(let duration): Self.duration(duration)
        }
    }

    /// A size for messages: `64 MiB (67108864 bytes)`, `500 bytes`.
    static func bytes(_ count: Int) -> String {
        let units = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")]
        for (size, unit) in units where count >= size {
            let value = Double(count) / Double(size)
            let shown = value == value.rounded() ? "\(Int(value))" : String(format: "%.1f", value)
            return "\(shown) \(unit) (\(count) bytes)"
        }
        return "\(count) bytes"
    }

    /// A duration for messages: `2 s`, `0.25 s`.
    static func duration(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        if attoseconds == 0 { return "\(seconds) s" }
        return "\(Double(seconds) + Double(attoseconds) / 1e18) s"
    }
}

extension Transport {
    /// Sends `request` through ``send(_:)``, failing with a ``TransportError``
    /// (`.deadlineExceeded`) when the exchange has not ended within the request's
    /// ``TransportRequest/deadline`` (no deadline: `send(_:)` as it is). The client sends every
    /// request this way.
    ///
    /// When the deadline passes, the exchange's task is cancelled and this returns at once, even
    /// if the transport is slow to notice the cancellation (`URLSessionTransport` cancels its
    /// `URLSession` task). The deadline is enforced here, with Swift concurrency, rather than by
    /// the networking library: the same on Linux and Apple platforms, whatever the server sends.
    /// Cancelling the calling task cancels the exchange too (a `CancellationError`).
    public func send(withinDeadline request: TransportRequest) async throws -> TransportResponse {
        guard let deadline = request.deadline else { return try await send(request) }
        let race = DeadlineRace()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                race.start(continuation)
                race.add(Task {
                    do {
                        race.finish(.success(try await self.send(request)))
                    } catch {
                        race.finish(.failure(error))
                    }
                })
                race.add(Task {
                    do {
                        try await Task.sleep(for: deadline)
                    } catch {
                        return  // the exchange ended first
                    }
                    race.finish(.failure(TransportError(
                        .deadlineExceeded, method: request.method, url: request.url, limit: .deadline(deadline),
                        "no complete answer within the deadline of \(TransportLimit.duration(deadline)) (the whole exchange, "
                            + "redirects and body included); the request was cancelled")))
                })
            }
        } onCancel: {
            race.finish(.failure(CancellationError()))
        }
    }
}

/// The exchange and the deadline's timer of ``Transport/send(withinDeadline:)``: the first to
/// finish resumes the caller and cancels the other.
private final class DeadlineRace: Sendable {
    private struct State {
        var continuation: CheckedContinuation<TransportResponse, any Error>?
        /// The outcome, once there is one (it may come before the continuation).
        var outcome: Result<TransportResponse, any Error>?
        var tasks: [Task<Void, Never>] = []
    }

    private let state = Mutex(State())

    func start(_ continuation: CheckedContinuation<TransportResponse, any Error>) {
        let outcome: Result<TransportResponse, any Error>? = state.withLock { state in
            if state.outcome == nil { state.continuation = continuation }
            return state.outcome
        }
        if let outcome { continuation.resume(with: outcome) }
    }

    /// Keeps `task`, to cancel it once there is an outcome (at once if there is one already).
    func add(_ task: Task<Void, Never>) {
        let ended = state.withLock { state in
            if state.outcome == nil { state.tasks.append(task) }
            return state.outcome != nil
        }
        if ended { task.cancel() }
    }

    /// The first outcome wins; the others are dropped.
    func finish(_ outcome: Result<TransportResponse, any Error>) {
        typealias Taken = (continuation: CheckedContinuation<TransportResponse, any Error>?, tasks: [Task<Void, Never>])
        let taken: Taken? = state.withLock { state in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            let taken = (state.continuation, state.tasks)
            state.continuation = nil
            state.tasks = []
            return taken
        }
        guard let taken else { return }
        for task in taken.tasks { task.cancel() }
        taken.continuation?.resume(with: outcome)
    }
}
