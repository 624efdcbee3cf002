-- DBeacon SpatiaLite schema, migration v12: devices (issue 30). A user's phone gets its own
-- token (only its SHA-256 is kept), revocable without changing the user's token; `last_seen_at`
-- is when it last authenticated (to the minute). `phone_state` is what the phone protocols
-- (OwnTracks) last told the phone: the regions it monitors, as JSON.

CREATE TABLE devices (
    id           TEXT PRIMARY KEY,                                   -- dev_…
    user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    token_hash   BLOB NOT NULL UNIQUE,
    created_at   INTEGER NOT NULL,
    last_seen_at INTEGER,
    revoked_at   INTEGER
);
CREATE INDEX devices_user ON devices(user_id, created_at, id);

-- Per user and phone client (a device id, or a name the app gives for the user's token).
CREATE TABLE phone_states (
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    client     TEXT NOT NULL,
    state      TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, client)
);
