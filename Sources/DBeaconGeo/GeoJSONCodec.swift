package import DBeaconCore

/// Limits that keep one request from monopolising the server.
package struct GeoLimits: Sendable {
    /// Vertices per perimeter, summed over all rings and polygons.
    package var maxVertices = 10_000
    /// Largest circle radius in metres.
    package var maxRadiusM = 100_000.0

    package init(maxVertices: Int = 10_000, maxRadiusM: Double = 100_000) {
        self.maxVertices = maxVertices
        self.maxRadiusM = maxRadiusM
    }

    package static let `default` = GeoLimits()
}

/// RFC 7946 GeoJSON geometry decoding with validation, and encoding.
///
/// Decoding checks, in order: structure and types, finite coordinates within WGS84 ranges,
/// ring closure and at least four positions, the vertex limit, antimeridian crossings (an edge
/// spanning more than 180° of longitude must instead be split into a MultiPolygon), and
/// finally validity through GEOS (self-intersections, holes outside shells, overlapping
/// parts), whose reason and location are reported. Rings are normalised to the right-hand
/// rule. Every rejection is a 422 `invalid_geometry` naming the path.
package enum GeoJSONCodec {
    // MARK: Decoding

    /// A `[lon, lat]` or `[lon, lat, alt]` position (altitude is accepted and dropped).
    package static func decodePosition(_ value: JSONValue, path: String) throws(DBeaconError) -> Position {
        guard case .array(let a) = value else {
            throw geometryError(path, "a position must be an array [longitude, latitude], got \(value.typeName)")
        }
        guard a.count == 2 || a.count == 3 else {
            throw geometryError(path, "a position must have 2 or 3 numbers, got \(a.count)")
        }
        var numbers: [Double] = []
        for (i, v) in a.enumerated() {
            guard case .number(let n) = v else {
                throw geometryError("\(path)[\(i)]", "coordinates must be numbers, got \(v.typeName)")
            }
            guard n.isFinite else {
                throw geometryError("\(path)[\(i)]", "coordinates must be finite numbers (NaN and Infinity are not allowed)")
            }
            numbers.append(n)
        }
        let p = Position(lon: numbers[0], lat: numbers[1])
        guard p.lon >= -180, p.lon <= 180 else {
            throw geometryError("\(path)[0]", "longitude \(p.lon) is outside [-180, 180]")
        }
        guard p.lat >= -90, p.lat <= 90 else {
            throw geometryError("\(path)[1]", "latitude \(p.lat) is outside [-90, 90]")
        }
        return p
    }

    /// A GeoJSON Point geometry.
    package static func decodePoint(_ value: JSONValue, path: String) throws(DBeaconError) -> Position {
        let object = try ObjectReader(value, path: path)
        let type = try object.string("type")
        guard type == "Point" else {
            throw geometryError(object.path("type"), "expected a Point, got \(type)")
        }
        guard let coordinates = object.value("coordinates") else {
            throw geometryError(object.path("coordinates"), "coordinates are required")
        }
        return try decodePosition(coordinates, path: object.path("coordinates"))
    }

    /// A perimeter: GeoJSON Polygon or MultiPolygon, or `{"type":"Circle","radius_m":…}`.
    package static func decodePerimeter(_ value: JSONValue, path: String, limits: GeoLimits) throws(DBeaconError) -> Perimeter {
        let object = try ObjectReader(value, path: path)
        let type = try object.string("type")
        switch type {
        case "Circle":
            let radius = try object.number("radius_m")
            guard radius > 0, radius <= limits.maxRadiusM else {
                throw geometryError(object.path("radius_m"), "radius_m must be greater than 0 and at most \(Int(limits.maxRadiusM))")
            }
            return .circle(radiusM: radius)
        case "Polygon", "MultiPolygon":
            return try decodePolygonal(object, limits: limits)
        default:
            throw geometryError(object.path("type"), "perimeter type must be Polygon, MultiPolygon or Circle, got \(type)")
        }
    }

    /// A Polygon or MultiPolygon geometry object (also used for Feature geometries on import).
    package static func decodePolygonal(_ object: ObjectReader, limits: GeoLimits) throws(DBeaconError) -> Perimeter {
        let type = try object.string("type")
        let coordinatesPath = object.path("coordinates")
        guard let coordinates = object.value("coordinates") else {
            throw geometryError(coordinatesPath, "coordinates are required")
        }
        var budget = limits.maxVertices
        let perimeter: Perimeter
        switch type {
        case "Polygon":
            perimeter = .polygon(try decodePolygon(coordinates, path: coordinatesPath, budget: &budget, limits: limits))
        case "MultiPolygon":
            guard case .array(let parts) = coordinates, !parts.isEmpty else {
                throw geometryError(coordinatesPath, "a MultiPolygon needs an array of at least one polygon")
            }
            var polygons: [Polygon] = []
            for (i, part) in parts.enumerated() {
                polygons.append(try decodePolygon(part, path: "\(coordinatesPath)[\(i)]", budget: &budget, limits: limits))
            }
            perimeter = .multiPolygon(polygons)
        default:
            throw geometryError(object.path("type"), "expected Polygon or MultiPolygon, got \(type)")
        }
        if let (reason, location) = GEOSContext.current.invalidityReason(perimeter.polygons) {
            var message = "invalid geometry: \(reason)"
            if let location { message += " at [\(location.lon), \(location.lat)]" }
            throw geometryError(object.path.isEmpty ? "$" : object.path, message)
        }
        return perimeter
    }

    private static func decodePolygon(_ value: JSONValue, path: String, budget: inout Int, limits: GeoLimits) throws(DBeaconError) -> Polygon {
        guard case .array(let ringValues) = value, !ringValues.isEmpty else {
            throw geometryError(path, "a polygon needs an array of linear rings (exterior first, then holes)")
        }
        var rings: [Ring] = []
        rings.reserveCapacity(ringValues.count)
        for (r, ringValue) in ringValues.enumerated() {
            let ringPath = "\(path)[\(r)]"
            guard case .array(let positions) = ringValue else {
                throw geometryError(ringPath, "a linear ring must be an array of positions, got \(ringValue.typeName)")
            }
            budget -= positions.count
            guard budget >= 0 else {
                throw DBeaconError(.unprocessable, code: "too_many_vertices",
                                   message: "the perimeter has more than \(limits.maxVertices) vertices", path: ringPath)
            }
            guard positions.count >= 4 else {
                throw geometryError(ringPath, "a linear ring needs at least 4 positions (the first repeated at the end), got \(positions.count)")
            }
            var ring: Ring = []
            ring.reserveCapacity(positions.count)
            for (i, pv) in positions.enumerated() {
                ring.append(try decodePosition(pv, path: "\(ringPath)[\(i)]"))
            }
            guard ring.first == ring.last else {
                throw geometryError(ringPath, "a linear ring must be closed: its last position must equal its first")
            }
            // RFC 7946 edges are straight in longitude/latitude: one from −180 to 180 (along a
            // parallel, as Antarctica's edge at −90) runs across the map, not across ±180, so it
            // stands; an edge jumping more than 180° between points not both on ±180 crosses it.
            for i in 1..<ring.count where abs(ring[i].lon - ring[i - 1].lon) > 180
                && !(abs(ring[i].lon) == 180 && abs(ring[i - 1].lon) == 180) {
                throw geometryError("\(ringPath)[\(i)]",
                    "this edge crosses the antimeridian; split the polygon at ±180° into a MultiPolygon (RFC 7946 §3.1.9)")
            }
            let area = signedArea(ring)
            // RFC 7946 right-hand rule: exterior counter-clockwise, holes clockwise.
            if (r == 0 && area < 0) || (r > 0 && area > 0) { ring.reverse() }
            rings.append(ring)
        }
        return Polygon(rings: rings)
    }

    /// Twice the signed planar area (positive when counter-clockwise in lon/lat).
    package static func signedArea(_ ring: Ring) -> Double {
        var sum = 0.0
        for i in 0..<(ring.count - 1) {
            sum += ring[i].lon * ring[i + 1].lat - ring[i + 1].lon * ring[i].lat
        }
        return sum
    }

    package static func geometryError(_ path: String, _ message: String) -> DBeaconError {
        DBeaconError(.unprocessable, code: "invalid_geometry", message: message, path: path)
    }

    // MARK: Encoding

    package static func encode(_ p: Position) -> JSONValue {
        .array([.number(p.lon), .number(p.lat)])
    }

    package static func encodePoint(_ p: Position) -> JSONValue {
        .object(["type": "Point", "coordinates": encode(p)])
    }

    private static func encodeRings(_ polygon: Polygon) -> JSONValue {
        .array(polygon.rings.map { ring in .array(ring.map(encode)) })
    }

    /// `JSONWriter.serialize(encodePerimeter(perimeter))`, the same bytes, written directly:
    /// no tree of values (an array per vertex) for a 5,000-vertex region.
    package static func writePerimeter(_ perimeter: Perimeter, into w: inout JSONWriter) {
        func rings(_ p: Polygon) {
            w.appendASCII("[")
            for (r, ring) in p.rings.enumerated() {
                if r > 0 { w.appendASCII(",") }
                ring.withUnsafeBufferPointer { ring in
                    ring.withMemoryRebound(to: Double.self) { writeRing(lonLat: $0, into: &w) }
                }
            }
            w.appendASCII("]")
        }
        switch perimeter {
        case .circle:
            w.write(encodePerimeter(perimeter))
        case .polygon(let p):
            w.appendASCII("{\"type\":\"Polygon\",\"coordinates\":")
            rings(p)
            w.appendASCII("}")
        case .multiPolygon(let ps):
            w.appendASCII("{\"type\":\"MultiPolygon\",\"coordinates\":[")
            for (i, p) in ps.enumerated() {
                if i > 0 { w.appendASCII(",") }
                rings(p)
            }
            w.appendASCII("]}")
        }
    }

    /// A polygon's `coordinates`: `[` rings `]`, each ring `lonLat[a..<b]` for consecutive
    /// `ringStarts` (`lon, lat` per vertex); what `writePerimeter` writes for a Polygon's rings.
    package static func writeRings(lonLat: UnsafePointer<Double>, ringStarts: some Collection<Int>, into w: inout JSONWriter) {
        w.appendASCII("[")
        var first = true
        for (a, b) in zip(ringStarts, ringStarts.dropFirst()) {
            if !first { w.appendASCII(",") }
            first = false
            writeRing(lonLat: UnsafeBufferPointer(start: lonLat + 2 * a, count: 2 * (b - a)), into: &w)
        }
        w.appendASCII("]")
    }

    /// One ring: `[[lon,lat],…]` from `lon, lat` pairs.
    static func writeRing(lonLat: UnsafeBufferPointer<Double>, into w: inout JSONWriter) {
        w.appendASCII("[")
        var i = 0
        while i + 1 < lonLat.count {
            w.appendASCII(i > 0 ? ",[" : "[")
            w.writeNumber(lonLat[i])
            w.appendASCII(",")
            w.writeNumber(lonLat[i + 1])
            w.appendASCII("]")
            i += 2
        }
        w.appendASCII("]")
    }

    package static func encodePerimeter(_ perimeter: Perimeter) -> JSONValue {
        switch perimeter {
        case .circle(let r):
            return .object(["type": "Circle", "radius_m": .number(r)])
        case .polygon(let p):
            return .object(["type": "Polygon", "coordinates": encodeRings(p)])
        case .multiPolygon(let ps):
            return .object(["type": "MultiPolygon", "coordinates": .array(ps.map(encodeRings))])
        }
    }
}
