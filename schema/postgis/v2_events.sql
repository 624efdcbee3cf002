-- DBeacon PostGIS schema, migration v2: live locations, fence states, the event log,
-- webhooks and their outbox (as schema/spatialite/v2_events.sql). Events, fence states and
-- outbox rows are written in the same transaction as the change that caused them. Several
-- server processes share the outbox: a delivery is claimed with FOR UPDATE SKIP LOCKED and
-- `claimed_by` names the claiming process (its listener session), so only deliveries of
-- processes that are gone are put back to pending.

CREATE TABLE user_locations (
    user_id     TEXT PRIMARY KEY REFERENCES users(id),
    lon         DOUBLE PRECISION NOT NULL,
    lat         DOUBLE PRECISION NOT NULL,
    accuracy_m  DOUBLE PRECISION NOT NULL,
    fix_at      BIGINT NOT NULL,
    received_at BIGINT NOT NULL
);
CREATE INDEX user_locations_position ON user_locations(lat, lon);

CREATE TABLE fence_states (
    user_id    TEXT NOT NULL,
    beacon_id  TEXT NOT NULL REFERENCES beacons(id) ON DELETE CASCADE,
    entered_at BIGINT NOT NULL,
    dwelled    BOOLEAN NOT NULL DEFAULT false,
    PRIMARY KEY (user_id, beacon_id)
);
CREATE INDEX fence_states_beacon ON fence_states(beacon_id);

CREATE TABLE events (
    seq        BIGSERIAL PRIMARY KEY,
    id         TEXT NOT NULL UNIQUE,               -- evt_…, also the webhook-id
    type       TEXT NOT NULL,
    recipient  TEXT NOT NULL,
    beacon_id  TEXT,                               -- no foreign key: deleted beacons keep their events
    created_at BIGINT NOT NULL,
    data       TEXT NOT NULL                       -- JSON object, as written (key order kept)
);
CREATE INDEX events_recipient ON events(recipient, seq);
CREATE INDEX events_created ON events(created_at);

CREATE TABLE webhooks (
    id                          TEXT PRIMARY KEY,
    owner                       TEXT,
    scope                       TEXT NOT NULL CHECK (scope IN ('user', 'all')),
    url                         TEXT NOT NULL,
    events                      TEXT NOT NULL,     -- JSON array of filters
    description                 TEXT,
    secret                      TEXT NOT NULL,
    previous_secret             TEXT,
    previous_secret_expires_at  BIGINT,
    status                      TEXT NOT NULL CHECK (status IN ('active', 'disabled')),
    disabled_reason             TEXT,
    created_at                  BIGINT NOT NULL
);
CREATE INDEX webhooks_owner ON webhooks(owner);

CREATE TABLE outbox (
    seq              BIGSERIAL PRIMARY KEY,
    event_seq        BIGINT NOT NULL REFERENCES events(seq) ON DELETE CASCADE,
    webhook_id       TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    status           TEXT NOT NULL CHECK (status IN ('pending', 'in_flight', 'delivered', 'failed', 'cancelled')),
    attempts         BIGINT NOT NULL DEFAULT 0,
    first_attempt_at BIGINT,
    next_attempt_at  BIGINT NOT NULL,
    last_status_code BIGINT,
    last_error       TEXT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    claimed_by       TEXT
);
CREATE INDEX outbox_due ON outbox(status, next_attempt_at);
CREATE INDEX outbox_webhook ON outbox(webhook_id, seq);
CREATE INDEX outbox_event ON outbox(event_seq);

CREATE TABLE delivery_attempts (
    seq         BIGSERIAL PRIMARY KEY,
    outbox_seq  BIGINT NOT NULL REFERENCES outbox(seq) ON DELETE CASCADE,
    attempt     BIGINT NOT NULL,
    started_at  BIGINT NOT NULL,
    duration_ms BIGINT NOT NULL,
    status_code BIGINT,
    error       TEXT
);
CREATE INDEX delivery_attempts_outbox ON delivery_attempts(outbox_seq, attempt);

CREATE INDEX beacons_lifetime_start ON beacons(lifetime_start) WHERE lifetime_start IS NOT NULL;
CREATE INDEX beacons_lifetime_end ON beacons(lifetime_end) WHERE lifetime_end IS NOT NULL;
CREATE INDEX beacons_tracking ON beacons(owner) WHERE tracks_owner;
