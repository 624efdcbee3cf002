package import DBeaconCore

/// A spatial hash of user locations (cells of 0.01°, about 1 km), to find who is near a
/// beacon that moved or changed without scanning every user.
package struct UserGrid {
    static let cellSize = 0.01
    package init() {}

    private var cells: [Int64: Set<UserID>] = [:]
    private var cellOf: [UserID: Int64] = [:]

    private static func index(_ v: Double) -> Int32 { Int32((v / cellSize).rounded(.down)) }
    private static func key(_ lat: Int32, _ lon: Int32) -> Int64 { Int64(lat) << 32 | Int64(UInt32(bitPattern: lon)) }

    package mutating func move(_ user: UserID, to p: Position) {
        let k = Self.key(Self.index(p.lat), Self.index(p.lon))
        if let old = cellOf[user] {
            if old == k { return }
            cells[old]?.remove(user)
            if cells[old]?.isEmpty == true { cells[old] = nil }
        }
        cells[k, default: []].insert(user)
        cellOf[user] = k
    }

    /// Takes the user out of the grid (an erased account).
    package mutating func remove(_ user: UserID) {
        guard let old = cellOf.removeValue(forKey: user) else { return }
        cells[old]?.remove(user)
        if cells[old]?.isEmpty == true { cells[old] = nil }
    }

    package func users(in box: BoundingBox) -> Set<UserID> {
        let la0 = Self.index(box.south), la1 = Self.index(box.north)
        let lo0 = Self.index(box.west), lo1 = Self.index(box.east)
        let cellCount = (Int(la1) - Int(la0) + 1) * (Int(lo1) - Int(lo0) + 1)
        var result = Set<UserID>()
        if cellCount > cells.count {
            for (k, users) in cells {
                let lat = Int32(truncatingIfNeeded: k >> 32), lon = Int32(bitPattern: UInt32(truncatingIfNeeded: k))
                if lat >= la0 && lat <= la1 && lon >= lo0 && lon <= lo1 { result.formUnion(users) }
            }
            return result
        }
        for lat in la0...la1 {
            for lon in lo0...lo1 {
                if let users = cells[Self.key(lat, lon)] { result.formUnion(users) }
            }
        }
        return result
    }
}
