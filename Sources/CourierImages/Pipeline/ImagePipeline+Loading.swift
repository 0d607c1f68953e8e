public import Courier
import Foundation

extension ImagePipeline {
    typealias Waiter = CheckedContinuation<Result<CourierImage, NetworkError>, Never>

    /// The image at `url`, built by `engine` (its host, headers, credentials, interceptors and cache),
    /// decoded and, with `thumbnail`, scaled down.
    ///
    /// Cancelling the calling task removes it from the image's task; when no caller is left, the request
    /// is cancelled (a decode already running finishes, and its result is dropped).
    /// - Parameters:
    ///   - url: An absolute http(s) URL.
    ///   - engine: The engine whose operation fetches it.
    ///   - thumbnail: The size to scale down to, or `nil` for the full image.
    ///   - priority: The request's priority in the shared queue, and its decode's among waiting decodes
    ///     (``prefetch(urls:engine:thumbnail:)`` uses `.veryLow`).
    /// - Throws: `NetworkError`: the request's errors, `.unsupportedImageFormat`, `.invalidImage`,
    ///   `.imageTooLarge`, `.cancelled`.
    public func image(
        url: String, engine: NetworkEngine, thumbnail: Thumbnail? = nil, priority: NetworkOperation.Priority = .normal
    ) async throws(NetworkError) -> CourierImage {
        guard !Task.isCancelled else { throw NetworkError(.cancelled, "cancelled", url: url) }
        let operation = engine.operation(url: url)
        operation.priority = priority
        let key = Self.key(url: url, operation: operation, engine: engine, thumbnail: thumbnail)
        if let cached = memory.withLockedValue({ $0.image(for: key) }) { return cached }
        let subscriber = state.withLockedValue { state in
            defer { state.nextSubscriber += 1 }
            state.unsubscribed.insert(state.nextSubscriber)
            return state.nextSubscriber
        }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: Waiter) in
                subscribe(subscriber, key: key, priority: priority, engine: engine, operation: operation, continuation: continuation)
            }
        } onCancel: {
            unsubscribe(subscriber, url: key.url)
        }
        return try result.get()
    }

    /// Starts or joins the task of `key`; `continuation` gets the result (or `.cancelled`).
    private func subscribe(
        _ subscriber: UInt64, key: Key, priority: NetworkOperation.Priority, engine: NetworkEngine, operation: NetworkOperation,
        continuation: Waiter
    ) {
        enum Next { case start(UInt64), answer(Result<CourierImage, NetworkError>), none }
        let next = state.withLockedValue { state -> Next in
            state.unsubscribed.remove(subscriber)
            if state.cancelledEarly.remove(subscriber) != nil { return .answer(.failure(NetworkError(.cancelled, "cancelled", url: key.url))) }
            // A task that finished since the first look left its image in memory: no second request.
            if let cached = memory.withLockedValue({ $0.image(for: key) }) { return .answer(.success(cached)) }
            state.waiters[subscriber] = continuation
            switch state.tasks.subscribe(subscriber, to: key, priority: priority) {
            case .start(let id, _):
                state.running[id] = Running(operation: operation)
                return .start(id)
            case .joined(let id, let raised?):
                // Under the lock, so that changes of one task's priority apply in the order they were decided.
                state.running[id]?.operation.priority = raised
                return .none
            case .joined:
                return .none
            }
        }
        switch next {
        case .start(let id):
            let task = Task { await run(id, key: key, engine: engine, operation: operation) }
            let cancelled = state.withLockedValue { state in
                guard state.running[id] != nil else { return true }
                state.running[id]?.task = task
                return false
            }
            if cancelled { task.cancel() }
        case .answer(let result):
            continuation.resume(returning: result)
        case .none:
            break
        }
    }

    /// The caller of `subscriber` was cancelled.
    private func unsubscribe(_ subscriber: UInt64, url: String) {
        let (waiter, cancelled) = state.withLockedValue { state -> (Waiter?, Running?) in
            guard let waiter = state.waiters.removeValue(forKey: subscriber) else {
                // Cancelled before it subscribed: its subscription is refused when it comes. (After its
                // task delivered, there is nothing to do.)
                if state.unsubscribed.contains(subscriber) { state.cancelledEarly.insert(subscriber) }
                return (nil, nil)
            }
            switch state.tasks.unsubscribe(subscriber) {
            case .cancel(let id):
                return (waiter, state.running.removeValue(forKey: id))
            case .lowerPriority(let id, let priority):
                state.running[id]?.operation.priority = priority
                return (waiter, nil)
            case .none:
                return (waiter, nil)
            }
        }
        waiter?.resume(returning: .failure(NetworkError(.cancelled, "cancelled", url: url)))
        if let cancelled {
            cancelled.task?.cancel()
            cancelled.operation.cancel()
        }
    }

    /// Task `id`: the disk's thumbnail, or the network and a decode; then every subscriber's result.
    private func run(_ id: UInt64, key: Key, engine: NetworkEngine, operation: NetworkOperation) async {
        let result: Result<CourierImage, NetworkError>
        do throws(NetworkError) {
            result = .success(try await load(id, key: key, engine: engine, operation: operation))
        } catch {
            result = .failure(error)
        }
        // The memory cache first, then the delivery, under the task lock: a caller arriving in between
        // finds the image in memory rather than starting a second request.
        let waiters = state.withLockedValue { state -> [Waiter] in
            guard state.running.removeValue(forKey: id) != nil else { return [] }   // cancelled: nobody waits
            if case .success(let image) = result { memory.withLockedValue { $0.insert(image, for: key) } }
            return state.tasks.finish(id).compactMap { state.waiters.removeValue(forKey: $0) }
        }
        for waiter in waiters { waiter.resume(returning: result) }
    }

    /// The callers waiting for the image of `url` and `thumbnail`, and the task's operation (for tests).
    func waiting(url: String, engine: NetworkEngine, thumbnail: Thumbnail? = nil) -> (callers: Int, operation: NetworkOperation?) {
        let key = Self.key(url: url, operation: engine.operation(url: url), engine: engine, thumbnail: thumbnail)
        return state.withLockedValue { state in
            let callers = state.tasks.subscriberCount(for: key)
            return (callers, state.tasks.taskID(for: key).flatMap { state.running[$0]?.operation })
        }
    }

    /// The current priority of task `id` (its highest subscriber's).
    private func priority(of id: UInt64) -> NetworkOperation.Priority {
        state.withLockedValue { $0.running[id]?.operation.priority } ?? .normal
    }

    private func load(_ id: UInt64, key: Key, engine: NetworkEngine, operation: NetworkOperation) async throws(NetworkError) -> CourierImage {
        let options = ImageDecodingOptions(maximumPixelCount: configuration.maximumPixelCount, thumbnail: key.thumbnail)
        if let disk, let thumbnail = key.thumbnail, let data = await disk.data(for: key.diskName) {
            // Stored by the standard encoders, read back by the standard decoders; a damaged or stale
            // file is fetched again, and replaced.
            if let image = try? await decodeQueue.run(priority: priority(of: id), { () throws(NetworkError) in
                try ImageDecoders.decode(data, options: ImageDecodingOptions(maximumPixelCount: options.maximumPixelCount))
            }), image.isStored(thumbnail) {
                return image
            }
        }
        let response = try await engine.send(operation)
        let data = response.body
        let decoders = configuration.decoders
        let thumbnail = key.thumbnail
        let image = try await decodeQueue.run(priority: priority(of: id)) { () throws(NetworkError) -> CourierImage in
            let decoded = try ImageDecoders.decode(data, options: options, decoders: decoders)
            return thumbnail.map { decoded.thumbnail($0) } ?? decoded
        }
        if let disk, key.thumbnail != nil, Self.isPublic(response, sentCredentials: operation.sentCredentials) {
            let encoding = image.pixelFormat.hasAlpha ? ImageEncoding.png : configuration.thumbnailEncoding
            disk.store(image, encoding: encoding, name: key.diskName)
        }
        return image
    }

    /// Whether a thumbnail of `response` may be kept on disk for anyone: the request carried no
    /// credentials and the server did not mark the response `private` or `no-store`.
    static func isPublic(_ response: NetworkResponse, sentCredentials: Bool) -> Bool {
        guard !sentCredentials, response.statusCode == 200 else { return false }
        let directives = response.headers[values: .cacheControl].joined(separator: ",").lowercased()
            .split(separator: ",").map { $0.split(separator: "=").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? "" }
        return !directives.contains("private") && !directives.contains("no-store")
    }
}

extension ImagePipeline.Key {
    /// The thumbnail's file name on disk: a digest of the URL and the size (only public images are
    /// stored, so the engine is not part of it; engines' numbers change between launches anyway).
    var diskName: String {
        Digests.sha256Hex(of: "\(url)\n\(thumbnail?.description ?? "original")")
    }
}

extension CourierImage {
    /// Whether a stored file can be a thumbnail `thumbnail` made (its name says which; this guards against
    /// a file replaced by something else).
    func isStored(_ thumbnail: Thumbnail) -> Bool {
        width <= thumbnail.width && height <= thumbnail.height
    }
}
