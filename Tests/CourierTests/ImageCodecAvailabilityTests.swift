import Foundation
import Testing

/// CourierImages' Linux codecs are loaded at run time: a machine without one of the libraries still runs
/// the `courier` tool, and decoding that format is a typed error naming the Debian package to install.
/// The libraries are hidden with scripts/without-image-headers (a private mount namespace: root only).
@Suite("image codecs missing at run time")
struct ImageCodecAvailabilityTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let canHide: Bool = {
        #if os(Linux)
        return geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare")
        #else
        return false
        #endif
    }()

    func courierWithoutImageLibraries(_ arguments: String...) async throws -> CLITests.Run {
        let process = Process()
        process.executableURL = Self.root.appendingPathComponent("scripts/without-image-headers")
        process.arguments = ["--libraries", CLITests.binary.path] + arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        async let stdout = out.fileHandleForReading.readAll()
        async let stderr = err.fileHandleForReading.readAll()
        let (o, e) = try await (stdout, stderr)
        await process.exited()
        return CLITests.Run(
            status: process.terminationStatus, stdout: String(decoding: o, as: UTF8.self),
            stderr: String(decoding: e, as: UTF8.self))
    }

    @Test(.enabled(if: canHide), arguments: [
        ("lossless.webp", "libwebp7"), ("animated.gif", "libgif7"), ("cmyk.jpg", "libjpeg62-turbo"), ("gray.png", "libpng16-16"),
    ])
    func aMissingCodecIsATypedErrorNamingThePackage(fixture: String, package: String) async throws {
        let file = Self.root.appendingPathComponent("Tests/CourierImagesTests/Fixtures/\(fixture)").path
        let run = try await courierWithoutImageLibraries("image", file)
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("imageCodecUnavailable"), "\(run.stderr)")
        #expect(run.stderr.contains("install the \(package) package"), "\(run.stderr)")
    }

    @Test(.enabled(if: canHide))
    func theToolRunsWithoutAnyImageLibrary() async throws {
        let run = try await courierWithoutImageLibraries("--help")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("demo"))
    }
}
