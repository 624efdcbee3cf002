import DBeaconCore
import DBeaconGeo
import DBeaconServices
import Foundation

/// Random but valid beacons in a city-sized extent: circles, star-shaped polygons with and
/// without holes, multipolygons; random lifetimes, private groups and tags.
struct RandomBeacons {
    static let center = Position(lon: 9.18, lat: 48.78)
    static let tags = ["food", "shopping", "landmark", "meeting"]
    var rng: SeededGenerator
    let users: [UserID]
    let span: Double

    init(seed: UInt64, users: [UserID], span: Double = 0.05) {
        rng = SeededGenerator(seed: seed)
        self.users = users
        self.span = span
    }

    mutating func point() -> Position {
        Position(lon: Self.center.lon + .random(in: -span...span, using: &rng),
                 lat: Self.center.lat + .random(in: -span...span, using: &rng))
    }

    /// A star-shaped ring around `c` with radii in [rMin, rMax] degrees: simple by construction,
    /// and with angular gaps of at most 1.5·2π/n, so a hole of radius < rMin·cos(0.75π/n) fits inside.
    mutating func starRing(_ c: Position, vertices: Int, rMin: Double, rMax: Double) -> Ring {
        let step = 2 * Double.pi / Double(vertices)
        let angles = (0..<vertices).map { i in Double(i) * step + .random(in: -0.25 * step...0.25 * step, using: &rng) }
        var ring: Ring = angles.map { a in
            let r = Double.random(in: rMin...rMax, using: &rng)
            return Position(lon: c.lon + r * cos(a) / cos(c.lat * .pi / 180), lat: c.lat + r * sin(a))
        }
        ring.append(ring[0])
        return ring
    }

    mutating func perimeter(at c: Position) -> Perimeter {
        switch Int.random(in: 0..<10, using: &rng) {
        case 0..<4:
            return .circle(radiusM: .random(in: 20...2000, using: &rng))
        case 4..<7:
            let outer = starRing(c, vertices: .random(in: 3...40, using: &rng), rMin: 0.004, rMax: 0.02)
            return .polygon(Polygon(rings: [outer]))
        case 7..<9:
            let outer = starRing(c, vertices: .random(in: 8...60, using: &rng), rMin: 0.006, rMax: 0.02)
            let hole = starRing(c, vertices: .random(in: 3...12, using: &rng), rMin: 0.001, rMax: 0.004)
            return .polygon(Polygon(rings: [outer, hole]))
        default:
            let a = starRing(Position(lon: c.lon - 0.012, lat: c.lat), vertices: 12, rMin: 0.002, rMax: 0.005)
            let b = starRing(Position(lon: c.lon + 0.012, lat: c.lat), vertices: 12, rMin: 0.002, rMax: 0.005)
            let hole = starRing(Position(lon: c.lon + 0.012, lat: c.lat), vertices: 5, rMin: 0.0005, rMax: 0.0015)
            return .multiPolygon([Polygon(rings: [a]), Polygon(rings: [b, hole])])
        }
    }

    /// Instants around 2026-11-21T12:00Z used for lifetimes and queries.
    static let base = Timestamp(rfc3339: "2026-11-21T12:00:00Z")!

    mutating func beacon(index: Int) -> Beacon {
        let c = point()
        var lifetime: Lifetime?
        if Int.random(in: 0..<5, using: &rng) == 0 {
            let start = Self.base.adding(seconds: Double(Int.random(in: -6...6, using: &rng)) * 3600)
            lifetime = Lifetime(start: Bool.random(using: &rng) ? start : nil, end: start.adding(seconds: Double(Int.random(in: 1...6, using: &rng)) * 3600))
        }
        var members: [UserID]?
        if Int.random(in: 0..<10, using: &rng) == 0 {
            members = users.filter { _ in Bool.random(using: &rng) }
        }
        let tagCount = Int.random(in: 0...2, using: &rng)
        let tags = Array(Set((0..<tagCount).map { _ in Self.tags.randomElement(using: &rng)! })).sorted()
        return Beacon(id: BeaconID(uncheckedRawValue: "bcn_r\(index)"), name: "random \(index)", owner: users.randomElement(using: &rng)!,
                      location: c, perimeter: perimeter(at: c), lifetime: lifetime, members: members, tags: tags,
                      createdAt: Self.base, updatedAt: Self.base)
    }

    /// The beacons as the reference script expects them.
    static func referenceJSON(_ beacons: [Beacon]) -> JSONValue {
        .array(beacons.map { b in
            .object([
                "id": .string(b.id.rawValue), "owner": .string(b.owner.rawValue), "lat": .number(b.location.lat),
                "lon": .number(b.location.lon), "perimeter": GeoJSONCodec.encodePerimeter(b.perimeter),
                "start": b.lifetime?.start.map { .number(Double($0.millis)) } ?? .null,
                "end": b.lifetime?.end.map { .number(Double($0.millis)) } ?? .null,
                "members": b.members.map { .array($0.map { .string($0.rawValue) }) } ?? .null,
                "tags": .array(b.tags.map(JSONValue.string)),
            ])
        })
    }
}

/// A nearby question and how to ask the reference about it.
struct RandomQuery {
    var point: Position
    var viewer: Principal
    var at: Timestamp
    var tags: [String]

    var referenceJSON: JSONValue {
        .object(["lat": .number(point.lat), "lon": .number(point.lon), "viewer": .optional(viewer.userID?.rawValue),
                 "at": .number(Double(at.millis)), "tags": .array(tags.map(JSONValue.string))])
    }
}

extension RandomBeacons {
    /// Random points, plus every polygon vertex and circle centre (boundary and degenerate cases).
    mutating func queries(count: Int, beacons: [Beacon]) -> [RandomQuery] {
        var points = (0..<count).map { _ in point() }
        for b in beacons.prefix(60) {
            points.append(b.location)
            for p in b.perimeter.polygons { points.append(contentsOf: p.exterior.prefix(3)) }
        }
        let viewers: [Principal] = users.map { .user($0) } + [.admin]
        return points.map { p in
            let at = Self.base.adding(seconds: Double(Int.random(in: -8...8, using: &rng)) * 1800)
            let tags = Int.random(in: 0..<3, using: &rng) == 0 ? [Self.tags.randomElement(using: &rng)!] : []
            return RandomQuery(point: p, viewer: viewers.randomElement(using: &rng)!, at: at, tags: tags)
        }
    }
}
