package import DBeaconCore
package import DBeaconGeo
package import DBeaconServices

/// Decodes beacon Features sent by clients and encodes stored beacons as Features
/// (CONTRACT.md, "Beacon representation").
package enum BeaconFeatureCodec {
    // MARK: Decoding

    /// Decodes a Feature into a draft, validating every field. A Feature whose geometry is a
    /// Polygon/MultiPolygon (and that has no `perimeter`) uses it as the perimeter, located at
    /// a point on its surface: this lets ordinary GeoJSON files be imported as they are.
    package static func decodeDraft(_ value: JSONValue, limits: GeoLimits = .default) throws(DBeaconError) -> BeaconDraft {
        let feature = try ObjectReader(value)
        if feature.has("type"), feature.value("type") != .string("Feature") {
            let got = feature.value("type").map { JSONWriter.string($0) } ?? "null"
            throw DBeaconError.invalid("type", "a beacon must be a GeoJSON Feature (\"type\": \"Feature\"), got \(got.prefix(64))",
                                       code: "invalid_type")
        }
        var id: BeaconID?
        if let raw = try feature.optionalString("id", maxLength: 100) {
            guard let parsed = BeaconID(raw) else {
                throw DBeaconError.invalid("id", "a beacon id looks like bcn_ followed by 1–64 letters, digits, '_' or '-'", code: "invalid_id")
            }
            id = parsed
        }
        var properties = try ObjectReader(.object([:]), path: "properties")
        if let given = try feature.optionalObject("properties") { properties = given }

        guard let geometryValue = feature.value("geometry") else {
            throw DBeaconError.invalid("geometry", "geometry (the beacon's location, a Point) is required", code: "missing_field")
        }
        let geometry = try ObjectReader(geometryValue, path: "geometry")
        let geometryType = try geometry.string("type")
        var location: Position
        var perimeter: Perimeter?
        switch geometryType {
        case "Point":
            location = try GeoJSONCodec.decodePoint(geometryValue, path: "geometry")
        case "Polygon", "MultiPolygon":
            let area = try GeoJSONCodec.decodePolygonal(geometry, limits: limits)
            guard let inside = GEOSContext.current.pointOnSurface(area.polygons) else {
                throw GeoJSONCodec.geometryError("geometry", "could not find a point inside the polygon")
            }
            location = inside
            perimeter = area
        default:
            throw GeoJSONCodec.geometryError("geometry.type", "geometry must be a Point (or a Polygon/MultiPolygon used as the perimeter), got \(geometryType)")
        }
        if let p = properties.value("perimeter") {
            perimeter = try GeoJSONCodec.decodePerimeter(p, path: properties.path("perimeter"), limits: limits)
        }

        let name = try properties.string("name", maxLength: BeaconLimits.maxNameLength)
        let description = try properties.optionalString("description", maxLength: BeaconLimits.maxDescriptionLength)
        return BeaconDraft(
            id: id,
            name: name,
            description: description,
            location: location,
            perimeter: perimeter ?? .circle(radiusM: BeaconLimits.defaultRadiusM),
            lifetime: try decodeLifetime(properties),
            members: try decodeVisibility(properties),
            tags: try decodeTags(properties),
            relationships: try decodeRelationships(properties),
            content: try decodeContent(properties),
            tracksOwner: try properties.optionalBool("tracks_owner") ?? false,
            contentPolicy: try decodeContentPolicy(properties),
            claimedOwner: try properties.optionalString("owner", maxLength: 100),
            claimedService: try properties.optionalString("service", maxLength: 100)
        )
    }

    /// `content_policy`: `owner` (default), `followers` or `anyone`.
    static func decodeContentPolicy(_ properties: ObjectReader) throws(DBeaconError) -> ContentPolicy {
        guard let raw = try properties.optionalString("content_policy", maxLength: 40) else { return .owner }
        guard let policy = ContentPolicy(rawValue: raw) else {
            throw DBeaconError.invalid(properties.path("content_policy"),
                                       "content_policy must be one of \(ContentPolicy.allCases.map(\.rawValue).joined(separator: ", "))",
                                       code: "invalid_value")
        }
        return policy
    }

    /// `lifetime` (`{"start"?, "end"?}`, RFC 3339): nil when absent or when both ends are missing;
    /// 422 `invalid_lifetime` when `end` is not after `start`.
    package static func decodeLifetime(_ properties: ObjectReader, key: String = "lifetime") throws(DBeaconError) -> Lifetime? {
        guard let lifetime = try properties.optionalObject(key) else { return nil }
        let start = try lifetime.optionalTimestamp("start")
        let end = try lifetime.optionalTimestamp("end")
        if start == nil && end == nil { return nil }
        if let start, let end, end <= start {
            throw DBeaconError.invalid(lifetime.path("end"), "end must be after start", code: "invalid_lifetime")
        }
        return Lifetime(start: start, end: end)
    }

    /// `visibility.members`: nil (a public beacon) without `visibility`, else the user ids it lists
    /// (possibly none).
    private static func decodeVisibility(_ properties: ObjectReader) throws(DBeaconError) -> [UserID]? {
        guard let visibility = try properties.optionalObject("visibility") else { return nil }
        let raw = try visibility.optionalStringArray("members", maxCount: BeaconLimits.maxMembers, maxLength: 100) ?? []
        return try decodeUserIDs(raw, path: visibility.path("members"))
    }

    /// User ids (`usr_…`) in order, each once; 422 `invalid_id` naming the first that is not one.
    package static func decodeUserIDs(_ raw: [String], path: String) throws(DBeaconError) -> [UserID] {
        var members: [UserID] = []
        for (i, s) in raw.enumerated() {
            guard let uid = UserID(s) else {
                throw DBeaconError.invalid("\(path)[\(i)]", "not a user id (usr_…): \(s)", code: "invalid_id")
            }
            if !members.contains(uid) { members.append(uid) }
        }
        return members
    }

    /// Tags are case-insensitive slugs; they are stored lower-case, without duplicates.
    package static func decodeTags(_ properties: ObjectReader) throws(DBeaconError) -> [String] {
        let raw = try properties.optionalStringArray("tags", maxCount: BeaconLimits.maxTags, maxLength: BeaconLimits.maxTagLength) ?? []
        var tags: [String] = []
        for (i, t) in raw.enumerated() {
            let tag = try normalizeTag(t, path: "\(properties.path("tags"))[\(i)]")
            if !tags.contains(tag) { tags.append(tag) }
        }
        return tags
    }

    /// Lower-cases a tag and checks it is a slug (`food`, `city-tour`, `cat:music`).
    package static func normalizeTag(_ raw: String, path: String) throws(DBeaconError) -> String {
        // Exactly the schema's `^ *[A-Za-z0-9_:-]{1,40} *$`: only U+0020 is trimmed and only ASCII is
        // lower-cased (Unicode case mapping would turn U+212A KELVIN SIGN into a valid `k`).
        var bytes = raw.utf8[...]
        while bytes.first == 0x20 { bytes.removeFirst() }
        while bytes.last == 0x20 { bytes.removeLast() }
        let ok = !bytes.isEmpty && bytes.count <= BeaconLimits.maxTagLength && bytes.allSatisfy {
            ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x30 && $0 <= 0x39)
                || $0 == 0x2D || $0 == 0x5F || $0 == 0x3A
        }
        guard ok else {
            throw DBeaconError.invalid(path, "a tag is 1–\(BeaconLimits.maxTagLength) letters, digits, '-', '_' or ':'", code: "invalid_tag")
        }
        return String(decoding: bytes.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }, as: UTF8.self)
    }

    /// `relationships`: each a `type` (a tag), a `target` beacon id and an optional `order`; the
    /// same type and target twice is 422 `duplicate`.
    private static func decodeRelationships(_ properties: ObjectReader) throws(DBeaconError) -> [Relationship] {
        guard let items = try properties.optionalArray("relationships", maxCount: BeaconLimits.maxRelationships) else { return [] }
        var result: [Relationship] = []
        for (i, item) in items.enumerated() {
            let r = try ObjectReader(item, path: "\(properties.path("relationships"))[\(i)]")
            let type = try r.string("type", maxLength: 40)
            let normalizedType = try normalizeTag(type, path: r.path("type"))
            let targetRaw = try r.string("target", maxLength: 100)
            guard let target = BeaconID(targetRaw) else {
                throw DBeaconError.invalid(r.path("target"), "not a beacon id (bcn_…): \(targetRaw)", code: "invalid_id")
            }
            let order = try r.optionalInt("order", range: -1_000_000...1_000_000)
            let relationship = Relationship(type: normalizedType, target: target, order: order)
            if result.contains(where: { $0.type == relationship.type && $0.target == relationship.target }) {
                throw DBeaconError.invalid(r.path("target"), "duplicate relationship \(normalizedType) → \(targetRaw)", code: "duplicate")
            }
            result.append(relationship)
        }
        return result
    }

    /// `content` as a Feature carries it: each reference with `added_by` and `created_at` read
    /// back, since a merge patch sends the items as the Feature showed them.
    private static func decodeContent(_ properties: ObjectReader) throws(DBeaconError) -> [ContentRef] {
        guard let items = try properties.optionalArray("content", maxCount: BeaconLimits.maxContent) else { return [] }
        var result: [ContentRef] = []
        for (i, item) in items.enumerated() {
            let c = try ObjectReader(item, path: "\(properties.path("content"))[\(i)]")
            var ref = try decodeContentRef(c)
            ref.addedBy = try c.optionalString("added_by", maxLength: 100).flatMap(UserID.init)
            ref.createdAt = try c.optionalTimestamp("created_at")
            result.append(ref)
        }
        return result
    }

    /// One content reference: `kind` (a slug such as image, video, audio, web), an absolute
    /// http(s) `url`, an optional `title`.
    package static func decodeContentRef(_ c: ObjectReader) throws(DBeaconError) -> ContentRef {
        let kind = try normalizeTag(try c.string("kind", maxLength: 40), path: c.path("kind"))
        let url = try c.string("url", maxLength: BeaconLimits.maxURLLength)
        guard isHTTPURL(url) else {
            throw DBeaconError.invalid(c.path("url"), "url must be an absolute http or https URL (RFC 3986: ASCII, non-ASCII "
                                       + "characters percent-encoded)", code: "invalid_url")
        }
        let title = try c.optionalString("title", maxLength: 500)
        return ContentRef(kind: kind, url: url, title: title)
    }

    /// An absolute `http`/`https` URI with a host, made only of the characters RFC 3986 allows
    /// (apps and the OpenAPI `format: uri` reject anything else, such as raw Unicode).
    package static func isHTTPURL(_ url: String) -> Bool {
        let bytes = Array(url.utf8)
        let lower = url.lowercased()
        let scheme = lower.hasPrefix("https://") ? 8 : lower.hasPrefix("http://") ? 7 : 0
        guard scheme > 0, bytes.count > scheme, bytes[scheme] != UInt8(ascii: "/") else { return false }
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "%") {
                guard i + 2 < bytes.count, bytes[i + 1].isHexDigit, bytes[i + 2].isHexDigit else { return false }
                i += 3
                continue
            }
            guard uriBytes.contains(b) else { return false }
            i += 1
        }
        return true
    }

    /// Unreserved and reserved characters of RFC 3986.
    private static let uriBytes = Set(Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=".utf8))

    // MARK: Encoding

    /// The beacon as a GeoJSON Feature, as its viewer may see it (only the visibility gate
    /// makes a `VisibleBeacon`).
    package static func encode(_ visible: VisibleBeacon) -> JSONValue {
        feature(of: visible.beacon)
    }

    /// The Feature of a beacon as stored: for merge patches (the owner's own beacon), never
    /// for answers.
    fileprivate static func feature(of beacon: Beacon) -> JSONValue {
        .object(JSONObject([
            ("type", "Feature"),
            ("id", .string(beacon.id.rawValue)),
            ("geometry", GeoJSONCodec.encodePoint(beacon.location)),
            ("properties", .object(properties(of: beacon))),
        ]))
    }

    /// The Feature's properties. With `perimeterPlaceholder`, `perimeter` is `null` in the
    /// result, for a writer that splices the already-serialised perimeter in its place.
    package static func encodeProperties(_ visible: VisibleBeacon, perimeterPlaceholder: Bool = false) -> JSONObject {
        properties(of: visible.beacon, perimeterPlaceholder: perimeterPlaceholder)
    }

    /// The properties of a beacon as stored. Not for answers (those take a `VisibleBeacon`): for
    /// the changed values of `beacon.updated`, which are redacted for each recipient as read.
    fileprivate static func properties(of beacon: Beacon, perimeterPlaceholder: Bool = false) -> JSONObject {
        var p = JSONObject()
        p["name"] = .string(beacon.name)
        p["description"] = .optional(beacon.description)
        p["owner"] = .string(beacon.owner.rawValue)
        p["perimeter"] = perimeterPlaceholder ? .null : GeoJSONCodec.encodePerimeter(beacon.perimeter)
        p["lifetime"] = beacon.lifetime.map(encodeLifetime) ?? .null
        p["visibility"] = beacon.members.map { .object(["members": .array($0.map { .string($0.rawValue) })]) } ?? .null
        p["tags"] = .array(beacon.tags.map(JSONValue.string))
        p["relationships"] = relationships(of: beacon)
        p["content"] = .array(beacon.content.map(encodeContent))
        p["tracks_owner"] = .bool(beacon.tracksOwner)
        p["content_policy"] = .string(beacon.contentPolicy.rawValue)
        if let service = beacon.service { p["service"] = .string(service) }
        p["followers_count"] = .int(beacon.followersCount)
        p["version"] = .int(beacon.version)
        p["created_at"] = .string(beacon.createdAt.rfc3339)
        p["updated_at"] = .string(beacon.updatedAt.rfc3339)
        return p
    }

    /// The `relationships` property of a beacon as its viewer sees it.
    package static func encodeProperties(relationshipsOf visible: VisibleBeacon) -> JSONValue {
        relationships(of: visible.beacon)
    }

    /// The `relationships` array: `type`, `target`, and `order` when set.
    fileprivate static func relationships(of beacon: Beacon) -> JSONValue {
        .array(beacon.relationships.map { r in
            var o: JSONObject = ["type": .string(r.type), "target": .string(r.target.rawValue)]
            if let order = r.order { o["order"] = .int(order) }
            return .object(o)
        })
    }

    /// `{"start","end"}`, an open end as null.
    package static func encodeLifetime(_ l: Lifetime) -> JSONValue {
        .object(["start": .optional(l.start?.rfc3339), "end": .optional(l.end?.rfc3339)])
    }

    /// A content reference: `kind`, `url`, `title` (null when absent), and `added_by` and
    /// `created_at` when set.
    package static func encodeContent(_ c: ContentRef) -> JSONValue {
        var o: JSONObject = ["kind": .string(c.kind), "url": .string(c.url), "title": .optional(c.title)]
        if let by = c.addedBy { o["added_by"] = .string(by.rawValue) }
        if let at = c.createdAt { o["created_at"] = .string(at.rfc3339) }
        return .object(o)
    }

    /// A FeatureCollection of already-encoded features.
    package static func collection(_ features: [JSONValue], nextCursor: String? = nil, includeCursor: Bool = false) -> JSONValue {
        var o: JSONObject = ["type": "FeatureCollection", "features": .array(features)]
        if includeCursor { o["next_cursor"] = .optional(nextCursor) }
        return .object(o)
    }
}

