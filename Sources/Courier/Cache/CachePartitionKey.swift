import Crypto
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The secret that turns a request's credentials into its cache partition: `k1:` and the hex HMAC-SHA256,
/// under this key, of the credential fields (or of the name the app gave the partition). Never a bare
/// hash: an unsalted SHA-256 of `authorization: Basic base64(user:password)` in the index would give the
/// password back to one hash per guess.
///
/// A disk cache keeps its key in its directory (`partition.key`, 32 random bytes, owner-only, created
/// exclusively, never through a link), so that partitions survive restarts and two processes on one
/// directory agree; a memory-only cache makes one per process. A key file that is missing, damaged or
/// not a regular file is replaced: the entries stored under the old key are then never matched again
/// (misses, never another user's entry).
struct CachePartitionKey: Sendable {
    /// The prefix of partitions made with a key (rows of earlier versions, bare hashes, have none).
    static let prefix = "k1:"
    static let fileName = "partition.key"
    static let byteCount = 32

    private let key: SymmetricKey

    private init(bytes: [UInt8]) { key = SymmetricKey(data: bytes) }

    /// A key for this process only (a memory-only cache).
    static func ephemeral() -> CachePartitionKey { CachePartitionKey(bytes: randomBytes()) }

    /// The partition of `material` (the credential fields, or the app's partition name).
    func partition(of material: String) -> String {
        Self.prefix + Digests.hex(HMAC<SHA256>.authenticationCode(for: Data(material.utf8), using: key))
    }

    /// The key of a cache directory: read, or made and written when there is none (or it is unusable).
    /// Blocking I/O: the cache loads it on its disk queue. Falls back to a key for this process when the
    /// directory cannot be written.
    static func load(in directory: URL) -> CachePartitionKey {
        let path = directory.appendingPathComponent(fileName).path
        if let bytes = read(path) { return CachePartitionKey(bytes: bytes) }
        // None yet: make one (or find the one another process just made).
        if create(path, in: directory), let bytes = read(path) { return CachePartitionKey(bytes: bytes) }
        // Something unusable is in its place (a link, a FIFO, a short file): replace it, once.
        unlink(path)
        if create(path, in: directory), let bytes = read(path) { return CachePartitionKey(bytes: bytes) }
        return ephemeral()
    }

    /// The key file's bytes, when it is a regular file of exactly ``byteCount`` bytes, owned by this user,
    /// readable by no one else and with no other name (a hard link to a key someone else knows), opened
    /// without following a link and never blocking on a FIFO.
    private static func read(_ path: String) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG, status.st_size == off_t(byteCount),
            status.st_nlink == 1, status.st_uid == geteuid(), status.st_mode & 0o077 == 0
        else { return nil }
        var bytes = [UInt8](repeating: 0, count: byteCount)
        let count = bytes.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress, byteCount) }
        return count == byteCount ? bytes : nil
    }

    /// Writes a new key to a temporary file, syncs it, and links it into place only if no key is there
    /// (`link` fails when the name exists): a reader never sees a half-written key. `true` when a key is
    /// now in place (this one or another process's).
    private static func create(_ path: String, in directory: URL) -> Bool {
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let temporary = path + ".\(UInt64.random(in: 0...UInt64.max)).tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return false }
        defer { unlink(temporary) }
        let bytes = randomBytes()
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, byteCount) }
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard written == byteCount, synced else { return false }
        return link(temporary, path) == 0 || errno == EEXIST
    }

    private static func randomBytes() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<byteCount).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }
}
