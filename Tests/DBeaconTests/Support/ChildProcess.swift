import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn`, its output sent to files.
///
/// The tests do not use Foundation's `Process`: on Linux its `run()` lists `/proc/self/fd` to
/// close every inherited descriptor and crashed (SIGSEGV in `memcpy`) when the test process had
/// a thousand descriptors open while other tests opened and closed theirs. Here the child gets
/// exactly stdin, stdout and stderr; every other descriptor of the test process is opened
/// close-on-exec (NIO, SQLite, Foundation's file handles) or closed by `closefrom` below.
final class ChildProcess: @unchecked Sendable {
    let pid: pid_t
    private let lock = NSLock()
    private var status: Int32?

    /// Starts `executable` with `arguments`. `environment` replaces the test process's own when
    /// given. stdin reads `stdin` (or /dev/null); stdout and stderr append to their files (or
    /// /dev/null), the same file for both when the URLs are equal.
    init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
         stdin: URL? = nil, stdout: URL? = nil, stderr: URL? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdin?.path ?? "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout?.path ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        if let stderr, stderr == stdout {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 2, stderr?.path ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        }
        ChildProcess.closeFrom3(&actions)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Its own process group, as Foundation did: a Ctrl-C on the test run is not sent to it twice.
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))

        let environment = environment ?? ProcessInfo.processInfo.environment
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid = pid_t()
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard result == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EINVAL, userInfo: [NSLocalizedDescriptionKey: "spawn \(executable)"])
        }
        self.pid = pid
    }

    /// glibc ≥ 2.34 has `posix_spawn_file_actions_addclosefrom_np`; Swift's Glibc module does
    /// not declare it, so it is looked up at run time.
    private static func closeFrom3(_ actions: inout posix_spawn_file_actions_t) {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return }
        _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
    }

    /// Exit status; a child killed by a signal reports 128 + the signal, as shells do. A child
    /// still running after `seconds` is killed (SIGKILL, status 137) and said so on stderr: a
    /// hung child fails its test instead of hanging the run.
    @discardableResult
    func wait(upTo seconds: Double = 600) -> Int32 {
        if let status = wait(within: seconds) { return status }
        FileHandle.standardError.write(Data("ChildProcess: pid \(pid) still running after \(Int(seconds)) s; killed\n".utf8))
        kill(pid, SIGKILL)
        return wait(within: .infinity) ?? -1
    }

    /// `wait(upTo:)` for async callers: it sleeps between looks instead of blocking a thread of
    /// the cooperative pool (a server under test in the same process may need every one of them).
    func exit(upTo seconds: Double = 600) async -> Int32 {
        let end = Date().addingTimeInterval(seconds)
        while true {
            if let status = reap(options: WNOHANG) { return status }
            if Date() >= end { return wait(upTo: 0) }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Exit status, or nil if the child is still running after `seconds`.
    func wait(within seconds: Double) -> Int32? {
        let end = Date().addingTimeInterval(seconds)
        while true {
            if let status = reap(options: WNOHANG) { return status }
            if Date() >= end { return nil }
            usleep(10_000)
        }
    }

    var isRunning: Bool { reap(options: WNOHANG) == nil }

    /// The exit status once the child has exited, nil while it runs.
    var terminationStatus: Int32? { reap(options: WNOHANG) }

    func terminate(_ signal: Int32 = SIGTERM) {
        if isRunning { kill(pid, signal) }
    }

    private func reap(options: Int32) -> Int32? {
        lock.lock()
        defer { lock.unlock() }
        if let status { return status }
        var raw: Int32 = 0
        let result = waitpid(pid, &raw, options)
        if result == pid {
            let signal = raw & 0x7f
            status = signal == 0 ? (raw >> 8) & 0xff : 128 + signal
            return status
        }
        if result == -1 && errno != EINTR {
            status = -1
            return status
        }
        return nil
    }
}
