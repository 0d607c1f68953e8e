package import Foundation
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The partial file of a download and its ``ResumeRecord`` sidecar, next to the destination:
/// `folder/.<name>.courier-partial` and `folder/.<name>.courier-partial.json`.
///
/// Keeping both in the destination's folder means the final rename stays on one file system, resume
/// data survives a restart on every platform (a sidecar, not URLSession's Apple-only resume data), and
/// removing a folder removes its partials. The sidecar is small JSON, written to a temporary name with
/// mode 0600, flushed, and renamed over the old one, so a reader sees the old record or the new one,
/// never half of one. Reading is lenient: a missing, oversized, damaged or foreign-version sidecar
/// reads as `nil` (the download starts over); the partial data is removed only when asked.
///
/// All file work runs on NIO's blocking thread pool (`NIOThreadPool.singleton`), never on the
/// cooperative pool or the caller's thread.
struct ResumeRecordStore: Sendable {
    /// The largest sidecar read; anything bigger is not a record.
    static let maximumRecordSize = 64 * 1024

    /// The download's final file.
    let destination: URL

    /// Creates the store of one destination.
    /// - Parameter destination: The file the download is renamed to when complete.
    init(destination: URL) {
        self.destination = destination
    }

    /// `.<name>.courier-partial` in the destination's folder: the bytes received so far (``PartialFileNames``).
    var partialURL: URL { PartialFileNames.partialURL(for: destination) }

    /// `.<name>.courier-partial.json` in the destination's folder: the record (``PartialFileNames``).
    var recordURL: URL { PartialFileNames.recordURL(for: destination) }

    /// Blocking: removes temporary records a killed process left half-written (`.<record name>.tmp-<random>`).
    /// Call it holding the partial file (``HeldPartialFile``): nobody else writes a record for it then.
    static func removeStaleTemporaries(of destination: URL) {
        let folder = destination.deletingLastPathComponent().path
        let prefix = PartialFileNames.recordTemporaryPrefix(for: destination)
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return }
        for name in names where name.hasPrefix(prefix) { _ = unlink(folder + "/" + name) }
    }

    /// The record, or `nil` when there is none or it cannot be read as one (it is not a regular file,
    /// or larger than ``maximumRecordSize``). Links are not followed, a FIFO is not waited on, and at most
    /// ``maximumRecordSize`` bytes are read.
    func read() async -> ResumeRecord? {
        let path = recordURL.path
        let record = try? await NIOThreadPool.singleton.runIfActive { Self.readNow(at: path) }
        return record ?? nil
    }

    /// Blocking: the record at `path` (see ``read()``).
    static func readNow(at path: String) -> ResumeRecord? {
        guard let data = try? PartialFile.read(at: path, limit: maximumRecordSize),
            let record = try? JSONDecoder().decode(ResumeRecord.self, from: data),
            record.version == ResumeRecord.currentVersion, record.bytesOnDisk >= 0
        else { return nil }
        return record
    }

    /// Writes the record atomically (temporary file, mode 0600, fsync, rename).
    /// - Parameter record: The record.
    /// - Throws: ``NetworkError/Code/fileUnavailable`` when the folder cannot be written.
    func write(_ record: ResumeRecord) async throws(NetworkError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data: Data
        do { data = try encoder.encode(record) } catch { throw NetworkError(.encodingFailed, "the resume record could not be encoded", underlying: error) }
        let target = recordURL.path
        let temporary = PartialFileNames.recordTemporaryURL(for: destination, random: MultipartForm.randomBoundary()).path
        let failure: String?
        do {
            failure = try await NIOThreadPool.singleton.runIfActive { Self.writeAtomically(data, to: target, temporary: temporary) }
        } catch {
            throw NetworkError(.fileUnavailable, "the resume record \(target) could not be written", underlying: error)
        }
        if let failure { throw NetworkError(.fileUnavailable, "the resume record \(target) could not be written: \(failure)") }
    }

    /// Removes the record, unless another download (of this process or another) holds the partial file:
    /// the record is then that download's, which it resumes from after a crash. Never call it holding the
    /// partial file yourself (a download does its removals through ``HeldPartialFile``).
    func removeRecord() async {
        let (partial, record) = (partialURL.path, recordURL.path)
        _ = try? await NIOThreadPool.singleton.runIfActive { PartialFile.removeRecord(at: record, besides: partial) }
    }

    /// Removes the partial file and its record, unless another download (of this process or another)
    /// holds the partial file: then both stay (``PartialFile/remove(at:record:)``).
    func removePartial() async {
        let (partial, record) = (partialURL.path, recordURL.path)
        _ = try? await NIOThreadPool.singleton.runIfActive { PartialFile.remove(at: partial, record: record) }
    }

    /// Removes what a download to `destinations` keeps to resume: every destination's partial file and
    /// the record beside the first (``NetworkOperation/cancel()`` on a resumable download).
    static func discardResumeData(for destinations: [URL]) async {
        guard let first = destinations.first else { return }
        await ResumeRecordStore(destination: first).removePartial()
        let others = destinations.dropFirst().map { DownloadWriter.partialURL(for: $0).path }
        guard !others.isEmpty else { return }
        _ = try? await NIOThreadPool.singleton.runIfActive { for path in others { PartialFile.remove(at: path) } }
    }

    /// The size of the partial file, 0 when there is none or it is not a regular file of its own.
    func partialLength() async -> Int64 {
        let path = partialURL.path
        let size = try? await NIOThreadPool.singleton.runIfActive { () -> Int64 in (try? PartialFile.length(at: path)) ?? 0 }
        return size ?? 0
    }

    /// Blocking: writes `data` to `temporary` (created exclusively, 0600), flushes it and renames it to
    /// `target`. Returns a reason on failure, having removed the temporary file.
    private static func writeAtomically(_ data: Data, to target: String, temporary: String) -> String? {
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return String(cString: strerror(errno)) }
        var reason: String?
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let count = Glue.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if count < 0 {
                    if errno == EINTR { continue }
                    reason = String(cString: strerror(errno))
                    return
                }
                offset += count
            }
        }
        if reason == nil, fsync(descriptor) != 0 { reason = String(cString: strerror(errno)) }
        close(descriptor)
        if reason == nil, rename(temporary, target) != 0 { reason = String(cString: strerror(errno)) }
        if reason != nil { unlink(temporary) }
        return reason
    }
}

/// For the command line (`courier download` without `--continue`): what a download keeps to resume,
/// removed through the same rule as the library's own (``ResumeRecordStore/discardResumeData(for:)``),
/// never from under a download that holds the partial file (another process's, say).
package enum DownloadResumeData {
    /// Removes the partial file and resume record beside `destination`, unless a download holds them.
    package static func discard(for destination: URL) async {
        await ResumeRecordStore.discardResumeData(for: [destination])
    }
}

/// The C library's `write`, by a name that does not clash with ``ResumeRecordStore/write(_:)``.
private enum Glue {
    static func write(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
        #if canImport(Glibc)
        Glibc.write(descriptor, buffer, count)
        #elseif canImport(Musl)
        Musl.write(descriptor, buffer, count)
        #else
        Darwin.write(descriptor, buffer, count)
        #endif
    }
}
