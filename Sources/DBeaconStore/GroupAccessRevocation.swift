package import DBeaconCore

/// A private group losing a member: its beacon with the member out of the visibility group
/// (new version), and the users still allowed to join.
package struct GroupAccessRevocation: Sendable {
    package var beacon: Beacon
    package var expectedVersion: Int
    package var allowed: [UserID]?

    package init(beacon: Beacon, expectedVersion: Int, allowed: [UserID]?) {
        self.beacon = beacon
        self.expectedVersion = expectedVersion
        self.allowed = allowed
    }

    /// The `tracked_groups.allowed` column: a JSON array, or NULL for an open group.
    var allowedJSON: String? { allowed.map { JSONValue.array($0.map { .string($0.rawValue) }).jsonString } }
}
