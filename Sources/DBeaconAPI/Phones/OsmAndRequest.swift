package import DBeaconCore
import DBeaconServices
import Foundation

/// One report of the OsmAnd protocol (Traccar Client, OsmAnd): the device, and the fix if it
/// has one (a heartbeat has none).
package struct OsmAndReport: Sendable {
    /// The device identifier the app sends: a DBeacon device token.
    package var device: String
    /// The fix's position; nil for a heartbeat or a report marked `valid=false`.
    package var position: Position?
    /// Accuracy in metres; 0 when not sent (or negative: unknown).
    package var accuracyM: Double
    /// When the fix was taken; nil when not sent (the controller takes the time of the request).
    package var timestamp: Timestamp?
}

/// The OsmAnd protocol as Traccar's decoder reads it: `id` (or `deviceid`), `lat` and `lon`
/// (or `location=lat,lon`; decimal numbers), `timestamp` (UNIX seconds below 2147483647, else
/// milliseconds; or ISO 8601; or `yyyy-MM-dd HH:mm:ss` in UTC, `+` standing for the space as in
/// any query string), `accuracy` (metres), `valid` (`false`: not a fix, left alone); other
/// parameters (`speed`, `bearing`, `altitude`, `batt`, …) are accepted and not used. Or the Traccar
/// Client's JSON: `{"device_id", "location": {"timestamp", "coords": {"latitude",
/// "longitude", "accuracy", …}, …}}`.
package enum OsmAndRequest {
    /// Reads the query or form fields: a missing `id`/`deviceid` is 401 (it is the credential), an
    /// unreadable number or timestamp 422 naming the field.
    package static func decode(_ fields: [String: String]) throws(DBeaconError) -> OsmAndReport {
        guard let device = fields["id"] ?? fields["deviceid"], !device.isEmpty, device.utf8.count <= 200 else {
            throw DBeaconError.unauthorized("id (the device identifier: a device token from POST /v1/me/devices) is required")
        }
        var lat = fields["lat"], lon = fields["lon"]
        if lat == nil, lon == nil, let location = fields["location"] {
            let parts = location.split(separator: ",")
            if parts.count == 2 { (lat, lon) = (String(parts[0]), String(parts[1])) }
        }
        var position: Position?
        if lat != nil || lon != nil {
            guard let latText = lat, let la = Double(decimal: latText.trimmingCharacters(in: .whitespaces)) else {
                throw DBeaconError.invalid("lat", "lat must be a decimal number", code: "invalid_number")
            }
            guard let lonText = lon, let lo = Double(decimal: lonText.trimmingCharacters(in: .whitespaces)) else {
                throw DBeaconError.invalid("lon", "lon must be a decimal number", code: "invalid_number")
            }
            position = try Position.checked(lat: la, lon: lo, latPath: "lat", lonPath: "lon")
        }
        // `valid=false`: the app says the position is not a fix (no satellite lock). Accepted and
        // left alone, as a heartbeat.
        if let valid = fields["valid"]?.lowercased(), valid == "false" || valid == "0" { position = nil }
        var accuracy = 0.0
        if let raw = fields["accuracy"] {
            guard let a = Double(decimal: raw.trimmingCharacters(in: .whitespaces)) else {
                throw DBeaconError.invalid("accuracy", "accuracy is metres, a decimal number", code: "invalid_number")
            }
            accuracy = try FenceConfig.accuracy(a, path: "accuracy", strict: false)
        }
        var timestamp: Timestamp?
        if let raw = fields["timestamp"] { timestamp = try time(raw, "timestamp") }
        return OsmAndReport(device: device, position: position, accuracyM: accuracy, timestamp: timestamp)
    }

    /// Reads the Traccar Client's JSON: `device_id` (401 when missing), `location.coords`
    /// (`latitude`, `longitude`, `accuracy`) and `location.timestamp`.
    package static func decodeJSON(_ body: ObjectReader) throws(DBeaconError) -> OsmAndReport {
        guard let device = try body.optionalString("device_id", maxLength: 200), !device.isEmpty else {
            throw DBeaconError.unauthorized("device_id (a device token from POST /v1/me/devices) is required")
        }
        let location = try body.object("location")
        let coords = try location.object("coords")
        let position = try Position.checked(lat: try coords.number("latitude"), lon: try coords.number("longitude"),
                                            latPath: coords.path("latitude"), lonPath: coords.path("longitude"))
        let accuracy = try FenceConfig.accuracy(try coords.optionalNumber("accuracy"), path: coords.path("accuracy"), strict: false)
        var timestamp: Timestamp?
        if let raw = try location.optionalString("timestamp", maxLength: 64) { timestamp = try time(raw, location.path("timestamp")) }
        return OsmAndReport(device: device, position: position, accuracyM: accuracy, timestamp: timestamp)
    }

    /// Traccar's timestamp forms.
    static func time(_ raw: String, _ path: String) throws(DBeaconError) -> Timestamp {
        let text = raw.trimmingCharacters(in: .whitespaces)
        if let n = Int64(text) {
            guard n >= 0 else { throw DBeaconError.invalid(path, "\(path) must not be negative", code: "out_of_range") }
            return n < 2_147_483_647 ? Timestamp(millis: n * 1000) : Timestamp(millis: n)
        }
        if let t = Timestamp(rfc3339: text) { return t }
        // `yyyy-MM-dd HH:mm:ss` (taken as UTC), or ISO 8601 without an offset.
        let iso = text.replacingOccurrences(of: " ", with: "T")
        if let t = Timestamp(rfc3339: iso + "Z") { return t }
        throw DBeaconError.invalid(path, "\(path) is UNIX seconds or milliseconds, ISO 8601, or yyyy-MM-dd HH:mm:ss", code: "invalid_timestamp")
    }
}
