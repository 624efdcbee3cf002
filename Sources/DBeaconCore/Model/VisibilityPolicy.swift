/// What a viewer may do with a beacon now.
package enum BeaconAccess: Sendable, Hashable, CaseIterable {
    /// Know that it exists and read it: its id, fields, and anything derived from them (get,
    /// lists, related, events about it, references to it).
    case see
    /// Be covered by it: it answers nearby, fences, tours and promotions for the viewer. This
    /// is the visibility half of coverage, decided now; a beacon covers at a time `t` when it
    /// also lives at `t` (`Beacon.covers`), so an owner may ask about their beacon's future
    /// while anyone else only narrows what they see now.
    case cover
    /// Be told that they lost it (`beacon.deleted`, `meeting.cancelled`, `meeting.uninvited`,
    /// `beacon.exited` with reason `unavailable`): its owner, or a member of its group (anyone
    /// for a public beacon), whatever its lifetime.
    case lossNotice
    /// Change it or read what only its keeper reads (edit, delete, its followers, visit
    /// statistics, promotion statistics and feedback, registering physical beacons for it): its
    /// owner, or the operator. Those who may see it and not modify it are told 403.
    case modify
}

/// The visibility rule of the Digital Beacon model, in one place.
///
/// The owner (and the operator) always see a beacon; anyone else sees it only while it is
/// alive, and, when it is private, only if they are in its visibility group. One exception: the
/// invitees of a private meeting see it from their invitation until it ends (to read and join
/// it before it starts); it covers places (nearby, fences) only while alive.
///
/// The rule is data (`Condition`), so that every home of visibility reads the same rule: Swift
/// evaluates it (`allows`), the stores render it to SQL (`SQLStore.visibilityClause`, the
/// follower fan-out), and the in-memory index's member masks are checked against it by a
/// property test. No other code decides visibility.
package enum VisibilityPolicy {
    /// A fact about a beacon and its viewer at a moment.
    package indirect enum Condition: Sendable, Hashable {
        /// The viewer owns the beacon (the operator counts as every owner).
        case viewerIsOwner
        /// The viewer is in the beacon's visibility group (the operator counts as every member).
        case viewerIsMember
        /// The beacon has no visibility group.
        case isPublic
        /// The beacon's lifetime contains now.
        case aliveNow
        /// The beacon's lifetime has not ended by now.
        case notEndedNow
        /// The beacon is a private meeting (its invitees see it before it starts).
        case isPrivateMeeting
        case all([Condition])
        case any([Condition])
    }

    /// The condition granting `access`.
    package static func condition(for access: BeaconAccess) -> Condition {
        switch access {
        case .see: return see
        case .cover: return cover
        case .lossNotice: return lossNotice
        case .modify: return modify
        }
    }

    /// Owner or member (or public): the beacon is shared with the viewer, whatever its lifetime.
    static let shared: Condition = .any([.viewerIsOwner, .isPublic, .viewerIsMember])
    static let see: Condition = .any([
        .viewerIsOwner,
        .all([.any([.isPublic, .viewerIsMember]), .any([.aliveNow, .all([.isPrivateMeeting, .notEndedNow])])]),
    ])
    static let cover: Condition = .any([.viewerIsOwner, .all([.any([.isPublic, .viewerIsMember]), .aliveNow])])
    static let lossNotice: Condition = shared
    static let modify: Condition = .viewerIsOwner

    /// The facts the rule reads about one beacon.
    package struct Subject: Sendable, Equatable {
        package var owner: UserID
        package var members: [UserID]?
        package var lifetime: Lifetime?
        package var service: String?

        package init(owner: UserID, members: [UserID]?, lifetime: Lifetime?, service: String?) {
            self.owner = owner
            self.members = members
            self.lifetime = lifetime
            self.service = service
        }
    }

    /// Whether `viewer` has `access` to the beacon described by `subject` at `now`.
    package static func allows(_ access: BeaconAccess, _ subject: Subject, viewer: Principal, at now: Timestamp) -> Bool {
        evaluate(condition(for: access), subject, viewer: viewer, now: now)
    }

    /// Evaluates a condition; `SQLStore` renders the same tree to SQL.
    package static func evaluate(_ c: Condition, _ s: Subject, viewer: Principal, now: Timestamp) -> Bool {
        switch c {
        case .viewerIsOwner:
            switch viewer {
            case .admin: return true
            case .user(let uid): return uid == s.owner
            }
        case .viewerIsMember:
            switch viewer {
            case .admin: return true
            case .user(let uid): return s.members?.contains(uid) ?? false
            }
        case .isPublic: return s.members == nil
        case .aliveNow: return s.lifetime?.contains(now) ?? true
        case .notEndedNow:
            if let end = s.lifetime?.end { return now < end }
            return true
        case .isPrivateMeeting: return s.service == ServiceKind.meeting && s.members != nil
        case .all(let cs): return cs.allSatisfy { evaluate($0, s, viewer: viewer, now: now) }
        case .any(let cs): return cs.contains { evaluate($0, s, viewer: viewer, now: now) }
        }
    }
}

extension Beacon {
    /// The facts the visibility rule reads.
    package var visibilitySubject: VisibilityPolicy.Subject {
        VisibilityPolicy.Subject(owner: owner, members: members, lifetime: lifetime, service: service)
    }

    /// Whether `principal` has `access` to this beacon at `now` (`VisibilityPolicy`).
    package func allows(_ access: BeaconAccess, to principal: Principal, at now: Timestamp) -> Bool {
        VisibilityPolicy.allows(access, visibilitySubject, viewer: principal, at: now)
    }

    /// Throws 403 with `reason` unless `principal` has `access` (`.modify`: the owner or the
    /// operator) to this beacon at `now`. The caller has already decided that they may see it.
    package func authorize(_ access: BeaconAccess, by principal: Principal, at now: Timestamp,
                           otherwise reason: String) throws(DBeaconError) {
        guard allows(access, to: principal, at: now) else { throw DBeaconError.forbidden(reason) }
    }

    /// Whether the beacon covers `principal` at `t` as decided `now`: visible for coverage now
    /// (`.cover`) and alive at `t` (the time of a fix, or nearby's `at`).
    package func covers(_ principal: Principal, at t: Timestamp, now: Timestamp) -> Bool {
        allows(.cover, to: principal, at: now) && isAlive(at: t)
    }
}
