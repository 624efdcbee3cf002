package import DBeaconCore

/// One entry or exit of a visitor, as the event log holds it.
package struct FenceCrossing: Sendable, Hashable {
    package var user: UserID
    package var entered: Bool
    package var at: Timestamp

    package init(user: UserID, entered: Bool, at: Timestamp) {
        self.user = user
        self.entered = entered
        self.at = at
    }
}

/// What visit analytics read from the event log (aggregated by the caller; never handed out
/// per user).
package protocol VisitStore: Sendable {
    /// Every `beacon.entered` / `beacon.exited` of `beacon` still in the log, grouped by visitor,
    /// in log order.
    func fenceCrossings(beacon: BeaconID) async throws -> [FenceCrossing]
    /// Other beacons entered by at least `minVisitors` of the visitors of `beacon` other than
    /// `owner` (counting only entries made after the visitor's account was created), with how
    /// many of them, most first.
    func coVisits(beacon: BeaconID, excluding owner: UserID, minVisitors: Int,
                  limit: Int) async throws -> [(beacon: BeaconID, visitors: Int)]
    /// The beacons `user` entered (by id), with how many entries. Their tags are read through
    /// the visibility gate, as they are now.
    func enteredBeacons(user: UserID) async throws -> [(beacon: BeaconID, entries: Int)]
}