private extension UInt8 {
    /// Whether the byte is an ASCII hexadecimal digit, in either case.
    var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
}

// MARK: The stored form (decisions and event values, never answers)

// The two uses of a beacon's Feature that take it unredacted live in this file, so the
// encoders of the stored form can stay private to it.

extension BeaconFeatureCodec {
    /// Applies an RFC 7396 merge patch to the beacon's Feature and reads the result: the draft
    /// `PATCH /v1/beacons/{id}` asks for. The id may be repeated, never changed.
    package static func patched(_ current: Beacon, with patch: JSONValue, limits: GeoLimits) throws(DBeaconError) -> BeaconDraft {
        guard case .object = patch else {
            throw DBeaconError.invalid("$", "a merge patch must be a JSON object", code: "invalid_type")
        }
        let merged = feature(of: current).mergePatched(with: patch)
        if let newID = merged["id"], newID != .string(current.id.rawValue) {
            throw DBeaconError.invalid("id", "a beacon's id cannot change", code: "read_only")
        }
        return try decodeDraft(merged, limits: limits)
    }
}

/// Changed values in `beacon.updated` events, as the Feature shows them (`location` as a
/// GeoJSON Point, everything else as its `properties` member).
package struct FeatureValueEncoding: BeaconValueEncoding {
    package init() {}

    /// The values of `fields` as the Feature shows them: `location` as a Point, any other as its
    /// property (null for a field the Feature does not have).
    package func values(of beacon: Beacon, fields: [String]) -> JSONObject {
        let properties = BeaconFeatureCodec.properties(of: beacon)
        var values = JSONObject()
        for field in fields {
            values[field] = field == "location" ? GeoJSONCodec.encodePoint(beacon.location) : properties[field] ?? .null
        }
        return values
    }
}
