package import DBeaconCore
import Foundation
import GRDB

extension SpatiaLiteStore {
    package func setting(_ key: String) async throws -> String? {
        try await read { db in
            try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = ?", arguments: [key])
        }
    }

    package func setSettingIfAbsent(_ key: String, value: String) async throws -> String {
        try await write { db, _ in
            try db.execute(sql: "INSERT OR IGNORE INTO settings(key, value) VALUES (?, ?)", arguments: [key, value])
            return try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = ?", arguments: [key]) ?? value
        }
    }

    package func setSetting(_ key: String, value: String) async throws {
        try await write { db, _ in
            try db.execute(sql: "INSERT INTO settings(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                           arguments: [key, value])
        }
    }

    package func createUser(_ user: User, tokenHash: [UInt8]) async throws {
        try await write { db, _ in
            try db.execute(sql: "INSERT INTO users(id, name, token_hash, created_at) VALUES (?, ?, ?, ?)",
                           arguments: [user.id.rawValue, user.name, Data(tokenHash), user.createdAt.millis])
        }
    }

    package func user(tokenHash: [UInt8]) async throws -> User? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT id, name, created_at FROM users WHERE token_hash = ?",
                             arguments: [Data(tokenHash)]).map(Self.user(from:))
        }
    }

    package func user(id: UserID) async throws -> User? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT id, name, created_at FROM users WHERE id = ?",
                             arguments: [id.rawValue]).map(Self.user(from:))
        }
    }

    package func users(named name: String) async throws -> [User] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT id, name, created_at FROM users WHERE name = ? ORDER BY created_at",
                             arguments: [name]).map(Self.user(from:))
        }
    }

    static func user(from row: Row) -> User {
        User(id: UserID(uncheckedRawValue: row["id"]), name: row["name"], createdAt: Timestamp(millis: row["created_at"]))
    }
}
