-- DBeacon SpatiaLite schema, migration v2: live locations, fence states, the event log,
-- webhooks and their outbox. Events, fence states and outbox rows are written in the same
-- transaction as the change that caused them.

CREATE TABLE user_locations (
    user_id     TEXT PRIMARY KEY REFERENCES users(id),
    lon         REAL NOT NULL,
    lat         REAL NOT NULL,
    accuracy_m  REAL NOT NULL,
    fix_at      INTEGER NOT NULL,      -- the fix's own timestamp
    received_at INTEGER NOT NULL
);
CREATE INDEX user_locations_position ON user_locations(lat, lon);

-- Per (user, beacon) fence state; only beacons the user is inside are kept.
CREATE TABLE fence_states (
    user_id    TEXT NOT NULL,
    beacon_id  TEXT NOT NULL REFERENCES beacons(id) ON DELETE CASCADE,
    entered_at INTEGER NOT NULL,
    dwelled    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, beacon_id)
) WITHOUT ROWID;
CREATE INDEX fence_states_beacon ON fence_states(beacon_id);

CREATE TABLE events (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,  -- order of the log
    id         TEXT NOT NULL UNIQUE,               -- evt_…, also the webhook-id
    type       TEXT NOT NULL,
    recipient  TEXT NOT NULL,
    beacon_id  TEXT,                               -- no foreign key: deleted beacons keep their events
    created_at INTEGER NOT NULL,
    data       TEXT NOT NULL                       -- JSON object
);
CREATE INDEX events_recipient ON events(recipient, seq);
CREATE INDEX events_created ON events(created_at);

CREATE TABLE webhooks (
    id                          TEXT PRIMARY KEY,  -- whk_…
    owner                       TEXT,              -- user id; NULL for the operator's scope=all endpoints
    scope                       TEXT NOT NULL CHECK (scope IN ('user', 'all')),
    url                         TEXT NOT NULL,
    events                      TEXT NOT NULL,     -- JSON array of filters: "*", "beacon.*", "beacon.entered"
    description                 TEXT,
    secret                      TEXT NOT NULL,     -- whsec_…
    previous_secret             TEXT,
    previous_secret_expires_at  INTEGER,
    status                      TEXT NOT NULL CHECK (status IN ('active', 'disabled')),
    disabled_reason             TEXT,
    created_at                  INTEGER NOT NULL
);
CREATE INDEX webhooks_owner ON webhooks(owner);

-- One row per (event, webhook): the delivery and its state.
CREATE TABLE outbox (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    event_seq        INTEGER NOT NULL REFERENCES events(seq) ON DELETE CASCADE,
    webhook_id       TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    status           TEXT NOT NULL CHECK (status IN ('pending', 'in_flight', 'delivered', 'failed', 'cancelled')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    first_attempt_at INTEGER,
    next_attempt_at  INTEGER NOT NULL,
    last_status_code INTEGER,
    last_error       TEXT,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
);
CREATE INDEX outbox_due ON outbox(status, next_attempt_at);
CREATE INDEX outbox_webhook ON outbox(webhook_id, seq);

CREATE TABLE delivery_attempts (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    outbox_seq  INTEGER NOT NULL REFERENCES outbox(seq) ON DELETE CASCADE,
    attempt     INTEGER NOT NULL,
    started_at  INTEGER NOT NULL,
    duration_ms INTEGER NOT NULL,
    status_code INTEGER,
    error       TEXT
);
CREATE INDEX delivery_attempts_outbox ON delivery_attempts(outbox_seq, attempt);

CREATE INDEX beacons_lifetime_start ON beacons(lifetime_start) WHERE lifetime_start IS NOT NULL;
CREATE INDEX beacons_lifetime_end ON beacons(lifetime_end) WHERE lifetime_end IS NOT NULL;
CREATE INDEX beacons_tracking ON beacons(owner) WHERE tracks_owner = 1;
