import ArgumentParser
import Foundation

/// `dbeacon bench …` runs `dbeacon-bench …`, the benchmark's own executable built next to this
/// one (`swift build -c release --product dbeacon-bench`), so the server's binary stays lean.
struct BenchForwarder: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Run the benchmark of BENCHMARKS.md (the dbeacon-bench executable; see dbeacon-bench --help).",
        discussion: """
            Examples:
              swift build -c release --product dbeacon-bench
              dbeacon bench --beacons 100000 --duration 3
            """
    )

    @Argument(parsing: .allUnrecognized, help: "Options of dbeacon-bench.") var arguments: [String] = []

    func run() async throws {
        let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let bench = URL(fileURLWithPath: me).deletingLastPathComponent().appendingPathComponent("dbeacon-bench")
        guard FileManager.default.isExecutableFile(atPath: bench.path) else {
            throw ValidationError("\(bench.path) is not built: swift build -c release --product dbeacon-bench")
        }
        let process = Process()
        process.executableURL = bench
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        if process.terminationStatus != 0 { throw ExitCode(process.terminationStatus) }
    }
}
