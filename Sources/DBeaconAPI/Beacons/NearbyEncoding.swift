package import DBeaconCore
import DBeaconGeo
package import DBeaconServices
import Synchronization

/// The nearby answer, shared by the HTTP API and the CLI on a local database.
package enum NearbyEncoding {
    /// A FeatureCollection whose features carry `distance_m` and `bearing_deg` in their properties.
    ///
    /// Polygon perimeters are spliced in from `PerimeterJSONCache`: a 5,000-vertex region is
    /// formatted once per beacon version, not once per request.
    /// Without `includePerimeters`, `properties.perimeter` is left out.
    package static func collection(_ results: [NearbyResult], includePerimeters: Bool = true,
                                   cache: PerimeterJSONCache = .shared) -> [UInt8] {
        var writer = JSONWriter(capacity: 1024)
        writer.appendASCII("{\"type\":\"FeatureCollection\",\"features\":[")
        for (i, r) in results.enumerated() {
            if i > 0 { writer.appendASCII(",") }
            let cached = includePerimeters ? cache.perimeter(of: r.beacon) : nil
            var properties = BeaconFeatureCodec.encodeProperties(r.beacon, perimeterPlaceholder: cached != nil || !includePerimeters)
            if !includePerimeters { properties["perimeter"] = nil }
            properties["distance_m"] = .number(r.distanceM)
            properties["bearing_deg"] = .number(r.bearingDeg)
            writer.appendASCII("{\"type\":\"Feature\",\"id\":")
            writer.writeString(r.beacon.id.rawValue)
            writer.appendASCII(",\"geometry\":")
            writer.write(GeoJSONCodec.encodePoint(r.beacon.location))
            writer.appendASCII(",\"properties\":{")
            for (j, member) in properties.members.enumerated() {
                if j > 0 { writer.appendASCII(",") }
                writer.writeString(member.key)
                writer.appendASCII(":")
                if member.key == "perimeter", let cached {
                    writer.appendRaw(cached)
                } else {
                    writer.write(member.value)
                }
            }
            writer.appendASCII("}}")
        }
        writer.appendASCII("]}")
        return writer.bytes
    }
}

/// Serialised polygon perimeters by beacon id and version (circles are short and move with
/// their beacon, so they are not cached). Bounded: cleared when it reaches `capacity` entries.
package final class PerimeterJSONCache: Sendable {
    package static let shared = PerimeterJSONCache()

    private struct Entry {
        var version: Int
        var updatedAt: Int64
        var bytes: [UInt8]
    }

    private let entries = Mutex<[BeaconID: Entry]>([:])
    private let capacity: Int

    package init(capacity: Int = 20_000) { self.capacity = capacity }

    /// The perimeter's JSON for polygons with enough vertices to be worth caching; nil otherwise.
    package func perimeter(of beacon: Beacon) -> [UInt8]? {
        guard !beacon.perimeter.isCircle, beacon.perimeter.vertexCount >= 32 else { return nil }
        let key = beacon.updatedAt.millis
        if let hit = entries.withLock({ $0[beacon.id] }), hit.version == beacon.version, hit.updatedAt == key {
            return hit.bytes
        }
        let bytes = JSONWriter.serialize(GeoJSONCodec.encodePerimeter(beacon.perimeter))
        entries.withLock { table in
            if table.count >= capacity { table.removeAll(keepingCapacity: true) }
            table[beacon.id] = Entry(version: beacon.version, updatedAt: key, bytes: bytes)
        }
        return bytes
    }
}
