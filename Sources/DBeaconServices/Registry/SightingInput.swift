package import DBeaconCore

/// One observation of a physical beacon, as decoded from a request item.
package struct SightingInput: Sendable {
    package var identity: PhysicalBeaconIdentity
    package var rssi: Int
    /// RSSI at 1 m sent by the app (`tx_power`).
    package var txPower: Int?
    /// RSSI at 1 m advertised in a raw frame.
    package var frameMeasuredPower: Int?
    /// When it was seen; nil: now.
    package var timestamp: Timestamp?

    package init(identity: PhysicalBeaconIdentity, rssi: Int, txPower: Int?, frameMeasuredPower: Int?, timestamp: Timestamp?) {
        self.identity = identity
        self.rssi = rssi
        self.txPower = txPower
        self.frameMeasuredPower = frameMeasuredPower
        self.timestamp = timestamp
    }
}
