-- DBeacon SpatiaLite schema, migration v6: who claimed a delivery in flight (as on PostGIS).
-- SQLite deliveries are claimed without a claimant (one file, one delivering server), so
-- every delivery in flight is put back to pending when the server starts.

ALTER TABLE outbox ADD COLUMN claimed_by TEXT;
