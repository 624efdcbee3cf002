import DBeaconCore
import DBeaconGeo

/// What both stores write for a beacon's perimeter: its kind, and the `area` geometry (the perimeter's polygons, or a circle's geodesic bounding boxes, so
/// the spatial index finds circle candidates too).
enum StoredBeacon {
    /// `perimeter_kind`: `circle`, `polygon` or `multipolygon`.
    static func perimeterKind(_ perimeter: Perimeter) -> String {
        switch perimeter {
        case .circle: "circle"
        case .polygon: "polygon"
        case .multiPolygon: "multipolygon"
        }
    }

    /// The `area` geometry as WKB.
    static func areaWKB(_ b: Beacon) -> [UInt8] {
        switch b.perimeter {
        case .circle(let r): WKB.boxes(Geodesy.boundingBoxes(center: b.location, radiusM: r))
        case .polygon(let p): WKB.multiPolygon([p])
        case .multiPolygon(let ps): WKB.multiPolygon(ps)
        }
    }
}
