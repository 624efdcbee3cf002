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
