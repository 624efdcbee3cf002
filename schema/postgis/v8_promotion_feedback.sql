-- DBeacon PostGIS schema, migration v8: the rest of Noticon's interaction set. A consumer
-- saves a promotion for later (and deletes the saved item), rates it 1–5 once, and leaves
-- feedback text; these feed the advertiser's statistics and the pick score.

CREATE TABLE promotion_saves (
    promotion_id TEXT NOT NULL REFERENCES beacons(id) ON DELETE CASCADE,
    user_id      TEXT NOT NULL REFERENCES users(id),
    saved_at     BIGINT NOT NULL,
    PRIMARY KEY (promotion_id, user_id)
);
CREATE INDEX promotion_saves_user ON promotion_saves(user_id, saved_at);

CREATE TABLE promotion_ratings (
    promotion_id TEXT NOT NULL REFERENCES beacons(id) ON DELETE CASCADE,
    user_id      TEXT NOT NULL REFERENCES users(id),
    rating       INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5),
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (promotion_id, user_id)
);

CREATE TABLE promotion_feedback (
    seq          BIGSERIAL PRIMARY KEY,
    promotion_id TEXT NOT NULL REFERENCES beacons(id) ON DELETE CASCADE,
    user_id      TEXT NOT NULL REFERENCES users(id),
    text         TEXT NOT NULL,
    created_at   BIGINT NOT NULL
);
CREATE INDEX promotion_feedback_promotion ON promotion_feedback(promotion_id, seq);
