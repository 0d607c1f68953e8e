// swift-tools-version: 6.2
// An app that uses only the `Courier` product: it must build on a machine with no image library or
// image -dev package (CI builds it with their headers hidden: scripts/without-image-headers).
import PackageDescription

let package = Package(
    name: "CourierOnly",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [.package(name: "Courier", path: "../..")],
    targets: [
        .executableTarget(
            name: "CourierOnly",
            dependencies: [.product(name: "Courier", package: "Courier")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
