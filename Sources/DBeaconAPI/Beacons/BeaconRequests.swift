package import DBeaconCore
package import DBeaconGeo
package import DBeaconServices

extension BeaconFeatureCodec {
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
