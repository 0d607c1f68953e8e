import Foundation
import NIOConcurrencyHelpers
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The partial file of a resumable download, locked (``PartialFile``'s `flock`) from before the download
/// measures it and reads its resume record until the download ends (issue 23).
///
/// Everything a resumable download does to its partial file and its record happens under this one lock:
/// measuring the bytes on disk, reading the record, removing stale record temporaries, starting over,
/// writing each exchange's record, renaming the file into place or keeping or removing it. Another
/// process downloading to the same file is refused ("busy") before it sends a request, so it never
/// measures bytes that change under it, never cuts, lengthens or splices them, never renames stale bytes
/// over a finished file and never removes the record the holder is writing.
///
/// Removals go by plain `unlink` (the holder owns both files; a second `flock` of its own on another
/// descriptor would conflict with its own lock). The lock is let go exactly once: by
/// ``DownloadWriter/finish()`` once the file is in place, or by ``release(keeping:)``; later calls do
/// nothing. The blocking work runs on NIO's thread pool.
final class HeldPartialFile: Sendable {
    /// The open, locked partial file.
    let file: PartialFile
    /// The download's sidecars.
    let store: ResumeRecordStore
    /// The partial file's length when it was locked.
    let initialLength: Int64
    /// The record's path.
    var recordPath: String { store.recordURL.path }
    private let released = NIOLockedValueBox(false)

    private init(file: PartialFile, store: ResumeRecordStore, initialLength: Int64) {
        self.file = file
        self.store = store
        self.initialLength = initialLength
    }

    /// Locks the partial file beside `store`'s destination (creating it, empty and owner-only, when there
    /// is none), then, holding it, measures it, removes stale record temporaries and reads the record.
    /// - Returns: The held file and the record, if there is a usable one.
    /// - Throws: ``NetworkError/Code/fileUnavailable`` when another download holds the partial file
    ///   ("the destination is busy"), or the partial file or its record is not a regular file of its own
    ///   (a link, a FIFO, a device: left alone), or the folder cannot be written.
    static func acquire(for store: ResumeRecordStore) async throws(NetworkError) -> (partial: HeldPartialFile, record: ResumeRecord?) {
        let (destination, partialPath, recordPath) = (store.destination, store.partialURL.path, store.recordURL.path)
        let outcome: Result<(PartialFile, Int64, ResumeRecord?), PartialFile.Failure>
        do {
            outcome = try await NIOThreadPool.singleton.runIfActive { () -> Result<(PartialFile, Int64, ResumeRecord?), PartialFile.Failure> in
                do throws(PartialFile.Failure) {
                    // Neither is opened when it is a link or a device (`lstat` first).
                    for path in [recordPath, partialPath] { _ = try PartialFile.length(at: path) }
                    let (file, length) = try PartialFile.lock(at: partialPath)
                    ResumeRecordStore.removeStaleTemporaries(of: destination)
                    return .success((file, length, ResumeRecordStore.readNow(at: recordPath)))
                } catch {
                    return .failure(error)
                }
            }
        } catch {
            throw DownloadWriter.fileError(error, destination: destination)
        }
        switch outcome {
        case .success(let (file, length, record)):
            return (HeldPartialFile(file: file, store: store, initialLength: length), record)
        case .failure(let failure):
            throw failure.networkError(destination: destination)
        }
    }

    /// Whether the lock was let go.
    var isReleased: Bool { released.withLockedValue { $0 } }

    /// Marks the lock let go; `true` for the one caller that is to close the file.
    func claimRelease() -> Bool {
        released.withLockedValue { wasReleased in
            defer { wasReleased = true }
            return !wasReleased
        }
    }

    /// Drops the bytes on disk and the record (the record first: a kill in between never leaves old
    /// bytes under a record), keeping the file and its lock for the next exchange.
    func startOver() async throws(NetworkError) {
        let (file, record) = (self.file, recordPath)
        let failure: PartialFile.Failure?
        do {
            failure = try await NIOThreadPool.singleton.runIfActive { () -> PartialFile.Failure? in
                unlink(record)
                do throws(PartialFile.Failure) { try file.truncate(downTo: 0) } catch { return error }
                return nil
            }
        } catch {
            throw DownloadWriter.fileError(error, destination: store.destination)
        }
        if let failure { throw failure.networkError(destination: store.destination) }
    }

    /// Writes the record (atomically, ``ResumeRecordStore/write(_:)``), under the lock.
    func writeRecord(_ record: ResumeRecord) async throws(NetworkError) {
        try await store.write(record)
    }

    /// Blocking: removes the record (the file is complete and about to be renamed into place).
    func removeRecordNow() {
        unlink(recordPath)
    }

    /// Lets go of the partial file, once (later calls do nothing): keeps it and its record for the next
    /// download when `keeping` and it holds bytes; otherwise removes both first. Runs to its end even in
    /// a cancelled task.
    func release(keeping: Bool) async {
        guard claimRelease() else { return }
        let (file, record) = (self.file, recordPath)
        await uncancelled {
            _ = try? await NIOThreadPool.singleton.runIfActive {
                if !keeping || file.length() == 0 { file.unlinkIfOwned(record: record) }
                file.close()
            }
        }
    }
}
