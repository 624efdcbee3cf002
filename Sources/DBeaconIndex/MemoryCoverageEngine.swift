import CPrefetch
package import DBeaconCore
import DBeaconGeo
package import DBeaconStore
import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The fast path of "which beacons cover this point": an index of every beacon's perimeter,
/// visibility and lifetime, by a hierarchical grid over its perimeter's bounding box(es).
///
/// A query looks up one grid cell per occupied level, then filters the candidates with
/// plain-old-data checks (box, lifetime, tag bits, service, visibility) before the exact
/// test: geodesic distance for circles (the same `Geodesy.circleContains` the SQL path
/// registers as `dbeacon_circle_contains`), GEOS's point-location rules on one block of
/// coordinates for small polygons (`FlatPerimeter`), and a compact edge-indexed form for large
/// ones (`CompactPolygon`: 16-bit coordinates in memory, the exact ones in a mapped
/// `CoordinateFile`), behind a raster that settles most points (`PolygonRaster`).
///
/// The index keeps no `Beacon` values: each beacon's other fields are a compact byte record
/// (`BeaconRecord`) in one arena, and an answer (`covering`, `beacons(ids:)`) rebuilds the
/// beacons it returns from their records and their perimeters' exact coordinates.
///
/// Readers run in parallel under a read lock; a change (create, update, delete, move) is
/// prepared outside the lock and swapped in under the write lock, synchronously from the
/// store's commit hook, so a write is visible to queries as soon as the writer returns.
package final class MemoryCoverageEngine: CoverageEngine, @unchecked Sendable {
    /// Polygons with more vertices than this use `CompactPolygon` instead of `FlatPerimeter`.
    package static let largePolygonThreshold = 256

    /// The fields a query filters on and tests with, packed without references (the scan over
    /// a cell touches no reference counts). A copy sits in each of the slot's grid entries, so
    /// a query reads them from the cell's contiguous list rather than from a record elsewhere
    /// in memory per candidate; the exact box is not needed there: circles are decided by
    /// their distance, polygons by their edges (a raster is laid over the entry's own
    /// rounded-out box, which the query has at hand).
    struct Hot {
        /// How the point is tested (its payload is all the test reads besides the point).
        var test: Test = .free
        var isPrivate = false
        var multiBox = false
        var overflowTags = false
        var owner: Int32 = -1
        var service: Int32 = 0
        var lifeStart = Int64.min, lifeEnd = Int64.max
        var tagBits: UInt64 = 0
        /// For a private beacon, bit `u % 64` of each member's user index `u`: a viewer whose bit
        /// is clear is no member, decided without reaching the slot's `Cold` (two cache misses).
        var memberBits: UInt64 = 0
    }

    /// A slot's exact test and what it needs, in the grid entry itself.
    enum Test {
        case free
        /// Geodesic distance from the centre.
        case circle(lat: Double, lon: Double, radius: Double)
        /// `FlatPerimeter.covers` on the block (`FlatPerimeter.base`, owned by the slot's `Cold`)
        /// for points its 8×8 summary over the entry's box (`PolygonRaster.summary`) leaves open.
        case small(UnsafePointer<Double>, coarse: (UInt64, UInt64))
        /// The raster's summary and number in `rasterWords` (or -1: none yet, or several boxes),
        /// then the polygon's compact block (`rasterBlocks`), then the exact coordinates or
        /// several polygons through the slot's `Cold`.
        case large(raster: Int32, coarse: (UInt64, UInt64))

        var kind: Kind {
            switch self {
            case .free: .free
            case .circle: .circle
            case .small: .small
            case .large: .large
            }
        }
    }

    /// The bit of user index `u` in `Hot.memberBits` (0 for a user unknown to the index).
    @inline(__always)
    static func memberBit(_ u: Int32) -> UInt64 { u < 0 ? 0 : 1 << UInt64(u & 63) }

    /// `small`: a polygon tested on its `FlatPerimeter`; `large`: compact polygons with an edge index.
    enum Kind: UInt8 {
        case free, circle, small, large

        var isPolygon: Bool { self == .small || self == .large }
    }

    /// Everything else about a slot (a class: reading it from a query copies one reference). A
    /// change installs a new one, so a task can tell whether a slot changed since it looked
    /// (`===`). Immutable but for `record`, which a compaction of the arena moves under the
    /// write lock.
    final class Cold: @unchecked Sendable {
        let id: BeaconID
        let location: Position
        /// The circle's radius (metres), or 0.
        let radius: Double
        /// Offset of the beacon's record in `records`.
        var record: Int
        let recordLength: Int32
        /// Number of the raster in `rasterWords`, or -1.
        let raster: Int32
        let kind: Kind
        let tracksOwner: Bool
        /// The perimeter is a MultiPolygon (a polygon perimeter is rebuilt as a Polygon).
        let isMulti: Bool
        let flat: FlatPerimeter?
        let compact: [CompactPolygon]
        /// User indexes of the members of a private beacon, sorted.
        let members: [Int32]
        /// The box the perimeter is indexed under (the first when there are several).
        let box: BoundingBox
        /// All boxes of a perimeter indexed under several (across the antimeridian); empty for one.
        let splitBoxes: [BoundingBox]
        /// A small polygon loaded without its 8×8 summary (`load(prepare: false)`): answered by
        /// its exact test alone until `warm` has made it.
        let summaryPending: Bool
        /// A polygon's enclosing circle (`enclosingCircle(of:)`), nil for a circle, or for a
        /// polygon loaded without it (`load(prepare: false)`) until `warm` has made it.
        let enclosing: (center: Position, radiusM: Double)?

        init(id: BeaconID, location: Position, radius: Double, record: Int, recordLength: Int, raster: Int32, kind: Kind,
             tracksOwner: Bool, isMulti: Bool, flat: FlatPerimeter?, compact: [CompactPolygon], members: [Int32],
             boxes: [BoundingBox], summaryPending: Bool = false, enclosing: (center: Position, radiusM: Double)? = nil) {
            self.id = id
            self.location = location
            self.radius = radius
            self.record = record
            self.recordLength = Int32(recordLength)
            self.raster = raster
            self.kind = kind
            self.tracksOwner = tracksOwner
            self.isMulti = isMulti
            self.flat = flat
            self.compact = compact
            self.members = members
            box = boxes.first ?? BoundingBox(west: 0, south: 0, east: 0, north: 0)
            splitBoxes = boxes.count > 1 ? boxes : []
            self.summaryPending = summaryPending
            self.enclosing = enclosing
        }

        /// The same slot with other values (a move, a raster or a circle made). A move keeps the
        /// enclosing circle: a moving beacon's polygon stays where it is (`apply`).
        func with(location: Position? = nil, raster: Int32? = nil, boxes: [BoundingBox]? = nil,
                  compact: [CompactPolygon]? = nil, summaryPending: Bool? = nil,
                  enclosing: (center: Position, radiusM: Double)? = nil) -> Cold {
            Cold(id: id, location: location ?? self.location, radius: radius, record: record, recordLength: Int(recordLength),
                 raster: raster ?? self.raster, kind: kind, tracksOwner: tracksOwner, isMulti: isMulti, flat: flat,
                 compact: compact ?? self.compact, members: members, boxes: boxes ?? self.boxes,
                 summaryPending: summaryPending ?? self.summaryPending, enclosing: enclosing ?? self.enclosing)
        }

        /// The boxes the beacon is indexed under.
        var boxes: [BoundingBox] { splitBoxes.isEmpty ? [box] : splitBoxes }

        /// A large polygon with one box and no raster yet (`warm` builds it).
        var needsRaster: Bool { kind == .large && raster < 0 && splitBoxes.isEmpty }

        /// A polygon whose enclosing circle `warm` has yet to make.
        var circlePending: Bool { kind.isPolygon && enclosing == nil }

        /// A polygon still to be prepared by `warm`: a large one's raster, strips or rings' GeoJSON,
        /// a small one's summary, either's enclosing circle.
        var needsWarming: Bool {
            needsRaster || summaryPending || circlePending || (kind == .large && compact.contains(where: \.needsFinishing))
        }

        /// The enclosing circle of the perimeter's outlines (a large polygon's read from the
        /// coordinate file), as `enclosingCircle(of:)` keeps it.
        func makeEnclosing(compact: [CompactPolygon]? = nil) -> (center: Position, radiusM: Double) {
            let blocks = compact ?? self.compact
            let outlines = blocks.isEmpty ? perimeter.polygons.map(\.exterior) : blocks.map(\.exterior)
            return EnclosingCircle.verified(outlines, origin: location)
        }

        func covers(lon: Double, lat: Double) -> Bool {
            compact.contains { $0.covers(lon: lon, lat: lat) }
        }

        /// The perimeter again (the exact coordinates of large polygons read from their file).
        var perimeter: Perimeter {
            let polygons: [Polygon]
            switch kind {
            case .circle: return .circle(radiusM: radius)
            case .small: polygons = flat?.polygons ?? []
            case .large: return CompactPerimeter(polygons: compact, isMulti: isMulti).perimeter
            case .free: polygons = []
            }
            return isMulti || polygons.count != 1 ? .multiPolygon(polygons) : .polygon(polygons[0])
        }
    }

    let lock = ReadWriteLock()
    /// Where `load` and `resync` read beacons.
    package let store: any BeaconStore & BeaconChangeFeed
    /// The exact coordinates of large polygons (nil: kept on the heap).
    var coordinates: CoordinateFile?
    /// Every slot's `BeaconRecord`, one after the other; `recordGarbage` bytes of them belong
    /// to no slot any more (`compactRecords` drops them).
    var records: [UInt8] = []
    var recordGarbage = 0
    /// The words of the large polygons' rasters, `PolygonRaster.wordCount` each (reused through `freeRasters`).
    var rasterWords: [UInt64] = []
    var freeRasters: [Int32] = []
    /// Per raster number, the compact block of its beacon's polygon (nil: several polygons, or
    /// a free number): a point the raster leaves open is tested on the block in place, without
    /// reaching the slot's `Cold` and its polygon object (three dependent misses). Kept by
    /// `place` and `uninstall`; the block lives as long as the slot's `Cold`.
    var rasterBlocks: [UnsafeRawPointer?] = []
    var cold: [Cold?] = []
    var freeSlots: [Int32] = []
    /// Ids to slots, and each slot's beacon id (`slots.ids`, nil: free) beside `cold`: id answers
    /// (fences) read one array element per match instead of the slot's object.
    var slots = SlotTable()
    var grid = HierarchicalGrid<Hot>()
    var users: [UserID: Int32] = [:]
    var tagIDs: [String: Int] = [:]
    var services: [String: Int32] = [:]
    var tracking: [Int32: Set<Int32>] = [:]
    /// Ids changed through `apply` while `load` runs: the loader must not overwrite them.
    var touchedDuringLoad: Set<BeaconID>?
    var loadsInProgress = 0

    /// An engine over `store` (which `load` reads); large polygons' exact coordinates go to
    /// `coordinates` (an unnamed file in the temporary folder when nil, or the heap if none can
    /// be made).
    package init(store: any BeaconStore & BeaconChangeFeed, coordinates: CoordinateFile? = nil) {
        self.store = store
        self.coordinates = coordinates
    }

    let coordinatesLock = NSLock()
    var coordinatesTried = false
    var hintedText = true

    /// Whether large polygons' GeoJSON is kept as hints (`CoordinateFile.hintedText`) in the
    /// coordinate files this engine writes to from now on.
    package var hintedPerimeterText: Bool {
        get { coordinatesLock.withLock { hintedText } }
        set {
            coordinatesLock.withLock {
                hintedText = newValue
                coordinates?.hintedText = newValue
            }
        }
    }

    /// The file large polygons' exact coordinates go to: the one given, else an unnamed one made
    /// on first use (nil if none can be made: they stay on the heap).
    var coordinateFile: CoordinateFile? {
        coordinatesLock.withLock {
            if coordinates == nil && !coordinatesTried {
                coordinatesTried = true
                coordinates = try? CoordinateFile(creating: nil)
                coordinates?.hintedText = hintedText
            }
            return coordinates
        }
    }

    /// Sends large polygons' exact coordinates to `file` from now on (before a load: a
    /// snapshot's, or a new one next to it).
    package func useCoordinates(_ file: CoordinateFile) {
        coordinatesLock.withLock {
            file.hintedText = hintedText
            coordinates = file
        }
    }

    package var name: String { "memory" }

    /// Number of beacons indexed.
    package var count: Int { lock.read { slots.count } }

    /// The 8×8 summaries of the small polygons indexed under one box, by beacon (`unsettled`
    /// while `warm` has yet to make one): what lookups test before a polygon's edges.
    package var smallPolygonSummaries: [BeaconID: (UInt64, UInt64)] {
        lock.read {
            var out: [BeaconID: (UInt64, UInt64)] = [:]
            for case let c? in cold where c.kind == .small && c.splitBoxes.isEmpty {
                guard let slot = slots[c.id], case .small(_, let coarse)? = grid.peekRecord(of: slot, box: c.box)?.test else { continue }
                out[c.id] = coarse
            }
            return out
        }
    }

    /// Slots with `needsWarming` (kept by `install`/`uninstall`).
    var pending = 0
}
