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

    /// The `content` column: a JSON array of `{kind, url, title, added_by?, created_at?}`.
    static func contentColumn(_ content: [ContentRef]) -> String {
        JSONValue.array(content.map { c in
            var o: JSONObject = ["kind": .string(c.kind), "url": .string(c.url), "title": .optional(c.title)]
            if let by = c.addedBy { o["added_by"] = .string(by.rawValue) }
            if let at = c.createdAt { o["created_at"] = .string(at.rfc3339) }
            return .object(o)
        }).jsonString
    }

    /// The content references of a `content` column (what `contentColumn` wrote).
    static func content(fromColumn json: String) -> [ContentRef] {
        // Most beacons have none: no parse (a load reads a million of these).
        if json == "[]" { return [] }
        guard let value = try? JSONParser.parse(json), case .array(let items) = value else { return [] }
        return items.compactMap { item in
            guard let kind = item["kind"]?.stringValue, let url = item["url"]?.stringValue else { return nil }
            return ContentRef(kind: kind, url: url, title: item["title"]?.stringValue,
                              addedBy: item["added_by"]?.stringValue.map(UserID.init(uncheckedRawValue:)),
                              createdAt: item["created_at"]?.stringValue.flatMap(Timestamp.init(rfc3339:)))
        }
    }
}
