package import DBeaconCore
import DBeaconGeo
import Synchronization

/// Where beacons changed lately, coarsely: a counter per cell of 0.05° (about 5.5 km north to
/// south), raised for every cell a created or edited beacon's perimeter now reaches. A phone
/// inside its refresh circle keeps the regions it was given while no cell under that circle was
/// raised since (`stamp`) and the beacons it monitors are unchanged (`PhoneService`): a new
/// beacon, one moved or widened into the circle, or one made visible to someone there raises a
/// cell under it. (A beacon moved away or deleted is one the phone monitors: its version tells.)
///
/// Moves of beacons that follow their owner are not counted: they are never regions. Fed by
/// this process's commits and other processes' (the same observers that keep the index).
///
/// Stamps are stored with a phone's state and compared for equality by whichever node the
/// phone's next post reaches, after restarts too. So each instance counts from its own origin
/// (a random multiple of 2³², below 2⁵² so that a stamp survives any JSON reader): another
/// process's or an earlier run's stamp matches none of this one's, and the regions are worked out
/// again rather than kept on a count that only happens to be equal.
package final class RegionChanges: Sendable {
    /// Degrees per cell side.
    static let cellDegrees = 0.05
    /// A perimeter reaching more cells than this raises the count every stamp includes.
    static let maxCellsPerChange = 400
    /// Cells kept before everything is forgotten at once (every stamp then changes).
    static let maxCells = 500_000

    private struct State {
        var sequence: UInt64
        /// Raised with everything (a perimeter too wide to count by cell, a reset).
        var everywhere: UInt64
        var cells: [Int64: UInt64] = [:]
    }

    private let state: Mutex<State>

    /// Counting from `origin` (by default a random one: see the type).
    package init(origin: UInt64 = UInt64.random(in: 1..<(1 << 20)) << 32) {
        state = Mutex(State(sequence: origin + 1, everywhere: origin + 1))
    }

    /// The newest change counted anywhere (a stamp taken later is no newer than this unless a
    /// change came in between).
    package var sequence: UInt64 { state.withLock { $0.sequence } }

    /// Counts a committed change.
    package func record(_ change: BeaconChange) {
        guard case .upsert(let beacon) = change else { return }
        let boxes: [BoundingBox]
        switch beacon.perimeter {
        case .circle(let r): boxes = Geodesy.boundingBoxes(center: beacon.location, radiusM: r)
        case .polygon, .multiPolygon: boxes = beacon.perimeter.polygons.map { BoundingBox(of: $0.exterior) }
        }
        let keys = boxes.map(Self.cells(of:))
        state.withLock { s in
            s.sequence += 1
            guard let keys = keys.reduce([Int64]?.some([]), { all, k in all.flatMap { a in k.map { a + $0 } } }),
                  keys.count <= Self.maxCellsPerChange else {
                s.everywhere = s.sequence
                return
            }
            if s.cells.count + keys.count > Self.maxCells {
                s.cells = [:]
                s.everywhere = s.sequence
                return
            }
            for k in keys { s.cells[k] = s.sequence }
        }
    }

    /// The newest change under the circle (around `center`, `radiusM` metres): equal stamps
    /// mean no counted change there in between.
    package func stamp(center: Position, radiusM: Double) -> UInt64 {
        let keys = Geodesy.boundingBoxes(center: center, radiusM: radiusM).map(Self.cells(of:))
        return state.withLock { s in
            var newest = s.everywhere
            for k in keys {
                guard let k else { return s.sequence }  // too wide to tell: as if it changed now
                for cell in k { newest = max(newest, s.cells[cell] ?? 0) }
            }
            return newest
        }
    }

    /// The cells a box reaches (nil: more than `maxCellsPerChange`).
    static func cells(of box: BoundingBox) -> [Int64]? {
        let d = cellDegrees
        let south = Int64((box.south / d).rounded(.down)), north = Int64((box.north / d).rounded(.down))
        let west = Int64((box.west / d).rounded(.down)), east = Int64((box.east / d).rounded(.down))
        guard north >= south, east >= west, (north - south + 1) * (east - west + 1) <= Int64(maxCellsPerChange) else { return nil }
        var out: [Int64] = []
        for y in south...north {
            for x in west...east { out.append(y << 32 | (x & 0xffff_ffff)) }
        }
        return out
    }
}
