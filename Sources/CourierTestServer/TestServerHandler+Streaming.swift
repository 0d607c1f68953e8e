import NIOCore
import NIOHTTP1

/// Streaming of `/bytes/{n}` responses with bounded memory.
///
/// Pieces are generated on the fly and written only while the channel is writable; when
/// it is not, streaming resumes from `channelWritabilityChanged`. At most
/// ``TestServerHandler/bytesPerTick`` bytes are written per event-loop tick so a fast
/// client cannot monopolise the loop, and with `delayMs` one piece is written per timer.
extension TestServerHandler {
    /// Writes the head of a `/bytes` response and starts streaming its body.
    func startStream(_ plan: ByteStreamPlan, for request: IncomingRequest, context: ChannelHandlerContext) {
        var headers = HTTPHeaders([("Content-Type", "application/octet-stream")])
        if plan.chunked && !request.isHead {
            headers.add(name: "Transfer-Encoding", value: "chunked")
        } else {
            headers.add(name: "Content-Length", value: String(plan.total))
        }
        writeHead(.ok, headers: headers, for: request, context: context)
        guard !request.isHead, plan.total > 0 else {
            finish(requestID: request.ticket.id, keepAlive: request.keepAlive, context: context)
            return
        }
        stream = ActiveStream(requestID: request.ticket.id, keepAlive: request.keepAlive, plan: plan)
        context.flush()
        pumpStream(context: context)
    }

    /// Writes as many pieces as allowed now, then finishes or arranges to continue.
    ///
    /// Flushing can synchronously trigger `channelWritabilityChanged` (and so a nested call of
    /// this method); ``isPumpingStream`` makes such nested calls return at once, and the
    /// writability is re-checked after the flush instead.
    func pumpStream(context: ChannelHandlerContext) {
        guard isActive, !isPumpingStream, var active = stream, !active.pending else { return }
        let delayed = active.plan.delayMilliseconds > 0
        var written = 0
        isPumpingStream = true
        while isActive, active.sent < active.plan.total, context.channel.isWritable {
            let count = min(active.plan.chunkSize, active.plan.total - active.sent)
            var piece = context.channel.allocator.buffer(capacity: count)
            BytePattern.write(offset: active.sent, count: count, into: &piece)
            active.sent += count
            written += count
            context.write(wrapOutboundOut(.body(.byteBuffer(piece))), promise: nil)
            if delayed || written >= Self.bytesPerTick {
                break
            }
        }
        if active.sent >= active.plan.total {
            // `finish` flushes the last piece together with `.end`, after the statistics have
            // been updated. It may deliver the next pipelined request, which may start a new
            // stream, so the guard flag is cleared first.
            isPumpingStream = false
            stream = nil
            finish(requestID: active.requestID, keepAlive: active.keepAlive, context: context)
            return
        }
        context.flush()
        isPumpingStream = false
        guard isActive else { return }

        if delayed && written > 0 {
            active.pending = true
            stream = active
            timer = context.eventLoop.assumeIsolated().scheduleTask(
                in: .milliseconds(active.plan.delayMilliseconds)
            ) {
                self.timer = nil
                self.resumeStream(context: context)
            }
        } else if context.channel.isWritable {
            active.pending = true
            stream = active
            context.eventLoop.assumeIsolated().execute {
                self.resumeStream(context: context)
            }
        } else {
            // Not writable: channelWritabilityChanged resumes streaming.
            stream = active
        }
    }

    /// Clears the pending flag set by ``pumpStream(context:)`` and continues streaming.
    private func resumeStream(context: ChannelHandlerContext) {
        stream?.pending = false
        pumpStream(context: context)
    }
}
