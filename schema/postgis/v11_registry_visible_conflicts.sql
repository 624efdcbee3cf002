-- DBeacon PostGIS schema, migration v11: an identity is taken only for those who may see the
-- entry holding it (issue 26): entries of hidden beacons never block a registration, so the
-- identity index is no longer unique. The check for a live entry the registering principal may
-- see runs under a transaction-scoped advisory lock on the identity.

DROP INDEX IF EXISTS registry_entries_identity;
CREATE INDEX registry_entries_identity ON registry_entries(identity_key) WHERE status <> 'decommissioned';
