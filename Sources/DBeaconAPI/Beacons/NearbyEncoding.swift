import DBeaconCore
import DBeaconGeo
package import DBeaconServices
import Synchronization

/// The nearby answer, shared by the HTTP API and the CLI on a local database.
package enum NearbyEncoding {
    /// A FeatureCollection whose features carry `distance_m` and `bearing_deg` in their properties.
    ///
    /// Polygon perimeters are spliced in: a result's `formattedPerimeter` (the index keeps large
    /// regions' GeoJSON formatted), else from `PerimeterJSONCache`, where a polygon is
    /// formatted once per beacon version, not once per request.
    /// Without `includePerimeters`, `properties.perimeter` is left out.
    package static func collection(_ results: [NearbyResult], includePerimeters: Bool = true,
                                   cache: PerimeterJSONCache = .shared) -> [UInt8] {
        collection(results, includePerimeters: includePerimeters, cache: cache) { count, fill in
            var ok = false
            let bytes = [UInt8](unsafeUninitializedCapacity: count) { out, written in
                ok = fill(UnsafeMutableRawBufferPointer(out))
                written = ok ? count : 0
            }
            return ok ? bytes : nil
        }
    }

    /// `collection`, written once into storage of the answer's final size that `output` makes:
    /// `output(count, fill)` allocates `count` bytes, calls `fill` on them and returns the
    /// storage, or nil when `fill` returned false (a formatted perimeter could not be read). The
    /// HTTP layer makes the response's buffer, so a large answer is not copied again after it is
    /// written.
    package static func collection<Output>(_ results: [NearbyResult], includePerimeters: Bool = true,
                                           cache: PerimeterJSONCache = .shared,
                                           output: (Int, (UnsafeMutableRawBufferPointer) -> Bool) -> Output?) -> Output {
        var w = JSONWriter(capacity: 1024 + (includePerimeters ? 2048 : 768) * results.count)
        // Formatted perimeters are copied in at the end, each at its place in the other bytes,
        // straight into an answer of the final size.
        var splices: [(at: Int, perimeter: any FormattedPerimeter)] = []
        w.appendASCII("{\"type\":\"FeatureCollection\",\"features\":[")
        for (i, r) in results.enumerated() {
            if i > 0 { w.appendASCII(",") }
            writeFeature(r, includePerimeter: includePerimeters, cache: cache, into: &w, splices: &splices)
        }
        w.appendASCII("]}")
        let text = w.bytes
        let total = text.count + splices.reduce(0) { $0 + $1.perimeter.jsonByteCount }
        if let answer = output(total, { splice(text, splices, into: $0) }) { return answer }
        // A text could not be read (its file failed): every perimeter formatted instead.
        return collection(results.map { r in
            guard let p = r.formattedPerimeter else { return r }
            var plain = r
            plain.beacon = r.beacon.withPerimeter(p.perimeter)
            plain.formattedPerimeter = nil
            return plain
        }, includePerimeters: includePerimeters, cache: cache, output: output)
    }

    /// Writes `text` with each splice's perimeter inserted at its offset into `out` (exactly the
    /// total's size); false when one cannot be read.
    static func splice(_ text: [UInt8], _ splices: [(at: Int, perimeter: any FormattedPerimeter)],
                       into out: UnsafeMutableRawBufferPointer) -> Bool {
        text.withUnsafeBytes { text in
            var from = 0, to = 0
            func copy(upTo end: Int) {
                UnsafeMutableRawBufferPointer(rebasing: out[to..<(to + end - from)])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: text[from..<end]))
                to += end - from
                from = end
            }
            for s in splices {
                copy(upTo: s.at)
                let n = s.perimeter.jsonByteCount
                guard s.perimeter.writeJSON(to: UnsafeMutableRawBufferPointer(rebasing: out[to..<(to + n)])) else { return false }
                to += n
            }
            copy(upTo: text.count)
            return to == out.count
        }
    }

    /// One feature, written straight to bytes: the bytes of `BeaconFeatureCodec`'s Feature with
    /// `distance_m` and `bearing_deg` added to its properties (tested), without a tree of values
    /// per beacon.
    static func writeFeature(_ r: NearbyResult, includePerimeter: Bool, cache: PerimeterJSONCache, into w: inout JSONWriter,
                             splices: inout [(at: Int, perimeter: any FormattedPerimeter)]) {
        let b = r.beacon.beacon // already through the gate (`VisibleBeacon`)
        w.appendASCII("{\"type\":\"Feature\",\"id\":")
        b.id.withUTF8 { w.writeString(utf8: $0) }
        w.appendASCII(",\"geometry\":{\"type\":\"Point\",\"coordinates\":[")
        w.writeNumber(b.location.lon)
        w.appendASCII(",")
        w.writeNumber(b.location.lat)
        w.appendASCII("]},\"properties\":{\"name\":")
        w.writeString(b.name)
        w.appendASCII(",\"description\":")
        if let d = b.description { w.writeString(d) } else { w.appendASCII("null") }
        w.appendASCII(",\"owner\":")
        b.owner.withUTF8 { w.writeString(utf8: $0) }
        if includePerimeter {
            w.appendASCII(",\"perimeter\":")
            if let formatted = r.formattedPerimeter {
                splices.append((w.count, formatted))
            } else if let cached = cache.perimeter(of: r.beacon) {
                w.appendRaw(cached)
            } else {
                GeoJSONCodec.writePerimeter(b.perimeter, into: &w)
            }
        }
        w.appendASCII(",\"lifetime\":")
        if let l = b.lifetime { w.write(BeaconFeatureCodec.encodeLifetime(l)) } else { w.appendASCII("null") }
        w.appendASCII(",\"visibility\":")
        if let members = b.members {
            w.appendASCII("{\"members\":[")
            for (i, m) in members.enumerated() {
                if i > 0 { w.appendASCII(",") }
                m.withUTF8 { w.writeString(utf8: $0) }
            }
            w.appendASCII("]}")
        } else {
            w.appendASCII("null")
        }
        w.appendASCII(",\"tags\":[")
        for (i, t) in b.tags.enumerated() {
            if i > 0 { w.appendASCII(",") }
            w.writeString(t)
        }
        w.appendASCII("],\"relationships\":")
        if b.relationships.isEmpty {
            w.appendASCII("[]")
        } else {
            w.write(BeaconFeatureCodec.encodeProperties(relationshipsOf: r.beacon))
        }
        w.appendASCII(",\"content\":")
        if b.content.isEmpty { w.appendASCII("[]") } else { w.write(.array(b.content.map(BeaconFeatureCodec.encodeContent))) }
        w.appendASCII(b.tracksOwner ? ",\"tracks_owner\":true,\"content_policy\":" : ",\"tracks_owner\":false,\"content_policy\":")
        w.writeString(b.contentPolicy.rawValue)
        if let service = b.service {
            w.appendASCII(",\"service\":")
            w.writeString(service)
        }
        w.appendASCII(",\"followers_count\":")
        w.writeNumber(Double(b.followersCount))
        w.appendASCII(",\"version\":")
        w.writeNumber(Double(b.version))
        w.appendASCII(",\"created_at\":")
        w.writeTimestamp(b.createdAt)
        w.appendASCII(",\"updated_at\":")
        w.writeTimestamp(b.updatedAt)
        w.appendASCII(",\"distance_m\":")
        w.writeNumber(r.distanceM)
        w.appendASCII(",\"bearing_deg\":")
        w.writeNumber(r.bearingDeg)
        w.appendASCII("}}")
    }
}

