import Dispatch
import Foundation
import Logging
import NIOCore
import PostgresNIO
import Tether

/// A PostgreSQL connection leased from the app's pool for one transaction, used synchronously
/// from a thread of the store's own (never one of Swift's cooperative pool, nor an event loop):
/// each statement waits for postgres-nio's future on that thread.
///
/// A statement that fails on the server aborts the transaction in PostgreSQL: the connection
/// then remembers the failure, and every later statement of the transaction throws it again
/// (the store retries the whole transaction when it is a serialization failure or a deadlock).
final class Connection: @unchecked Sendable {
    let connection: PostgresConnection
    let logger: Logger
    /// The first server failure of the current transaction, if any.
    private(set) var failure: StoreError?
    /// The SQL state of that failure.
    private(set) var failureState: String?
    /// Whether that failure was the connection's end (closed, or terminated by the server).
    private(set) var failureLostConnection = false
    /// Statements run (tests and the benchmark).
    private(set) var statements = 0

    init(_ connection: PostgresConnection, logger: Logger) {
        self.connection = connection
        self.logger = logger
    }

    /// Clears what the previous transaction left (a failure) before a new one.
    func reset() {
        failure = nil
        failureState = nil
        failureLostConnection = false
    }

    /// Whether the transaction failed with a serialization failure (40001) or a deadlock (40P01),
    /// which a retry of the whole transaction resolves.
    var mustRetry: Bool { failureState.map(Connection.isRetryable) ?? false }

    static func isRetryable(_ state: String) -> Bool { state == "40001" || state == "40P01" }

    /// Whether the connection ended during the transaction (the server terminated it, restarted,
    /// or the network failed): PostgreSQL rolled the transaction back, so it can be run again on
    /// another connection, unless it ended while `COMMIT` was on its way.
    var isLost: Bool { failureLostConnection || connection.isClosed }

    /// Runs `sql` and returns its rows.
    @discardableResult
    func query(_ sql: SQL, _ context: @autoclosure () -> String, entity: String? = nil) throws(StoreError) -> [PostgresRow] {
        if let failure {
            throw StoreError(failure.kind, entity: failure.entity, member: failure.member,
                             "the transaction was aborted by an earlier failure (\(failure.message)); \(context()) was not run")
        }
        statements += 1
        do {
            return try wait(for: connection.query(sql.query, logger: logger), context())
        } catch {
            let mapped = Connection.storeError(error, context(), entity: entity)
            failure = mapped.error
            failureState = mapped.state
            failureLostConnection = Connection.isConnectionLost(error)
            throw mapped.error
        }
    }

    /// Begins a transaction; throws `StaleConnection` when the connection turns out to be closed
    /// (the store then begins on another one): closed already, or ended by the server while it
    /// sat idle in the pool (`pg_terminate_backend`, a restart), which the pool learns only when
    /// the next statement fails.
    func begin(_ sql: String, _ context: @autoclosure () -> String) throws {
        if connection.isClosed {
            throw StaleConnection(error: StoreError(.storage, "\(context()): the pool's connection was closed"))
        }
        do {
            try execute(sql, context())
        } catch {
            if connection.isClosed || failureLostConnection {
                reset()
                throw StaleConnection(error: error)
            }
            throw error
        }
    }

    /// Whether `error` says the connection ended: closed by either side, or the server ended the
    /// session (SQL states 57P01-57P03: an administrator, a crash, a restart; class 08).
    static func isConnectionLost(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError else { return false }
        if let state = error.serverInfo?[.sqlState] {
            return ["57P01", "57P02", "57P03"].contains(state) || state.hasPrefix("08")
        }
        return [.serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .connectionError].contains(error.code)
    }

    /// Waits for a statement's result on this thread. Checks every second whether the connection
    /// was closed meanwhile: a statement whose connection died (the server terminated it, the
    /// network failed) is given two more seconds to fail by itself, then reported as lost, so
    /// that no transaction waits forever for a result that cannot come.
    private func wait(for future: EventLoopFuture<PostgresQueryResult>, _ context: @autoclosure () -> String) throws -> [PostgresRow] {
        let done = DispatchSemaphore(value: 0)
        future.whenComplete { _ in done.signal() }
        var closedSince: ContinuousClock.Instant?
        while done.wait(timeout: .now() + .seconds(1)) == .timedOut {
            guard connection.isClosed else { continue }
            if let closedSince {
                if ContinuousClock.now - closedSince > .seconds(2) {
                    failureLostConnection = true
                    throw StoreError(.storage, "\(context()) failed: the connection to PostgreSQL was lost before the statement's result arrived")
                }
            } else {
                closedSince = ContinuousClock.now
            }
        }
        return try future.wait().rows
    }

    /// Runs `sql` (text only) for its effect.
    func execute(_ sql: String, _ context: @autoclosure () -> String) throws(StoreError) {
        try query(SQL(sql), context())
    }

    /// A `StoreError` for a failure of postgres-nio, with the SQL state when the server sent one.
    static func storeError(_ error: any Error, _ context: String, entity: String?) -> (error: StoreError, state: String?) {
        if let error = error as? StoreError { return (error, nil) }
        if let error = error as? PSQLError {
            let state = error.serverInfo?[.sqlState]
            let message = error.serverInfo?[.message] ?? "\(error.code)"
            let detail = error.serverInfo?[.detail].map { " (\($0))" } ?? ""
            let table = error.serverInfo?[.tableName]
            let column = error.serverInfo?[.columnName]
            if state == "23505" {
                return (StoreError(.duplicateIdentity, entity: entity ?? table, member: column,
                                   "\(context): PostgreSQL refused a duplicate identity (SQL state 23505): \(message)\(detail)"), state)
            }
            let where_ = state.map { "SQL state \($0)" } ?? "no SQL state: \(error.code)"
            return (StoreError(.storage, entity: entity ?? table, member: column,
                               "\(context) failed on PostgreSQL (\(where_)): \(message)\(detail)"), state)
        }
        return (StoreError(.storage, entity: entity, "\(context) failed: \(error)"), nil)
    }
}
