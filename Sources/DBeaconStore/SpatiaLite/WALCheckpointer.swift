import CSQLite
import Foundation
import Synchronization

/// Checkpoints the write-ahead log on a connection and thread of its own, so that commits do
/// not wait for it.
///
/// SQLite by default checkpoints inside the commit that takes the log past 1,000 pages. That
/// commit then copies every page to the database file and syncs it while its callers, and every
/// write queued behind it, wait. Durable fixes at 1M beacons spent about a quarter of their time
/// there.
///
/// Here the writer's commit hook (`sqlite3_wal_hook`) only asks this thread to run a PASSIVE
/// checkpoint. A PASSIVE checkpoint copies the committed pages that no reader still needs and
/// never blocks the writer. The log restarts from its beginning once a checkpoint has copied all
/// of it. Committed transactions are durable either way: the log is synced at each commit under
/// `synchronous=FULL`.
///
/// If the log ever grows past `inlineFrames` (the thread cannot keep up, or long readers pin
/// it), the committing connection checkpoints inline, as SQLite does by default.
package final class WALCheckpointer: @unchecked Sendable {
    /// Log pages after which a commit asks for a checkpoint by default: 32 MiB of 4 KiB pages.
    /// SQLite's own default is 1,000, but a checkpoint copies only the newest copy of each page,
    /// and fence commits rewrite the same few pages (user locations, fence states) again and
    /// again: fewer, larger checkpoints copy and sync less (1M durable fixes: 26.2k–28.1k/s
    /// against 22.6k–26.2k/s with 1,000, in alternating runs).
    package static let defaultRequestFrames: Int32 = 8_000

    /// Log pages after which a commit asks for a checkpoint.
    let requestFrames: Int32
    /// Log pages after which the committing connection checkpoints itself (8 times `requestFrames`).
    var inlineFrames: Int32 { requestFrames * 8 }

    private let connection: SQLiteConnection
    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var requested = false, stopped = false
    private let stats = Mutex(Stats())

    private let walPath: String

    /// Background checkpoints run so far, and the last one's result.
    struct Stats {
        var runs = 0
        /// Pages in the log and pages of it copied to the database, after the last run.
        var logFrames = 0, copiedFrames = 0
    }

    var statistics: Stats { stats.withLock { $0 } }

    /// Whether copying a log of `frames` pages into the database leaves the reserve free.
    static func roomFor(frames: Int32, wal: String) -> Bool {
        DiskSpace.allows(Int64(frames) * 4096, at: wal)
    }

    /// Opens its own connection to the database at `path` and starts its thread.
    init(path: String, synchronousFull: Bool, requestFrames: Int32 = defaultRequestFrames) throws {
        self.walPath = path + "-wal"
        self.requestFrames = max(1, requestFrames)
        connection = try SQLiteConnection(path: path, readOnly: false, synchronousFull: synchronousFull, spatial: false)
        let thread = Thread { [self] in run() } // the thread keeps the checkpointer until `stop`
        thread.name = "dbeacon-wal-checkpoint"
        thread.start()
    }

    /// Called by the writer after each commit with the log's size in pages.
    func committed(frames: Int32, db: OpaquePointer?) {
        if frames >= inlineFrames && Self.roomFor(frames: frames, wal: walPath) {
            sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
        } else if frames >= requestFrames {
            condition.lock()
            requested = true
            condition.signal()
            condition.unlock()
        }
    }

    /// Ends the thread (after a checkpoint in progress); the connection closes with the object.
    func stop() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while !requested && !stopped { condition.wait() }
            let stop = stopped
            requested = false
            condition.unlock()
            if stop { return }
            // Too little free space to copy the log into the database file: the log stays (it is
            // durable as it is) and the next request tries again.
            guard Self.roomFor(frames: Int32(clamping: DiskSpace.size(of: walPath) / 4096), wal: walPath) else { continue }
            // Busy (another process checkpointing) or failed: the next request tries again.
            guard let row = try? connection.rows("PRAGMA wal_checkpoint(PASSIVE)", []).first else { continue }
            let log = (try? row.int("log")) ?? 0, copied = (try? row.int("checkpointed")) ?? 0
            stats.withLock {
                $0.runs += 1
                $0.logFrames = log
                $0.copiedFrames = copied
            }
        }
    }
}
