import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process started with `posix_spawn`, its standard output and error in a file. After
/// Tests/TestSupport/ChildProcess.swift of the Tether package (not a product), which says why
/// not Foundation's `Process` on Linux.
final class ChildProcess: Sendable {
    enum Termination: Equatable, Sendable {
        case exited(Int32)
        case signalled(Int32)
    }

    let pid: pid_t
    /// Where the child's standard output and error go.
    let output: String
    private let status = Mutex<Int32?>(nil)

    init(_ executable: String, _ arguments: [String], output: String) throws {
        self.output = output
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        #if canImport(Glibc)
        var attributes = posix_spawnattr_t()
        var actions = posix_spawn_file_actions_t()
        let environment = environ
        #else
        var attributes: posix_spawnattr_t? = nil
        var actions: posix_spawn_file_actions_t? = nil
        let environment = _NSGetEnviron().pointee
        #endif
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var all = sigset_t()
        sigfillset(&all)
        sigdelset(&all, SIGKILL)
        sigdelset(&all, SIGSTOP)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, environment)
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EIO) }
        self.pid = pid
    }

    /// How the child ended, or nil while it runs (reaping it once it has ended).
    var termination: Termination? {
        status.withLock { status in
            if status == nil {
                var raw: Int32 = 0
                var result: pid_t
                repeat { result = waitpid(pid, &raw, WNOHANG) } while result == -1 && errno == EINTR
                if result == pid { status = raw }
            }
            guard let raw = status else { return nil }
            return raw & 0x7F == 0 ? .exited((raw >> 8) & 0xFF) : .signalled(raw & 0x7F)
        }
    }

    /// What the child printed so far.
    var printed: String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }

    /// Waits (polling, without holding a thread) until the child ends or `timeout` passes; kills
    /// it then.
    @discardableResult
    func wait(timeout: Duration) async throws -> Termination {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let termination { return termination }
            if ContinuousClock.now > deadline { _ = kill(pid, SIGKILL) }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Waits until the child has printed `line` (or ended, or `timeout` passed).
    func waitForLine(_ line: String, timeout: Duration) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if printed.split(separator: "\n").contains(where: { $0 == line }) { return true }
            if termination != nil { return false }
            try await Task.sleep(for: .milliseconds(5))
        }
        return false
    }

    /// The worker executable, built beside the test bundle.
    static var worker: String {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let beside = directory.appendingPathComponent("TetherPostgresWorker").path
        if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        // swift test runs the bundle by its full path inside .build/<triple>/debug.
        return directory.deletingLastPathComponent().appendingPathComponent("TetherPostgresWorker").path
    }

    deinit {
        if status.withLock({ $0 }) == nil {
            _ = kill(pid, SIGKILL)
            var raw: Int32 = 0
            _ = waitpid(pid, &raw, 0)
        }
    }
}
