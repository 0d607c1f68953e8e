import NIOCore
import NIOHTTP1

/// Per-connection handler of the ``TestServer``: collects each request, asks ``Router``
/// what to do and writes the answer, keeping ``ServerStatistics`` up to date.
///
/// It sits behind NIO's `HTTPServerPipelineHandler`, so it sees one request at a time: the
/// next pipelined request is only delivered once the previous response's `.end` is written.
/// All state is confined to the channel's event loop.
final class TestServerHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// A `/bytes` response that is being streamed.
    struct ActiveStream {
        var requestID: UInt64
        var keepAlive: Bool
        var plan: ByteStreamPlan
        /// Bytes already written.
        var sent = 0
        /// Whether a continuation (timer or `execute`) is already scheduled.
        var pending = false
    }

    /// Largest number of body bytes written in one event-loop tick before yielding.
    static let bytesPerTick = 1 << 20

    let statistics: ServerStatistics
    /// Bodies registered by the test at fixed paths, answered before the built-in routes.
    let files: ServedFiles
    let connections: ConnectionRegistry

    /// The request whose head arrived and whose `.end` is still outstanding.
    private var receiving: IncomingRequest?
    /// Requests counted as in flight (received, response not completely written yet).
    private var openRequests: Set<UInt64> = []
    /// Answered requests whose final `.end` write has not completed yet.
    private var deliveringRequests: Set<UInt64> = []
    /// Set once the server decided to close the connection (so it is not a client abort).
    private var closedByServer = false
    /// Cleared when the channel goes inactive or fails; nothing is written afterwards.
    var isActive = true
    /// Pending delay or stream timer, cancelled when the connection goes away.
    var timer: Scheduled<Void>?
    /// The `/bytes` response being streamed, if any.
    var stream: ActiveStream?
    /// Whether ``pumpStream(context:)`` is running (guards against re-entrant calls).
    var isPumpingStream = false

    /// Creates a handler reporting to `statistics`.
    init(statistics: ServerStatistics, files: ServedFiles, connections: ConnectionRegistry) {
        self.statistics = statistics
        self.files = files
        self.connections = connections
    }

    // MARK: Inbound events

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // After the connection closed (or the server decided to close it) requests are
        // ignored; NIO's pipelining handler may still hand over buffered requests then.
        guard isActive else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            guard receiving == nil else {
                closeByServer(context: context)
                return
            }
            let path = IncomingRequest.split(uri: head.uri).path
            let ticket = statistics.requestStarted(
                method: head.method.rawValue,
                uri: head.uri,
                path: path,
                headers: head.headers.map { (name: $0.name, value: $0.value) }
            )
            openRequests.insert(ticket.id)
            receiving = IncomingRequest(ticket: ticket, head: head)
            if head.version == .http1_1,
                head.headers["expect"].contains(where: { $0.lowercased() == "100-continue" })
            {
                let interim = HTTPResponseHead(version: head.version, status: .continue)
                context.writeAndFlush(wrapOutboundOut(.head(interim)), promise: nil)
            }
        case .body(let chunk):
            receiving?.append(chunk)
        case .end(let trailers):
            guard var request = receiving else { return }
            receiving = nil
            request.trailers = trailers.map { $0.map { (name: $0.name, value: $0.value) } }
            statistics.recordBody(id: request.ticket.id, body: request.body)
            perform(files.action(for: request.path) ?? Router.route(request), for: request, context: context)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            pumpStream(context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        isActive = false
        timer?.cancel()
        timer = nil
        stream = nil
        receiving = nil
        let outcome = unfinishedOutcome
        for _ in openRequests {
            statistics.requestFinished(outcome)
        }
        if outcome == .abortedByClient {
            for _ in deliveringRequests {
                statistics.responseDeliveryFailed()
            }
        }
        openRequests.removeAll()
        deliveringRequests.removeAll()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // I/O errors (e.g. ECONNRESET) come from the client going away; anything else
        // (malformed HTTP, ...) makes the server close the connection.
        if !(error is IOError) {
            closedByServer = true
        }
        isActive = false
        context.close(promise: nil)
    }

    // MARK: Answering

    /// Carries out `action` for `request`.
    private func perform(_ action: RouteAction, for request: IncomingRequest, context: ChannelHandlerContext) {
        guard isActive else { return }
        switch action {
        case .reply(let reply):
            send(reply, for: request, context: context)
        case .delayed(let milliseconds, let reply):
            timer = context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(milliseconds)) {
                self.timer = nil
                guard self.isActive else { return }
                self.send(reply, for: request, context: context)
            }
        case .stream(let plan):
            startStream(plan, for: request, context: context)
        case .stall:
            break
        case .partial(let reply, let thenClose):
            let flushed = context.eventLoop.makePromise(of: Void.self)
            let headers = HTTPHeaders(reply.headers)
            if request.isHead {
                writeHead(reply.status, headers: headers, for: request, context: context, promise: flushed)
                context.flush()
            } else {
                writeHead(reply.status, headers: headers, for: request, context: context)
                let prefix = ByteBuffer(bytes: reply.body)
                context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(prefix))), promise: flushed)
            }
            if thenClose {
                flushed.futureResult.assumeIsolated().whenComplete { _ in
                    self.closeByServer(context: context)
                }
            }
        }
    }

    /// Writes a complete response and finishes the request.
    func send(_ reply: Reply, for request: IncomingRequest, context: ChannelHandlerContext) {
        var headers = HTTPHeaders(reply.headers)
        if reply.allowsBody, !headers.contains(name: "content-length") {
            headers.add(name: "Content-Length", value: String(reply.body.count))
        }
        writeHead(reply.status, headers: headers, for: request, context: context)
        if reply.allowsBody, !request.isHead, !reply.body.isEmpty {
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: reply.body)))), promise: nil)
        }
        finish(requestID: request.ticket.id, keepAlive: request.keepAlive, context: context)
    }

    /// Writes the response head, adding the `Connection` header the request calls for.
    func writeHead(
        _ status: HTTPResponseStatus,
        headers: HTTPHeaders,
        for request: IncomingRequest,
        context: ChannelHandlerContext,
        promise: EventLoopPromise<Void>? = nil
    ) {
        var headers = headers
        if !request.keepAlive {
            headers.replaceOrAdd(name: "Connection", value: "close")
        } else if request.head.version.major == 1, request.head.version.minor == 0 {
            headers.replaceOrAdd(name: "Connection", value: "keep-alive")
        }
        let head = HTTPResponseHead(version: request.head.version, status: status, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: promise)
    }

    /// Completes the response by writing `.end` and flushing.
    ///
    /// The request stops counting as in flight just *before* `.end` is written, so by the time
    /// a client can have read the last byte the statistics already reflect it (and a pipelined
    /// follow-up request is never counted together with it). Should the final bytes then fail
    /// to reach the client because it closed the connection, the request counts as aborted.
    /// Without keep-alive the connection is closed once everything is written.
    func finish(requestID: UInt64, keepAlive: Bool, context: ChannelHandlerContext) {
        if openRequests.remove(requestID) != nil {
            statistics.requestFinished(.completed)
            deliveringRequests.insert(requestID)
        }
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: written)
        written.futureResult.assumeIsolated().whenComplete { result in
            let wasDelivering = self.deliveringRequests.remove(requestID) != nil
            switch result {
            case .success:
                if !keepAlive {
                    self.closeByServer(context: context)
                }
            case .failure:
                if wasDelivering, self.unfinishedOutcome == .abortedByClient {
                    self.statistics.responseDeliveryFailed()
                }
            }
        }
    }

    // MARK: Bookkeeping

    /// How requests still open when the connection ends are counted.
    private var unfinishedOutcome: ServerStatistics.Outcome {
        closedByServer || connections.isShuttingDown ? .closedByServer : .abortedByClient
    }

    /// Closes the connection on the server's initiative.
    func closeByServer(context: ChannelHandlerContext) {
        closedByServer = true
        isActive = false
        context.close(promise: nil)
    }
}
