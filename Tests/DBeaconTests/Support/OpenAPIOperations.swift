import Foundation

/// The operations of `schema/openapi.yaml`, for the tests that must cover every one.
enum OpenAPIOperations {
    /// `METHOD /path` (OpenAPI spelling) of every operation, with its operationId.
    static func all() throws -> [String: String] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("schema/openapi.yaml")
        var operations: [String: String] = [:]
        var inPaths = false
        var path: String?, method: String?
        for line in try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("paths:") { inPaths = true; continue }
            guard inPaths else { continue }
            if !line.isEmpty, !line.hasPrefix(" "), !line.hasPrefix("#") { break }
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
                path = String(line.dropFirst(2).dropLast())
            } else if line.hasPrefix("    "), !line.hasPrefix("     "), line.hasSuffix(":") {
                let m = line.trimmingCharacters(in: .whitespaces).dropLast().uppercased()
                method = ["GET", "POST", "PUT", "PATCH", "DELETE"].contains(m) ? m : nil
            } else if let path, let method, line.trimmingCharacters(in: .whitespaces).hasPrefix("operationId:") {
                operations["\(method) \(path)"] = line.split(separator: ":", maxSplits: 1)[1].trimmingCharacters(in: .whitespaces)
            }
        }
        return operations
    }
}
