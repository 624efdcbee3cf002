package import DBeaconCore

/// A registry entry as a client describes it (`POST /v1/registry`, or a merged PATCH).
package struct RegistryDraft: Sendable, Hashable {
    package var identity: PhysicalBeaconIdentity
    package var beacon: BeaconID
    package var position: InstalledPosition?
    package var measuredPower: Int?
    package var status: RegistryEntry.Status

    package init(identity: PhysicalBeaconIdentity, beacon: BeaconID, position: InstalledPosition?, measuredPower: Int?,
                 status: RegistryEntry.Status) {
        self.identity = identity
        self.beacon = beacon
        self.position = position
        self.measuredPower = measuredPower
        self.status = status
    }
}
