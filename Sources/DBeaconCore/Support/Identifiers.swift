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

    /// A new random id.
    package static func generate() -> Self {
        Self(uncheckedRawValue: prefix + RandomToken.base62(count: 22))
    }

    /// Accepts `prefix` followed by 1–64 characters from `[A-Za-z0-9_-]`.
    package init?(_ raw: String) {
        guard raw.hasPrefix(Self.prefix) else { return nil }
        let rest = raw.utf8.dropFirst(Self.prefix.utf8.count)
        guard !rest.isEmpty, rest.count <= 64, rest.allSatisfy(RandomToken.isIDByte) else { return nil }
        self.init(uncheckedRawValue: raw)
    }
}

/// A string with its (per-process seeded) hash kept beside it. Beacon and user ids are
/// hashed and compared constantly (fence states, the index's tables), and a 26-byte id is a
/// heap string whose bytes lie elsewhere in memory: two different ids are told apart by
/// their hashes without reading their bytes, and hashing one feeds the hasher eight bytes.
package struct HashedString: Hashable, Sendable {
    package let value: String
    private let hash: Int

    package init(_ value: String) {
        self.value = value
        hash = value.hashValue
    }

    package static func == (a: Self, b: Self) -> Bool { a.hash == b.hash && a.value == b.value }

    package func hash(into hasher: inout Hasher) { hasher.combine(hash) }
}

/// Id of a digital beacon (`bcn_…`).
package struct BeaconID: PrefixedID {
    package static let prefix = "bcn_"
    private let key: HashedString
    package var rawValue: String { key.value }
    package init(uncheckedRawValue: String) { key = HashedString(uncheckedRawValue) }
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
    private let key: HashedString
    package var rawValue: String { key.value }
    package init(uncheckedRawValue: String) { key = HashedString(uncheckedRawValue) }
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
            let byte = UInt8.random(in: 0...255, using: &rng)
            if byte < 248 { out.append(alphabet[Int(byte % 62)]) }
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
