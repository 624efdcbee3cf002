package import DBeaconStore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The folder of an index's snapshot (by default `<database>.index/` next to a SpatiaLite
/// file): `index.snapshot`, the index as of a store change stamp, and the `coords-*.bin` file
/// of large polygons' exact coordinates it refers to.
///
/// One process owns the folder (an exclusive `flock` on `lock`): it may write snapshots and
/// append to the coordinate file. Others (the CLI while a server runs) only read a snapshot
/// that is current, and put their own polygons' coordinates elsewhere.
package final class IndexSnapshots: @unchecked Sendable {
    package let directory: String
    /// Whether this process owns the folder.
    package let writable: Bool
    private let lockFD: Int32
    private let state = NSLock()
    /// Held while a snapshot is written (the periodic writer and the one at shutdown may meet).
    let writing = NSLock()
    private var currentStamp: ChangeStamp?

    /// The stamp of the snapshot in the folder, when this process loaded or wrote it.
    package var current: ChangeStamp? {
        get { state.withLock { currentStamp } }
        set { state.withLock { currentStamp = newValue } }
    }

    static let snapshotName = "index.snapshot"
    static let lockName = "lock"

    /// The folder at `directory`; with `write`, created if missing and taken for this process
    /// when no other process has it (else read-only).
    package init(directory: String, write: Bool) {
        self.directory = directory
        var fd: Int32 = -1
        if write, (try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)) != nil {
            fd = open("\(directory)/\(Self.lockName)", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
            if fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0 {
                close(fd)
                fd = -1
            }
        }
        lockFD = fd
        writable = fd >= 0
    }

    deinit { if lockFD >= 0 { close(lockFD) } }

    var snapshotPath: String { "\(directory)/\(Self.snapshotName)" }

    /// The size of the snapshot file in the folder (0 when there is none): what the next one
    /// is expected to take, to check the free space before writing it.
    package var sizeOfCurrent: Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: snapshotPath)[.size]) as? NSNumber)?.int64Value ?? 0
    }

    /// A new, empty coordinate file in the folder (owner only).
    package func newCoordinateFile() throws -> CoordinateFile {
        try CoordinateFile(creating: "\(directory)/coords-\(UUID().uuidString.lowercased()).bin")
    }

    /// The snapshot's mapping, if there is a readable one.
    func mapSnapshot() throws -> SnapshotMapping? {
        guard FileManager.default.fileExists(atPath: snapshotPath) else { return nil }
        return try SnapshotMapping(path: snapshotPath)
    }

    /// Removes coordinate files other than `keep` (after a snapshot that refers to `keep` only;
    /// a process that still maps one keeps reading it until it unmaps it).
    func removeCoordinateFiles(except keep: String) {
        guard writable, let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for name in names where name.hasPrefix("coords-") && name.hasSuffix(".bin") && name != keep {
            unlink("\(directory)/\(name)")
        }
    }

    /// Writes a snapshot through `write` (given a writer after the header) to a temporary file
    /// and puts it in place atomically, durably.
    func replaceSnapshot(_ write: (SnapshotWriter) throws -> Int) throws -> Int {
        let tmp = snapshotPath + ".tmp"
        let fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw CoordinateFile.Failure.open(tmp, errno) }
        var closed = false
        defer { if !closed { close(fd); unlink(tmp) } }
        guard lseek(fd, off_t(SnapshotFormat.headerBytes), SEEK_SET) >= 0 else { throw SnapshotWriter.Failure.write(errno) }
        let writer = SnapshotWriter(fd: fd)
        let directoryOffset = try write(writer)
        try writer.flush()
        var header = SnapshotFormat.magic
        for v in [UInt64(writer.position), writer.sum, UInt64(directoryOffset)] {
            withUnsafeBytes(of: v.littleEndian) { header.append(contentsOf: $0) }
        }
        guard header.withUnsafeBytes({ pwrite(fd, $0.baseAddress!, $0.count, 0) }) == header.count, fsync(fd) == 0 else {
            throw SnapshotWriter.Failure.write(errno)
        }
        close(fd)
        closed = true
        guard rename(tmp, snapshotPath) == 0 else {
            unlink(tmp)
            throw SnapshotWriter.Failure.write(errno)
        }
        let dir = open(directory, O_RDONLY | O_CLOEXEC)
        if dir >= 0 {
            _ = fsync(dir)
            close(dir)
        }
        return SnapshotFormat.headerBytes + writer.position
    }
}
