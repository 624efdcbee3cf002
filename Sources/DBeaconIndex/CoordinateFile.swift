import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The exact coordinates of large polygons, kept in a file mapped into memory rather than on the
/// heap. The index tests points on compact 16-bit coordinates (`CompactPolygon`) and reads the
/// exact ones only for the rare point within a few centimetres of an edge, so they are paged in
/// by the kernel when needed and cost no anonymous memory: at 1M beacons they are 2.4 GB, more
/// than the whole index.
///
/// Append-only (a replaced polygon's coordinates stay until a snapshot moves to a new file):
/// a pointer handed out stays valid for the life of this object.
/// The file is reserved a large virtual range once and mapped read-only and shared, so data
/// written with `pwrite` is visible through the mapping without remapping.
package final class CoordinateFile: @unchecked Sendable {
    /// The file's path; nil for an unnamed file (removed as soon as it was opened).
    package let path: String?
    private let fd: Int32
    /// Whether appends are possible (a process that only reads a snapshot opens it read-only).
    package let writable: Bool
    private let base: UnsafeMutableRawPointer
    private let reserved: Int
    private let lock = NSLock()
    /// Bytes appended (the file's size).
    private var end: Int
    /// How large polygons' GeoJSON is kept here from now on: true, as one byte per coordinate
    /// (its fraction digits, `FixedDecimal`), from which an answer formats the text; false, as
    /// the text itself (answers copy it: faster, but 2.3 times the coordinates' bytes). Polygons
    /// keep the form they were written in (`CompactPolygon.textHinted`).
    package var hintedText: Bool {
        get { lock.withLock { hinted } }
        set { lock.withLock { hinted = newValue } }
    }
    private var hinted = true

    /// Virtual address space reserved for the mapping (not memory: pages exist only as written).
    static let reservation = 1 << 38 // 256 GiB

    package enum Failure: Error, CustomStringConvertible {
        case open(String, Int32), map(Int32), truncated(String)
        package var description: String {
            switch self {
            case .open(let path, let e): "cannot open \(path): \(String(cString: strerror(e)))"
            case .map(let e): "cannot map the coordinate file: \(String(cString: strerror(e)))"
            case .truncated(let path): "\(path) is shorter than its snapshot says"
            }
        }
    }

    /// A new, empty file at `path` (replacing one there), or an unnamed one in the temporary
    /// folder when `path` is nil.
    package convenience init(creating path: String?) throws {
        let fd: Int32
        if let path {
            fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw Failure.open(path, errno) }
        } else {
            let dir = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
            var template = Array("\(dir)/dbeacon-coords.XXXXXX".utf8CString)
            fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
            guard fd >= 0 else { throw Failure.open(dir, errno) }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        }
        try self.init(fd: fd, path: path, size: 0, writable: true)
    }

    /// An existing file (a snapshot's), of which the first `size` bytes are in use. Writable:
    /// appends go after them (what was appended after the snapshot is dropped). Read-only: for
    /// a process that only reads the snapshot (the CLI) while a server may own the file.
    package convenience init(opening path: String, size: Int, writable: Bool) throws {
        let fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC)
        guard fd >= 0 else { throw Failure.open(path, errno) }
        var st = stat()
        guard fstat(fd, &st) == 0, Int(st.st_size) >= size else {
            close(fd)
            throw Failure.truncated(path)
        }
        if writable && Int(st.st_size) > size { _ = ftruncate(fd, off_t(size)) } // appended after the snapshot: unused
        try self.init(fd: fd, path: path, size: size, writable: writable)
    }

    /// The file's name in its folder (nil for an unnamed file).
    package var name: String? { path.map { ($0 as NSString).lastPathComponent } }

    private init(fd: Int32, path: String?, size: Int, writable: Bool) throws {
        self.fd = fd
        self.writable = writable
        self.path = path
        end = size
        reserved = Self.reservation
        guard let p = mmap(nil, reserved, PROT_READ, MAP_SHARED | MAP_NORESERVE, fd, 0), p != MAP_FAILED else {
            let e = errno
            close(fd)
            throw Failure.map(e)
        }
        base = p
    }

    deinit {
        munmap(base, reserved)
        close(fd)
    }

    /// Bytes in the file (what no polygon uses any more included: a snapshot compares it with
    /// what they use, see `MemoryCoverageEngine.writeSnapshot`).
    package var size: Int { lock.withLock { end } }

    /// Appends doubles (room is reserved under the lock, the write is not, so several threads
    /// append at once); returns their offset and a pointer to them in the mapping, or nil when
    /// the write failed (a full disk): the caller keeps them elsewhere.
    ///
    /// `text` (a large polygon's GeoJSON or its hints, `CompactPolygon.textOffset`) follows the
    /// doubles, padded to a multiple of 8 so the next doubles are aligned.
    package func append(_ values: UnsafeBufferPointer<Double>, text: [UInt8] = []) -> (offset: Int, pointer: UnsafePointer<Double>)? {
        let doubles = values.count * MemoryLayout<Double>.stride
        let offset = reserve(doubles + Self.padded(text.count))
        let padding = [UInt8](repeating: 0, count: Self.padded(text.count) - text.count)
        guard write(UnsafeRawBufferPointer(values), at: offset),
              text.withUnsafeBytes({ write($0, at: offset + doubles) }),
              padding.withUnsafeBytes({ write($0, at: offset + doubles + text.count) }) else { return nil }
        return (offset, pointer(at: offset))
    }

    /// Appends the bytes of `parts` one after the other (each a multiple of 8 bytes, e.g. the
    /// rings of a polygon, as doubles); returns where, as `append` does, or nil when a write
    /// failed.
    package func append(_ parts: [UnsafeRawBufferPointer]) -> (offset: Int, pointer: UnsafePointer<Double>)? {
        let offset = reserve(parts.reduce(0) { $0 + Self.padded($1.count) })
        var at = offset
        for part in parts {
            precondition(part.count % 8 == 0, "parts are doubles")
            guard part.count == 0 || write(part, at: at) else { return nil }
            at += part.count
        }
        return (offset, pointer(at: offset))
    }

    /// Reserves `bytes` at the end of the file for one append (written after, outside the lock);
    /// returns their offset.
    private func reserve(_ bytes: Int) -> Int {
        lock.withLock {
            let offset = end
            end += bytes
            return offset
        }
    }

    /// `count` rounded up to a multiple of 8.
    static func padded(_ count: Int) -> Int { (count + 7) & ~7 }

    private func write(_ data: UnsafeRawBufferPointer, at offset: Int) -> Bool {
        Self.whole(data.count) { done in pwrite(fd, data.baseAddress! + done, data.count - done, off_t(offset + done)) }
    }

    /// Reads `out.count` bytes at `offset` with `pread` (not through the mapping: an answer
    /// reads every region in time, and mapped pages would stay resident in the process).
    package func read(at offset: Int, into out: UnsafeMutableRawBufferPointer) -> Bool {
        guard offset >= 0, offset + out.count <= size else { return false }
        return Self.whole(out.count) { done in pread(fd, out.baseAddress! + done, out.count - done, off_t(offset + done)) }
    }

    /// Runs `transfer` (a `pread` or `pwrite` from `done` bytes on) until `count` bytes are done,
    /// again after an interrupted call; false when one fails or transfers nothing.
    private static func whole(_ count: Int, _ transfer: (_ done: Int) -> Int) -> Bool {
        var done = 0
        while done < count {
            let n = transfer(done)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            done += n
        }
        return true
    }

    /// The doubles at `offset` (written earlier).
    package func pointer(at offset: Int) -> UnsafePointer<Double> {
        UnsafePointer((base + offset).assumingMemoryBound(to: Double.self))
    }

    /// The offset of a pointer into this file's mapping, or nil for memory elsewhere.
    package func offset(of pointer: UnsafePointer<Double>) -> Int? {
        let p = UnsafeRawPointer(pointer), b = UnsafeRawPointer(base)
        guard p >= b, p < b + reserved else { return nil }
        return p - b
    }

    /// Copies `count` doubles at `pointer` (into this file's mapping) with `pread`, so reading
    /// them does not map their pages into the process (they stay in the page cache only).
    /// Returns false when the pointer is not this file's or the read fails.
    package func copy(_ pointer: UnsafePointer<Double>, count: Int, into out: UnsafeMutablePointer<Double>) -> Bool {
        guard let offset = offset(of: pointer) else { return false }
        return read(at: offset, into: UnsafeMutableRawBufferPointer(start: out, count: count * MemoryLayout<Double>.stride))
    }

    /// Forces what was written to the disk (before a snapshot that refers to it is written).
    package func sync() -> Bool { fsync(fd) == 0 }
}
