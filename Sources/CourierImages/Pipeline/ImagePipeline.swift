public import Courier
public import Foundation
import NIOConcurrencyHelpers

/// Fetches images through Courier's queue and HTTP cache, decodes and thumbnails them off the caller's
/// thread, and keeps the results in a decoded-image memory cache (and, if asked, thumbnails on disk).
///
/// Most apps use ``shared`` through `NetworkEngine/image(url:thumbnail:priority:pipeline:)`:
/// ```swift
/// let avatar = try await engine.image(url: user.avatarURL, thumbnail: Thumbnail(maxPixelSize: 128))
/// ```
/// What one request does, in order:
/// 1. the memory cache, keyed by engine, URL and thumbnail: a hit returns at once and never touches the queue;
/// 2. a running task for the same key: the request joins it (ten views asking for one thumbnail make one
///    request and one decode); the task runs at the highest priority among those waiting, and is
///    cancelled when all of them are;
/// 3. the thumbnail disk cache, when ``Configuration/thumbnailDirectory`` is set;
/// 4. the engine's operation through the shared queue (its priorities, its own coalescing of identical
///    GETs, the HTTP cache with the encoded bytes), then a decode chosen by the bytes' signature (never the
///    URL or `Content-Type`), downscaled early where the format allows (JPEG), then the thumbnail.
///
/// Images are cached in memory per engine (and per credentials in the URL): an image fetched with one
/// engine's credentials is never served to another. Thumbnails on disk hold only public images.
public final class ImagePipeline: Sendable {
    /// How a pipeline caches and decodes.
    public struct Configuration: Sendable {
        /// The most decoded images the memory cache keeps. Default 500.
        public var memoryCacheCountLimit = 500
        /// The most bytes of pixels the memory cache keeps. Default: an eighth of the physical memory, at most 512 MiB.
        public var memoryCacheByteLimit = Int(min(ProcessInfo.processInfo.physicalMemory / 8, 512 << 20))
        /// How many decodes run at once. Default: the number of active processors.
        public var maximumConcurrentDecodes = ProcessInfo.processInfo.activeProcessorCount
        /// The decoders, tried in order by signature. Default: ``ImageDecoders/standard``.
        public var decoders: [any ImageDecoder] = ImageDecoders.standard
        /// The most pixels an image may declare (a decompression bomb declares billions in a few bytes).
        public var maximumPixelCount = ImageDecodingOptions().maximumPixelCount
        /// A directory for processed thumbnails, kept across launches (created if missing); `nil` (the
        /// default) keeps none. Full-size images are never written there: the HTTP cache has their bytes.
        /// Only public images go there: a response the server marked `private` or `no-store`, or one
        /// fetched with credentials (an `Authorization` field, cookies, an API key), is not stored, so a
        /// thumbnail on disk can be served to any engine.
        public var thumbnailDirectory: URL?
        /// How long a thumbnail on disk is used before the image is fetched again. Default: 7 days.
        public var thumbnailMaximumAge: Duration = .seconds(7 * 24 * 3600)
        /// How thumbnails are stored in ``thumbnailDirectory``: PNG for images with alpha, this otherwise.
        public var thumbnailEncoding = ImageEncoding.jpeg(quality: 85)

        /// The defaults.
        public init() {}

        /// The defaults, changed by `configure`.
        public init(_ configure: (inout Configuration) -> Void) {
            configure(&self)
        }
    }

    /// The pipeline `NetworkEngine/image(url:thumbnail:priority:pipeline:)` uses by default.
    public static let shared = ImagePipeline()

    /// The configuration it was created with.
    public let configuration: Configuration

    struct Key: Hashable, Sendable {
        let engine: UInt64
        let url: String
        /// A digest of credentials the URL itself carried (`user:password@`), which leave the URL for an
        /// `Authorization` field: two users of one engine and URL are two entries.
        let userInfo: String?
        let thumbnail: Thumbnail?
    }

    /// A running task: what the pipeline needs to cancel it and to follow its priority.
    struct Running: Sendable {
        let operation: NetworkOperation
        var task: Task<Void, Never>?
    }

    struct State: Sendable {
        var tasks = ImageTaskStateMachine<Key>()
        var running: [UInt64: Running] = [:]
        var waiters: [UInt64: CheckedContinuation<Result<CourierImage, NetworkError>, Never>] = [:]
        var nextSubscriber: UInt64 = 1
        /// Subscribers numbered but not yet subscribed, and those of them already cancelled.
        var unsubscribed: Set<UInt64> = []
        var cancelledEarly: Set<UInt64> = []
    }

