"""Reference geodesics from GeographicLib (Karney) on WGS84.

stdin:  {"pairs": [[lat1, lon1, lat2, lon2], ...]}
stdout: {"results": [[distance_m, initial_bearing_deg_0_360], ...]}
"""
import json
import sys

from geographiclib.geodesic import Geodesic

request = json.load(sys.stdin)
results = []
for lat1, lon1, lat2, lon2 in request["pairs"]:
    g = Geodesic.WGS84.Inverse(lat1, lon1, lat2, lon2)
    results.append([g["s12"], g["azi1"] % 360.0])
json.dump({"results": results}, sys.stdout)
