-- DBeacon PostGIS schema, migration v9: visit analytics read a beacon's entries and exits from the
-- event log (GET /v1/beacons/{id}/visits); this index finds them without scanning the log.

CREATE INDEX events_beacon ON events(beacon_id, type, seq);
