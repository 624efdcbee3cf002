package import DBeaconCore
import DBeaconGeo
import DBeaconStore
import Foundation

/// One location fix from a device.
package struct LocationFix: Sendable {
    package var position: Position
    package var accuracyM: Double
    package var timestamp: Timestamp

    package init(position: Position, accuracyM: Double, timestamp: Timestamp) {
        self.position = position
        self.accuracyM = accuracyM
        self.timestamp = timestamp
    }
}
