import Foundation

/// Temporary files of one test run. Everything lives under one folder per test process, which
/// is removed when the process exits, so a run leaves nothing behind in the system's temporary
/// folder (a full run creates a few hundred databases; left behind, they fill a CI disk).
enum Scratch {
    /// `$TMPDIR/dbeacon-tests-<pid>`, created on first use; removed at exit (kept with
    /// `DBEACON_KEEP_SCRATCH=1`, to read the servers' logs of a failed run).
    static let root: URL = {
        let root = FileManager.default.temporaryDirectory
            .appendingPathComponent("dbeacon-tests-\(ProcessInfo.processInfo.processIdentifier)")
        try? FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        if ProcessInfo.processInfo.environment["DBEACON_KEEP_SCRATCH"] != "1" {
            atexit { try? FileManager.default.removeItem(at: Scratch.root) }
        }
        return root
    }()

    /// A new, empty folder named `prefix-<uuid>` under the run's root.
    static func directory(_ prefix: String) throws -> URL {
        let directory = root.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// A path for a new file named `prefix-<uuid>.<ext>` under the run's root (not created).
    static func file(_ prefix: String, ext: String) -> URL {
        root.appendingPathComponent("\(prefix)-\(UUID().uuidString)").appendingPathExtension(ext)
    }
}
