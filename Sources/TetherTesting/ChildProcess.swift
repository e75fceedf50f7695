import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

#if os(Linux) || os(macOS)  // posix_spawn is unavailable on iOS, tvOS, watchOS and visionOS

/// A child process started with `posix_spawn`, for tests (and examples) that run helpers,
/// servers, or several instances of a program at once: Tether's own tests run their crash
/// helpers, test servers and the PostgreSQL store's concurrent writers with it.
///
/// ```swift
/// let writer = try ChildProcess(helper, ["import", namespace], output: logPath)
/// #expect(try await writer.waitForLine("ready", timeout: .seconds(30)))
/// #expect(try await writer.wait(timeout: .seconds(60)) == .exited(0), "\(writer.printed)")
/// ```
///
/// Not Foundation's `Process`: on Linux (swift-corelibs-foundation of Swift 6.3.1), `Process.run()`
/// crashes now and then while it lists `/proc/self/fd` (an over-read of `dirent.d_name`, fixed
/// upstream by swiftlang/swift-corelibs-foundation#5472), and the more processes a test run starts
/// and the more files it has open, the likelier it is. The child starts with no signal blocked
/// (Foundation's threads block some, and a child inherits the mask), default signal handlers,
/// and, where the C library has it, no file descriptor of this process but 0, 1 and 2. A child
/// still running when its `ChildProcess` is released is killed and reaped.
public final class ChildProcess: Sendable {
    /// How a child ended.
    public enum Termination: Equatable, Sendable {
        /// It exited with this status.
        case exited(Int32)
        /// A signal ended it.
        case signalled(Int32)
    }

    /// The child's process id.
    public let pid: pid_t
    /// The file its standard output and error go to, when one was given (else they are this
    /// process's own).
    public let output: String?
    /// The raw wait status, once the child is reaped.
    private let status = Mutex<Int32?>(nil)

    /// Starts `executable` (a path) with `arguments`, in this process's environment. With
    /// `output`, the child's standard output and error are written to that file (created or
    /// truncated); ``printed`` reads it.
    public init(_ executable: String, _ arguments: [String], output: String? = nil) throws {
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
        if let output {
            posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }
        #if canImport(Glibc)
        Self.closeInheritedDescriptors(&actions)
        #endif

        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, environment)
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EIO) }
        self.pid = pid
    }

    /// `posix_spawn_file_actions_addclosefrom_np` (glibc 2.34 and later), looked up at run time:
    /// the Glibc module does not import it.
    #if canImport(Glibc)
    private static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
        typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return }
        _ = unsafeBitCast(symbol, to: AddCloseFrom.self)(&actions, 3)
    }
    #endif

    /// How the child ended, or nil while it runs (reaping it once it has ended).
    public var termination: Termination? {
        status.withLock { status in
            if status == nil {
                var raw: Int32 = 0
                var result: pid_t
                repeat { result = waitpid(pid, &raw, WNOHANG) } while result == -1 && errno == EINTR
                if result == pid { status = raw }
            }
            guard let raw = status else { return nil }
            // WIFEXITED / WEXITSTATUS / WTERMSIG, which are macros.
            return raw & 0x7F == 0 ? .exited((raw >> 8) & 0xFF) : .signalled(raw & 0x7F)
        }
    }

    /// Whether the child still runs.
    public var isRunning: Bool { termination == nil }

    /// Sends `signal` (by default `SIGKILL`) to the child, if it still runs.
    public func kill(_ signal: Int32 = SIGKILL) {
        if isRunning { sendSignal(signal, to: pid) }
    }

    /// Waits (polling, without holding a thread) until the child ends or `timeout` passes; kills
    /// it then. Returns how it ended.
    @discardableResult
    public func wait(timeout: Duration) async throws -> Termination {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let termination { return termination }
            if ContinuousClock.now > deadline { kill() }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    /// What the child printed so far to its `output` file (empty without one).
    public var printed: String {
        guard let output else { return "" }
        return (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
    }

    /// Waits until the child has printed `line` (a whole line of its `output`), or has ended, or
    /// `timeout` passed; returns whether it printed the line.
    public func waitForLine(_ line: String, timeout: Duration) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if printed.split(separator: "\n").contains(where: { $0 == line }) { return true }
            if termination != nil { return printed.split(separator: "\n").contains(where: { $0 == line }) }
            try await Task.sleep(for: .milliseconds(5))
        }
        return false
    }

    deinit {
        // Never leave a child running or a zombie behind.
        if status.withLock({ $0 }) == nil {
            sendSignal(SIGKILL, to: pid)
            var raw: Int32 = 0
            _ = waitpid(pid, &raw, 0)
        }
    }
}

private func sendSignal(_ signal: Int32, to pid: pid_t) {
    #if canImport(Glibc)
    _ = Glibc.kill(pid, signal)
    #else
    _ = Darwin.kill(pid, signal)
    #endif
}

#endif
