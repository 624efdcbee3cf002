/// A registered user. Tokens are stored only as SHA-256 hashes.
package struct User: Sendable, Hashable {
    package var id: UserID
    package var name: String
    package var createdAt: Timestamp
    /// When the admin disabled the account (nil while enabled): its tokens and devices are
    /// refused, its webhooks wait; enabling it again restores everything.
    package var disabledAt: Timestamp?
    /// When the user's token was last replaced (nil: the token issued at creation).
    package var tokenRotatedAt: Timestamp?

    package init(id: UserID, name: String, createdAt: Timestamp, disabledAt: Timestamp? = nil, tokenRotatedAt: Timestamp? = nil) {
        self.id = id
        self.name = name
        self.createdAt = createdAt
        self.disabledAt = disabledAt
        self.tokenRotatedAt = tokenRotatedAt
    }

    package var isDisabled: Bool { disabledAt != nil }
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
