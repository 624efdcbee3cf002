import DBeaconCore
import DBeaconApp
import DBeaconHTTP
import DBeaconKit
import Foundation

/// Printing helpers shared by the commands.
enum Output {
    /// Indented JSON on stdout.
    static func printJSON(_ value: JSONValue) {
        var out = ""
        pretty(value, indent: 0, into: &out)
        print(out)
    }

    private static func pretty(_ value: JSONValue, indent: Int, into out: inout String) {
        let pad = String(repeating: "  ", count: indent + 1), close = String(repeating: "  ", count: indent)
        switch value {
        case .array(let a) where !a.isEmpty && a.contains(where: { $0.arrayValue != nil || $0.objectValue != nil }):
            out += "[\n"
            for (i, e) in a.enumerated() {
                out += pad
                pretty(e, indent: indent + 1, into: &out)
                out += i < a.count - 1 ? ",\n" : "\n"
            }
            out += close + "]"
        case .object(let o) where !o.isEmpty:
            out += "{\n"
            for (i, m) in o.members.enumerated() {
                out += pad + JSONValue.string(m.key).jsonString + ": "
                pretty(m.value, indent: indent + 1, into: &out)
                out += i < o.count - 1 ? ",\n" : "\n"
            }
            out += close + "}"
        default:
            out += value.jsonString
        }
    }

    /// A plain text table with left-aligned columns.
    static func table(_ header: [String], _ rows: [[String]]) -> String {
        var widths = header.map(\.count)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, c in i == cells.count - 1 ? c : c.padding(toLength: widths[i], withPad: " ", startingAt: 0) }
                .joined(separator: "  ")
        }
        return ([line(header), line(widths.map { String(repeating: "-", count: $0) })] + rows.map(line)).joined(separator: "\n")
    }

    /// "85 m", "1.2 km".
    static func distance(_ m: Double) -> String {
        m < 1000 ? "\(Int(m.rounded())) m" : String(format: "%.1f km", m / 1000)
    }

    /// "45° NE".
    static func bearing(_ deg: Double) -> String {
        let names = ["N", "NE", "E", "SE", "S", "SW", "W", "NW"]
        return "\(Int(deg.rounded()) % 360)° \(names[Int((deg / 45).rounded()) % 8])"
    }

    /// How long until `end`: "2h 05m", "3d 4h", "ended", "—" when there is no end.
    static func endsIn(_ end: Timestamp?, now: Timestamp) -> String {
        guard let end else { return "—" }
        let s = Int(end.seconds(since: now))
        if s <= 0 { return "ended" }
        if s < 3600 { return "\(s / 60)m" }
        if s < 86_400 { return "\(s / 3600)h \(String(format: "%02d", s % 3600 / 60))m" }
        return "\(s / 86_400)d \(s % 86_400 / 3600)h"
    }

    /// Prints an error the way the API reports it and exits with status 1.
    /// `error: <message> (at <path>) [<status> <code>]`: what went wrong, where, and the API's
    /// status and code (what a script or the documentation would look for).
    static func fail(_ error: DBeaconError) -> Never {
        var text = "error: \(error.message)"
        if let path = error.path, !path.isEmpty { text += " (at \(path))" }
        text += " [\(error.kind.status.code) \(error.code)]"
        FileHandle.standardError.write(Data((text + "\n").utf8))
        exit(1)
    }
}

/// Runs a command body, turning DBeacon errors into a clear message and exit status 1.
func reportingErrors(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as DBeaconError {
        Output.fail(error)
    }
}

extension Timestamp {
    /// The instant of a `Date` the typed client decoded.
    init(date: Date) { self.init(seconds: date.timeIntervalSince1970) }

    /// As a `Date`, for the typed client's parameters.
    var date: Date { Date(timeIntervalSince1970: seconds) }
}

extension Output {
    /// A timestamp as the API writes it (`2026-11-21T12:00:00.000Z`), "—" when there is none.
    static func time(_ date: Date?) -> String {
        date.map { Timestamp(date: $0).rfc3339 } ?? "—"
    }

    /// Reads a JSON file given to a command as the document's `type` (a Feature, a collection).
    static func read<T: Decodable>(_ type: T.Type, file: String, as what: String) throws -> T {
        guard let data = FileManager.default.contents(atPath: file) else { throw DBeaconError.notFound("file \(file)") }
        do {
            return try DBeaconDateTranscoder.jsonDecoder().decode(T.self, from: data)
        } catch {
            throw DBeaconError.unreadable(file, as: what, error)
        }
    }

    /// The GeoJSON type of a perimeter (`Circle`, `Polygon`, `MultiPolygon`).
    static func perimeterType(_ perimeter: Components.Schemas.Perimeter) -> String {
        switch perimeter {
        case .polygon: "Polygon"
        case .multiPolygon: "MultiPolygon"
        case .circle: "Circle"
        }
    }

    /// What an event is about: the name in its data, else the beacon's id.
    static func about(_ event: Components.Schemas.Event) -> String {
        let data = event.data.additionalProperties.value
        return (data["name"] as? String) ?? (data["beacon"] as? String) ?? ""
    }

    /// An event on one line: type, name, beacon.
    static func line(_ event: Components.Schemas.Event) -> String {
        let data = event.data.additionalProperties.value
        return "\(event._type.rawValue)  \(data["name"] as? String ?? "")  \(data["beacon"] as? String ?? "")"
    }

    /// A number as JSON writes it (`2000`, `12.5`).
    static func number(_ value: Double) -> String { JSONWriter.string(.number(value)) }
}
