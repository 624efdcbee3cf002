package import DBeaconCore
import Crypto
package import DBeaconStore
import Foundation
import Synchronization

/// Opaque, per-reader page cursors of every list (the event log included).
///
/// A cursor is a log position sealed with AES-GCM under a key derived (HKDF) from the
/// database's cursor secret (a random setting made once, shared by every node) and the
/// reader's id. The log position itself counts everyone's events, so a plain number would let a
/// reader measure other people's activity between two of their own pages; sealed, a cursor says
/// nothing, and it opens for its reader only (anyone else's cursor is `invalid_cursor`).
package final class PageCursor: Sendable {
    static let settingKey = "page_cursor_secret"
    private let store: any BeaconStore
    private let secret = Mutex<Data?>(nil)

    package init(store: any BeaconStore) {
        self.store = store
    }

    /// The sealed form of `position` for `reader`.
    package func seal(_ position: Int64?, for reader: Principal) async throws -> String? {
        guard let position else { return nil }
        var plain = withUnsafeBytes(of: position.bigEndian) { Data($0) }
        plain.append(0x01)  // format
        let box = try AES.GCM.seal(plain, using: try await key(for: reader))
        guard let combined = box.combined else { return nil }
        return "e" + Self.base64url(combined)
    }

    /// The position sealed in `raw` for `reader`; nil when `raw` is not such a cursor.
    package func open(_ raw: String, for reader: Principal) async throws -> Int64? {
        guard raw.hasPrefix("e"), raw.utf8.count <= 200, let data = Self.unbase64url(String(raw.dropFirst())),
              let box = try? AES.GCM.SealedBox(combined: data),
              let plain = try? AES.GCM.open(box, using: try await key(for: reader)), plain.count == 9, plain.last == 0x01 else {
            return nil
        }
        let value = plain.prefix(8).reduce(Int64(0)) { $0 << 8 | Int64($1) }
        return value >= 0 ? value : nil
    }

    /// Whether `raw` has the form of a sealed cursor (whether or not it opens for anyone).
    package static func isWellFormed(_ raw: String) -> Bool {
        raw.hasPrefix("e") && (20...200).contains(raw.utf8.count)
            && raw.utf8.dropFirst().allSatisfy { RandomToken.isIDByte($0) }
    }

    private func key(for reader: Principal) async throws -> SymmetricKey {
        var material = self.secret.withLock { $0 }
        if material == nil {
            let fresh = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: .min ... .max)) }.joined()
            let stored = Data(try await store.setSettingIfAbsent(Self.settingKey, value: fresh).utf8)
            self.secret.withLock { $0 = stored }
            material = stored
        }
        guard let material else { throw DBeaconError.internalError("no event cursor secret") }
        let secret = SymmetricKey(data: material)
        let info = Data("dbeacon page cursor \(reader.userID?.rawValue ?? "admin")".utf8)
        return HKDF<SHA256>.deriveKey(inputKeyMaterial: secret, info: info, outputByteCount: 32)
    }

    static func base64url(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func unbase64url(_ s: String) -> Data? {
        var b = s.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while b.count % 4 != 0 { b += "=" }
        return Data(base64Encoded: b)
    }
}
