package import DBeaconCore
package import DBeaconGeo
package import DBeaconServices

extension BeaconFeatureCodec {
    /// Applies an RFC 7396 merge patch to the beacon's Feature and reads the result: the draft
    /// `PATCH /v1/beacons/{id}` asks for. The id may be repeated, never changed.
    package static func patched(_ current: Beacon, with patch: JSONValue, limits: GeoLimits) throws(DBeaconError) -> BeaconDraft {
        guard case .object = patch else {
            throw DBeaconError.invalid("$", "a merge patch must be a JSON object", code: "invalid_type")
        }
        let merged = feature(of: current).mergePatched(with: patch)
        if let newID = merged["id"], newID != .string(current.id.rawValue) {
            throw DBeaconError.invalid("id", "a beacon's id cannot change", code: "read_only")
        }
        return try decodeDraft(merged, limits: limits)
    }

    /// A GeoJSON FeatureCollection (or a single Feature) to import: one item per feature, each
    /// decoded and checked; errors name the feature (`features[3].properties.name`).
    package static func importItems(_ document: JSONValue, limits: GeoLimits,
                                    maxFeatures: Int = 1_000_000) throws(DBeaconError) -> [BeaconImportItem] {
        let root = try ObjectReader(document)
        switch try root.string("type", maxLength: 64) {
        case "FeatureCollection":
            // RFC 7946 §3.3: a FeatureCollection has a member "features" (possibly empty).
            guard let features = try root.optionalArray("features", maxCount: maxFeatures) else {
                throw DBeaconError.invalid("features", "a FeatureCollection needs its features (an array, RFC 7946 §3.3)",
                                           code: "missing_field")
            }
            var items: [BeaconImportItem] = []
            items.reserveCapacity(features.count)
            for (i, feature) in features.enumerated() {
                let path = "features[\(i)]."
                do throws(DBeaconError) {
                    items.append(BeaconImportItem(draft: try decodeDraft(feature, limits: limits), path: path))
                } catch {
                    throw error.prefixingPath(path)
                }
            }
            return items
        case "Feature":
            return [BeaconImportItem(draft: try decodeDraft(document, limits: limits), path: "")]
        case let other:
            throw DBeaconError.invalid("type", "expected a FeatureCollection or a Feature, got \(other)", code: "invalid_type")
        }
    }
}

/// Changed values in `beacon.updated` events, as the Feature shows them (`location` as a
/// GeoJSON Point, everything else as its `properties` member).
package struct FeatureValueEncoding: BeaconValueEncoding {
    package init() {}

    package func values(of beacon: Beacon, fields: [String]) -> JSONObject {
        let properties = BeaconFeatureCodec.properties(of: beacon)
        var values = JSONObject()
        for field in fields {
            values[field] = field == "location" ? GeoJSONCodec.encodePoint(beacon.location) : properties[field] ?? .null
        }
        return values
    }
}
