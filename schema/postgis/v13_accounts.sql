-- DBeacon PostGIS schema, migration v13: the account lifecycle (issue 43), as
-- schema/spatialite/v13_accounts.sql (which lists every table's erasure rule). A user can be
-- listed in creation order (`seq`), disabled and enabled again (`disabled_at`), and rotate
-- their token (`token_rotated_at`); an erased user's id is never issued again
-- (`retired_users`: the SHA-256 of each erased id, nothing else). Other nodes learn of account
-- changes through NOTIFY on the change channel (payload `node a usr_…`, never stored).

ALTER TABLE users ADD COLUMN seq BIGSERIAL;
CREATE UNIQUE INDEX users_seq ON users(seq);
ALTER TABLE users ADD COLUMN disabled_at BIGINT;
ALTER TABLE users ADD COLUMN token_rotated_at BIGINT;

CREATE TABLE retired_users (
    id_hash BYTEA PRIMARY KEY  -- SHA-256 of an erased user's id
);
