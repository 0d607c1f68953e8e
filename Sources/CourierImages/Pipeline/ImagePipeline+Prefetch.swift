public import Courier

extension ImagePipeline {
    /// Fetches and decodes images ahead of need, at the lowest priority, into the memory cache (and the
    /// thumbnail directory). A later ``image(url:engine:thumbnail:priority:)`` for one of them joins the
    /// running task and raises its priority, or hits the cache.
    /// - Returns: A handle that cancels what has not finished (``ImageTask/cancel()``).
    @discardableResult
    public func prefetch(urls: [String], engine: NetworkEngine, thumbnail: Thumbnail? = nil) -> ImageTask {
        ImageTask(Task {
            await withTaskGroup(of: Void.self) { group in
                for url in urls {
                    group.addTask { _ = try? await self.image(url: url, engine: engine, thumbnail: thumbnail, priority: .veryLow) }
                }
            }
        })
    }

    /// Loads an image and calls `completion` on the engine's callback queue
    /// (`NetworkEngine/Configuration/callbackQueue`), closure style.
    /// - Returns: A handle to cancel the load (the completion then gets `.cancelled`).
    @discardableResult
    public func loadImage(
        url: String, engine: NetworkEngine, thumbnail: Thumbnail? = nil, priority: NetworkOperation.Priority = .normal,
        completion: @escaping @Sendable (Result<CourierImage, NetworkError>) -> Void
    ) -> ImageTask {
        let callbackQueue = engine.configuration.callbackQueue
        return ImageTask(Task {
            // (`image` reports `.cancelled` at once when the task was cancelled before it began.)
            let result: Result<CourierImage, NetworkError>
            do throws(NetworkError) {
                result = .success(try await self.image(url: url, engine: engine, thumbnail: thumbnail, priority: priority))
            } catch {
                result = .failure(error)
            }
            callbackQueue.async { completion(result) }
        })
    }
}

/// A load or prefetch started with a closure API; cancel it when its image is no longer needed (a cell
/// scrolled away).
public struct ImageTask: Sendable {
    private let task: Task<Void, Never>

    init(_ task: Task<Void, Never>) {
        self.task = task
    }

    /// Cancels the load: its caller leaves the image's task, which stops when no caller is left.
    public func cancel() { task.cancel() }

    /// Waits until the load (or every prefetch) ended.
    public func wait() async { await task.value }
}
