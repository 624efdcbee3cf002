import DBeaconAPI
import DBeaconCore
import DBeaconGeo
import Foundation
import Testing

/// One invalid input: the Feature's JSON text, and the error code and path it must produce.
struct InvalidCase: CustomTestStringConvertible, Sendable {
    let name: String
    let body: String
    let code: String
    let path: String
    var testDescription: String { name }
}

/// A Feature around a perimeter/geometry given as JSON text.
func featureText(geometry: String = #"{"type":"Point","coordinates":[9.18,48.78]}"#, properties: String) -> String {
    #"{"type":"Feature","geometry":\#(geometry),"properties":\#(properties)}"#
}

func perimeterText(_ perimeter: String) -> String {
    featureText(properties: #"{"name":"x","perimeter":\#(perimeter)}"#)
}

/// Invalid beacons: each must be refused with a 422 naming the path (the HTTP tests send the
/// same corpus through the API and check that nothing is stored and the server stays healthy).
let invalidBeaconCorpus: [InvalidCase] = [
    InvalidCase(name: "latitude out of range", body: featureText(geometry: #"{"type":"Point","coordinates":[9.18,91]}"#, properties: #"{"name":"x"}"#), code: "invalid_geometry", path: "geometry.coordinates[1]"),
    InvalidCase(name: "longitude out of range", body: featureText(geometry: #"{"type":"Point","coordinates":[181,48]}"#, properties: #"{"name":"x"}"#), code: "invalid_geometry", path: "geometry.coordinates[0]"),
    InvalidCase(name: "NaN coordinate", body: featureText(geometry: #"{"type":"Point","coordinates":[NaN,48]}"#, properties: #"{"name":"x"}"#), code: "invalid_geometry", path: "geometry.coordinates[0]"),
    InvalidCase(name: "Infinity coordinate", body: featureText(geometry: #"{"type":"Point","coordinates":[9,Infinity]}"#, properties: #"{"name":"x"}"#), code: "invalid_geometry", path: "geometry.coordinates[1]"),
    InvalidCase(name: "overflowing number", body: featureText(geometry: #"{"type":"Point","coordinates":[9,1e999]}"#, properties: #"{"name":"x"}"#), code: "invalid_geometry", path: "geometry.coordinates[1]"),
    InvalidCase(name: "position with one number", body: featureText(geometry: #"{"type":"Point","coordinates":[9]}"#, properties: #"{"name":"x"}"#), code: "invalid_geometry", path: "geometry.coordinates"),
    InvalidCase(name: "string coordinate", body: featureText(geometry: #"{"type":"Point","coordinates":["9",48]}"#, properties: #"{"name":"x"}"#), code: "invalid_geometry", path: "geometry.coordinates[0]"),
    InvalidCase(name: "missing geometry", body: #"{"type":"Feature","properties":{"name":"x"}}"#, code: "missing_field", path: "geometry"),
    InvalidCase(name: "LineString geometry", body: featureText(geometry: #"{"type":"LineString","coordinates":[[9,48],[9.1,48.1]]}"#, properties: #"{"name":"x"}"#), code: "invalid_geometry", path: "geometry.type"),
    InvalidCase(name: "missing name", body: featureText(properties: #"{"tags":["food"]}"#), code: "missing_field", path: "properties.name"),
    InvalidCase(name: "name of wrong type", body: featureText(properties: #"{"name":42}"#), code: "invalid_type", path: "properties.name"),
    InvalidCase(name: "not a Feature", body: #"{"type":"FeatureCollection","features":[]}"#, code: "invalid_type", path: "type"),
    InvalidCase(name: "ring not closed", body: perimeterText(#"{"type":"Polygon","coordinates":[[[9,48],[9.1,48],[9.1,48.1],[9,48.1]]]}"#), code: "invalid_geometry", path: "properties.perimeter.coordinates[0]"),
    InvalidCase(name: "ring with three positions", body: perimeterText(#"{"type":"Polygon","coordinates":[[[9,48],[9.1,48],[9,48]]]}"#), code: "invalid_geometry", path: "properties.perimeter.coordinates[0]"),
    InvalidCase(name: "self-intersecting bow tie", body: perimeterText(#"{"type":"Polygon","coordinates":[[[9,48],[9.1,48.1],[9.1,48],[9,48.1],[9,48]]]}"#), code: "invalid_geometry", path: "properties.perimeter"),
    InvalidCase(name: "hole outside the shell", body: perimeterText(#"{"type":"Polygon","coordinates":[[[9,48],[9.1,48],[9.1,48.1],[9,48.1],[9,48]],[[9.2,48.2],[9.3,48.2],[9.3,48.3],[9.2,48.2]]]}"#), code: "invalid_geometry", path: "properties.perimeter"),
    InvalidCase(name: "overlapping multipolygon parts", body: perimeterText(#"{"type":"MultiPolygon","coordinates":[[[[9,48],[9.1,48],[9.1,48.1],[9,48.1],[9,48]]],[[[9.05,48.05],[9.15,48.05],[9.15,48.15],[9.05,48.15],[9.05,48.05]]]]}"#), code: "invalid_geometry", path: "properties.perimeter"),
    InvalidCase(name: "antimeridian-spanning polygon", body: perimeterText(#"{"type":"Polygon","coordinates":[[[179,0],[-179,0],[-179,1],[179,1],[179,0]]]}"#), code: "invalid_geometry", path: "properties.perimeter.coordinates[0][1]"),
    InvalidCase(name: "polygon vertex out of range", body: perimeterText(#"{"type":"Polygon","coordinates":[[[9,48],[9.1,95],[9.1,48.1],[9,48]]]}"#), code: "invalid_geometry", path: "properties.perimeter.coordinates[0][1][1]"),
    InvalidCase(name: "negative radius", body: perimeterText(#"{"type":"Circle","radius_m":-5}"#), code: "invalid_geometry", path: "properties.perimeter.radius_m"),
    InvalidCase(name: "zero radius", body: perimeterText(#"{"type":"Circle","radius_m":0}"#), code: "invalid_geometry", path: "properties.perimeter.radius_m"),
    InvalidCase(name: "huge radius", body: perimeterText(#"{"type":"Circle","radius_m":1e9}"#), code: "invalid_geometry", path: "properties.perimeter.radius_m"),
    InvalidCase(name: "NaN radius", body: perimeterText(#"{"type":"Circle","radius_m":NaN}"#), code: "not_finite", path: "properties.perimeter.radius_m"),
    InvalidCase(name: "unknown perimeter type", body: perimeterText(#"{"type":"Hexagon"}"#), code: "invalid_geometry", path: "properties.perimeter.type"),
    InvalidCase(name: "empty multipolygon", body: perimeterText(#"{"type":"MultiPolygon","coordinates":[]}"#), code: "invalid_geometry", path: "properties.perimeter.coordinates"),
    InvalidCase(name: "lifetime end before start", body: featureText(properties: #"{"name":"x","lifetime":{"start":"2026-11-21T14:00:00Z","end":"2026-11-21T12:00:00Z"}}"#), code: "invalid_lifetime", path: "properties.lifetime.end"),
    InvalidCase(name: "lifetime not RFC 3339", body: featureText(properties: #"{"name":"x","lifetime":{"start":"tomorrow"}}"#), code: "invalid_timestamp", path: "properties.lifetime.start"),
    InvalidCase(name: "bad tag", body: featureText(properties: #"{"name":"x","tags":["no spaces please"]}"#), code: "invalid_tag", path: "properties.tags[0]"),
    // The server reads tags exactly as the schema's pattern says: spaces (U+0020) trimmed, ASCII only.
    InvalidCase(name: "tag with a tab", body: featureText(properties: #"{"name":"x","tags":["food","\tmusic"]}"#), code: "invalid_tag", path: "properties.tags[1]"),
    InvalidCase(name: "tag lower-casing to ASCII (Kelvin sign)", body: featureText(properties: #"{"name":"x","tags":["\u212A"]}"#), code: "invalid_tag", path: "properties.tags[0]"),
    InvalidCase(name: "bad member id", body: featureText(properties: #"{"name":"x","visibility":{"members":["ann"]}}"#), code: "invalid_id", path: "properties.visibility.members[0]"),
    InvalidCase(name: "bad relationship target", body: featureText(properties: #"{"name":"x","relationships":[{"type":"related","target":"nope"}]}"#), code: "invalid_id", path: "properties.relationships[0].target"),
    InvalidCase(name: "content URL not http", body: featureText(properties: #"{"name":"x","content":[{"kind":"web","url":"javascript:alert(1)"}]}"#), code: "invalid_url", path: "properties.content[0].url"),
    InvalidCase(name: "bad client id", body: #"{"type":"Feature","id":"evil/../id","geometry":{"type":"Point","coordinates":[9,48]},"properties":{"name":"x"}}"#, code: "invalid_id", path: "id"),
    InvalidCase(name: "tracks_owner not a boolean", body: featureText(properties: #"{"name":"x","tracks_owner":"yes"}"#), code: "invalid_type", path: "properties.tracks_owner"),
]

@Suite(.bounded) struct GeoJSONValidationTests {
    @Test(arguments: invalidBeaconCorpus)
    func rejectsInvalidBeacons(_ c: InvalidCase) throws {
        let json = try JSONParser.parse(c.body)
        do {
            _ = try BeaconFeatureCodec.decodeDraft(json)
            Issue.record("accepted \(c.name)")
        } catch {
            #expect(error.kind == .unprocessable)
            #expect(error.code == c.code, "\(c.name): \(error)")
            #expect(error.path == c.path, "\(c.name): \(error)")
        }
    }

    @Test func reportsTheGEOSReasonAndLocation() throws {
        let json = try JSONParser.parse(perimeterText(#"{"type":"Polygon","coordinates":[[[9,48],[9.1,48.1],[9.1,48],[9,48.1],[9,48]]]}"#))
        #expect {
            try BeaconFeatureCodec.decodeDraft(json)
        } throws: { error in
            let message = (error as? DBeaconError)?.message ?? ""
            return message.contains("Self-intersection") && message.contains("9.05")
        }
    }

    @Test func enforcesTheVertexLimit() throws {
        var ring: [(Double, Double)] = (0..<200).map { i in
            let a = Double(i) / 200 * 2 * .pi
            return (9.18 + 0.01 * cos(a), 48.78 + 0.01 * sin(a))
        }
        ring.append(ring[0])
        let json = feature(perimeter: polygon([ring]))
        #expect(throws: DBeaconError.self) { try BeaconFeatureCodec.decodeDraft(json, limits: GeoLimits(maxVertices: 100)) }
        #expect(try BeaconFeatureCodec.decodeDraft(json, limits: GeoLimits(maxVertices: 201)).perimeter.vertexCount == 201)
    }

    @Test func normalisesWindingToTheRightHandRule() throws {
        // Exterior clockwise, hole counter-clockwise: both wrong, both accepted and fixed.
        let outer = Array(box(9, 48, 9.1, 48.1).reversed())
        let hole = box(9.04, 48.04, 9.06, 48.06)
        let draft = try BeaconFeatureCodec.decodeDraft(feature(perimeter: polygon([outer, hole])))
        let p = try #require(draft.perimeter.polygons.first)
        #expect(GeoJSONCodec.signedArea(p.exterior) > 0)
        #expect(GeoJSONCodec.signedArea(p.rings[1]) < 0)
    }

    @Test func acceptsAntimeridianSplitAsMultiPolygon() throws {
        let text = perimeterText(#"{"type":"MultiPolygon","coordinates":[[[[179,0],[180,0],[180,1],[179,1],[179,0]]],[[[-180,0],[-179,0],[-179,1],[-180,1],[-180,0]]]]}"#)
        let draft = try BeaconFeatureCodec.decodeDraft(try JSONParser.parse(text))
        #expect(draft.perimeter.polygons.count == 2)
    }

    /// RFC 7946 edges are straight in longitude/latitude: Antarctica's edge from −180 to 180
    /// along −90 runs across the map, not across ±180 (Geofabrik's world index has it); a
    /// world band and the whole-world box too. An edge jumping across ±180 is still refused.
    @Test(arguments: [
        #"[[[-180,-90],[180,-90],[180,-60],[-180,-60],[-180,-90]]]"#,
        #"[[[-180,-10],[180,-10],[180,10],[-180,10],[-180,-10]]]"#,
        #"[[[-180,-90],[180,-90],[180,90],[-180,90],[-180,-90]]]"#,
    ]) func acceptsEdgesAlongTheWholeMap(_ coordinates: String) throws {
        let text = perimeterText(#"{"type":"Polygon","coordinates":"# + coordinates + "}")
        let draft = try BeaconFeatureCodec.decodeDraft(try JSONParser.parse(text))
        #expect(draft.perimeter.polygons.count == 1)
        #expect(PreparedPerimeter(draft.perimeter.polygons)?.covers(Position(lon: 0, lat: coordinates.contains("60") ? -75 : 0)) == true)
    }

    @Test func usesAPolygonGeometryAsThePerimeter() throws {
        let text = featureText(geometry: #"{"type":"Polygon","coordinates":[[[9,48],[9.1,48],[9.1,48.1],[9,48.1],[9,48]]]}"#, properties: #"{"name":"park"}"#)
        let draft = try BeaconFeatureCodec.decodeDraft(try JSONParser.parse(text))
        #expect(draft.perimeter.polygons.count == 1)
        #expect(BoundingBox(west: 9, south: 48, east: 9.1, north: 48.1).contains(draft.location))
    }

    @Test func normalisesTagsAndDefaultsToACircle() throws {
        let draft = try BeaconFeatureCodec.decodeDraft(try JSONParser.parse(featureText(properties: #"{"name":"x","tags":["Food"," food","Cafe"]}"#)))
        #expect(draft.tags == ["food", "cafe"])
        #expect(draft.perimeter == .circle(radiusM: BeaconLimits.defaultRadiusM))
    }

    @Test func wkbRoundTripsExactly() throws {
        let polygons = [Polygon(rings: [[Position(lon: 9.123456789012345, lat: 48.1), Position(lon: 9.2, lat: 48.1),
                                         Position(lon: 9.2, lat: 48.2), Position(lon: 9.123456789012345, lat: 48.1)]])]
        #expect(try WKB.decodePolygons(WKB.multiPolygon(polygons)) == polygons)
    }
}
