#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// CoreLocation's proximity classes for a sighted beacon.
package enum Proximity: String, Sendable, Hashable, CaseIterable {
    /// Within about half a metre.
    case immediate
    /// About half a metre to three metres.
    case near
    /// Farther than about three metres.
    case far
    /// No usable signal (RSSI 0, as iOS reports when it cannot range).
    case unknown
}

/// The log-distance path loss model: RSSI(d) = P₁ − 10·n·log₁₀(d / 1 m), where P₁ is the
/// calibrated RSSI at 1 m (the beacon's measured power) and n the path loss exponent
/// (2 in free space, about 2–4 indoors).
package struct PathLoss: Sendable, Hashable {
    /// The path loss exponent n.
    package var exponent: Double
    /// Below this distance the proximity is `immediate`.
    package var immediateM: Double
    /// Below this distance (and not immediate) the proximity is `near`.
    package var nearM: Double

    package init(exponent: Double = 2.0, immediateM: Double = 0.5, nearM: Double = 3.0) {
        self.exponent = exponent
        self.immediateM = immediateM
        self.nearM = nearM
    }

    /// Estimated distance in metres, or nil for RSSI 0 (unknown) or a non-finite input.
    package func distance(rssi: Int, measuredPower: Int) -> Double? {
        guard rssi < 0, exponent > 0 else { return nil }
        let d = pow(10, Double(measuredPower - rssi) / (10 * exponent))
        return d.isFinite ? d : nil
    }

    /// The RSSI expected at `distanceM` (used to simulate sightings).
    package func rssi(atDistance distanceM: Double, measuredPower: Int) -> Double {
        Double(measuredPower) - 10 * exponent * log10(max(distanceM, 1e-3))
    }

    package func proximity(distanceM: Double?) -> Proximity {
        guard let d = distanceM else { return .unknown }
        if d < immediateM { return .immediate }
        if d < nearM { return .near }
        return .far
    }

    /// The 1-σ relative range error implied by `sigmaDB` of RSSI noise: a ±σ dB error scales
    /// the distance by 10^(±σ/10n), i.e. about σ·ln10/(10n) relative.
    package func relativeRangeError(sigmaDB: Double) -> Double {
        sigmaDB * log(10) / (10 * exponent)
    }
}
