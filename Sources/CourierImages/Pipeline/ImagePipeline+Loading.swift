public import Courier
import Foundation

extension ImagePipeline {
    /// The image at `url`, built by `engine` (its host, headers, credentials, interceptors and cache),
    /// decoded and, with `thumbnail`, scaled down.
    ///
    /// Cancelling the calling task removes it from the image's task; when no caller is left, the request
    /// and the decode are cancelled too.
    /// - Parameters:
    ///   - url: An absolute http(s) URL.
    ///   - engine: The engine whose operation fetches it.
    ///   - thumbnail: The size to scale down to, or `nil` for the full image.
    ///   - priority: The request's priority in the shared queue (``prefetch(urls:engine:thumbnail:)`` uses `.veryLow`).
    /// - Throws: ``Courier/NetworkError``: the request's errors, `.unsupportedImageFormat`, `.invalidImage`,
    ///   `.imageTooLarge`, `.cancelled`.
    public func image(
        url: String, engine: NetworkEngine, thumbnail: Thumbnail? = nil, priority: NetworkOperation.Priority = .normal
    ) async throws(NetworkError) -> CourierImage {
        let operation = engine.operation(url: url)
        let key = Key(engine: engine.id, url: operation.urlString, thumbnail: thumbnail)
        if let cached = memory.withLock({ $0.image(for: key) }) { return cached }
        let subscriber = state.withLock { state in
            defer { state.nextSubscriber += 1 }
            state.unsubscribed.insert(state.nextSubscriber)
            return state.nextSubscriber
        }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<CourierImage, NetworkError>, Never>) in
                subscribe(subscriber, key: key, priority: priority, engine: engine, operation: operation, continuation: continuation)
            }
        } onCancel: {
            unsubscribe(subscriber)
        }
        return try result.get()
    }

    /// Starts or joins the task of `key`; `continuation` gets the result (or `.cancelled`).
    private func subscribe(
        _ subscriber: UInt64, key: Key, priority: NetworkOperation.Priority, engine: NetworkEngine, operation: NetworkOperation,
        continuation: CheckedContinuation<Result<CourierImage, NetworkError>, Never>
    ) {
        enum Next { case start(UInt64), raise(NetworkOperation?, NetworkOperation.Priority), cancelled, none }
        let next = state.withLock { state -> Next in
            state.unsubscribed.remove(subscriber)
            if state.cancelledEarly.remove(subscriber) != nil { return .cancelled }
            state.waiters[subscriber] = continuation
            switch state.tasks.subscribe(subscriber, to: key, priority: priority) {
            case .start(let id, _):
                state.running[id] = Running(operation: operation)
                return .start(id)
            case .joined(let id, let raised?):
                return .raise(state.running[id]?.operation, raised)
            case .joined:
                return .none
            }
        }
        switch next {
        case .start(let id):
            operation.priority = priority
            let task = Task { await run(id, key: key, engine: engine, operation: operation) }
            let cancelled = state.withLock { state in
                guard state.running[id] != nil else { return true }
                state.running[id]?.task = task
                return false
            }
            if cancelled { task.cancel() }
        case .raise(let running, let priority):
            running?.priority = priority
        case .cancelled:
            continuation.resume(returning: .failure(NetworkError(.cancelled, "cancelled", url: key.url)))
        case .none:
            break
        }
    }

    /// The caller of `subscriber` was cancelled.
    private func unsubscribe(_ subscriber: UInt64) {
        let (waiter, cancel, lower) = state.withLock { state in
            guard let waiter = state.waiters.removeValue(forKey: subscriber) else {
                // Cancelled before it subscribed: its subscription is refused when it comes. (After its
                // task delivered, there is nothing to do.)
                if state.unsubscribed.contains(subscriber) { state.cancelledEarly.insert(subscriber) }
                return (nil, nil, nil) as (CheckedContinuation<Result<CourierImage, NetworkError>, Never>?, Running?, (NetworkOperation?, NetworkOperation.Priority)?)
            }
            switch state.tasks.unsubscribe(subscriber) {
            case .cancel(let id): return (waiter, state.running.removeValue(forKey: id), nil)
            case .lowerPriority(let id, let priority): return (waiter, nil, (state.running[id]?.operation, priority))
            case .none: return (waiter, nil, nil)
            }
        }
        waiter?.resume(returning: .failure(NetworkError(.cancelled, "cancelled")))
        if let cancel {
            cancel.task?.cancel()
            cancel.operation?.cancel()
        }
        if let (operation, priority) = lower { operation?.priority = priority }
    }

    /// Task `id`: the disk's thumbnail, or the network and a decode; then every subscriber's result.
    private func run(_ id: UInt64, key: Key, engine: NetworkEngine, operation: NetworkOperation) async {
        let result: Result<CourierImage, NetworkError>
        do throws(NetworkError) {
            result = .success(try await load(key, engine: engine, operation: operation))
        } catch {
            result = .failure(error)
        }
        if case .success(let image) = result, !Task.isCancelled {
            memory.withLock { $0.insert(image, for: key) }
        }
        let waiters = state.withLock { state in
            state.running[id] = nil
            return state.tasks.finish(id).compactMap { state.waiters.removeValue(forKey: $0) }
        }
        for waiter in waiters { waiter.resume(returning: result) }
    }

    private func load(_ key: Key, engine: NetworkEngine, operation: NetworkOperation) async throws(NetworkError) -> CourierImage {
        let options = ImageDecodingOptions(maximumPixelCount: configuration.maximumPixelCount, targetMaxPixelSize: key.thumbnail?.decodingHint)
        let decoders = configuration.decoders
        if let disk, let thumbnail = key.thumbnail, let data = await disk.data(for: key.diskName) {
            // A damaged file is fetched again, and replaced.
            if let image = try? await decodeQueue.run({ () throws(NetworkError) in
                try ImageDecoders.decode(data, options: options, decoders: decoders)
            }), image.fits(thumbnail) {
                return image
            }
        }
        let response = try await engine.send(operation)
        let data = response.body
        let thumbnail = key.thumbnail
        let image = try await decodeQueue.run { () throws(NetworkError) -> CourierImage in
            let decoded = try ImageDecoders.decode(data, options: options, decoders: decoders)
            return thumbnail.map { decoded.thumbnail($0) } ?? decoded
        }
        if let disk, key.thumbnail != nil {
            let encoding = image.pixelFormat.hasAlpha ? ImageEncoding.png : configuration.thumbnailEncoding
            disk.store(image, encoding: encoding, name: key.diskName)
        }
        return image
    }
}

extension ImagePipeline.Key {
    /// The thumbnail's file name on disk: a digest of the URL and the size (engines' numbers change
    /// between launches, so thumbnails on disk are shared by the engines of one pipeline).
    var diskName: String {
        Digests.sha256Hex(of: "\(url)\n\(thumbnail?.description ?? "original")")
    }
}

extension Thumbnail {
    /// What a decoder may downscale to while decoding: the box's longer side for `.fit` (the image's
    /// longer side ends at most that long); none for `.fill`, whose shorter side must cover the box
    /// whatever the aspect ratio.
    var decodingHint: Int? {
        contentMode == .fit ? max(width, height) : nil
    }
}

extension CourierImage {
    /// Whether a stored thumbnail has the size `thumbnail` makes (a file written for other settings is not used).
    func fits(_ thumbnail: Thumbnail) -> Bool {
        switch thumbnail.contentMode {
        case .fit: max(width, height) <= max(thumbnail.width, thumbnail.height) && width <= thumbnail.width && height <= thumbnail.height
        case .fill: width <= thumbnail.width && height <= thumbnail.height
        }
    }
}
