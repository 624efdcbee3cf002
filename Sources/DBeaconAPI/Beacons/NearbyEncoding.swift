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
/// their beacon, so they are not cached). Bounded in entries and in bytes (at 1M beacons a
/// region's perimeter is 100 KiB of JSON, and 20,000 of them held 1.5 GiB; 64 MiB keeps the
/// regions of a few busy areas, and answers over a whole city of them are bound by their size
/// on the wire, not by formatting): cleared when either bound is reached.
package final class PerimeterJSONCache: Sendable {
    package static let shared = PerimeterJSONCache()

    private struct Entry {
        var version: Int
        var updatedAt: Int64
        var bytes: [UInt8]
    }

    private struct Table {
        var entries: [BeaconID: Entry] = [:]
        var bytes = 0
    }

    private let table = Mutex(Table())
    private let capacity: Int
    private let maxBytes: Int

    package init(capacity: Int = 20_000, maxBytes: Int = 64 << 20) {
        self.capacity = capacity
        self.maxBytes = maxBytes
    }

    /// Bytes of JSON held now.
    package var bytes: Int { table.withLock { $0.bytes } }

    /// The perimeter's JSON for polygons with enough vertices to be worth caching; nil otherwise.
    package func perimeter(of beacon: Beacon) -> [UInt8]? {
        guard !beacon.perimeter.isCircle, beacon.perimeter.vertexCount >= 32 else { return nil }
        let key = beacon.updatedAt.millis
        if let hit = table.withLock({ $0.entries[beacon.id] }), hit.version == beacon.version, hit.updatedAt == key {
            return hit.bytes
        }
        var writer = JSONWriter(capacity: 40 * beacon.perimeter.vertexCount + 64)
        GeoJSONCodec.writePerimeter(beacon.perimeter, into: &writer)
        let bytes = writer.bytes
        table.withLock { t in
            if t.entries.count >= capacity || t.bytes + bytes.count > maxBytes { t = Table() }
            if let old = t.entries.updateValue(Entry(version: beacon.version, updatedAt: key, bytes: bytes), forKey: beacon.id) {
                t.bytes -= old.bytes.count
            }
            t.bytes += bytes.count
        }
        return bytes
    }
}
