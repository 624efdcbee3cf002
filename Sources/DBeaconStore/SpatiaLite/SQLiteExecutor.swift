import Foundation

/// The threads SQLite work runs on. SQLite calls block (disk I/O, `fsync` on commit, the busy
/// timeout while another process writes), so store transactions run with this executor as
/// their task executor preference: their statements execute here, never on the cooperative
/// thread pool that serves requests, and a transaction costs one hop in and one out rather than
/// one per statement.
final class SQLiteExecutor: TaskExecutor, @unchecked Sendable {
    /// Shared by every SpatiaLite store of the process.
    static let shared = SQLiteExecutor(threads: 3)

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    init(threads: Int) {
        for i in 0..<threads {
            let thread = Thread { [self] in run() }
            thread.name = "dbeacon-sqlite-\(i)"
            thread.start()
        }
    }

    func enqueue(_ job: UnownedJob) {
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