    // NIO's locks, not Synchronization's Mutex: on Linux the thread sanitizer does not see Mutex's
    // futex-based ordering and reports races that are not there.
    let state = NIOLockedValueBox(State())
    let memory: NIOLockedValueBox<ImageMemoryCacheState<Key>>
    let decodeQueue: ImageDecodeQueue
    let disk: ThumbnailDiskCache?
    #if canImport(Darwin)
    // Safe without Sendable: set once in init (before any other thread sees the pipeline), then only
    // cancelled in deinit; dispatch sources are themselves thread-safe.
    nonisolated(unsafe) private let memoryPressure: [any DispatchSourceMemoryPressure]
    #endif

    /// Creates a pipeline.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        self.memory = NIOLockedValueBox(ImageMemoryCacheState(countLimit: configuration.memoryCacheCountLimit, byteLimit: configuration.memoryCacheByteLimit))
        self.decodeQueue = ImageDecodeQueue(limit: configuration.maximumConcurrentDecodes)
        self.disk = configuration.thumbnailDirectory.map { ThumbnailDiskCache(directory: $0, maximumAge: configuration.thumbnailMaximumAge) }
        #if canImport(Darwin)
        // Memory pressure: half the cache on a warning, all of it when critical.
        let warning = DispatchSource.makeMemoryPressureSource(eventMask: .warning, queue: .global(qos: .utility))
        let critical = DispatchSource.makeMemoryPressureSource(eventMask: .critical, queue: .global(qos: .utility))
        memoryPressure = [warning, critical]
        warning.setEventHandler { [weak self] in self?.trimMemoryCache(toBytes: (self?.memoryCacheUsage.bytes ?? 0) / 2) }
        critical.setEventHandler { [weak self] in self?.trimMemoryCache(toBytes: 0) }
        warning.activate()
        critical.activate()
        #endif
    }

    deinit {
        #if canImport(Darwin)
        for source in memoryPressure { source.cancel() }
        #endif
    }

    // MARK: The memory cache

    /// The decoded image the memory cache holds for `url` (as `engine` would build it) and `thumbnail`,
    /// without fetching anything.
    public func cachedImage(url: String, engine: NetworkEngine, thumbnail: Thumbnail? = nil) -> CourierImage? {
        let key = Self.key(url: url, operation: engine.operation(url: url), engine: engine, thumbnail: thumbnail)
        return memory.withLockedValue { $0.image(for: key) }
    }

    /// Forgets the decoded images fetched with `engine` (its user signed out, its token changed).
    public func removeCachedImages(for engine: NetworkEngine) {
        let id = engine.id
        memory.withLockedValue { $0.removeAll { $0.engine == id } }
    }

    static func key(url: String, operation: NetworkOperation, engine: NetworkEngine, thumbnail: Thumbnail?) -> Key {
        let userInfo = URLComponents(string: url).flatMap { components -> String? in
            guard components.user != nil || components.password != nil else { return nil }
            return Digests.sha256Hex(of: "\(components.user ?? ""):\(components.password ?? "")")
        }
        return Key(engine: engine.id, url: operation.urlString, userInfo: userInfo, thumbnail: thumbnail)
    }

    /// How many decoded images the memory cache holds, and their pixels' bytes.
    public var memoryCacheUsage: (count: Int, bytes: Int) {
        memory.withLockedValue { ($0.count, $0.totalBytes) }
    }

    /// Empties the memory cache (the disk's thumbnails stay: ``removeAllThumbnails()``).
    public func removeAllCachedImages() {
        memory.withLockedValue { $0.trim(toBytes: 0) }
    }

    /// Deletes every thumbnail of ``Configuration/thumbnailDirectory`` (in the background; awaits the end).
    public func removeAllThumbnails() async {
        await disk?.removeAll()
    }

    /// Evicts the least recently used images until at most `bytes` of pixels are held (for an app's own
    /// memory warnings; on Apple platforms the pipeline trims itself under memory pressure).
    public func trimMemoryCache(toBytes bytes: Int) {
        memory.withLockedValue { $0.trim(toBytes: bytes) }
    }
}
