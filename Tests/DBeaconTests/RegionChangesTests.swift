import DBeaconCore
import DBeaconServices
import Testing

/// `RegionChanges` stamps: a phone keeps its regions while the stamp under its refresh circle is
/// the one stored with them, and the next post may reach another node or a restarted one.
@Suite struct RegionChangesTests {
    static let center = Position(lon: 9.18, lat: 48.78)

    static func change(at position: Position) -> BeaconChange {
        let t = Timestamp(millis: 1_700_000_000_000)
        return .upsert(Beacon(id: .generate(), name: "b", owner: UserID(uncheckedRawValue: "usr_owner"), location: position,
                              perimeter: .circle(radiusM: 50), createdAt: t, updatedAt: t))
    }

    @Test func aStampMovesWithAChangeUnderTheCircleOnly() {
        let changes = RegionChanges()
        let before = changes.stamp(center: Self.center, radiusM: 500)
        changes.record(Self.change(at: Position(lon: 13.4, lat: 52.5)))  // Berlin, far away
        #expect(changes.stamp(center: Self.center, radiusM: 500) == before)
        changes.record(Self.change(at: Self.center))
        let after = changes.stamp(center: Self.center, radiusM: 500)
        #expect(after > before && after == changes.sequence)
    }

    /// Two nodes (or one before and after a restart) that counted the same changes give
    /// different stamps: a stamp stored by one never vouches for the other's count.
    @Test func stampsOfAnotherNodeOrRunNeverMatch() {
        let nodes = (0..<8).map { _ in RegionChanges() }
        for node in nodes {
            node.record(Self.change(at: Self.center))
            node.record(Self.change(at: Self.center))
        }
        let stamps = nodes.map { $0.stamp(center: Self.center, radiusM: 500) }
        #expect(Set(stamps).count == stamps.count, "\(stamps)")
        // Below 2⁵³: exact in any JSON reader that keeps numbers as doubles.
        #expect(stamps.allSatisfy { $0 > 0 && $0 < 1 << 53 })
        // Counting from a given origin (the way tests pin it).
        let pinned = RegionChanges(origin: 0)
        #expect(pinned.stamp(center: Self.center, radiusM: 500) == 1)
    }
}
