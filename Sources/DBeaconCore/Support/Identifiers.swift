import Synchronization

/// An opaque, unguessable identifier with a type prefix (`bcn_`, `usr_`, …).
///
/// The random part has 22 base-62 characters (about 131 bits) from the system CSPRNG,
/// so ids cannot be enumerated; that matters because a 404 must not reveal whether a
/// private beacon exists.
package protocol PrefixedID: Hashable, Sendable, Comparable, CustomStringConvertible {
    static var prefix: String { get }
    var rawValue: String { get }
    init(uncheckedRawValue: String)
}

extension PrefixedID {
    package var description: String { rawValue }

    package static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }

    /// A new random id (from a seeded stream inside `IDSource.$seeded.withValue`).
    package static func generate() -> Self {
        if let seeded = IDSource.seeded { return Self(uncheckedRawValue: prefix + seeded.base62(count: 22)) }
        return Self(uncheckedRawValue: prefix + RandomToken.base62(count: 22))
    }

    /// Accepts `prefix` followed by 1–64 characters from `[A-Za-z0-9_-]`.
    package init?(_ raw: String) {
        guard raw.hasPrefix(Self.prefix) else { return nil }
        let rest = raw.utf8.dropFirst(Self.prefix.utf8.count)
        guard !rest.isEmpty, rest.count <= 64, rest.allSatisfy(RandomToken.isIDByte) else { return nil }
        self.init(uncheckedRawValue: raw)
    }
}

/// An id string stored inline: up to 32 UTF-8 bytes live in four words of the value itself
/// (zero-padded), so copying, hashing, comparing and ordering an id touch no heap object and no
/// reference count. Beacon and user ids are copied, hashed and compared constantly (fence
/// states, coverage answers, the index's tables) across threads; as heap strings each copy was
/// a retain on a shared object, a cache miss and a contended atomic at a million beacons.
/// Generated ids (`bcn_` + 22 characters) fit; longer ones (chosen ids reach 68 bytes), and any
/// with a NUL byte, also keep the whole string in `long`.
package struct InlineID: Hashable, Sendable, Comparable {
    private let w0: UInt64, w1: UInt64, w2: UInt64, w3: UInt64
    private let long: Long?

    /// The whole string of an id that does not fit the words.
    private final class Long: Sendable {
        let value: String
        init(_ value: String) { self.value = value }
    }

    package init(_ value: String) {
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        var value = value
        let fits = value.withUTF8 { bytes in
            withUnsafeMutableBytes(of: &words) { out in
                out.copyMemory(from: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes).prefix(32)))
            }
            return bytes.count <= 32 && !bytes.contains(0)
        }
        (w0, w1, w2, w3) = words
        long = fits ? nil : Long(value)
    }

    package var value: String {
        if let long { return long.value }
        var words = (w0, w1, w2, w3)
        return withUnsafeBytes(of: &words) { bytes in
            String(decoding: bytes.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
    }

    /// The string's UTF-8 bytes, without making a `String` (one over 15 bytes is a heap allocation).
    package func withUTF8<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        if let long {
            var value = long.value
            return try value.withUTF8(body)
        }
        var words = (w0, w1, w2, w3)
        return try withUnsafeBytes(of: &words) { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            return try body(UnsafeBufferPointer(rebasing: bytes.prefix(while: { $0 != 0 })))
        }
    }

    package static func == (a: Self, b: Self) -> Bool {
        a.w0 == b.w0 && a.w1 == b.w1 && a.w2 == b.w2 && a.w3 == b.w3 && a.long?.value == b.long?.value
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(w0)
        hasher.combine(w1)
        hasher.combine(w2)
        hasher.combine(w3)
        if let long { hasher.combine(long.value) }
    }

    /// The order of the strings (byte order: every id byte is ASCII).
    package static func < (a: Self, b: Self) -> Bool {
        // Bytes in memory order are the string's; compared as big-endian words, a shorter id
        // (zero padding) comes before a longer one with the same start, as in string order.
        if a.w0 != b.w0 { return a.w0.bigEndian < b.w0.bigEndian }
        if a.w1 != b.w1 { return a.w1.bigEndian < b.w1.bigEndian }
        if a.w2 != b.w2 { return a.w2.bigEndian < b.w2.bigEndian }
        if a.w3 != b.w3 { return a.w3.bigEndian < b.w3.bigEndian }
        switch (a.long, b.long) {
        case (nil, nil): return false
        case (nil, _?): return true // a is b's first 32 bytes, or has the same bytes without a NUL
        case (_?, nil): return false
        case (let x?, let y?): return x.value < y.value
        }
    }
}

