-- DBeacon SpatiaLite schema, migration v13: the account lifecycle (issue 43). A user can be
-- listed in creation order (`seq`, the admin's page cursor), disabled and enabled again
-- (`disabled_at`: set while disabled; their tokens and devices are refused, their webhooks
-- wait), and rotate their token (`token_rotated_at`). An erased user's id is never issued
-- again: `retired_users` keeps the SHA-256 of each erased id, and nothing else of them.
--
-- Erasure rules (`ErasurePlan` in Sources/DBeaconStore/SQL/SQLStore+Erasure.swift runs them, in
-- one transaction; `ErasureTests` fails for a table of the schema that has none, and for a rule
-- whose absence would go unnoticed):
--   users                 the row is deleted; the SHA-256 of the id goes to retired_users
--   user_locations, fence_states, sighting_batches, tag_follows, user_interests,
--   promotion_interactions, promotion_saves, promotion_ratings, promotion_feedback, place_media,
--   meeting_attendees, group_members, tour_followers, webhooks (with their outbox rows and
--   delivery attempts), followers (follower counts go down)   the user's rows are deleted
--   devices, phone_states   go with the user's row (ON DELETE CASCADE)
--   tour_visits           go with the user's tour_followers rows (cascade)
--   registry_entries      go with the user's beacons (cascade; an entry's owner is its beacon's)
--   beacons               the user's beacons are deleted with their children (tags, members,
--                         relationships to and from them, followers, fence states, registry
--                         entries, attendees, groups, tour progress, media, promotion rows);
--                         followers get the usual deletion notice. Others' beacons lose the
--                         user from their visibility members and the content items the user
--                         added (a new version each)
--   beacon_members        the user's rows are deleted (see beacons)
--   tracked_groups        groups the user leads go with their beacon; the user leaves the
--                         allowed lists of the others
--   events                deleted: those addressed to the user, those about the user's
--                         beacons, and every other that names the user; the erasure then
--                         writes the notices (beacon.deleted / meeting.cancelled to followers,
--                         group.member_left without the member to their groups)
--   outbox, delivery_attempts   go with their webhook or event
--   beacon_changes        holds beacon ids (never user ids) for ten minutes, so other
--                         processes drop deleted beacons from memory; then pruned
--   settings, retired_users, beacon_tags, relationships   hold nothing of a user

ALTER TABLE users ADD COLUMN seq INTEGER;
UPDATE users SET seq = rowid;
CREATE UNIQUE INDEX users_seq ON users(seq);
-- New users are numbered after the highest number in use (the insert leaves seq NULL).
CREATE TRIGGER users_seq_assign AFTER INSERT ON users WHEN NEW.seq IS NULL
BEGIN
    UPDATE users SET seq = (SELECT COALESCE(MAX(seq), 0) + 1 FROM users) WHERE id = NEW.id;
END;
ALTER TABLE users ADD COLUMN disabled_at INTEGER;
ALTER TABLE users ADD COLUMN token_rotated_at INTEGER;

CREATE TABLE retired_users (
    id_hash BLOB PRIMARY KEY  -- SHA-256 of an erased user's id
) WITHOUT ROWID;

-- The change log also tells other processes that accounts changed (a token rotated, a user
-- disabled or erased): a server then forgets the tokens it cached and checks its open event
-- streams again. The row names no user. SQLite cannot change a CHECK constraint, so the log
-- (rows of the last ten minutes, read within a second) is made again.
DROP TABLE beacon_changes;
CREATE TABLE beacon_changes (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    beacon_id  TEXT,                                  -- NULL for 'fences' and 'accounts'
    kind       TEXT NOT NULL CHECK (kind IN ('upsert', 'delete', 'move', 'fences', 'accounts')),
    writer     TEXT NOT NULL,                         -- the writing store instance (random id)
    created_at INTEGER NOT NULL
);
CREATE INDEX beacon_changes_created ON beacon_changes(created_at);
