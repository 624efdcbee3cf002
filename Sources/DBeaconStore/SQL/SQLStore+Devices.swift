package import DBeaconCore

/// Devices and phone states, on either database.
extension SQLStore {
    package func createDevice(_ device: Device, tokenHash: [UInt8], maxActive: Int) async throws {
        try await write { db, _ in
            // Counted under the writer (SpatiaLite) or a lock on the user's row (PostgreSQL), so
            // two concurrent creations cannot both pass the limit.
            _ = try await db.row("SELECT id FROM users WHERE id = $1\(self.dialect.forUpdate)", [device.user.rawValue])
            let active = try await db.row("SELECT count(*) AS n FROM devices WHERE user_id = $1 AND revoked_at IS NULL",
                                          [device.user.rawValue])?.int("n") ?? 0
            guard active < maxActive else {
                throw DBeaconError(.conflict, code: "too_many_devices",
                                   message: "at most \(maxActive) devices per user; revoke one first (DELETE /v1/me/devices/{id})")
            }
            try await db.rows("INSERT INTO devices(id, user_id, name, token_hash, created_at) VALUES ($1, $2, $3, $4, $5)",
                              [device.id.rawValue, device.user.rawValue, device.name, SQLBlob(tokenHash), device.createdAt.millis])
        }
    }

    package func device(tokenHash: [UInt8]) async throws -> Device? {
        try await read { db in
            try await db.row("SELECT * FROM devices WHERE token_hash = $1", [SQLBlob(tokenHash)]).map(Self.device(from:))
        }
    }

    package func devices(user: UserID, limit: Int) async throws -> [Device] {
        try await read { db in
            try await db.rows("SELECT * FROM devices WHERE user_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2",
                              [user.rawValue, limit]).map(Self.device(from:))
        }
    }

    package func revokeDevice(_ id: DeviceID, user: UserID, at: Timestamp) async throws -> Bool {
        try await write { db, log in
            guard try await db.row("SELECT id FROM devices WHERE id = $1 AND user_id = $2", [id.rawValue, user.rawValue]) != nil else {
                return false
            }
            try await db.rows("UPDATE devices SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL", [at.millis, id.rawValue])
            try await db.rows("DELETE FROM phone_states WHERE user_id = $1 AND client = $2", [user.rawValue, id.rawValue])
            log.accountsChanged.append(user)  // the device's open streams end
            return true
        }
    }

    package func touchDevice(_ id: DeviceID, at: Timestamp) async throws {
        try await write { db, _ in
            try await db.rows("UPDATE devices SET last_seen_at = $1 WHERE id = $2", [at.millis, id.rawValue])
        }
    }

    package var phoneStatesStayInProcess: Bool { dialect == .sqlite }

    package func phoneState(user: UserID, client: String) async throws -> String? {
        try await read { db in
            try await db.row("SELECT state FROM phone_states WHERE user_id = $1 AND client = $2", [user.rawValue, client])?.string("state")
        }
    }

    package func setPhoneStates(_ states: [PhoneStateWrite]) async throws {
        guard !states.isEmpty else { return }
        try await write { db, _ in
            for s in states {
                // Only for a user still stored: one erased meanwhile would fail the whole batch.
                try await db.rows("""
                    INSERT INTO phone_states(user_id, client, state, updated_at)
                    SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM users WHERE id = $1)
                    ON CONFLICT (user_id, client) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at
                    """, [s.user.rawValue, s.client, s.state, s.at.millis])
            }
        }
    }

    static func device(from row: SQLRow) throws -> Device {
        Device(id: DeviceID(uncheckedRawValue: try row.string("id")), user: UserID(uncheckedRawValue: try row.string("user_id")),
               name: try row.string("name"), createdAt: try row.timestamp("created_at"),
               lastSeenAt: try row.optionalTimestamp("last_seen_at"), revokedAt: try row.optionalTimestamp("revoked_at"))
    }
}
