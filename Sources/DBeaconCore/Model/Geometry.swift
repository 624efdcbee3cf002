/// A WGS84 position in GeoJSON order (longitude first).
package struct Position: Sendable, Hashable {
    package var lon: Double
    package var lat: Double

    package init(lon: Double, lat: Double) {
        self.lon = lon
        self.lat = lat
    }

    /// Whether a `Position` is laid out as two little-endian doubles, longitude then latitude,
    /// on this machine (as WKB and the coordinate file keep them): then rings are copied as bytes.
    package static let isPairOfDoubles: Bool = {
        let one = 1.0
        return MemoryLayout<Position>.stride == 16 && MemoryLayout<Position>.offset(of: \Position.lat) == 8
            && one.bitPattern.littleEndian == one.bitPattern
    }()

    /// True when both values are finite and inside [-180, 180] × [-90, 90].
    package var isValid: Bool {
        lon.isFinite && lat.isFinite && lon >= -180 && lon <= 180 && lat >= -90 && lat <= 90
    }

    /// The one check of WGS84 coordinates from outside (query parameters, bodies, location
    /// fixes, the CLI): 422 naming the value at fault, `not_finite` for NaN and infinities,
    /// `out_of_range` outside [-90, 90] × [-180, 180].
    package static func checked(lat: Double, lon: Double, latPath: String = "lat", lonPath: String = "lon") throws(DBeaconError) -> Position {
        for (value, path, limit) in [(lat, latPath, 90.0), (lon, lonPath, 180.0)] {
            guard value.isFinite else { throw DBeaconError.invalid(path, "\(path) must be a finite number", code: "not_finite") }
            guard abs(value) <= limit else {
                throw DBeaconError.invalid(path, "\(path) must be within [-\(Int(limit)), \(Int(limit))]", code: "out_of_range")
            }
        }
        return Position(lon: lon, lat: lat)
    }
}

/// A linear ring: closed (first == last), at least four positions.
package typealias Ring = [Position]

/// A polygon: the exterior ring first, then holes. Stored normalised to the RFC 7946
/// right-hand rule (exterior counter-clockwise, holes clockwise).
package struct Polygon: Sendable, Hashable {
    package var rings: [Ring]

    package init(rings: [Ring]) { self.rings = rings }

    package var exterior: Ring { rings[0] }
    package var holes: ArraySlice<Ring> { rings.dropFirst() }
    package var vertexCount: Int { rings.reduce(0) { $0 + $1.count } }
}

/// Where a beacon is visible: a polygon, a multipolygon, or a circle of `radiusM` metres
/// (geodesic) around the beacon's possibly moving location.
package enum Perimeter: Sendable, Hashable {
    case circle(radiusM: Double)
    case polygon(Polygon)
    case multiPolygon([Polygon])

    /// The polygons of a polygonal perimeter; empty for circles.
    package var polygons: [Polygon] {
        switch self {
        case .circle: []
        case .polygon(let p): [p]
        case .multiPolygon(let ps): ps
        }
    }

    package var isCircle: Bool {
        if case .circle = self { return true }
        return false
    }

    package var radiusM: Double? {
        if case .circle(let r) = self { return r }
        return nil
    }

    package var vertexCount: Int {
        switch self {
        case .circle: 0
        case .polygon(let p): p.vertexCount
        case .multiPolygon(let ps): ps.reduce(0) { $0 + $1.vertexCount }
        }
    }
}

/// A longitude/latitude box; `west > east` never happens here: boxes that would cross
/// the antimeridian are split by whoever builds them.
package struct BoundingBox: Sendable, Hashable {
    package var west: Double
    package var south: Double
    package var east: Double
    package var north: Double

    package init(west: Double, south: Double, east: Double, north: Double) {
        self.west = west
        self.south = south
        self.east = east
        self.north = north
    }

    package func contains(_ p: Position) -> Bool {
        p.lon >= west && p.lon <= east && p.lat >= south && p.lat <= north
    }

    package func intersects(_ o: BoundingBox) -> Bool {
        west <= o.east && o.west <= east && south <= o.north && o.south <= north
    }

    package func union(_ o: BoundingBox) -> BoundingBox {
        BoundingBox(west: min(west, o.west), south: min(south, o.south), east: max(east, o.east), north: max(north, o.north))
    }

    /// The box of an array of positions (which must not be empty): the hot path of loading
    /// an index, so a plain loop over the buffer (the generic form below is not specialised
    /// across modules).
    package init(of positions: [Position]) {
        var w = Double.infinity, s = Double.infinity, e = -Double.infinity, n = -Double.infinity
        positions.withUnsafeBufferPointer { buffer in
            for p in buffer {
                w = min(w, p.lon); e = max(e, p.lon)
                s = min(s, p.lat); n = max(n, p.lat)
            }
        }
        self.init(west: w, south: s, east: e, north: n)
    }

    /// The box of a set of positions (which must not be empty).
    package init(of positions: some Sequence<Position>) {
        var w = Double.infinity, s = Double.infinity, e = -Double.infinity, n = -Double.infinity
        for p in positions {
            w = min(w, p.lon); e = max(e, p.lon)
            s = min(s, p.lat); n = max(n, p.lat)
        }
        self.init(west: w, south: s, east: e, north: n)
    }
}