/// Id of a digital beacon (`bcn_…`).
package struct BeaconID: PrefixedID {
    package static let prefix = "bcn_"
    private let key: InlineID
    package var rawValue: String { key.value }
    package init(uncheckedRawValue: String) { key = InlineID(uncheckedRawValue) }
    package static func < (a: Self, b: Self) -> Bool { a.key < b.key }
    /// `rawValue`'s UTF-8 bytes, without making a `String`.
    package func withUTF8<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R { try key.withUTF8(body) }
}

extension BeaconID {
    /// The prefix of the ids `user` may choose for their beacons through the API:
    /// `bcn_` + the user id without `usr_` + `_` (`bcn_anna_` for `usr_anna`).
    package static func namespace(of user: UserID) -> String {
        prefix + user.rawValue.dropFirst(UserID.prefix.count) + "_"
    }

    /// Whether this id lies in `user`'s namespace (with at least one character after it).
    package func isInNamespace(of user: UserID) -> Bool {
        let ns = Self.namespace(of: user)
        return rawValue.count > ns.count && rawValue.hasPrefix(ns)
    }
}

/// Id of a user (`usr_…`).
package struct UserID: PrefixedID {
    package static let prefix = "usr_"
    private let key: InlineID
    package var rawValue: String { key.value }
    package init(uncheckedRawValue: String) { key = InlineID(uncheckedRawValue) }
    package static func < (a: Self, b: Self) -> Bool { a.key < b.key }
    /// `rawValue`'s UTF-8 bytes, without making a `String`.
    package func withUTF8<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R { try key.withUTF8(body) }
}

/// Where new ids come from. Always the system CSPRNG, except inside
/// `IDSource.$seeded.withValue(SeededIDs(seed:)) { … }` (a task-local: that task and its child
/// tasks only), where they come from a seeded stream: the noninterference tests build two worlds
/// whose public objects get the same ids, so answers that order by id compare equal. Tokens and
/// secrets never come from it.
package enum IDSource {
    @TaskLocal package static var seeded: SeededIDs?
}

/// A deterministic stream of base-62 id characters (SplitMix64), for tests only.
package final class SeededIDs: Sendable {
    private let state: Mutex<UInt64>

    package init(seed: UInt64) { state = Mutex(seed) }

    func base62(count: Int) -> String {
        let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)
        var out = [UInt8]()
        state.withLock { s in
            for _ in 0..<count {
                s &+= 0x9E37_79B9_7F4A_7C15
                var z = s
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                out.append(alphabet[Int((z ^ (z >> 31)) % 62)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Random strings for ids, tokens and secrets.
package enum RandomToken {
    private static let alphabet: [UInt8] = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)

    /// `count` characters of base 62, unbiased (rejection sampling).
    package static func base62(count: Int) -> String {
        var rng = SystemRandomNumberGenerator()
        var out = [UInt8]()
        out.reserveCapacity(count)
        while out.count < count {
            var word = rng.next() // eight random bytes per system call
            for _ in 0..<8 where out.count < count {
                let byte = UInt8(truncatingIfNeeded: word)
                word >>= 8
                if byte < 248 { out.append(alphabet[Int(byte % 62)]) }
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `count` random bytes from the system CSPRNG.
    package static func bytes(_ count: Int) -> [UInt8] {
        var rng = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
    }

    package static func isIDByte(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F || b == 0x2D
    }
}

/// Id of a webhook endpoint (`whk_…`).
package struct WebhookID: PrefixedID {
    package static let prefix = "whk_"
    package let rawValue: String
    package init(uncheckedRawValue: String) { rawValue = uncheckedRawValue }
}

/// Id of a user's device (`dev_…`): a phone with its own revocable token.
package struct DeviceID: PrefixedID {
    package static let prefix = "dev_"
    package let rawValue: String
    package init(uncheckedRawValue: String) { rawValue = uncheckedRawValue }
}
