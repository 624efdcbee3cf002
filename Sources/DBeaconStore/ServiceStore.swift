package import DBeaconCore

/// Storage of the four services' own state. One method is one transaction. The service
/// objects themselves are beacons in `BeaconStore`; rows here disappear with their beacon.
package protocol ServiceStore: Sendable {
    // MARK: Meetings

    /// Adds the attendee and makes them follow the meeting, in one transaction. Returns
    /// whether this joined them, and the number of attendees afterwards.
    func joinMeeting(_ meeting: BeaconID, user: UserID, at: Timestamp) async throws -> (joined: Bool, attendees: Int)
    /// Removes the attendee and their follow; false when they had not joined.
    func leaveMeeting(_ meeting: BeaconID, user: UserID) async throws -> Bool
    func meetingAttendees(_ meeting: BeaconID) async throws -> [MeetingAttendee]
    /// Meetings the user joined.
    func attendedMeetings(user: UserID) async throws -> [BeaconID]

    // MARK: Groups

    /// Inserts the group's beacon and the group in one transaction.
    func createGroup(_ group: TrackedGroup, beacon: Beacon) async throws
    func group(id: GroupID) async throws -> TrackedGroup?
    /// The groups whose beacon is among `beacons`.
    func groups(beacons: [BeaconID]) async throws -> [TrackedGroup]
    /// Groups the user leads or is an active member of.
    func groups(involving user: UserID) async throws -> [TrackedGroup]
    /// Active members (the guide excluded), in joining order.
    func groupMembers(_ group: GroupID) async throws -> [GroupMembership]
    /// Adds an active member and writes `events` in the same transaction (when it joined them).
    func addGroupMember(_ group: GroupID, user: UserID, at: Timestamp, events: [Event]) async throws -> GroupJoinOutcome
    /// Marks a member as left (`removed: false`, may rejoin an open group) or removed by the
    /// guide; writes `events` and, for a private group, `access` (the group beacon without the
    /// member, the allowed list without them) in the same transaction, so no read after the
    /// commit grants them the group. False when the user was not an active member;
    /// `preconditionFailed` when the beacon changed since it was read.
    func removeGroupMember(_ group: GroupID, user: UserID, removed: Bool, events: [Event],
                           revoking access: GroupAccessRevocation?) async throws -> Bool
    /// Applies range transitions and their events in one transaction, each only if the
    /// member is still active with the expected state; otherwise nothing is written and
    /// `preconditionFailed` is thrown (the caller re-reads and decides again).
    func applyRangeTransitions(_ group: GroupID, _ transitions: [RangeTransition], events: [Event]) async throws
    /// Makes a group's beacon visible once the guide's location is known: replaces the
    /// beacon (with its new visibility) and marks the group placed, in one transaction.
    func placeGroup(_ group: GroupID, beacon: Beacon, expectedVersion: Int) async throws
    /// Latest fixes of these users.
    func userLocations(_ users: [UserID]) async throws -> [UserLocation]

    // MARK: Tours

    /// Tours (beacons with a `tour` relationship) that have any of `places` as a stop.
    func tours(withStops places: [BeaconID]) async throws -> [BeaconID]
    /// Starts following a tour (and its beacon); returns the start time (the earlier one if already following).
    func followTour(_ tour: BeaconID, user: UserID, at: Timestamp) async throws -> Timestamp
    /// Stops following (progress is dropped); false when not following.
    func unfollowTour(_ tour: BeaconID, user: UserID) async throws -> Bool
    func tourStart(_ tour: BeaconID, user: UserID) async throws -> Timestamp?
    /// Tours the user follows that have `place` as a stop, with when they started.
    func followedTours(user: UserID, containing places: [BeaconID]) async throws -> [(tour: BeaconID, place: BeaconID, since: Timestamp)]
    /// Records visits (the first visit of a stop is kept).
    func recordVisits(_ visits: [TourVisit]) async throws
    func tourVisits(_ tour: BeaconID, user: UserID) async throws -> [TourVisit]
    func addPlaceMedia(_ media: PlaceMedia) async throws
    /// Media shared at a place, oldest first.
    func placeMedia(_ place: BeaconID, limit: Int, after: Int64?) async throws -> Page<PlaceMedia>
    func placeMediaItem(_ id: MediaID) async throws -> PlaceMedia?
    /// False when it was not there.
    func deletePlaceMedia(_ id: MediaID) async throws -> Bool

    // MARK: Advertising

    /// Replaces the user's interests (category → score).
    func setInterests(_ user: UserID, _ interests: [(category: String, score: Int)]) async throws
    func interests(_ user: UserID) async throws -> [(category: String, score: Int)]
    func recordInteraction(promotion: BeaconID, user: UserID, type: InteractionType, at: Timestamp) async throws
    /// Interactions of one user with `promotion` of `type` since `since` (rate limit).
    func interactionCount(promotion: BeaconID, user: UserID, type: InteractionType, since: Timestamp) async throws -> Int
    /// Records a pick (a `shown` interaction that counts against the frequency cap) if the
    /// user had fewer than `cap` picks since `since`; in one transaction. False when capped.
    func recordPick(promotion: BeaconID, user: UserID, at: Timestamp, since: Timestamp, cap: Int) async throws -> Bool
    /// Times of the user's picks since `since`, oldest first.
    func pickTimes(user: UserID, since: Timestamp) async throws -> [Timestamp]
    /// One user's counts for each of `promotions`.
    func interactionCounts(user: UserID, promotions: [BeaconID]) async throws -> [BeaconID: InteractionCounts]
    func promotionTotals(_ promotion: BeaconID) async throws -> PromotionTotals
    /// Saves a promotion for later (keeps the first time when saved already).
    func savePromotion(_ promotion: BeaconID, user: UserID, at: Timestamp) async throws
    /// Deletes a saved item; false when it was not saved.
    func unsavePromotion(_ promotion: BeaconID, user: UserID) async throws -> Bool
    /// The user's saved promotions, most recently saved first.
    func savedPromotions(user: UserID) async throws -> [(promotion: BeaconID, savedAt: Timestamp)]
    /// Records the user's one rating; false when they rated the promotion before.
    func ratePromotion(_ promotion: BeaconID, user: UserID, rating: Int, at: Timestamp) async throws -> Bool
    func addPromotionFeedback(_ promotion: BeaconID, user: UserID, text: String, at: Timestamp) async throws
    /// Feedback of one user on a promotion since `since` (rate limit).
    func promotionFeedbackCount(_ promotion: BeaconID, user: UserID, since: Timestamp) async throws -> Int
    /// Feedback on a promotion, oldest first.
    func promotionFeedback(_ promotion: BeaconID, limit: Int, after: Int64?) async throws -> Page<PromotionFeedback>
}

/// Everything the services layer needs from one store.
package typealias ServiceBackingStore = DBeaconStore & ServiceStore & DeviceStore & AccountStore
