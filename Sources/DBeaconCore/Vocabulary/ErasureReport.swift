/// What an erasure removed, per table (rows deleted or changed), and what it told others.
package struct ErasureReport: Sendable, Hashable {
    /// Rows deleted or changed, by table (tables it left untouched are absent).
    package var rows: [String: Int] = [:]
    /// The user's beacons deleted.
    package var beacons: [BeaconID] = []
    /// Others' beacons changed (the user left their visibility members or content).
    package var redactedBeacons: [BeaconID] = []
    /// Notices written to others (beacon deletions, groups left).
    package var notices = 0

    package init() {}

    package mutating func count(_ table: String, _ n: Int) {
        guard n > 0 else { return }
        rows[table, default: 0] += n
    }
}
