import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Runs tools (wrk, nginx) with a plain `posix_spawn`, whatever the bench has open.
///
/// Foundation's `Process.run()` crashed (signal 11 in `memcpy`) when the bench had 10,000
/// stream sockets open and its descriptor limit raised: it queues a close action for every
/// descriptor up to the limit. Here the child gets only what it needs: the bench's own
/// descriptors are close-on-exec (NIO's sockets, and the pipes made here), so `exec` drops them
/// without a list, and standard output is the one pipe given with `dup2`.
enum Spawn {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// A started child: its pid, and the read end of its standard output when captured.
    struct Child {
        let pid: pid_t
        let output: Int32?

        /// Reads its output to the end (when captured) and waits for it; returns the output.
        func finish() -> String { finishWithStatus().output }

        /// `finish`, with the exit status (or 128 + the signal).
        func finishWithStatus() -> (output: String, status: Int32) {
            var data = [UInt8]()
            if let output {
                var buffer = [UInt8](repeating: 0, count: 1 << 16)
                while true {
                    let n = buffer.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
                    if n > 0 { data += buffer[0..<n] } else if n < 0 && errno == EINTR { continue } else { break }
                }
                close(output)
            }
            let status = wait()
            return (String(decoding: data, as: UTF8.self), status)
        }

        /// Waits for it to exit; returns its exit status (or 128 + the signal).
        @discardableResult
        func wait() -> Int32 {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            let signal = status & 0x7f
            return signal == 0 ? (status >> 8) & 0xff : 128 + signal
        }

        /// SIGTERM, then waits.
        func stop() {
            kill(pid, SIGTERM)
            wait()
        }
    }

    /// Starts `executable` with `arguments`; with `capture`, its standard output is a pipe
    /// (read it with `finish`), else it writes where the bench does.
    static func start(_ executable: String, _ arguments: [String], capture: Bool) throws -> Child {
        var fds: [Int32] = [-1, -1]
        if capture {
            guard pipe(&fds) == 0 else { throw Failure(description: "pipe: \(String(cString: strerror(errno)))") }
            for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if capture { posix_spawn_file_actions_adddup2(&actions, fds[1], 1) }
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid: pid_t = 0
        let rc = argv.withUnsafeBufferPointer { args in
            posix_spawn(&pid, executable, &actions, nil, args.baseAddress!, environ)
        }
        if capture { close(fds[1]) }
        guard rc == 0 else {
            if capture { close(fds[0]) }
            throw Failure(description: "cannot start \(executable): \(String(cString: strerror(rc)))")
        }
        return Child(pid: pid, output: capture ? fds[0] : nil)
    }

    /// Runs `executable` to its end and returns what it wrote to standard output.
    static func capture(_ executable: String, _ arguments: [String]) throws -> String {
        try start(executable, arguments, capture: true).finish()
    }
}
