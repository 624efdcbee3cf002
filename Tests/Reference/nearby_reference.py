"""Independent reference for "which beacons cover this point" (GET /v1/nearby).

Polygons and multipolygons (with holes) are tested with shapely's `covers` (the boundary
counts), circles with GeographicLib's geodesic distance on WGS84. Lifetime, visibility and
tag rules are written out here again from the contract, not shared with the Swift code.

stdin: {"beacons": [{"id", "owner", "lat", "lon", "perimeter": GeoJSON | {"type": "Circle", "radius_m"},
                     "start": ms | null, "end": ms | null, "members": [ids] | null, "tags": [...]}],
        "queries": [{"lat", "lon", "viewer": user id | null (operator), "at": ms, "tags": [...]}],
        "now": ms (the server's clock: `at` only narrows what a non-owner sees)}
stdout: {"results": [[ids covering query 0, sorted], ...]}
"""
import json
import math
import sys

from geographiclib.geodesic import Geodesic
from shapely.geometry import Point, shape
from shapely.prepared import prep

request = json.load(sys.stdin)
beacons = []
for b in request["beacons"]:
    p = b["perimeter"]
    if p["type"] == "Circle":
        b["_test"] = ("circle", p["radius_m"])
    else:
        b["_test"] = ("shape", prep(shape(p)))
    beacons.append(b)


def visible(b, viewer):
    if viewer is None or viewer == b["owner"]:
        return True
    return b["members"] is None or viewer in b["members"]


def alive(b, at):
    if b["start"] is not None and at < b["start"]:
        return False
    if b["end"] is not None and at >= b["end"]:
        return False
    return True


def haversine(lat1, lon1, lat2, lon2):
    p1, p2 = math.radians(lat1), math.radians(lat2)
    h = math.sin((p2 - p1) / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(math.radians(lon2 - lon1) / 2) ** 2
    return 2 * 6371008.8 * math.asin(min(1.0, math.sqrt(h)))


def covers(b, lat, lon):
    kind, value = b["_test"]
    if kind == "circle":
        # The sphere is within 1% of the ellipsoid: only close calls need GeographicLib.
        rough = haversine(b["lat"], b["lon"], lat, lon)
        if rough > value * 1.01 + 1:
            return False
        if rough < value * 0.99 - 1:
            return True
        return Geodesic.WGS84.Inverse(b["lat"], b["lon"], lat, lon, Geodesic.DISTANCE)["s12"] <= value
    return value.covers(Point(lon, lat))


now = request["now"]
results = []
for q in request["queries"]:
    tags = set(q["tags"])
    found = [b["id"] for b in beacons
             if visible(b, q["viewer"]) and alive(b, q["at"])
             and (q["viewer"] is None or q["viewer"] == b["owner"] or alive(b, now))
             and (not tags or tags & set(b["tags"]))
             and covers(b, q["lat"], q["lon"])]
    results.append(sorted(found))
json.dump({"results": results}, sys.stdout)
