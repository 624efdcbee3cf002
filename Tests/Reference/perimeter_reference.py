"""Reference perimeter geometry, independent of DBeacon's code: shapely (GEOS) for
containment, GeographicLib (Karney, WGS84) for every distance.

A polygon's edges are straight lines in longitude/latitude (RFC 7946), followed the short
way round across the antimeridian; the distance from a point to a perimeter is the geodesic
distance to its nearest point (0 when the perimeter covers the point, boundary included).

stdin: {"beacons":   [{"circle": [lon, lat, radius_m]} | {"polygons": [[ring, ...], ...]}],
                      (ring: [[lon, lat], ...], closed)
        "covering":  [[lon, lat], ...],              points: which beacons cover each
        "distances": [[beacon, lon, lat], ...],      perimeter distance from the point
        "extents":   [[beacon, lon, lat], ...]}      farthest point of the perimeter from the
                                                     point (vertices and points along every
                                                     edge at most 100 m apart)
stdout: {"covering": [[beacon, ...], ...], "distances": [m, ...], "extents": [m, ...]}
"""
import json
import math
import sys

import numpy as np
import shapely
from geographiclib.geodesic import Geodesic

G = Geodesic.WGS84
MASK = Geodesic.DISTANCE


def s12(lat1, lon1, lat2, lon2):
    return G.Inverse(lat1, lon1, lat2, lon2, MASK)["s12"]


def wrap(lon):
    while lon > 180:
        lon -= 360
    while lon < -180:
        lon += 360
    return lon


def edge_points(a, b):
    """The edge a→b as (start lon, start lat, dlon, dlat), the short way round."""
    dlon = b[0] - a[0]
    if dlon > 180:
        dlon -= 360
    elif dlon < -180:
        dlon += 360
    return a[0], a[1], dlon, b[1] - a[1]


def on_edge(e, t):
    lon0, lat0, dlon, dlat = e
    return wrap(lon0 + t * dlon), lat0 + t * dlat


def edge_distance(e, lon, lat):
    """Minimum geodesic distance from (lon, lat) to the edge: a scan at 64 points (more for
    long edges), then golden-section search around the best sample."""
    f = lambda t: s12(lat, lon, *reversed(on_edge(e, t)))
    n = max(64, int(max(abs(e[2]), abs(e[3])) / 0.05))
    samples = [f(i / n) for i in range(n + 1)]
    k = min(range(n + 1), key=samples.__getitem__)
    lo, hi = max(0, k - 1) / n, min(n, k + 1) / n
    g = (math.sqrt(5) - 1) / 2
    x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
    f1, f2 = f(x1), f(x2)
    for _ in range(90):
        if f1 < f2:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - g * (hi - lo)
            f1 = f(x1)
        else:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + g * (hi - lo)
            f2 = f(x2)
    return min(samples[k], f1, f2)


class Beacon:
    def __init__(self, spec):
        self.circle = spec.get("circle")
        self.shape = None
        self.edges = []
        self.vertices = []
        if self.circle is None:
            polygons = []
            for polygon in spec["polygons"]:
                rings = [[tuple(p) for p in ring] for ring in polygon]
                polygons.append(shapely.Polygon(rings[0], rings[1:]))
                for ring in rings:
                    self.vertices += ring
                    self.edges += [edge_points(ring[i], ring[i + 1]) for i in range(len(ring) - 1)]
            self.shape = shapely.MultiPolygon(polygons) if len(polygons) > 1 else polygons[0]
            shapely.prepare(self.shape)

    def covers(self, lon, lat):
        if self.circle is not None:
            clon, clat, r = self.circle
            return s12(clat, clon, lat, lon) <= r
        return shapely.intersects_xy(self.shape, lon, lat)

    def distance(self, lon, lat):
        if self.circle is not None:
            clon, clat, r = self.circle
            return max(0.0, s12(clat, clon, lat, lon) - r)
        if self.covers(lon, lat):
            return 0.0
        # Edges that may be nearest: a generous equirectangular estimate at the point
        # (within 5 % + 50 m of the best) first; then each exactly.
        c = math.cos(math.radians(lat))

        def approx(e):
            lon0, lat0, dlon, dlat = e
            ax, ay = wrap(lon0 - lon) * c, lat0 - lat
            bx, by = ax + dlon * c, ay + dlat
            dx, dy = bx - ax, by - ay
            ll = dx * dx + dy * dy
            t = 0.0 if ll == 0 else max(0.0, min(1.0, -(ax * dx + ay * dy) / ll))
            return math.hypot(ax + t * dx, ay + t * dy) * 111_195.0

        estimates = [approx(e) for e in self.edges]
        best = min(estimates)
        return min(edge_distance(e, lon, lat) for e, d in zip(self.edges, estimates) if d <= best * 1.05 + 50)

    def extent(self, lon, lat):
        if self.circle is not None:
            clon, clat, r = self.circle
            return s12(lat, lon, clat, clon) + r
        far = max(s12(lat, lon, v[1], v[0]) for v in self.vertices)
        for e in self.edges:
            lon0, lat0, dlon, dlat = e
            length = math.hypot(dlon * 111_320 * math.cos(math.radians(lat0)), dlat * 110_574)
            n = max(1, math.ceil(length / 100))
            for i in range(1, n):
                plon, plat = on_edge(e, i / n)
                far = max(far, s12(lat, lon, plat, plon))
        return far


def covering(beacons, points):
    """For each point, the beacons covering it: circles pre-filtered with a spherical distance
    (kept when within 1 % + 100 m of the radius), then decided by GeographicLib."""
    if not points:
        return []
    pts = np.array(points, dtype=float)
    result = [[] for _ in points]
    for index, b in enumerate(beacons):
        if b.circle is not None:
            clon, clat, r = b.circle
            lat1, lat2 = math.radians(clat), np.radians(pts[:, 1])
            dlon = np.radians(pts[:, 0] - clon)
            h = np.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * np.cos(lat2) * np.sin(dlon / 2) ** 2
            rough = 2 * 6_371_008.8 * np.arcsin(np.minimum(1, np.sqrt(h)))
            for i in np.nonzero(rough <= r * 1.01 + 100)[0]:
                if b.covers(pts[i, 0], pts[i, 1]):
                    result[i].append(index)
        else:
            inside = shapely.intersects_xy(b.shape, pts[:, 0], pts[:, 1])
            for i in np.nonzero(inside)[0]:
                result[i].append(index)
    return result


request = json.load(sys.stdin)
beacons = [Beacon(spec) for spec in request.get("beacons", [])]
json.dump({
    "covering": covering(beacons, request.get("covering", [])),
    "distances": [beacons[i].distance(lon, lat) for i, lon, lat in request.get("distances", [])],
    "extents": [beacons[i].extent(lon, lat) for i, lon, lat in request.get("extents", [])],
}, sys.stdout)
