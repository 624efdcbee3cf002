package import DBeaconCore
package import DBeaconServices
import Crypto

/// `POST /v1/sightings`: `{"batch_id"?, "sightings":[…]}`.
package struct SightingRequest: Sendable {
    /// The client's id of the batch: sent again with the same items, it replays the stored answer
    /// instead of repeating its effects.
    package var batchID: String?
    /// Per item, what it says or why it cannot be read (a bad item never fails the batch).
    package var items: [Result<SightingInput, BeaconFrameError>]
    /// SHA-256 of the items as parsed, to recognise the same batch sent again.
    package var fingerprint: String

    /// Reads `{"batch_id"?, "sightings"}`: 422 when `sightings` is missing, empty or longer than
    /// `maxItems`, or `batch_id` is empty; each item is decoded on its own (`decode`).
    package init(_ body: JSONValue, maxItems: Int) throws(DBeaconError) {
        let o = try ObjectReader(body)
        batchID = try o.optionalString("batch_id", maxLength: 100, allowEmpty: false)
        guard let values = try o.optionalArray("sightings", maxCount: maxItems) else {
            throw DBeaconError.invalid("sightings", "sightings is required", code: "missing_field")
        }
        guard !values.isEmpty else { throw DBeaconError.invalid("sightings", "sightings must not be empty", code: "empty_value") }
        items = values.enumerated().map { i, item in Self.decode(item, path: "sightings[\(i)]") }
        fingerprint = Hex.string(Array(SHA256.hash(data: JSONWriter.serialize(.array(values)))))
    }

    /// One item: `{"uuid","major","minor","rssi","tx_power"?,"timestamp"?}` (or the decoded
    /// Eddystone / AltBeacon members with `type`), or `{"adv":"<hex>","rssi","timestamp"?}`.
    package static func decode(_ item: JSONValue, path: String) -> Result<SightingInput, BeaconFrameError> {
        do throws(DBeaconError) {
            let o = try ObjectReader(item, path: path)
            let identity: PhysicalBeaconIdentity
            var frameMeasuredPower: Int?
            if o.value("adv") != nil {
                if o.value("uuid") != nil || o.value("namespace") != nil || o.value("id1") != nil {
                    return .failure(BeaconFrameError("invalid_sighting", "give either adv or the decoded identity, not both"))
                }
                guard case .string(let hex)? = o.value("adv") else {
                    return .failure(BeaconFrameError("invalid_hex", "adv must be a string of hex digits"))
                }
                switch BeaconFrameParser.parse(hex: hex) {
                case .failure(let e): return .failure(e)
                case .success(let frame):
                    identity = frame.identity
                    frameMeasuredPower = frame.measuredPowerAt1m
                }
            } else {
                if o.value("uuid") == nil && o.value("namespace") == nil && o.value("id1") == nil {
                    return .failure(BeaconFrameError("missing_field", "a sighting needs uuid, major and minor, or adv"))
                }
                identity = try RegistryCodec.decodeIdentity(o, concrete: true)
            }
            guard case .number(let r)? = o.value("rssi"), r == r.rounded(), (-127...0).contains(r) else {
                return .failure(BeaconFrameError(o.value("rssi") == nil ? "missing_field" : "invalid_rssi",
                                                 "rssi is required: an integer within -127…0 dBm"))
            }
            var txPower: Int?
            if let v = o.value("tx_power") {
                guard case .number(let t) = v, t == t.rounded(), RegistryCodec.measuredPowerRange.contains(Int(exactly: t) ?? 1000) else {
                    return .failure(BeaconFrameError("invalid_tx_power", "tx_power must be an integer within -127…20 dBm"))
                }
                txPower = Int(t)
            }
            return .success(SightingInput(identity: identity, rssi: Int(r), txPower: txPower, frameMeasuredPower: frameMeasuredPower,
                                          timestamp: try o.optionalTimestamp("timestamp")))
        } catch {
            let message = error.path.map { "\($0): \(error.message)" } ?? error.message
            return .failure(BeaconFrameError(error.code == "invalid_type" && error.path == path ? "invalid_sighting" : error.code, message))
        }
    }
}
