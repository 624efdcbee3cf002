-- DBeacon PostGIS schema, migration v1: users, beacons and their context.
-- The same model as schema/spatialite/v1_core.sql. Append-only: never edit a migration that has
-- landed; add v2, v3, … instead. Runs in one transaction after `CREATE EXTENSION postgis`.
-- Timestamps are BIGINT milliseconds since the Unix epoch (UTC), as on SpatiaLite, so both
-- stores answer identically and `dbeacon migrate` copies values unchanged.

CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE users (
    id         TEXT PRIMARY KEY,                 -- usr_…
    name       TEXT NOT NULL,
    token_hash BYTEA NOT NULL UNIQUE,            -- SHA-256 of the bearer token
    created_at BIGINT NOT NULL
);
CREATE INDEX users_name ON users(name);

CREATE TABLE beacons (
    seq             BIGSERIAL PRIMARY KEY,              -- list cursor and load order
    id              TEXT NOT NULL UNIQUE,               -- bcn_…
    owner           TEXT NOT NULL REFERENCES users(id),
    name            TEXT NOT NULL,
    description     TEXT,
    lon             DOUBLE PRECISION NOT NULL,
    lat             DOUBLE PRECISION NOT NULL,
    perimeter_kind  TEXT NOT NULL CHECK (perimeter_kind IN ('circle', 'polygon', 'multipolygon')),
    radius_m        DOUBLE PRECISION CHECK ((perimeter_kind = 'circle') = (radius_m IS NOT NULL)),
    lifetime_start  BIGINT,
    lifetime_end    BIGINT,
    is_private      BOOLEAN NOT NULL DEFAULT false,
    tracks_owner    BOOLEAN NOT NULL DEFAULT false,
    service         TEXT,
    content         TEXT NOT NULL DEFAULT '[]',         -- JSON array of content references
    followers_count BIGINT NOT NULL DEFAULT 0,
    version         BIGINT NOT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    -- The search area: polygonal perimeters exactly; circles as their conservative bounding
    -- box(es), tested exactly with the geodesic circle test (Geodesy.circleContains) in Swift.
    area            geometry(MultiPolygon, 4326) NOT NULL
);
CREATE INDEX beacons_owner ON beacons(owner, seq);
CREATE INDEX beacons_location ON beacons(lat, lon);
CREATE INDEX beacons_service ON beacons(service, seq) WHERE service IS NOT NULL;
CREATE INDEX beacons_area ON beacons USING GIST (area);

CREATE TABLE beacon_tags (
    beacon_id TEXT NOT NULL REFERENCES beacons(id) ON DELETE CASCADE,
    tag       TEXT NOT NULL,
    position  BIGINT NOT NULL,
    PRIMARY KEY (beacon_id, tag)
);
CREATE INDEX beacon_tags_tag ON beacon_tags(tag, beacon_id);

CREATE TABLE beacon_members (
    beacon_id TEXT NOT NULL REFERENCES beacons(id) ON DELETE CASCADE,
    user_id   TEXT NOT NULL,
    position  BIGINT NOT NULL,
    PRIMARY KEY (beacon_id, user_id)
);
CREATE INDEX beacon_members_user ON beacon_members(user_id, beacon_id);

CREATE TABLE relationships (
    source_id TEXT NOT NULL REFERENCES beacons(id) ON DELETE CASCADE,
    type      TEXT NOT NULL,
    target_id TEXT NOT NULL REFERENCES beacons(id) ON DELETE CASCADE,
    ord       BIGINT,
    position  BIGINT NOT NULL,
    PRIMARY KEY (source_id, type, target_id)
);
CREATE INDEX relationships_target ON relationships(target_id);

CREATE TABLE followers (
    seq        BIGSERIAL PRIMARY KEY,
    beacon_id  TEXT NOT NULL REFERENCES beacons(id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users(id),
    created_at BIGINT NOT NULL,
    UNIQUE (beacon_id, user_id)
);
CREATE INDEX followers_user ON followers(user_id);
