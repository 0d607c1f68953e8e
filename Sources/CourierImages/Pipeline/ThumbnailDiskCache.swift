import Courier
import Dispatch
import Foundation

/// Processed thumbnails in a directory, one file per URL and size, read and written on a queue of its
/// own (never on the caller's thread or Swift's cooperative pool). Files are written to a temporary name
/// and renamed into place, so a crash never leaves half a thumbnail under a real name; a file that does
/// not decode is ignored and replaced.
final class ThumbnailDiskCache: Sendable {
    let directory: URL
    private let queue = DispatchQueue(label: "courier.images.thumbnails")

    init(directory: URL) {
        self.directory = directory
    }

    private func fileURL(_ name: String) -> URL { directory.appendingPathComponent(name + ".thumbnail") }

    /// The stored thumbnail's bytes, or `nil`.
    func data(for name: String) async -> Data? {
        let url = fileURL(name)
        return await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: try? Data(contentsOf: url)) }
        }
    }

    /// Encodes and stores `image` in the background (a failure only means the next launch decodes again).
    func store(_ image: CourierImage, encoding: ImageEncoding, name: String) {
        let url = fileURL(name)
        let directory = directory
        queue.async {
            guard let data = try? image.encoded(as: encoding) else { return }
            try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let temporary = directory.appendingPathComponent(".\(name).\(UUID().uuidString).tmp")
            do {
                try data.write(to: temporary)
                _ = try FileManager.default.replaceItemAt(url, withItemAt: temporary)
            } catch {
                try? FileManager.default.removeItem(at: temporary)
            }
        }
    }

    /// Waits for the writes scheduled so far (tests).
    func synchronize() async {
        await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
    }
}
