public import Courier

extension NetworkEngine {
    /// The image at `url`, fetched by this engine through the shared queue and cache, decoded and, with
    /// `thumbnail`, scaled down (MKNetworkKit's `imageAtURL:`); see ``ImagePipeline`` for each step.
    /// ```swift
    /// let photo = try await engine.image(url: "https://cdn.example.com/p/42.jpg", thumbnail: Thumbnail(maxPixelSize: 256))
    /// ```
    /// - Parameters:
    ///   - url: An absolute http(s) URL.
    ///   - thumbnail: The size to scale down to, or `nil` for the full image.
    ///   - priority: The request's priority in the queue.
    ///   - pipeline: The pipeline whose caches and decoders to use; ``ImagePipeline/shared`` by default.
    /// - Throws: `NetworkError`: the request's errors, `.unsupportedImageFormat`, `.invalidImage`,
    ///   `.imageTooLarge`, `.cancelled`.
    public func image(
        url: String, thumbnail: Thumbnail? = nil, priority: NetworkOperation.Priority = .normal, pipeline: ImagePipeline = .shared
    ) async throws(NetworkError) -> CourierImage {
        try await pipeline.image(url: url, engine: self, thumbnail: thumbnail, priority: priority)
    }

    /// The image at a path under the engine's host and API path; see ``image(url:thumbnail:priority:pipeline:)``.
    public func image(
        path: String, thumbnail: Thumbnail? = nil, priority: NetworkOperation.Priority = .normal, pipeline: ImagePipeline = .shared
    ) async throws(NetworkError) -> CourierImage {
        try await pipeline.image(url: operation(path: path).urlString, engine: self, thumbnail: thumbnail, priority: priority)
    }

    /// Closure form of ``image(url:thumbnail:priority:pipeline:)``: `completion` runs on the engine's
    /// callback queue.
    @discardableResult
    public func image(
        url: String, thumbnail: Thumbnail? = nil, priority: NetworkOperation.Priority = .normal, pipeline: ImagePipeline = .shared,
        completion: @escaping @Sendable (Result<CourierImage, NetworkError>) -> Void
    ) -> ImageTask {
        pipeline.loadImage(url: url, engine: self, thumbnail: thumbnail, priority: priority, completion: completion)
    }

    /// Prefetches images at the lowest priority; see ``ImagePipeline/prefetch(urls:engine:thumbnail:)``.
    @discardableResult
    public func prefetchImages(urls: [String], thumbnail: Thumbnail? = nil, pipeline: ImagePipeline = .shared) -> ImageTask {
        pipeline.prefetch(urls: urls, engine: self, thumbnail: thumbnail)
    }
}
