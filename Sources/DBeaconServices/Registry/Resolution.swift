package import DBeaconCore
package import DBeaconGeo
package import DBeaconStore

/// A physical beacon identity resolved to a digital beacon.
package struct Resolution: Sendable {
    package var entry: RegistryEntry
    package var beacon: Beacon
}
