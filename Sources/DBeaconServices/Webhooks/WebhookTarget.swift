import DBeaconCore
import Foundation

/// A webhook URL taken apart, with the addresses its host resolved to.
package struct WebhookTarget: Sendable {
    package var scheme: String
    package var host: String
    package var port: Int
    /// Resolved addresses, all checked; the delivery connects to the first.
    package var addresses: [String]
    package var hostIsLiteral: Bool
}
