-- DBeacon SpatiaLite schema, migration v5: the log of committed beacon changes, so a running
-- server sees what other processes (the CLI with --db) write to the same file within a second.
-- Append-only: never edit a migration that has landed.
-- Every transaction that changes beacons (or fence states) adds one row per change, tagged with
-- the writing store instance; a server polls `PRAGMA data_version` and applies the rows of
-- other writers to its in-memory index and fence engine. Rows older than ten minutes are pruned.
CREATE TABLE beacon_changes (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    beacon_id  TEXT,                                  -- NULL for 'fences'
    kind       TEXT NOT NULL CHECK (kind IN ('upsert', 'delete', 'move', 'fences')),
    writer     TEXT NOT NULL,                         -- the writing store instance (random id)
    created_at INTEGER NOT NULL
);
CREATE INDEX beacon_changes_created ON beacon_changes(created_at);
