import DBeaconCore
package import DBeaconGeo
import DBeaconStore
import Crypto

/// Tunables of sighting resolution, ranging and indoor positioning.
package struct SightingConfig: Sendable {
    /// Path loss exponent and proximity thresholds.
    package var pathLoss = PathLoss()
    /// RSSI at 1 m when neither the sighting, the registry entry nor the frame says.
    package var defaultMeasuredPower = -59
    /// RSSI noise (1 σ, dB) assumed for trilateration weights and accuracy.
    package var rssiNoiseDB = 4.0
    /// Largest batch of sightings in one request.
    package var maxSightingsPerBatch = 1000
    /// Sightings that far behind the newest positioned sighting of a batch are left out of
    /// the position estimate (the device moved since).
    package var positionWindowSeconds = 10.0
    /// Faster than this between the last location fix and an indoor position estimate (beyond
    /// both accuracies) is physically impossible: the estimate is flagged and not used.
    package var maxSpeedMps = 15.0
    /// How long answers to batches with a `batch_id` are kept for replay.
    package var batchRetentionSeconds = 86_400.0

    package init() {}
}
