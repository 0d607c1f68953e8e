import CourierImages
import Foundation
import Synchronization

/// A trivial format for pipeline tests that must not depend on the codecs: `RAW1`, width and height
/// as two bytes each (big-endian), then RGBA pixels. Counts its decodes.
final class RawDecoder: ImageDecoder {
    let decodes = Atomic<Int>(0)

    static func encode(width: Int, height: Int, pixel: [UInt8] = [10, 20, 30, 255]) -> [UInt8] {
        Array("RAW1".utf8) + [UInt8(width >> 8), UInt8(width & 0xFF), UInt8(height >> 8), UInt8(height & 0xFF)]
            + Array([[UInt8]](repeating: pixel, count: width * height).joined())
    }

    func canDecode(_ data: Data) -> Bool { data.starts(with: Array("RAW1".utf8)) }

    func decode(_ data: Data, options: ImageDecodingOptions) throws(NetworkError) -> CourierImage {
        decodes.add(1, ordering: .relaxed)
        let bytes = [UInt8](data)
        guard bytes.count >= 8 else { throw NetworkError(.invalidImage, "short") }
        let width = Int(bytes[4]) << 8 | Int(bytes[5]), height = Int(bytes[6]) << 8 | Int(bytes[7])
        guard width * height <= options.maximumPixelCount else { throw NetworkError(.imageTooLarge, "\(width)x\(height)") }
        return try CourierImage(width: width, height: height, pixelFormat: .rgba8, pixels: Array(bytes[8...]))
    }
}

/// Polls `condition` until it holds or `timeout` passes.
func eventually(timeout: Duration = .seconds(10), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}
