import Courier
import Foundation
import NIOConcurrencyHelpers
import PostgresNIO

extension PostgresOutboxStore {
    /// Writes a request to freeze, held for this freeze until its caller is told (see ``freezeHolder(_:)``).
    ///
    /// A file or a form is measured first (off the cooperative pool, taking no statement place), then
    /// streamed into the body's chunks with its row in one transaction. The wait for it is the timeout
    /// since the server last took a chunk, and at most the timeout plus a second per MiB in all (a server
    /// slower than about 1 MiB/s fails a large freeze); once its caller is told it failed, it writes no
    /// more chunks.
    func insertFrozen(_ record: OutboxRecord, bytes: Data?, source: RequestBodySource?, limit: Int) throws(NetworkError) -> OutboxRecord {
        var record = record
        record.headers = CredentialFields.removed(from: record.headers)
        let hold = Self.freezeHolder(owner)
        let seconds = Self.interval(min(timeout, .seconds(86_400))) + Self.freezeHoldMargin
        let write: @Sendable (OutboxRecord, _ isAbandoned: @escaping @Sendable () -> Bool) async throws -> Void
        let progress = NIOLockedValueBox(0)
        var ceiling: Duration?
        let measured = try source.flatMap { source throws(NetworkError) in source.isFileOrForm ? try measure(source, limit: limit) : nil }
        if let prepared = measured, prepared.length != 0 {
            // A file or a form: measured first (a missing file, or one over the limit, is a typed error
            // with nothing written), then written in chunks with its row, in one transaction. (An empty file
            // is an empty body in the row: a row in chunks always has some, which its first read checks.)
            let length = prepared.length ?? 0
            record.body = nil
            record.chunkedBodyLength = length
            // However steadily the server takes chunks, the whole body gets the timeout plus a second per MiB.
            ceiling = timeout + .seconds(Double(length) / Double(1 << 20))
            write = { [schema, client] row, isAbandoned in
                try await schema.insert(
                    row, chunks: prepared.makeStream(), length: length, heldBy: hold, for: seconds, client: client,
                    progress: {
                        progress.withLockedValue { $0 += 1 }
                        return !isAbandoned()
                    })
            }
        } else {
            if let source, !source.isReplayable {
                throw NetworkError(.bodyNotReplayable, "a one-shot stream body cannot be frozen; send it as .data or .file to freeze it")
            }
            let data = measured != nil ? Data() : bytes ?? source?.bytes
            if let data, data.count > limit {
                throw NetworkError(.frozenBodyTooLarge, "the body (\(data.count) bytes) is larger than the \(limit) bytes a frozen request may keep")
            }
            record.body = data
            write = { [schema, client] row, _ in try await schema.insert(row, heldBy: hold, for: seconds, client: client) }
        }
        let row = record
        do {
            // The row is written held for this freeze (a lease of its own, `<owner>#freeze`): no instance
            // claims it until it is given back, which must succeed before the caller is told it is frozen.
            // A freeze that fails at either step, or whose write may have happened after all, is deleted by
            // a task of its own until the server takes it (its body's chunks with it); should this process
            // die first, a hold that lapses is deleted by the next claim, never sent.
            let removeAgain: @Sendable () -> Void = { [self] in
                repairUntilDone("remove a request whose freeze was reported failed") { [self] in
                    _ = try await schema.delete(id: row.id, onlyPending: true, client: client, logger: logger)
                }
            }
            try blockingWrite(progress: progress, ceiling: ceiling, finishesWhenAbandoned: true, afterwards: { outcome, reported in
                if case .success = outcome, reported { return }
                removeAgain()
            }) { isAbandoned in
                guard !isAbandoned() else { throw CancellationError() }
                try await write(row, isAbandoned)
            }
            do {
                try blocking { [self] in try await schema.release(id: row.id, owner: hold, client: client) }
            } catch {
                removeAgain()
                throw error
            }
        } catch {
            // A file that could not be read (it went, or is no longer a regular file) is the file's error.
            if let fileError = Self.innermost(error) as? NetworkError, fileError.code == .fileUnavailable { throw fileError }
            throw NetworkError(
                .outboxUnavailable, "the request could not be written to the PostgreSQL outbox \(schema.name): \(Self.describe(error))",
                underlying: error)
        }
        return record
    }

    /// A file or form body, measured (off the cooperative pool) and held to the frozen-body limit.
    private func measure(_ source: RequestBodySource, limit: Int) throws(NetworkError) -> RequestBodySource {
        let measured: Result<RequestBodySource, NetworkError>
        do {
            // File work, not a statement: it takes none of the statements' places.
            measured = try blockingWrite(isStatement: false) { _ in
                var source = source
                do throws(NetworkError) {
                    try await source.prepare()
                    return .success(source)
                } catch {
                    return .failure(error)
                }
            }
        } catch {
            throw NetworkError(.outboxUnavailable, "the body to freeze could not be measured: \(Self.describe(error))", underlying: error)
        }
        let source = try measured.get()
        if let length = source.length, length > Int64(limit) {
            throw NetworkError(
                .frozenBodyTooLarge,
                "the body is \(length) bytes, more than maximumFrozenBodySize (\(limit) bytes), so it cannot be frozen")
        }
        return source
    }

    func requestBody(of record: OutboxRecord) -> RequestBody? {
        if let length = record.chunkedBodyLength {
            return RequestBody.replayable(
                PostgresBodyChunks(store: self, id: record.id, length: length), length: length, contentType: record.headers[.contentType])
        }
        return record.body.map { RequestBody.data($0, contentType: record.headers[.contentType] ?? "application/octet-stream") }
    }

    func bodyCheck(for record: OutboxRecord) -> (@Sendable () async -> NetworkError?)? {
        guard let length = record.chunkedBodyLength else { return nil }
        return { [self] in
            do {
                let (isWhole, isPending) = try await boundedStatement("check the chunks of the frozen body") { [self] in
                    try await schema.bodyState(id: record.id, length: length, owner: owner, client: client)
                }
                return PostgresBodyChunks.failure(isWhole: isWhole, isPending: isPending, length: length)
            } catch let error as NetworkError {
                return error
            } catch {
                return NetworkError(.outboxUnavailable, "could not check the chunks of the frozen body: \(Self.describe(error))")
            }
        }
    }
}
