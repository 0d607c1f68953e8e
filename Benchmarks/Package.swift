// swift-tools-version: 6.2
import PackageDescription

// Courier's benchmarks: a separate package so the library's own build never pays for them.
// Run: swift run -c release --package-path Benchmarks courier-bench [--quick]
let package = Package(
    name: "CourierBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Courier", path: ".."),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ],
    targets: [
        .target(name: "CBenchSupport"),
        .executableTarget(
            name: "courier-bench",
            dependencies: [
                "CBenchSupport",
                .product(name: "Courier", package: "Courier"),
                .product(name: "CourierImages", package: "Courier"),
                .product(name: "CourierPostgres", package: "Courier"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "CourierTestServer", package: "Courier"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        )
    ],
    swiftLanguageModes: [.v6]
)
