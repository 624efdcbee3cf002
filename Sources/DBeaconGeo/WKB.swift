package import DBeaconCore

/// Well-Known Binary for the polygonal geometries DBeacon stores (little-endian, 2D).
/// Both SpatiaLite (`GeomFromWKB`/`AsBinary`) and PostGIS speak it, and it round-trips
/// every Double exactly, so the SQL path and the in-memory index see the same coordinates.
package enum WKB {
    /// A MultiPolygon holding the given polygons.
    package static func multiPolygon(_ polygons: [Polygon]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(9 + polygons.reduce(0) { $0 + 9 + $1.rings.reduce(0) { $0 + 4 + $1.count * 16 } })
        out.append(1)
        append(UInt32(6), to: &out)
        append(UInt32(polygons.count), to: &out)
        for polygon in polygons {
            out.append(1)
            append(UInt32(3), to: &out)
            append(UInt32(polygon.rings.count), to: &out)
            for ring in polygon.rings {
                append(UInt32(ring.count), to: &out)
                for p in ring {
                    append(p.lon.bitPattern, to: &out)
                    append(p.lat.bitPattern, to: &out)
                }
            }
        }
        return out
    }

    /// A rectangle per box, as a MultiPolygon (the search area of a circle).
    package static func boxes(_ boxes: [BoundingBox]) -> [UInt8] {
        multiPolygon(boxes.map { b in
            Polygon(rings: [[
                Position(lon: b.west, lat: b.south), Position(lon: b.east, lat: b.south),
                Position(lon: b.east, lat: b.north), Position(lon: b.west, lat: b.north),
                Position(lon: b.west, lat: b.south),
            ]])
        })
    }

    private static func append(_ v: UInt32, to out: inout [UInt8]) {
        withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) }
    }

    private static func append(_ v: UInt64, to out: inout [UInt8]) {
        withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) }
    }

    package struct DecodingError: Error {}

    /// Reads a Polygon or MultiPolygon (either byte order) into polygons.
    package static func decodePolygons(_ bytes: some Collection<UInt8>) throws(DecodingError) -> [Polygon] {
        let data = Array(bytes)
        var reader = Reader(data: data)
        let result = data.withUnsafeBytes { raw in
            Result { () throws(DecodingError) -> [Polygon] in try reader.readGeometry(raw) }
        }
        return try result.get()
    }

    /// Reads SpatiaLite's own geometry blob (the stored column, without `AsBinary`): a header
    /// (start byte, byte order, SRID, MBR, MBR end), the class, then the same body as WKB except
    /// that a MultiPolygon's parts start with the entity mark 0x69 instead of a byte order, and
    /// an end byte. Only uncompressed 2D Polygon and MultiPolygon, which is what DBeacon writes
    /// (`GeomFromWKB`); anything else throws, and the caller asks SpatiaLite for WKB instead.
    package static func decodeSpatiaLitePolygons(_ data: [UInt8]) throws(DecodingError) -> [Polygon] {
        guard data.count >= 48, data[0] == 0x00, data[1] <= 1, data[38] == 0x7C, data[data.count - 1] == 0xFE else {
            throw DecodingError()
        }
        let little = data[1] == 1
        var reader = Reader(data: data, offset: 39)
        let result = data.withUnsafeBytes { raw in
            Result { () throws(DecodingError) -> [Polygon] in
                var polygons: [Polygon]
                switch try reader.uint32(raw, little) {
                case 3:
                    polygons = [try reader.polygonBody(raw, little)]
                case 6:
                    let n = try reader.uint32(raw, little)
                    guard n <= (raw.count - 48) / 5 else { throw DecodingError() }
                    polygons = []
                    polygons.reserveCapacity(Int(n))
                    for _ in 0..<n {
                        guard try reader.byte(raw) == 0x69, try reader.uint32(raw, little) == 3 else { throw DecodingError() }
                        polygons.append(try reader.polygonBody(raw, little))
                    }
                default:
                    throw DecodingError()
                }
                guard reader.offset == raw.count - 1 else { throw DecodingError() }
                return polygons
            }
        }
        return try result.get()
    }

    private struct Reader {
        let data: [UInt8]
        var offset = 0

        mutating func readGeometry(_ raw: UnsafeRawBufferPointer) throws(DecodingError) -> [Polygon] {
            let little = try byte(raw) == 1
            let type = try uint32(raw, little) & 0xFFFF
            switch type {
            case 3: return [try polygonBody(raw, little)]
            case 6:
                let n = try uint32(raw, little)
                var polygons: [Polygon] = []
                polygons.reserveCapacity(Int(n))
                for _ in 0..<n {
                    let l = try byte(raw) == 1
                    guard try uint32(raw, l) & 0xFFFF == 3 else { throw DecodingError() }
                    polygons.append(try polygonBody(raw, l))
                }
                return polygons
            default:
                throw DecodingError()
            }
        }

        mutating func polygonBody(_ raw: UnsafeRawBufferPointer, _ little: Bool) throws(DecodingError) -> Polygon {
            let ringCount = try uint32(raw, little)
            var rings: [Ring] = []
            rings.reserveCapacity(Int(ringCount))
            for _ in 0..<ringCount {
                let n = Int(try uint32(raw, little))
                guard offset + n * 16 <= raw.count else { throw DecodingError() }
                let start = offset
                let ring = Ring(unsafeUninitializedCapacity: n) { buffer, count in
                    if little && Position.isPairOfDoubles {
                        // The blob's doubles are the ring's memory as it is: one copy (a load
                        // decodes 150M vertices at 1M beacons).
                        if n > 0 { UnsafeMutableRawPointer(buffer.baseAddress!).copyMemory(from: raw.baseAddress! + start, byteCount: n * 16) }
                        offset += n * 16
                    } else {
                        for i in 0..<n {
                            let x = double(raw, little)
                            let y = double(raw, little)
                            (buffer.baseAddress! + i).initialize(to: Position(lon: x, lat: y))
                        }
                    }
                    count = n
                }
                rings.append(ring)
            }
            return Polygon(rings: rings)
        }

        mutating func byte(_ raw: UnsafeRawBufferPointer) throws(DecodingError) -> UInt8 {
            guard offset < raw.count else { throw DecodingError() }
            defer { offset += 1 }
            return raw[offset]
        }

        mutating func uint32(_ raw: UnsafeRawBufferPointer, _ little: Bool) throws(DecodingError) -> UInt32 {
            guard offset + 4 <= raw.count else { throw DecodingError() }
            let v = raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
            offset += 4
            return little ? UInt32(littleEndian: v) : UInt32(bigEndian: v)
        }

        mutating func double(_ raw: UnsafeRawBufferPointer, _ little: Bool) -> Double {
            let v = raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            offset += 8
            return Double(bitPattern: little ? UInt64(littleEndian: v) : UInt64(bigEndian: v))
        }
    }
}
