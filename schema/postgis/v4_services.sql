-- DBeacon PostGIS schema, migration v4: state of the four services (meetings, group
-- tracking, city tours, advertising). The service objects themselves are beacons (table
-- beacons, column service); these tables hold what the Digital Beacon model does not:
-- attendees, group members and their range state, tour progress and shared media,
-- consumer interests and promotion interactions. Independent of v3 (the registry, to come).

-- Meeting organizer: who joined which meeting (joining also follows the meeting beacon).
CREATE TABLE meeting_attendees (
    meeting_id TEXT NOT NULL REFERENCES beacons(id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users(id),
    joined_at  BIGINT NOT NULL,
    PRIMARY KEY (meeting_id, user_id)
);
CREATE INDEX meeting_attendees_user ON meeting_attendees(user_id);

-- Group tracking: a group is a beacon that tracks its guide (tracks_owner, circle of range_m).
CREATE TABLE tracked_groups (
    id          TEXT PRIMARY KEY,                                    -- grp_…
    beacon_id   TEXT NOT NULL UNIQUE REFERENCES beacons(id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    leader      TEXT NOT NULL REFERENCES users(id),
    range_m     DOUBLE PRECISION NOT NULL CHECK (range_m > 0),
    allowed     TEXT,            -- JSON array of user ids allowed to join; NULL = open group
    placed      BOOLEAN NOT NULL DEFAULT true,  -- false until the guide's location is known (beacon hidden)
    created_at  BIGINT NOT NULL
);
CREATE INDEX tracked_groups_leader ON tracked_groups(leader);

-- Members (the guide is not a row here). status 'removed' keeps a removed member from
-- rejoining. range_state: NULL while unknown, 'in' or 'out' (with hysteresis).
CREATE TABLE group_members (
    group_id         TEXT NOT NULL REFERENCES tracked_groups(id) ON DELETE CASCADE,
    user_id          TEXT NOT NULL REFERENCES users(id),
    status           TEXT NOT NULL CHECK (status IN ('active', 'removed')),
    joined_at        BIGINT NOT NULL,
    range_state      TEXT CHECK (range_state IN ('in', 'out')),
    range_distance_m DOUBLE PRECISION,
    range_changed_at BIGINT,
    PRIMARY KEY (group_id, user_id)
);
CREATE INDEX group_members_user ON group_members(user_id, status);

-- City tours: who follows which tour since when, and the stops they visited.
CREATE TABLE tour_followers (
    tour_id    TEXT NOT NULL REFERENCES beacons(id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users(id),
    started_at BIGINT NOT NULL,
    PRIMARY KEY (tour_id, user_id)
);
CREATE INDEX tour_followers_user ON tour_followers(user_id);

CREATE TABLE tour_visits (
    tour_id    TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    place_id   TEXT NOT NULL REFERENCES beacons(id) ON DELETE CASCADE,
    visited_at BIGINT NOT NULL,
    PRIMARY KEY (tour_id, user_id, place_id),
    FOREIGN KEY (tour_id, user_id) REFERENCES tour_followers(tour_id, user_id) ON DELETE CASCADE
);

-- Media shared by visitors at a place; seen only by those inside the place's perimeter.
CREATE TABLE place_media (
    seq        BIGSERIAL PRIMARY KEY,
    id         TEXT NOT NULL UNIQUE,                                 -- med_…
    place_id   TEXT NOT NULL REFERENCES beacons(id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users(id),
    kind       TEXT NOT NULL,
    url        TEXT NOT NULL,
    title      TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX place_media_place ON place_media(place_id, seq);

-- Advertising: interest score per category of a consumer, and interactions with promotions.
CREATE TABLE user_interests (
    user_id  TEXT NOT NULL REFERENCES users(id),
    category TEXT NOT NULL,
    score    BIGINT NOT NULL,
    position BIGINT NOT NULL,
    PRIMARY KEY (user_id, category)
);

CREATE TABLE promotion_interactions (
    seq          BIGSERIAL PRIMARY KEY,
    promotion_id TEXT NOT NULL REFERENCES beacons(id) ON DELETE CASCADE,
    user_id      TEXT NOT NULL REFERENCES users(id),
    type         TEXT NOT NULL CHECK (type IN ('shown', 'clicked', 'calendar_add')),
    source       TEXT NOT NULL CHECK (source IN ('pick', 'client')),  -- picks count against the frequency cap
    created_at   BIGINT NOT NULL
);
CREATE INDEX promotion_interactions_user ON promotion_interactions(user_id, promotion_id, type);
CREATE INDEX promotion_interactions_picks ON promotion_interactions(user_id, created_at) WHERE source = 'pick';
CREATE INDEX promotion_interactions_promotion ON promotion_interactions(promotion_id, type);