/// Serialised polygon perimeters by beacon id and version (circles are short and move with
/// their beacon, so they are not cached). Bounded in entries and in bytes (at 1M beacons a
/// region's perimeter is 100 KiB of JSON, and 20,000 of them held 1.5 GiB; 64 MiB keeps the
/// regions of a few busy areas, and answers over a whole city of them are bound by their size
/// on the wire, not by formatting): cleared when either bound is reached.
package final class PerimeterJSONCache: Sendable {
    /// The process's cache, which every nearby answer uses unless given another.
    package static let shared = PerimeterJSONCache()

    /// A beacon's perimeter JSON, valid while the beacon's version and `updatedAt` (milliseconds)
    /// are those recorded.
    private struct Entry {
        var version: Int
        var updatedAt: Int64
        var bytes: [UInt8]
    }

    /// The entries and their total size in bytes, kept together under one lock.
    private struct Table {
        var entries: [BeaconID: Entry] = [:]
        var bytes = 0
    }

    private let table = Mutex(Table())
    /// Entries at most; one more clears the table.
    private let capacity: Int
    /// Bytes of JSON at most; an entry that would pass it clears the table.
    private let maxBytes: Int

    package init(capacity: Int = 20_000, maxBytes: Int = 64 << 20) {
        self.capacity = capacity
        self.maxBytes = maxBytes
    }

    /// Bytes of JSON held now.
    package var bytes: Int { table.withLock { $0.bytes } }

    /// The perimeter's JSON for polygons with enough vertices to be worth caching; nil otherwise.
    package func perimeter(of visible: VisibleBeacon) -> [UInt8]? {
        let beacon = visible.beacon
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
