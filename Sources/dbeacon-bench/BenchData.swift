import DBeaconCore
import DBeaconStore
import Foundation

/// The synthetic city of `dbeacon bench`: deterministic for a seed, so runs are comparable.
///
/// A 100 km × 100 km metropolitan region around Stuttgart. 70% circles of 20–500 m; 25%
/// star-shaped polygons of 8–64 vertices and 30–300 m; 5% complex star polygons of
/// 500–5,000 vertices and 200–1,000 m (region-like outlines: smooth variation plus 1% noise)
/// with a hole of a tenth as many vertices. 20% have a
/// lifetime (most alive at the bench instant), 10% are private to three users, each has one
/// or two of eight tags. Polygons are valid by construction (star-shaped rings whose angular
/// jitter keeps them simple; holes (at most 0.3·1.24 r) well inside the outer ring (at least
/// 0.76·0.99 r)).
struct BenchCity {
    static let center = Position(lon: 9.18, lat: 48.78)
    static let halfSizeM = 50_000.0
    static let tags = ["food", "shopping", "landmark", "meeting", "culture", "sport", "nightlife", "transport"]
    static let userCount = 1000
    static let metersPerDegreeLat = 111_320.0
    static var halfLat: Double { halfSizeM / metersPerDegreeLat }
    static var halfLon: Double { halfSizeM / (metersPerDegreeLat * cos(center.lat * .pi / 180)) }

    var rng: SplitMix64
    let now: Timestamp

    init(seed: UInt64, now: Timestamp) {
        rng = SplitMix64(seed: seed)
        self.now = now
    }

    static func user(_ i: Int) -> UserID { UserID(uncheckedRawValue: "usr_bench_\(i)") }
    static func token(_ i: Int) -> String { "bench-token-\(i)" }

    mutating func point() -> Position {
        Position(lon: Self.center.lon + .random(in: -Self.halfLon...Self.halfLon, using: &rng),
                 lat: Self.center.lat + .random(in: -Self.halfLat...Self.halfLat, using: &rng))
    }

    /// A star-shaped ring with radii (metres) in `rMin...rMax`, drawn independently per vertex.
    mutating func starRing(_ c: Position, vertices n: Int, rMin: Double, rMax: Double) -> Ring {
        ring(c, vertices: n) { rng in Double.random(in: rMin...rMax, using: &rng) }
    }

    /// A region-like outline: a radius that varies smoothly with the angle (two harmonics,
    /// ±23%) plus 1% per-vertex noise, as district or park boundaries do; star-shaped, so simple.
    mutating func smoothRing(_ c: Position, vertices n: Int, radius r: Double) -> Ring {
        let k1 = Double(Int.random(in: 2...4, using: &rng)), k2 = Double(Int.random(in: 5...9, using: &rng))
        let p1 = Double.random(in: 0..<(2 * .pi), using: &rng), p2 = Double.random(in: 0..<(2 * .pi), using: &rng)
        var angle = 0.0
        let step = 2 * Double.pi / Double(n)
        var i = 0
        return ring(c, vertices: n, angles: { _ in
            angle = Double(i) * step
            i += 1
            return angle
        }) { rng in
            r * (1 + 0.15 * sin(k1 * angle + p1) + 0.08 * sin(k2 * angle + p2)) * Double.random(in: 0.99...1.01, using: &rng)
        }
    }

    private mutating func ring(_ c: Position, vertices n: Int, angles: ((inout SplitMix64) -> Double)? = nil,
                               radius: (inout SplitMix64) -> Double) -> Ring {
        let step = 2 * Double.pi / Double(n)
        let mLat = Self.metersPerDegreeLat, mLon = Self.metersPerDegreeLat * cos(c.lat * .pi / 180)
        var ring: Ring = []
        ring.reserveCapacity(n + 1)
        for i in 0..<n {
            let a = angles?(&rng) ?? Double(i) * step + .random(in: -0.25 * step...0.25 * step, using: &rng)
            let r = radius(&rng)
            ring.append(Position(lon: c.lon + r * cos(a) / mLon, lat: c.lat + r * sin(a) / mLat))
        }
        ring.append(ring[0])
        return ring
    }

    mutating func beacon(_ index: Int) -> Beacon {
        let c = point()
        let roll = Double.random(in: 0..<1, using: &rng)
        let perimeter: Perimeter
        if roll < 0.70 {
            perimeter = .circle(radiusM: .random(in: 20...500, using: &rng))
        } else if roll < 0.95 {
            let r = Double.random(in: 30...300, using: &rng)
            perimeter = .polygon(Polygon(rings: [starRing(c, vertices: .random(in: 8...64, using: &rng), rMin: 0.6 * r, rMax: r)]))
        } else {
            let r = Double.random(in: 200...1000, using: &rng)
            let n = Int.random(in: 500...5000, using: &rng)
            let outer = smoothRing(c, vertices: n, radius: r)
            let hole = smoothRing(c, vertices: n / 10, radius: 0.3 * r)
            perimeter = .polygon(Polygon(rings: [outer, hole]))
        }
        var lifetime: Lifetime?
        if Double.random(in: 0..<1, using: &rng) < 0.2 {
            let start = now.adding(seconds: -Double.random(in: 0...48 * 3600, using: &rng))
            lifetime = Lifetime(start: start, end: start.adding(seconds: .random(in: 3600...7 * 86400, using: &rng)))
        }
        let owner = Int.random(in: 0..<Self.userCount, using: &rng)
        var members: [UserID]?
        if Double.random(in: 0..<1, using: &rng) < 0.1 {
            members = Array(Set((0..<3).map { _ in Self.user(.random(in: 0..<Self.userCount, using: &rng)) })).sorted()
        }
        var tags = [Self.tags.randomElement(using: &rng)!]
        if Bool.random(using: &rng) { tags.append(Self.tags.randomElement(using: &rng)!) }
        return Beacon(id: BeaconID(uncheckedRawValue: "bcn_bench_\(index)"), name: "bench \(index)",
                      owner: Self.user(owner), location: c, perimeter: perimeter, lifetime: lifetime, members: members,
                      tags: Array(Set(tags)).sorted(), createdAt: now, updatedAt: now)
    }

    /// A lookup as a user of the region would make it: a random point, a random user, now,
    /// and in one case out of five a tag filter.
    mutating func query() -> CoverQuery {
        let tags = Double.random(in: 0..<1, using: &rng) < 0.2 ? [Self.tags.randomElement(using: &rng)!] : []
        return CoverQuery(point: point(), tags: tags, at: now, viewer: .user(Self.user(.random(in: 0..<Self.userCount, using: &rng))))
    }
}

/// SplitMix64: small, fast, and the same sequence on every platform.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Latency samples in nanoseconds.
struct Latencies {
    var samples: [UInt64] = []
    mutating func add(_ ns: UInt64) { samples.append(ns) }
    mutating func merge(_ other: Latencies) { samples += other.samples }
    func percentile(_ p: Double) -> Double {
        guard !samples.isEmpty else { return .nan }
        let sorted = samples.sorted()
        return Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))])
    }
}

/// Resident memory of a process, from /proc (bytes), or nil off Linux.
func residentBytes(pid: Int32? = nil) -> Int? {
    let path = pid.map { "/proc/\($0)/status" } ?? "/proc/self/status"
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
    for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        let parts = line.split(separator: " ", omittingEmptySubsequences: true)
        if parts.count >= 2, let kb = Int(parts[1]) { return kb * 1024 }
    }
    return nil
}

@inline(__always)
func monotonicNanos() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
