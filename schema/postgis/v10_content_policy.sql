-- DBeacon PostGIS schema, migration v10: who besides the owner may add content to a beacon
-- (`properties.content_policy`: owner, followers or anyone).

ALTER TABLE beacons ADD COLUMN content_policy TEXT NOT NULL DEFAULT 'owner'
    CHECK (content_policy IN ('owner', 'followers', 'anyone'));
