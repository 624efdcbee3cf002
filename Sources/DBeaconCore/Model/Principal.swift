/// A registered user. Tokens are stored only as SHA-256 hashes.
package struct User: Sendable, Hashable {
    package var id: UserID
    package var name: String
    package var createdAt: Timestamp

    package init(id: UserID, name: String, createdAt: Timestamp) {
        self.id = id
        self.name = name
        self.createdAt = createdAt
    }
}

/// Who is making a request: a user, or the operator holding the admin token.
package enum Principal: Sendable, Hashable {
    case user(UserID)
    case admin

    package var userID: UserID? {
        if case .user(let id) = self { return id }
        return nil
    }

    package var isAdmin: Bool { self == .admin }
}

extension Beacon {
    /// The visibility rule of the Digital Beacon model, used by every read path:
    /// the owner (and the operator) always see the beacon; anyone else sees it only while it
    /// is alive, and, when it is private, only if they are in its visibility group. One
    /// exception: the invitees of a private meeting see it from their invitation until it ends
    /// (to read and join it before it starts); it covers places (nearby, fences) only while alive.
    package func isVisible(to principal: Principal, at now: Timestamp) -> Bool {
        switch principal {
        case .admin:
            return true
        case .user(let uid):
            if uid == owner { return true }
            if let members, !members.contains(uid) { return false }
            return isAlive(at: now) || isUpcomingInvitation(at: now)
        }
    }

    /// A private meeting that has not ended: its invitees may see it before it starts.
    package func isUpcomingInvitation(at now: Timestamp) -> Bool {
        guard service == ServiceKind.meeting, members != nil else { return false }
        if let end = lifetime?.end, end <= now { return false }
        return true
    }

    /// True when the principal may see the beacon in a private sense (owner or member),
    /// regardless of lifetime.
    package func isOwnedOrShared(with principal: Principal) -> Bool {
        switch principal {
        case .admin: return true
        case .user(let uid): return uid == owner || (members?.contains(uid) ?? true)
        }
    }
}
