-- DBeacon SpatiaLite schema, migration v1: users, beacons and their context.
-- Append-only: never edit a migration that has landed; add v2, v3, … instead.
-- Runs after SELECT InitSpatialMetaData(1, 'WGS84'), which must happen outside a transaction.
-- Timestamps are INTEGER milliseconds since the Unix epoch (UTC).

CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE users (
    id         TEXT PRIMARY KEY,                 -- usr_…
    name       TEXT NOT NULL,
    token_hash BLOB NOT NULL UNIQUE,             -- SHA-256 of the bearer token
    created_at INTEGER NOT NULL
);
CREATE INDEX users_name ON users(name);

CREATE TABLE beacons (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,  -- rowid: R*Tree key and list cursor
    id              TEXT NOT NULL UNIQUE,               -- bcn_…
    owner           TEXT NOT NULL REFERENCES users(id),
    name            TEXT NOT NULL,
    description     TEXT,
    lon             REAL NOT NULL,
    lat             REAL NOT NULL,
    perimeter_kind  TEXT NOT NULL CHECK (perimeter_kind IN ('circle', 'polygon', 'multipolygon')),
    radius_m        REAL CHECK ((perimeter_kind = 'circle') = (radius_m IS NOT NULL)),
    lifetime_start  INTEGER,
    lifetime_end    INTEGER,
    is_private      INTEGER NOT NULL DEFAULT 0,
    tracks_owner    INTEGER NOT NULL DEFAULT 0,
    service         TEXT,
    content         TEXT NOT NULL DEFAULT '[]',         -- JSON array of content references
    followers_count INTEGER NOT NULL DEFAULT 0,
    version         INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);
CREATE INDEX beacons_owner ON beacons(owner, seq);
CREATE INDEX beacons_location ON beacons(lat, lon);
CREATE INDEX beacons_service ON beacons(service, seq) WHERE service IS NOT NULL;

-- The search area: polygonal perimeters exactly; circles as their conservative bounding
-- box(es), tested exactly with dbeacon_circle_contains (geodesic distance).
SELECT AddGeometryColumn('beacons', 'area', 4326, 'MULTIPOLYGON', 'XY', 1);
SELECT CreateSpatialIndex('beacons', 'area');

CREATE TABLE beacon_tags (
    beacon_id TEXT NOT NULL REFERENCES beacons(id) ON DELETE CASCADE,
    tag       TEXT NOT NULL,
    position  INTEGER NOT NULL,
    PRIMARY KEY (beacon_id, tag)
) WITHOUT ROWID;
CREATE INDEX beacon_tags_tag ON beacon_tags(tag, beacon_id);

CREATE TABLE beacon_members (
    beacon_id TEXT NOT NULL REFERENCES beacons(id) ON DELETE CASCADE,
    user_id   TEXT NOT NULL,
    position  INTEGER NOT NULL,
    PRIMARY KEY (beacon_id, user_id)
) WITHOUT ROWID;
CREATE INDEX beacon_members_user ON beacon_members(user_id, beacon_id);

CREATE TABLE relationships (
    source_id TEXT NOT NULL REFERENCES beacons(id) ON DELETE CASCADE,
    type      TEXT NOT NULL,
    target_id TEXT NOT NULL REFERENCES beacons(id) ON DELETE CASCADE,
    ord       INTEGER,
    position  INTEGER NOT NULL,
    PRIMARY KEY (source_id, type, target_id)
) WITHOUT ROWID;
CREATE INDEX relationships_target ON relationships(target_id);

CREATE TABLE followers (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    beacon_id  TEXT NOT NULL REFERENCES beacons(id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users(id),
    created_at INTEGER NOT NULL,
    UNIQUE (beacon_id, user_id)
);
CREATE INDEX followers_user ON followers(user_id);
