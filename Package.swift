// swift-tools-version:6.1
import PackageDescription

let settings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "dbeacon",
    platforms: [.macOS(.v15), .iOS(.v17)],
    products: [
        .executable(name: "dbeacon", targets: ["dbeacon"]),
        .executable(name: "dbeacon-bench", targets: ["dbeacon-bench"]),
        // The typed Swift client for apps, generated from schema/openapi.yaml.
        .library(name: "DBeaconKit", targets: ["DBeaconKit"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1",
                 traits: ["FullFoundation"]),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-openapi-generator.git", from: "1.14.3"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        .package(url: "https://github.com/swift-server/swift-openapi-async-http-client.git", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: nil,
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CGEOS",
            pkgConfig: nil,
            providers: [.apt(["libgeos-dev"])]
        ),
        // Karney's geodesics (GeographicLib's C code, shipped in PROJ: libproj-dev, which
        // libspatialite-dev depends on).
        .systemLibrary(
            name: "CGeodesic",
            pkgConfig: nil,
            providers: [.apt(["libproj-dev"])]
        ),
        // Header-only: cache prefetch hints (Swift has no intrinsic for them).
        .systemLibrary(name: "CPrefetch"),
        // Header-only: sixteen decimal digits at once (SSE2 on x86-64, a loop elsewhere).
        .systemLibrary(name: "CDigits"),
        .target(
            name: "DBeaconCore",
            dependencies: ["CDigits"],
            swiftSettings: settings
        ),
        .target(
            name: "DBeaconGeo",
            dependencies: ["DBeaconCore", "CGEOS", "CGeodesic"],
            swiftSettings: settings
        ),
        .target(
            name: "DBeaconStore",
            dependencies: [
                "DBeaconCore", "DBeaconGeo", "CSQLite",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: settings
        ),
        .target(
            name: "DBeaconIndex",
            dependencies: ["DBeaconCore", "DBeaconGeo", "DBeaconStore", "CPrefetch"],
            swiftSettings: settings
        ),
        .target(
            name: "DBeaconServices",
            dependencies: [
                "DBeaconCore", "DBeaconGeo", "DBeaconStore", "DBeaconIndex", "CPrefetch",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: settings
        ),
        .target(
            name: "DBeaconAPI",
            dependencies: [
                "DBeaconCore", "DBeaconGeo", "DBeaconServices",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: settings
        ),
        .target(
            name: "DBeaconHTTP",
            dependencies: [
                "DBeaconCore", "DBeaconGeo", "DBeaconServices", "DBeaconAPI",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: settings
        ),
        // The composition root: stores, index, services and the HTTP application from a
        // configuration (used by the executables and the tests).
        .target(
            name: "DBeaconApp",
            dependencies: [
                "DBeaconCore", "DBeaconGeo", "DBeaconStore", "DBeaconIndex", "DBeaconServices", "DBeaconAPI", "DBeaconHTTP",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: settings
        ),
        .executableTarget(
            name: "dbeacon",
            dependencies: [
                "DBeaconCore", "DBeaconGeo", "DBeaconStore", "DBeaconServices", "DBeaconAPI", "DBeaconHTTP", "DBeaconApp",
                // The CLI's calls go through the typed client apps use, over HTTP or in process.
                "DBeaconKit",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: settings
        ),
        .executableTarget(
            name: "dbeacon-bench",
            dependencies: [
                "DBeaconCore", "DBeaconGeo", "DBeaconStore", "DBeaconIndex", "DBeaconServices", "DBeaconAPI", "DBeaconHTTP", "DBeaconApp",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: settings
        ),
        // DBeaconKit: types and client generated at build time from schema/openapi.yaml (the
        // symlink Sources/DBeaconKit/openapi.yaml), plus the hand-written pieces an app needs.
        // Depends on the OpenAPI runtime only: an app brings its transport (URLSession on
        // Apple platforms, AsyncHTTPClient on Linux).
        .target(
            name: "DBeaconKit",
            dependencies: [
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ],
            plugins: [
                .plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator"),
            ]
        ),
        .testTarget(
            name: "DBeaconTests",
            dependencies: [
                "DBeaconCore", "DBeaconGeo", "DBeaconStore", "DBeaconIndex", "DBeaconServices", "DBeaconAPI", "DBeaconHTTP", "DBeaconApp",
                "dbeacon", "dbeacon-bench",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                "DBeaconKit",
                .product(name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client"),
            ],
            swiftSettings: settings
        ),
    ]
)
