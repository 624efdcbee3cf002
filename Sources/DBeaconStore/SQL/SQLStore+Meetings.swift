package import DBeaconCore
import Foundation

/// The meeting organizer's attendees (migration v4), on either database.
extension SQLStore {
    // MARK: Meetings

    package func joinMeeting(_ meeting: BeaconID, user: UserID, at: Timestamp) async throws -> (joined: Bool, attendees: Int) {
        try await write { db, log in
            guard try await db.exists("SELECT 1 FROM beacons WHERE id = $1\(db.dialect.forShare)", [meeting.rawValue]) else {
                throw DBeaconError.notFound("meeting \(meeting)")
            }
            let joined = try await !db.rows("""
                INSERT INTO meeting_attendees(meeting_id, user_id, joined_at) VALUES ($1, $2, $3)
                ON CONFLICT DO NOTHING RETURNING user_id
                """, [meeting.rawValue, user.rawValue, at.millis]).isEmpty
            try await Self.addFollower(db, beacon: meeting, user: user, at: at, log: &log)
            let count = try await db.row("SELECT count(*) AS n FROM meeting_attendees WHERE meeting_id = $1", [meeting.rawValue])?.int("n") ?? 0
            return (joined, count)
        }
    }

    package func leaveMeeting(_ meeting: BeaconID, user: UserID) async throws -> Bool {
        try await write { db, log in
            guard try await !db.rows("DELETE FROM meeting_attendees WHERE meeting_id = $1 AND user_id = $2 RETURNING user_id",
                                     [meeting.rawValue, user.rawValue]).isEmpty else { return false }
            try await Self.removeFollower(db, beacon: meeting, user: user, log: &log)
            return true
        }
    }

    package func meetingAttendees(_ meeting: BeaconID) async throws -> [MeetingAttendee] {
        try await read { db in
            try await db.rows("""
                SELECT a.user_id, a.joined_at, u.name FROM meeting_attendees a JOIN users u ON u.id = a.user_id
                WHERE a.meeting_id = $1 ORDER BY a.joined_at, a.user_id
                """, [meeting.rawValue]).map {
                MeetingAttendee(user: UserID(uncheckedRawValue: try $0.string("user_id")), name: try $0.string("name"),
                                joinedAt: try $0.timestamp("joined_at"))
            }
        }
    }

    package func attendedMeetings(user: UserID) async throws -> [BeaconID] {
        try await read { db in
            try await db.rows("SELECT meeting_id FROM meeting_attendees WHERE user_id = $1 ORDER BY joined_at", [user.rawValue])
                .map { BeaconID(uncheckedRawValue: try $0.string("meeting_id")) }
        }
    }

    /// The attendees of a private meeting who are no longer invited stop attending and
    /// following it (in the transaction that changed its invitees).
    static func dropUninvitedAttendees(_ db: any SQLSession, meeting: BeaconID, log: inout SQLWriteLog) async throws {
        // Attendees the meeting is no longer shared with: not even its notice of loss would
        // reach them (the policy's `.lossNotice`, with the attendee as the viewer).
        var s = SQLStatement()
        let id = s.bind(meeting.rawValue)
        let shared = policyClause(VisibilityPolicy.condition(for: .lossNotice), viewer: "a.user_id", at: "NULL", &s)
        let dropped = try await db.rows("""
            DELETE FROM meeting_attendees
            WHERE meeting_id = \(id) AND user_id IN (
                SELECT a.user_id FROM meeting_attendees a JOIN beacons b ON b.id = a.meeting_id
                WHERE a.meeting_id = \(id) AND NOT \(shared))
            RETURNING user_id
            """, s.arguments)
        for row in dropped {
            _ = try await removeFollower(db, beacon: meeting, user: UserID(uncheckedRawValue: try row.string("user_id")), log: &log)
        }
    }

}
