#if canImport(Darwin)
import Dispatch

// Apple platforms: the memory tier empties itself on the system's memory-pressure warning, as the
// original kits flushed their memory caches on a memory warning. The disk tier, written through,
// keeps everything. (Compiled only where Dispatch has memory-pressure sources; elsewhere apps call
// `flushMemory()` or `trimMemory(to:)` themselves.)
extension ResponseCache {
    func observeMemoryPressure() -> MemoryPressureObserver {
        MemoryPressureObserver { [weak self] in self?.flushMemory() }
    }
}

/// Owns a memory-pressure dispatch source for the lifetime of a ``ResponseCache``.
///
/// `@unchecked Sendable` is sound: `source` is a `let` set once in `init`; the only calls made on it
/// afterwards are `cancel()` in `deinit`, and dispatch sources are documented as thread-safe objects
/// (their event handler runs on the dispatch queue given here, and the handler only calls the cache's
/// own thread-safe `flushMemory()`).
final class MemoryPressureObserver: @unchecked Sendable {
    private let source: any DispatchSourceMemoryPressure

    init(onPressure: @escaping @Sendable () -> Void) {
        source = DispatchSource.makeMemoryPressureSource(
            eventMask: [.warning, .critical], queue: DispatchQueue.global(qos: .utility))
        source.setEventHandler { onPressure() }
        source.activate()
    }

    deinit { source.cancel() }
}
#endif
