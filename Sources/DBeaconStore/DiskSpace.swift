import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Free disk space, so that maintenance work (log checkpoints, index snapshots) never takes the
/// space that writes need: after a disk-full, a checkpoint or a snapshot at shutdown must not
/// fill the disk again and leave a server that fails every write.
package enum DiskSpace {
    /// Space kept free for writes beyond what maintenance itself needs.
    package static let reserveBytes: Int64 = 64 << 20

    /// Bytes available to unprivileged writers on the file system holding `path` (a file or a
    /// folder; the nearest existing parent is asked); nil when it cannot be told.
    package static func available(at path: String) -> Int64? {
        var url = URL(fileURLWithPath: path)
        while !FileManager.default.fileExists(atPath: url.path), url.pathComponents.count > 1 { url.deleteLastPathComponent() }
        var s = statvfs()
        guard statvfs(url.path, &s) == 0 else { return nil }
        return Int64(s.f_bavail) * Int64(s.f_frsize)
    }

    /// Whether `bytes` more can be written at `path` with the reserve left free (true when the
    /// space cannot be told).
    package static func allows(_ bytes: Int64, at path: String) -> Bool {
        guard let free = available(at: path) else { return true }
        return free >= bytes + reserveBytes
    }

    /// The size of the file at `path`, 0 when there is none.
    package static func size(of path: String) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: path)[.size]) as? NSNumber)?.int64Value ?? 0
    }
}
