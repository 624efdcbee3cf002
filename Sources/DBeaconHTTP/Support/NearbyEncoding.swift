import DBeaconCore
import DBeaconGeo
package import DBeaconServices

/// The nearby answer, shared by the HTTP API and the CLI on a local database.
package enum NearbyEncoding {
    /// A FeatureCollection whose features carry `distance_m` and `bearing_deg` in their properties.
    package static func collection(_ results: [NearbyResult]) -> [UInt8] {
        let features: [JSONValue] = results.map { r in
            var properties = BeaconFeatureCodec.encodeProperties(r.beacon)
            properties["distance_m"] = .number(r.distanceM)
            properties["bearing_deg"] = .number(r.bearingDeg)
            return .object(JSONObject([
                ("type", "Feature"), ("id", .string(r.beacon.id.rawValue)),
                ("geometry", GeoJSONCodec.encodePoint(r.beacon.location)), ("properties", .object(properties)),
            ]))
        }
        return JSONWriter.serialize(BeaconFeatureCodec.collection(features))
    }
}
