import Courier
import Dispatch
import Foundation

/// Processed thumbnails in a directory, one file per URL and size, read and written on a queue of its
/// own (never on the caller's thread or Swift's cooperative pool); encoding happens on another, so a
/// read never waits behind a JPEG encoder. Files are written atomically (a temporary file renamed into
/// place), so a crash never leaves half a thumbnail under a real name; a file that does not decode is
/// ignored and replaced, and one older than the maximum age is not used.
final class ThumbnailDiskCache: Sendable {
    let directory: URL
    let maximumAge: Duration
    private let io = DispatchQueue(label: "courier.images.thumbnails")
    private let encoding = DispatchQueue(label: "courier.images.thumbnails.encoding", qos: .utility)

    init(directory: URL, maximumAge: Duration) {
        self.directory = directory
        self.maximumAge = maximumAge
    }

    private func fileURL(_ name: String) -> URL { directory.appendingPathComponent(name + ".thumbnail") }

    /// The stored thumbnail's bytes, or `nil` (none, unreadable, or older than the maximum age).
    func data(for name: String) async -> Data? {
        let url = fileURL(name)
        let maximumAge = Double(maximumAge.components.seconds)
        return await withCheckedContinuation { continuation in
            io.async {
                guard let modified = (try? FileManager.default.attributesOfItem(atPath: url.path))?[.modificationDate] as? Date,
                    -modified.timeIntervalSinceNow <= maximumAge
                else { return continuation.resume(returning: nil) }
                continuation.resume(returning: try? Data(contentsOf: url))
            }
        }
    }

    /// Encodes and stores `image` in the background (a failure only means the next launch decodes again).
    func store(_ image: CourierImage, encoding format: ImageEncoding, name: String) {
        let url = fileURL(name)
        let directory = directory
        let io = io
        encoding.async {
            guard let data = try? image.encoded(as: format) else { return }
            io.async {
                try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                try? data.write(to: url, options: .atomic)
            }
        }
    }

    /// Deletes every stored thumbnail.
    func removeAll() async {
        let directory = directory
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            encoding.async {
                self.io.async {
                    for name in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [] where name.hasSuffix(".thumbnail") {
                        try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
                    }
                    continuation.resume()
                }
            }
        }
    }

    /// Waits for the encodes and writes scheduled so far (tests).
    func synchronize() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            encoding.async { self.io.async { continuation.resume() } }
        }
    }
}
