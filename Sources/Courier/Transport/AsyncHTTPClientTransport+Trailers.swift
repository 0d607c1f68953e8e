import AsyncHTTPClient
import HTTPTypes
import NIOCore
import NIOHTTP1

// Request trailers through async-http-client's request writer (its unstable-API trait): the body's
// parts are written as the connection asks for them, then the trailer fields close the stream.
extension AsyncHTTPClientTransport {
    /// The upload of one attempt's body with trailers, beside the exchange.
    struct TrailerUpload: Sendable {
        private let task: Task<Void, Never>
        private let writers: AsyncStream<HTTPClientRequest.Body.RequestWriter>.Continuation

        /// Makes the request body and starts the task that writes it once the connection asks for it.
        /// - Parameters:
        ///   - body: The body's parts (its length is not declared: trailers follow a chunked body).
        ///   - trailers: Makes the trailer fields once the last part went.
        /// - Returns: The body to give the client, and the upload to stop if the exchange fails.
        static func start(
            _ body: TransportBody, trailers: @escaping @Sendable () async throws -> HTTPFields
        ) -> (HTTPClientRequest.Body, TrailerUpload) {
            let (stream, continuation) = AsyncStream<HTTPClientRequest.Body.RequestWriter>.makeStream()
            let task = Task {
                var writers = stream.makeAsyncIterator()
                // Finished without a writer when the exchange failed before its body was asked for.
                guard let writer = await writers.next() else { return }
                do {
                    for try await part in body.parts() {
                        try Task.checkCancellation()
                        try await writer.writeRequestBodyPart(part)
                    }
                    // A stream cut short by the cancellation (an `AsyncStream` then simply ends) is not
                    // a body sent: its trailers (a digest, a signature) are never made over part of it.
                    try Task.checkCancellation()
                    let fields = try await trailers()
                    try Task.checkCancellation()
                    writer.requestBodyStreamFinished(trailers: fields.isEmpty ? nil : HTTPHeaders(http1: fields))
                } catch {
                    // The exchange fails with this (a failed write means it failed already); it is
                    // aborted, so the server never takes the body without its trailers as complete.
                    writer.fail(error)
                }
            }
            return (HTTPClientRequest.Body(length: nil, startUpload: continuation), TrailerUpload(task: task, writers: continuation))
        }

        /// Stops the upload: the exchange failed, or was cancelled.
        func cancel() {
            writers.finish()
            task.cancel()
        }
    }
}
