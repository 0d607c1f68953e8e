import CourierImages
import Foundation
import Testing

/// Tier 1: the image fuzz targets' seeds (`Tests/FuzzCorpus/image-decode`, `exif-orientation`) run through
/// the harness's entry points with their property checks in an ordinary `swift test`, and so do inputs
/// every decoder must survive.
@Suite("Image fuzz corpus")
struct ImageFuzzCorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("FuzzCorpus")

    @Test(arguments: ImageFuzzEntryPoints.Target.allCases)
    func seedsPassTheirChecks(_ target: ImageFuzzEntryPoints.Target) throws {
        let directory = Self.corpus.appendingPathComponent(target.rawValue)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(names.count >= 8, "seeds for \(target.rawValue)")
        for name in names {
            try Data(contentsOf: directory.appendingPathComponent(name)).withUnsafeBytes { ImageFuzzEntryPoints.run(target, $0) }
        }
    }

    @Test(arguments: ImageFuzzEntryPoints.Target.allCases)
    func hostileInputs(_ target: ImageFuzzEntryPoints.Target) {
        let inputs: [[UInt8]] = [
            [], [0xFF, 0xD8, 0xFF], [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], Array("GIF89a".utf8),
            Array("RIFF\u{0}\u{0}\u{0}\u{0}WEBPVP8L".utf8), Array("II*\u{0}".utf8), Array("MM\u{0}*\u{0}\u{0}\u{0}\u{8}\u{FF}\u{FF}".utf8),
        ]
        for input in inputs { input.withUnsafeBytes { ImageFuzzEntryPoints.run(target, $0) } }
    }
}
