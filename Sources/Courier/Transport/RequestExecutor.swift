import Foundation
import HTTPTypes
import NIOCore

/// Runs one flight: sends a prepared request through a transport, follows redirects by the
/// request's policy, reads the body within its size limit and reports progress.
struct RequestExecutor: Sendable {
    /// Where progress goes while a flight runs.
    struct ProgressSink: Sendable {
        var upload: @Sendable (TransferProgress) -> Void = { _ in }
        var download: @Sendable (TransferProgress) -> Void = { _ in }
        var informational: @Sendable (HTTPResponse.Status, HTTPFields) -> Void = { _, _ in }
    }

    /// Bytes of a redirect's body read (and dropped) so the connection can be reused; more closes it.
    static let redirectBodyAllowance = 64 * 1024

    let transport: any HTTPTransport

    /// Runs the flight. A total timeout bounds all of it (head, body, redirects) whatever the transport
    /// does with its own deadline: when it runs out the flight is cancelled and the answer is
    /// ``NetworkError/Code/timeout``.
    func run(_ request: PreparedRequest, progress: ProgressSink = ProgressSink()) async -> Result<NetworkResponse, NetworkError> {
        guard let total = request.totalTimeout else { return await flight(request, deadline: nil, progress: progress) }
        let deadline = ContinuousClock.now + total
        return await withTaskGroup(of: Result<NetworkResponse, NetworkError>?.self) { group in
            group.addTask { await flight(request, deadline: deadline, progress: progress) }
            group.addTask {
                // Returns nil when the flight ended first (this sleep is then cancelled).
                guard (try? await Task.sleep(until: deadline, clock: .continuous)) != nil else { return nil }
                return .failure(NetworkError(
                    .timeout, "the request took longer than its total timeout of \(total)", url: request.url.absoluteString))
            }
            var answer: Result<NetworkResponse, NetworkError> = .failure(.cancelled(url: request.url.absoluteString))
            for await result in group {
                guard let result else { continue }
                answer = result
                break
            }
            group.cancelAll()
            return answer
        }
    }

    private func flight(
        _ request: PreparedRequest, deadline: ContinuousClock.Instant?, progress: ProgressSink
    ) async -> Result<NetworkResponse, NetworkError> {
        var redirects = RedirectStateMachine(request: request)
        do {
            while true {
                try Task.checkCancellation()
                let current = redirects.current
                let response = try await transport.execute(transportRequest(for: current, deadline: deadline, progress: progress))
                switch redirects.receivedResponse(status: response.status.code, headers: response.headers) {
                case .deliver:
                    let body = try await readBody(of: response, for: current, progress: progress)
                    return .success(NetworkResponse(
                        status: response.status, headers: response.headers, body: body,
                        url: current.url, originalURL: redirects.originalURL, redirectChain: redirects.chain))
                case .follow(let next):
                    request.logger.debug("courier following redirect", metadata: [
                        "courier-status": "\(response.status.code)", "courier-url": "\(next.url.redactedForLogs)",
                    ])
                    try await discardBody(of: response)
                case .fail(let error):
                    return .failure(error)
                }
            }
        } catch {
            if Task.isCancelled { return .failure(.cancelled(url: request.url.absoluteString)) }
            return .failure(.wrapping(error, url: redirects.current.url.absoluteString))
        }
    }

    private func transportRequest(
        for request: PreparedRequest, deadline: ContinuousClock.Instant?, progress: ProgressSink
    ) -> TransportRequest {
        var transportRequest = TransportRequest(
            method: request.method, url: request.url, headers: request.headers, body: request.body,
            options: request.options, deadline: deadline, logger: request.logger)
        if request.reportsInformational {
            transportRequest.didReceiveInformational = progress.informational
        }
        if request.body != nil {
            let upload = progress.upload
            transportRequest.didSendBodyBytes = { sent, total in
                upload(TransferProgress(completedBytes: sent, totalBytes: total))
            }
        }
        return transportRequest
    }

    private func readBody(
        of response: TransportResponse, for request: PreparedRequest, progress: ProgressSink
    ) async throws -> Data {
        let limit = request.maximumBodySize
        let url = request.url.absoluteString
        let declaredLength = response.headers[.contentLength].flatMap { Int64($0) }
        if request.method != .head, let declaredLength, declaredLength > Int64(limit) {
            throw NetworkError(.bodyTooLarge, "the body of \(declaredLength) bytes exceeds the limit of \(limit) bytes", url: url)
        }
        // A compressed body's length says nothing about the decompressed bytes we count.
        let isEncoded = response.headers[.contentEncoding].map { !$0.isEmpty && $0.lowercased() != "identity" } ?? false
        let total = (isEncoded || request.method == .head) ? nil : declaredLength
        var buffer = ByteBuffer()
        if let total, total > 0 { buffer.reserveCapacity(Int(total)) }
        for try await part in response.body {
            guard buffer.readableBytes + part.readableBytes <= limit else {
                throw NetworkError(.bodyTooLarge, "the body exceeds the limit of \(limit) bytes", url: url)
            }
            buffer.writeImmutableBuffer(part)
            progress.download(TransferProgress(completedBytes: Int64(buffer.readableBytes), totalBytes: total))
        }
        if buffer.readableBytes == 0 {
            progress.download(TransferProgress(completedBytes: 0, totalBytes: total ?? 0))
        }
        return Data(buffer.readableBytesView)
    }

    private func discardBody(of response: TransportResponse) async throws {
        var read = 0
        for try await part in response.body {
            read += part.readableBytes
            if read > Self.redirectBodyAllowance { return }
        }
    }
}
