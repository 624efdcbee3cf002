import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The file format under an index snapshot: a 32-byte header (magic, payload length, payload
/// checksum, offset of the directory section) and a payload written in one pass. Geometry blocks
/// start at multiples of 8, so the reader maps the file and points into it.
enum SnapshotFormat {
    static let magic: [UInt8] = Array("DBNXSNP3".utf8)
    static let headerBytes = 32

    /// A checksum over 8-byte words (and a tail), fast enough to check a gigabyte at start-up.
    struct Checksum {
        var h: UInt64 = 0x243F_6A88_85A3_08D3

        mutating func add(_ bytes: UnsafeRawBufferPointer) {
            var i = 0
            let n = bytes.count
            while i + 8 <= n {
                let w = bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                h = ((h ^ w) &* 0x9E37_79B9_7F4A_7C15)
                h = (h << 29) | (h >> 35)
                i += 8
            }
            while i < n {
                h = ((h ^ UInt64(bytes[i])) &* 0x100_0000_01B3)
                i += 1
            }
        }
    }
}

/// Writes a snapshot payload through a buffer, keeping its position and checksum.
final class SnapshotWriter {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private let chunk = 1 << 20
    /// Bytes of payload written (flushed or buffered).
    private(set) var position = 0
    private var checksum = SnapshotFormat.Checksum()

    enum Failure: Error { case write(Int32) }

    /// Writes after the header of a file open for writing (`fd`).
    init(fd: Int32) {
        self.fd = fd
        buffer.reserveCapacity(chunk)
    }

    func bytes(_ p: UnsafeRawBufferPointer) throws {
        var p = p
        while !p.isEmpty {
            let n = min(p.count, chunk - buffer.count)
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: p[..<n]))
            p = UnsafeRawBufferPointer(rebasing: p[n...])
            position += n
            if buffer.count == chunk { try flush() }
        }
    }

    func bytes(_ a: [UInt8]) throws { try a.withUnsafeBytes { try bytes($0) } }

    func value<T: FixedWidthInteger>(_ v: T) throws {
        var le = v.littleEndian
        try withUnsafeBytes(of: &le) { try bytes($0) }
    }

    func double(_ v: Double) throws { try value(v.bitPattern) }

    func string(_ s: String) throws {
        var s = s
        try s.withUTF8 { u in
            try value(UInt32(u.count))
            try bytes(UnsafeRawBufferPointer(u))
        }
    }

    /// Pads with zeros to a multiple of 8.
    func align() throws {
        let pad = (8 - position % 8) % 8
        if pad > 0 { try bytes([UInt8](repeating: 0, count: pad)) }
    }

    /// Writes what is buffered (every full chunk is a multiple of 8 bytes, so the checksum's
    /// words line up with the reader's).
    func flush() throws {
        guard !buffer.isEmpty else { return }
        try buffer.withUnsafeBytes { b in
            checksum.add(b)
            var done = 0
            while done < b.count {
                let n = Glibc.write(fd, b.baseAddress! + done, b.count - done)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { throw Failure.write(errno) }
                done += n
            }
        }
        buffer.removeAll(keepingCapacity: true)
    }

    var sum: UInt64 { checksum.h }
}

/// A snapshot file mapped into memory (read-only, private): the engine's geometry blocks point
/// into it and keep this object alive.
final class SnapshotMapping: @unchecked Sendable {
    let base: UnsafeRawPointer
    let size: Int

    enum Failure: Error, CustomStringConvertible {
        case open(Int32), short, magic, checksum, malformed(String)
        var description: String {
            switch self {
            case .open(let e): "cannot open: \(String(cString: strerror(e)))"
            case .short: "shorter than its header says"
            case .magic: "not a snapshot of this format"
            case .checksum: "checksum mismatch"
            case .malformed(let what): "malformed (\(what))"
            }
        }
    }

    /// Maps `path` and checks its header and checksum.
    init(path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure.open(errno) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, Int(st.st_size) >= SnapshotFormat.headerBytes else { throw Failure.short }
        size = Int(st.st_size)
        guard let p = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), p != MAP_FAILED else { throw Failure.open(errno) }
        base = UnsafeRawPointer(p)
        let magic = Array(UnsafeRawBufferPointer(start: base, count: 8))
        guard magic == SnapshotFormat.magic else { throw Failure.magic }
        let length = Int(UInt64(littleEndian: base.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        guard length == size - SnapshotFormat.headerBytes else { throw Failure.short }
        _ = madvise(UnsafeMutableRawPointer(mutating: base), size, MADV_SEQUENTIAL)
        var sum = SnapshotFormat.Checksum()
        sum.add(UnsafeRawBufferPointer(start: base + SnapshotFormat.headerBytes, count: length))
        guard sum.h == UInt64(littleEndian: base.loadUnaligned(fromByteOffset: 16, as: UInt64.self)) else { throw Failure.checksum }
        _ = madvise(UnsafeMutableRawPointer(mutating: base), size, MADV_RANDOM)
    }

    deinit { munmap(UnsafeMutableRawPointer(mutating: base), size) }

    /// Lets the kernel drop the pages of payload bytes `from...` that nothing reads any more
    /// (copied out or parsed): they no longer count as resident.
    func release(payloadFrom offset: Int) {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let start = (SnapshotFormat.headerBytes + offset + page - 1) / page * page
        guard start < size else { return }
        _ = madvise(UnsafeMutableRawPointer(mutating: base + start), size - start, MADV_DONTNEED)
    }

    /// The payload's bytes.
    var payload: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base + SnapshotFormat.headerBytes, count: size - SnapshotFormat.headerBytes)
    }

    /// Offset of the directory section in the payload.
    var directoryOffset: Int { Int(UInt64(littleEndian: base.loadUnaligned(fromByteOffset: 24, as: UInt64.self))) }
}

/// Reads a snapshot's directory section, checking every length against the payload.
struct SnapshotReader {
    let bytes: UnsafeRawBufferPointer
    var i: Int

    init(_ bytes: UnsafeRawBufferPointer, at offset: Int) {
        self.bytes = bytes
        i = offset
    }

    private mutating func take(_ n: Int) throws -> Int {
        guard n >= 0, i + n <= bytes.count else { throw SnapshotMapping.Failure.malformed("past the end at \(i)") }
        defer { i += n }
        return i
    }

    mutating func value<T: FixedWidthInteger>(_: T.Type) throws -> T {
        T(littleEndian: bytes.loadUnaligned(fromByteOffset: try take(MemoryLayout<T>.size), as: T.self))
    }

    mutating func double() throws -> Double { Double(bitPattern: try value(UInt64.self)) }

    mutating func string() throws -> String {
        let n = Int(try value(UInt32.self))
        let at = try take(n)
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[at..<(at + n)]), as: UTF8.self)
    }

    /// A range of `count` bytes at `offset` of the payload, checked.
    func range(_ offset: Int, _ count: Int, alignment: Int = 1) throws -> UnsafeRawPointer {
        guard offset >= 0, count >= 0, offset + count <= bytes.count, offset % alignment == 0 else {
            throw SnapshotMapping.Failure.malformed("block at \(offset)")
        }
        return bytes.baseAddress! + offset
    }
}
