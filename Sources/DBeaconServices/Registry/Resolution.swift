package import DBeaconCore
import DBeaconGeo
import DBeaconStore

/// A physical beacon identity resolved to a digital beacon.
package struct Resolution: Sendable {
    package var entry: RegistryEntry
    package var beacon: VisibleBeacon
}
