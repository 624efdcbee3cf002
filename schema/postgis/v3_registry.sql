-- DBeacon PostGIS schema, migration v3: the shared registry of physical beacons (iBeacon,
-- Eddystone-UID, AltBeacon → digital beacon), sighting-based presence, and the answers to
-- sighting batches kept for idempotent replay (as schema/spatialite/v3_registry.sql).
-- Added after v4: migrations are applied by name, each one not yet recorded in
-- dbeacon_migrations, so a database created with v1, v2 and v4 receives v3 on its next start.
-- Depends on v1 (users, beacons) and v2 (fence_states) only.

CREATE TABLE registry_entries (
    seq            BIGSERIAL PRIMARY KEY,              -- list cursor
    id             TEXT NOT NULL UNIQUE,               -- reg_…
    kind           TEXT NOT NULL CHECK (kind IN ('ibeacon', 'eddystone-uid', 'altbeacon')),
    id1            TEXT NOT NULL,                      -- UUID / namespace / id1: lowercase hex, no dashes
    id2            BIGINT CHECK (id2 BETWEEN 0 AND 65535),  -- major / id2; NULL = any
    id3            BIGINT CHECK (id3 BETWEEN 0 AND 65535),  -- minor / id3; NULL = any
    instance       TEXT,                               -- Eddystone instance, lowercase hex
    identity_key   TEXT NOT NULL,                      -- canonical pattern, e.g. ibeacon:<uuid>:100:*
    specificity    BIGINT NOT NULL,                    -- 0 (uuid), 1 (+major), 2 (+minor; Eddystone)
    beacon_id      TEXT NOT NULL REFERENCES beacons(id) ON DELETE CASCADE,
    owner          TEXT NOT NULL REFERENCES users(id),  -- the digital beacon's owner
    lon            DOUBLE PRECISION,                   -- installed position, if known
    lat            DOUBLE PRECISION,
    level          BIGINT,
    measured_power BIGINT,                             -- RSSI at 1 m, dBm
    status         TEXT NOT NULL CHECK (status IN ('active', 'inactive', 'decommissioned')),
    version        BIGINT NOT NULL,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL,
    CHECK ((lon IS NULL) = (lat IS NULL)),
    CHECK (id3 IS NULL OR id2 IS NOT NULL)
);
-- One live entry per identity pattern; decommissioned entries free it for a replacement.
CREATE UNIQUE INDEX registry_entries_identity ON registry_entries(identity_key) WHERE status <> 'decommissioned';
-- Resolution: every active pattern of a (kind, id1), most specific first.
CREATE INDEX registry_entries_resolve ON registry_entries(kind, id1, status, specificity);
CREATE INDEX registry_entries_beacon ON registry_entries(beacon_id);
CREATE INDEX registry_entries_owner ON registry_entries(owner, seq);

-- A fence state entered or refreshed by a sighting: when the physical beacon was last seen.
-- While that is recent, location fixes outside the perimeter do not exit the user; the
-- ticker exits them once no sighting came for the configured time (30 s by default).
ALTER TABLE fence_states ADD COLUMN IF NOT EXISTS sighted_at BIGINT;

-- The answer to each sighting batch that named a batch_id, so a replay returns it unchanged.
CREATE TABLE sighting_batches (
    user_id    TEXT NOT NULL REFERENCES users(id),
    batch_id   TEXT NOT NULL,
    response   TEXT NOT NULL,                      -- the JSON answer
    created_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, batch_id)
);
CREATE INDEX sighting_batches_created ON sighting_batches(created_at);
