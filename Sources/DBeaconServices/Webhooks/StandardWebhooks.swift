import Crypto
import DBeaconCore
import Foundation

/// Signing per the Standard Webhooks specification (standardwebhooks.com): secrets are
/// `whsec_` + base64 of at least 24 random bytes; the signature is `v1,` + base64 of
/// HMAC-SHA256 over `{webhook-id}.{webhook-timestamp}.{body}` keyed with the decoded secret.
package enum StandardWebhooks {
    /// A new secret with 32 random bytes.
    package static func newSecret() -> String {
        "whsec_" + Data(RandomToken.bytes(32)).base64EncodedString()
    }

    /// The key bytes of a `whsec_…` secret.
    package static func key(of secret: String) -> [UInt8]? {
        guard secret.hasPrefix("whsec_"), let data = Data(base64Encoded: String(secret.dropFirst(6))), data.count >= 24 else {
            return nil
        }
        return Array(data)
    }

    /// `v1,<base64 signature>` for one secret.
    package static func signature(secret: String, id: String, timestamp: Int, body: [UInt8]) -> String? {
        guard let key = key(of: secret) else { return nil }
        var content = Array("\(id).\(timestamp).".utf8)
        content += body
        let mac = HMAC<SHA256>.authenticationCode(for: content, using: SymmetricKey(data: key))
        return "v1," + Data(mac).base64EncodedString()
    }

    /// The three headers of a delivery; during a secret rotation both secrets sign
    /// (space-separated signatures, as the specification allows).
    package static func headers(secrets: [String], id: String, timestamp: Int, body: [UInt8]) -> [(String, String)] {
        let signatures = secrets.compactMap { signature(secret: $0, id: id, timestamp: timestamp, body: body) }
        return [("webhook-id", id), ("webhook-timestamp", String(timestamp)), ("webhook-signature", signatures.joined(separator: " "))]
    }
}
