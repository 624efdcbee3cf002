package import DBeaconCore
import Foundation

/// Settings and users, on either database (their tokens and lifecycle: `SQLStore+Accounts`).
extension SQLStore {
    package func setting(_ key: String) async throws -> String? {
        try await read { db in try await db.row("SELECT value FROM settings WHERE key = $1", [key])?.string("value") }
    }

    package func setSettingIfAbsent(_ key: String, value: String) async throws -> String {
        try await write { db, _ in
            try await db.rows("INSERT INTO settings(key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING", [key, value])
            return try await db.row("SELECT value FROM settings WHERE key = $1", [key])?.string("value") ?? value
        }
    }

    package func setSetting(_ key: String, value: String) async throws {
        _ = try await write { db, _ in
            try await db.rows("INSERT INTO settings(key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                              [key, value])
        }
    }

    /// Adds a user; `conflict` (`user_id_retired`) for the id of an erased user, which is never
    /// issued again.
    package func createUser(_ user: User, tokenHash: [UInt8]) async throws {
        try await write { db, _ in
            let inserted = try await db.rows("""
                INSERT INTO users(id, name, token_hash, created_at)
                SELECT $1, $2, $3, $4 WHERE NOT EXISTS (SELECT 1 FROM retired_users WHERE id_hash = $5)
                RETURNING id
                """, [user.id.rawValue, user.name, SQLBlob(tokenHash), user.createdAt.millis, SQLBlob(RetiredIDs.hash(user.id))])
            guard !inserted.isEmpty else {
                throw DBeaconError.conflict("user id \(user.id) belonged to an erased user and is never issued again",
                                            code: "user_id_retired", path: "id")
            }
        }
    }

    package func user(tokenHash: [UInt8]) async throws -> User? {
        try await read { db in
            try await db.row("SELECT \(Self.userColumns) FROM users WHERE token_hash = $1", [SQLBlob(tokenHash)]).map(Self.user(from:))
        }
    }

    package func user(id: UserID) async throws -> User? {
        try await read { db in
            try await db.row("SELECT \(Self.userColumns) FROM users WHERE id = $1", [id.rawValue]).map(Self.user(from:))
        }
    }

    package func users(named name: String) async throws -> [User] {
        try await read { db in
            try await db.rows("SELECT \(Self.userColumns) FROM users WHERE name = $1 ORDER BY created_at", [name]).map(Self.user(from:))
        }
    }

    static func user(from row: SQLRow) throws -> User {
        User(id: UserID(uncheckedRawValue: try row.string("id")), name: try row.string("name"), createdAt: try row.timestamp("created_at"),
             disabledAt: try row.optionalTimestamp("disabled_at"), tokenRotatedAt: try row.optionalTimestamp("token_rotated_at"))
    }
}
