import Logging
import PostgresNIO

// Every statement that takes one of the store's places names the outbox's table in its text
// (`"courier_outbox_<name>"`, quoted, or `"courier_outbox_<name>$…` for the tables it owns), its
// transactions' BEGIN, COMMIT and ROLLBACK included, in a comment (notifications take no place and are not
// named): the server's `pg_stat_activity` then shows which sessions are the outbox's,
// whatever statement they are on (a COMMIT waiting on synchronous replication, a transaction idle between
// two statements), and an audit of lost statements counts them all.
extension PostgresOutboxSchema {
    /// Runs `body` in a transaction on one of the client's connections: rolled back when `body` throws,
    /// committed when it returns. As postgres-nio's `withTransaction`, but its BEGIN, COMMIT and ROLLBACK
    /// name the outbox (see ``statementsOnServer(client:)``).
    /// - Throws: `body`'s error (after the rollback), or the error of BEGIN or COMMIT.
    func transaction<Value: Sendable>(
        _ client: PostgresClient, _ body: (PostgresConnection) async throws -> Value
    ) async throws -> Value {
        let mark = "/* \(table) */"
        return try await client.withConnection { connection in
            try await connection.query("BEGIN \(unescaped: mark)", logger: Self.silent)
            let value: Value
            do {
                value = try await body(connection)
            } catch {
                _ = try? await connection.query("ROLLBACK \(unescaped: mark)", logger: Self.silent)
                throw error
            }
            try await connection.query("COMMIT \(unescaped: mark)", logger: Self.silent)
            return value
        }
    }

    /// How many statements of this outbox the server is running or holding open in a transaction, of any
    /// session but this one's (every instance's): an audit of lost statements
    /// (``StalledStatementsStateMachine/audited(seenOnServer:now:)``). A session counts when its current
    /// (or, idle in a transaction, its last) statement names the outbox's table or one of the tables it
    /// owns: an exact, quoted name, so another outbox whose name starts with this one's is not counted,
    /// nor one of the same name in another database. (One of the same name in another schema of this
    /// database is counted: that errs on the side of keeping places.)
    func statementsOnServer(client: PostgresClient) async throws -> Int {
        let owned = "\"courier_outbox_\(name)$"
        var count = 0
        for try await value in try await client.query("""
            SELECT count(*)::bigint FROM pg_stat_activity
            WHERE pid <> pg_backend_pid() AND datname = current_database() AND state <> 'idle'
                AND query NOT ILIKE 'LISTEN%' AND query NOT ILIKE 'UNLISTEN%'
                AND (position(\(table) in query) > 0 OR position(\(owned) in query) > 0)
            """, logger: Self.silent).decode(Int.self) {
            count = value
        }
        return count
    }
}
