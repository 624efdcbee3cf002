/// Tunables of the four services (meetings, groups, tours, advertising).
package struct ServiceConfig: Sendable {
    /// A group member whose last shared fix is older than this is flagged stale.
    package var groupStaleSeconds = 300.0
    /// Hysteresis of range alerts: a member out of range is back in range only within
    /// `range_m − max(groupHysteresisMinM, groupHysteresisFraction · range_m)` (at most half the range).
    package var groupHysteresisFraction = 0.1
    package var groupHysteresisMinM = 10.0
    /// Visitors share and see media at a place only while their last fix, at most this old, is inside it.
    package var mediaFixMaxAgeSeconds = 900.0
    /// Frequency cap of `GET /v1/promotions/pick`: at most this many picks per user per window.
    package var promotionPicksPerWindow = 3
    package var promotionPickWindowSeconds = 3600.0
    /// Interactions one user may record per promotion and type within a minute (429 beyond).
    package var maxInteractionsPerMinute = 30
    /// `meeting.starting` goes to invitees and attendees this long before a meeting starts (0: never).
    package var meetingReminderSeconds = 900.0

    package init() {}

    /// The hysteresis margin (metres) of a group with this range.
    package func hysteresisM(rangeM: Double) -> Double {
        min(max(groupHysteresisMinM, groupHysteresisFraction * rangeM), rangeM / 2)
    }
}
