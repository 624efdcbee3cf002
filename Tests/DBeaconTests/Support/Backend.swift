import DBeaconStore
import Foundation
import Testing

/// The stores the conformance tests run on: SpatiaLite always, PostGIS when
/// `DBEACON_POSTGRES_URL` names a database with PostGIS (`.ci/run` starts one).
enum Backend: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case spatialite
    case postgis

    static let postgresURL = ProcessInfo.processInfo.environment["DBEACON_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }

    /// The deadline of stores a test opens itself (as `TestHarness` does for its own): the whole
    /// suite shares two cores and one PostgreSQL, so a transaction may queue for seconds. The
    /// deadline itself is tested on its own (DatabaseFaultTests, scripts/fault-test.py).
    static let testDeadlineSeconds = 180.0
    static let testDeadline = DatabaseDeadline(seconds: testDeadlineSeconds)

    /// The backends available here.
    static var all: [Backend] { postgresURL == nil ? [.spatialite] : [.spatialite, .postgis] }

    var testDescription: String { rawValue }

    /// A new, empty database: a file in `directory`, or a fresh PostgreSQL schema, so tests
    /// stay independent and run in parallel.
    func freshDatabase(in directory: URL) throws -> String {
        switch self {
        case .spatialite:
            return directory.appendingPathComponent("test.sqlite").path
        case .postgis:
            guard let url = Self.postgresURL else { throw BackendUnavailable() }
            let schema = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(24)
            return url + (url.contains("?") ? "&" : "?") + "schema=\(schema)"
        }
    }

    struct BackendUnavailable: Error {}
}
