import Courier
import Foundation
import HTTPTypes
import Logging
import PostgresNIO

/// The tables of one PostgreSQL outbox and every statement on them.
///
/// Each outbox name has a table of its own, `courier_outbox_<name>`, and a row in
/// `courier_outbox_migrations` saying which version of the table it is; ``migrate(_:)`` creates or
/// upgrades it under an advisory lock, so that instances starting together do it once. Columns follow
/// the SQLite outbox's; bodies are kept in the row (`bytea`), credentials never (the caller strips them,
/// as for SQLite).
struct PostgresOutboxSchema: Sendable {
    /// The outbox's name as the app gave it.
    let name: String
    /// Its table, quoted.
    let table: String
    /// The channel its notifications go on.
    let channel: String

    /// The version ``migrate(_:)`` brings a table to (2: the lanes index).
    static let version = 2

    struct InvalidName: Error, CustomStringConvertible {
        let name: String
        var description: String {
            "an outbox name must be 1 to 40 characters of a-z, 0-9 and _ (it names a table): \"\(name)\" is not"
        }
    }

    init(name: String) throws(InvalidName) {
        let allowed = name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
        }
        guard !name.isEmpty, name.utf8.count <= 40, allowed else { throw InvalidName(name: name) }
        self.name = name
        self.table = "\"courier_outbox_\(name)\""
        self.channel = "courier_outbox_\(name)"
    }

    // MARK: Schema

    /// Creates the table, or brings it up to ``version``; idempotent and safe with instances doing the same.
    func migrate(_ client: PostgresClient) async throws {
        let logger = Self.silent
        try await client.withTransaction(logger: logger) { connection in
            // One migration at a time across instances (released at commit).
            try await connection.query("SELECT pg_advisory_xact_lock(hashtext('courier_outbox_migrations'))", logger: logger)
            try await connection.query("""
                CREATE TABLE IF NOT EXISTS courier_outbox_migrations (outbox text PRIMARY KEY, version bigint NOT NULL)
                """, logger: logger)
            var current = 0
            for try await version in try await connection.query(
                "SELECT version FROM courier_outbox_migrations WHERE outbox = \(name)", logger: logger
            ).decode(Int.self) {
                current = version
            }
            guard current < Self.version else { return }
            if current < 1 {
                try await connection.query("""
                    CREATE TABLE IF NOT EXISTS \(unescaped: table) (
                        seq bigserial PRIMARY KEY,
                        id text NOT NULL UNIQUE,
                        origin text NOT NULL,
                        method text NOT NULL,
                        url text NOT NULL,
                        headers text NOT NULL,
                        body bytea,
                        idempotency_key text NOT NULL,
                        created_at double precision NOT NULL,
                        expires_at double precision,
                        maximum_attempts bigint,
                        attempts bigint NOT NULL DEFAULT 0,
                        next_attempt_at double precision NOT NULL,
                        dead_reason text,
                        last_status bigint,
                        last_error text,
                        lease_owner text,
                        lease_expires double precision,
                        outcome text,
                        finished_at double precision,
                        ordering_key text,
                        pipeline text)
                    """, logger: logger)
                try await connection.query("""
                    CREATE INDEX IF NOT EXISTS \(unescaped: "\"courier_outbox_\(name)_pending\"")
                        ON \(unescaped: table) (pipeline, origin, seq) WHERE outcome IS NULL AND dead_reason IS NULL
                    """, logger: logger)
            }
            if current < 2 {
                // The pending rows by lane, oldest first: a claim finds each lane's head in a few index
                // probes (``laneHeads``) instead of grouping every pending row.
                try await connection.query("""
                    CREATE INDEX IF NOT EXISTS \(unescaped: "\"courier_outbox_\(name)_lanes\"")
                        ON \(unescaped: table) ((coalesce(ordering_key, '')), seq) WHERE outcome IS NULL AND dead_reason IS NULL
                    """, logger: logger)
            }
            try await connection.query("""
                INSERT INTO courier_outbox_migrations (outbox, version) VALUES (\(name), \(Self.version))
                    ON CONFLICT (outbox) DO UPDATE SET version = excluded.version
                """, logger: logger)
        }
    }

    /// The oldest pending row of each lane of the rows `pipeline` may claim (rows without an ordering key
    /// share the host's lane), oldest first. A skip scan of the lanes index: one probe per lane to find the
    /// next lane and one for its head, however many rows are pending.
    func laneHeads(of pipeline: OutboxPipeline) -> PostgresQuery {
        let lane = "coalesce(ordering_key, '')"
        return """
            WITH RECURSIVE lanes(lane) AS (
                (SELECT \(unescaped: lane) FROM \(unescaped: table)
                    WHERE outcome IS NULL AND dead_reason IS NULL
                        AND (pipeline = \(pipeline.identity) OR (pipeline IS NULL AND origin = \(pipeline.origin))
                            OR (\(pipeline.replaysEveryRow) AND origin = \(pipeline.origin)))
                    ORDER BY \(unescaped: lane) LIMIT 1)
                UNION ALL
                SELECT (SELECT \(unescaped: lane) FROM \(unescaped: table)
                    WHERE outcome IS NULL AND dead_reason IS NULL AND \(unescaped: lane) > lanes.lane
                        AND (pipeline = \(pipeline.identity) OR (pipeline IS NULL AND origin = \(pipeline.origin))
                            OR (\(pipeline.replaysEveryRow) AND origin = \(pipeline.origin)))
                    ORDER BY \(unescaped: lane) LIMIT 1)
                FROM lanes WHERE lanes.lane IS NOT NULL)
            SELECT head.* FROM lanes CROSS JOIN LATERAL (
                SELECT * FROM \(unescaped: table)
                    WHERE outcome IS NULL AND dead_reason IS NULL AND \(unescaped: lane) = lanes.lane
                        AND (pipeline = \(pipeline.identity) OR (pipeline IS NULL AND origin = \(pipeline.origin))
                            OR (\(pipeline.replaysEveryRow) AND origin = \(pipeline.origin)))
                    ORDER BY seq LIMIT 1) AS head
            WHERE lanes.lane IS NOT NULL
            ORDER BY head.seq
            """
    }

    static let silent = Logger(label: "courier.outbox.postgres.queries", factory: { _ in SwiftLogNoOpLogHandler() })

    // MARK: Rows

    /// Commits a row and tells listening instances.
    func insert(_ record: OutboxRecord, client: PostgresClient, logger: Logger) async throws {
        let headers = OutboxRecord.headersColumn(record.headers, requirements: [])
        try await client.withTransaction(logger: Self.silent) { connection in
            try await connection.query("""
                INSERT INTO \(unescaped: table) (id, origin, method, url, headers, body, idempotency_key, created_at, expires_at,
                    maximum_attempts, attempts, next_attempt_at, last_status, last_error, ordering_key, pipeline)
                VALUES (\(record.id), \(record.origin), \(record.method.rawValue), \(record.url.absoluteString), \(headers),
                    \(record.body), \(record.idempotencyKey), \(record.createdAt), \(record.expiresAt), \(record.maximumAttempts),
                    \(record.attempts), \(record.nextAttemptAt), \(record.lastStatus), \(record.lastError), \(record.orderingKey),
                    \(record.pipeline))
                """, logger: Self.silent)
            try await connection.query("SELECT pg_notify(\(channel), \(PostgresOutboxStore.Notice.due.rawValue))", logger: Self.silent)
        }
    }

    /// Pending rows and dead letters (of one origin), oldest first.
    func pending(origin: String?, client: PostgresClient, logger: Logger) async throws -> [OutboxRecord] {
        let rows = if let origin {
            try await client.query("SELECT * FROM \(unescaped: table) WHERE origin = \(origin) AND outcome IS NULL ORDER BY seq", logger: Self.silent)
        } else {
            try await client.query("SELECT * FROM \(unescaped: table) WHERE outcome IS NULL ORDER BY seq", logger: Self.silent)
        }
        var records: [OutboxRecord] = []
        for try await row in rows {
            if let record = Self.record(row.makeRandomAccess()) { records.append(record) }
        }
        return records
    }

    func count(client: PostgresClient, logger: Logger) async throws -> Int {
        var count = 0
        for try await value in try await client.query(
            "SELECT count(*) FROM \(unescaped: table) WHERE outcome IS NULL", logger: Self.silent
        ).decode(Int.self) {
            count = value
        }
        return count
    }

    func finished(client: PostgresClient, logger: Logger) async throws -> [OutboxEntry] {
        var entries: [OutboxEntry] = []
        for try await row in try await client.query(
            "SELECT * FROM \(unescaped: table) WHERE outcome IS NOT NULL ORDER BY finished_at, seq", logger: Self.silent
        ) {
            let columns = row.makeRandomAccess()
            guard let record = Self.record(columns), let outcome = try? columns["outcome"].decode(String.self) else { continue }
            let finishedAt = try? columns["finished_at"].decode(Double.self)
            entries.append(record.entry.with(state: outcome == "delivered" ? .delivered : .failedPermanently)
                .with(finishedAt: finishedAt.map(Date.init(timeIntervalSince1970:))))
        }
        return entries
    }

    /// The rows with these ids that are still there, each with its outcome (for waiting operations).
    func rows(ids: [String], client: PostgresClient, logger: Logger) async throws -> [String: (record: OutboxRecord?, outcome: String?)] {
        var found: [String: (record: OutboxRecord?, outcome: String?)] = [:]
        for try await row in try await client.query(
            "SELECT * FROM \(unescaped: table) WHERE id = ANY(\(ids))", logger: Self.silent
        ) {
            let columns = row.makeRandomAccess()
            guard let id = try? columns["id"].decode(String.self) else { continue }
            found[id] = (Self.record(columns), try? columns["outcome"].decode(String?.self))
        }
        return found
    }

    func revive(id: String, now: Double, client: PostgresClient, logger: Logger) async throws -> Bool {
        var revived = false
        for try await _ in try await client.query("""
            UPDATE \(unescaped: table) SET dead_reason = NULL, attempts = 0, next_attempt_at = \(now), last_error = NULL,
                expires_at = CASE WHEN expires_at IS NULL THEN NULL ELSE \(now) + (expires_at - created_at) END
            WHERE id = \(id) AND dead_reason IS NOT NULL AND dead_reason <> 'damaged' AND outcome IS NULL
            RETURNING id
            """, logger: Self.silent) {
            revived = true
        }
        return revived
    }

    /// Deletes a row (only a pending or dead-lettered one with `onlyPending`); returns whether there was one.
    func delete(id: String, onlyPending: Bool, client: PostgresClient, logger: Logger) async throws -> Bool {
        var deleted = false
        let rows = if onlyPending {
            try await client.query("DELETE FROM \(unescaped: table) WHERE id = \(id) AND outcome IS NULL RETURNING id", logger: Self.silent)
        } else {
            try await client.query("DELETE FROM \(unescaped: table) WHERE id = \(id) RETURNING id", logger: Self.silent)
        }
        for try await _ in rows { deleted = true }
        return deleted
    }

    /// Decodes a row; `nil` for anything it cannot read (a later version's, or damaged).
    static func record(_ row: PostgresRandomAccessRow) -> OutboxRecord? {
        func column<Value: PostgresDecodable>(_ name: String, as type: Value.Type = Value.self) -> Value? {
            guard row.contains(name), row[name].bytes != nil else { return nil }   // absent, or NULL
            return try? row[name].decode(Value.self)
        }
        guard let id = column("id", as: String.self), let origin = column("origin", as: String.self),
            let methodName = column("method", as: String.self), let method = HTTPRequest.Method(methodName),
            let urlString = column("url", as: String.self), let url = URL(string: urlString),
            let headerText = column("headers", as: String.self), let (headers, requirements) = OutboxRecord.headers(fromColumn: headerText),
            requirements.isEmpty,
            let key = column("idempotency_key", as: String.self), let createdAt = column("created_at", as: Double.self),
            let attempts = column("attempts", as: Int.self), let nextAttemptAt = column("next_attempt_at", as: Double.self)
        else { return nil }
        return OutboxRecord(
            id: id, origin: origin, method: method, url: url, headers: CredentialFields.removed(from: headers),
            body: column("body", as: Data.self), idempotencyKey: key, createdAt: createdAt,
            expiresAt: column("expires_at", as: Double.self), maximumAttempts: column("maximum_attempts", as: Int.self),
            attempts: attempts, nextAttemptAt: nextAttemptAt,
            deadReason: column("dead_reason", as: String.self).flatMap(OutboxEntry.DeadLetterReason.init(rawValue:)),
            lastStatus: column("last_status", as: Int.self), lastError: column("last_error", as: String.self),
            orderingKey: column("ordering_key", as: String.self), pipeline: column("pipeline", as: String.self))
    }
}
