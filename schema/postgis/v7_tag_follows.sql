-- DBeacon PostGIS schema, migration v7: categories a user follows. A new beacon with the
-- tag, visible to the user and alive, whose location lies within radius_m of the user's last
-- location, sends the user `beacon.created`.

CREATE TABLE tag_follows (
    user_id    TEXT NOT NULL REFERENCES users(id),
    tag        TEXT NOT NULL,
    radius_m   DOUBLE PRECISION NOT NULL CHECK (radius_m > 0),
    created_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, tag)
);
CREATE INDEX tag_follows_tag ON tag_follows(tag, user_id);
