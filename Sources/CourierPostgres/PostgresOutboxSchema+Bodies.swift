import Courier
import Foundation
import PostgresNIO

/// The statements that read a frozen file's or form's body back from its chunks.
///
/// A body is whole when its chunks are parts 0 to n whose sizes add up to the row's frozen length. The sizes
/// come from `octet_length`, which reads the chunks' TOAST pointers, not their bytes, so the check is cheap
/// enough to make both before a replay is built (``bodyState(id:length:owner:client:)``) and again with the
/// first chunk's read (``firstChunk(id:length:owner:client:)``), in case the row was edited in between.
extension PostgresOutboxSchema {
    /// Chunk `part` of a row's body; `nil` past its last (or when the row is gone).
    func chunk(id: String, part: Int, client: PostgresClient) async throws -> ByteBuffer? {
        var found: ByteBuffer?
        for try await chunk in try await client.query(
            "SELECT chunk FROM \(unescaped: bodies) WHERE id = \(id) AND part = \(part)", logger: Self.silent
        ).decode(ByteBuffer.self) {
            found = chunk
        }
        return found
    }

    /// Chunk 0 of a row's body (`nil` when there is none), whether its chunks are whole, and whether the row
    /// is still pending and leased to `owner`. One statement, so the check costs the replay no round trip.
    /// `isPending` tells a damaged row from one settled meanwhile (another instance whose lease it took over
    /// delivered it, and its chunks went with the outcome) or taken over by another instance (whose replay
    /// sends it): only a row still this instance's is judged, and only such a row is sent.
    func firstChunk(id: String, length: Int64, owner: String, client: PostgresClient) async throws -> (chunk: ByteBuffer?, isWhole: Bool, isPending: Bool) {
        try await bodyState(id: id, length: length, owner: owner, withFirstChunk: true, client: client)
    }

    /// Whether a row's chunks are whole and the row still pending and leased to `owner`, without reading any
    /// chunk's bytes: asked before a replay's request is built, so that a damaged body is found before the
    /// origin gets anything (a server may answer a request's head before it reads the body).
    func bodyState(id: String, length: Int64, owner: String, client: PostgresClient) async throws -> (isWhole: Bool, isPending: Bool) {
        let state = try await bodyState(id: id, length: length, owner: owner, withFirstChunk: false, client: client)
        return (state.isWhole, state.isPending)
    }

    /// The one statement that judges a body: chunk 0 (only `withFirstChunk`), wholeness, pending and leased to `owner`.
    private func bodyState(
        id: String, length: Int64, owner: String, withFirstChunk: Bool, client: PostgresClient
    ) async throws -> (chunk: ByteBuffer?, isWhole: Bool, isPending: Bool) {
        var found: (ByteBuffer?, Bool, Bool) = (nil, false, false)
        for try await row in try await client.query("""
            SELECT (SELECT chunk FROM \(unescaped: bodies) WHERE \(withFirstChunk) AND id = \(id) AND part = 0),
                (SELECT count(*) = coalesce(max(part), -1) + 1 AND coalesce(min(part), 0) = 0
                    AND coalesce(sum(octet_length(chunk)), 0) = \(length) FROM \(unescaped: bodies) WHERE id = \(id)),
                EXISTS (SELECT 1 FROM \(unescaped: table) WHERE id = \(id) AND outcome IS NULL AND lease_owner = \(owner))
            """, logger: Self.silent
        ).decode((ByteBuffer?, Bool, Bool).self) {
            found = row
        }
        return found
    }
}
