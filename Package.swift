// swift-tools-version: 6.2
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Courier",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "Courier", targets: ["Courier"]),
        .library(name: "CourierTestServer", targets: ["CourierTestServer"]),
        // Fetching, decoding, thumbnailing and caching images: a product of its own, so that apps
        // without images do not link the image libraries.
        .library(name: "CourierImages", targets: ["CourierImages"]),
        // The outbox on PostgreSQL, shared by many instances of a service: a product of its own, so that
        // apps that do not use it never link postgres-nio.
        .library(name: "CourierPostgres", targets: ["CourierPostgres"]),
        .executable(name: "courier", targets: ["courier"]),
    ],
    dependencies: [
        // The unstable-API trait gives response trailers (`HTTPClientResponse.Body.trailers`): pinned to a
        // minor version, since that API may change in the next.
        .package(url: "https://github.com/swift-server/async-http-client", .upToNextMinor(from: "1.37.0"), traits: ["UnstableHTTPAPIsSupport"]),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // MD5 and SHA-256 (Digest authentication, cache and outbox digests); already in the graph
        // through async-http-client, so one hash library for the whole package.
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        // `swift package generate-documentation`: the DocC catalogues with every public symbol (CI builds it).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .target(
            name: "Courier",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "_NIOFileSystem", package: "swift-nio"),
                .product(name: "NIOHTTPCompression", package: "swift-nio-extras"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "CourierPostgres",
            dependencies: [
                "Courier",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "CourierImages",
            dependencies: [
                "Courier",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                // Linux: the codecs go through the C shim (libpng, libjpeg-turbo, libwebp, giflib); Apple
                // platforms use ImageIO.
                .target(name: "CCourierImageCodecs", condition: .when(platforms: [.linux])),
            ],
            swiftSettings: swiftSettings
        ),
        // The C side of the Linux codecs: every entry point returns an error code and a message (libjpeg's
        // errors longjmp, which must never cross a Swift frame; giflib reads from memory through a callback).
        // libpng, libjpeg-turbo, libwebp and giflib are loaded at run time (dlopen) and their headers are
        // optional at build time, so `swift run courier demo` builds on a machine without any image -dev
        // package; a missing codec is then a typed error naming the package to install.
        .target(
            name: "CCourierImageCodecs",
            linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]
        ),
        .target(
            name: "CourierTestServer",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "courier",
            dependencies: [
                "Courier",
                "CourierImages",
                "CourierPostgres",
                "CourierTestServer",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // A child process for the outbox crash test (killed with SIGKILL at random moments).
        .executableTarget(
            name: "courier-outbox-child",
            dependencies: ["Courier", "CourierPostgres", .product(name: "PostgresNIO", package: "postgres-nio")],
            path: "Sources/CourierOutboxChild",
            swiftSettings: swiftSettings
        ),
        // The libFuzzer harness of the header parsers (scripts/fuzz builds it with the fuzzer and address
        // sanitizers and -DCOURIER_FUZZ); without COURIER_FUZZ a plain tool that replays inputs.
        .executableTarget(
            name: "courier-fuzz",
            dependencies: ["Courier", "CourierImages"],
            path: "Sources/CourierFuzz",
            swiftSettings: swiftSettings
        ),
        // Every ```swift sample of README.md and the DocC articles, verbatim (scripts/doc-samples writes
        // Samples.swift; CI checks it matches the documents): a sample that stops compiling breaks the build.
        .target(
            name: "DocSamples",
            dependencies: [
                "Courier", "CourierImages", "CourierPostgres",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "CourierImagesTests",
            dependencies: ["CourierImages", "CourierTestServer", .product(name: "NIOConcurrencyHelpers", package: "swift-nio")],
            resources: [.copy("Fixtures")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "CourierTests",
            dependencies: [
                "Courier",
                "CourierImages",
                "CourierPostgres",
                "CourierTestServer",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                // The CLI tests run the built binary; depending on it makes `swift test` build it.
                "courier",
                "courier-outbox-child",
                // Built with the tests so that the documentation samples always compile.
                "DocSamples",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
