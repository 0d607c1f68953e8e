import Foundation
import GRDB

// What an app asks of its outbox after the fact: the outcomes of the last day (delivered or refused while
// it was not listening), and dead letters put back in line once it can send them (signed in again).
extension OutboxDatabase {
    /// The rows finished within ``outcomeRetention`` (delivered, or refused for good), oldest first.
    func finishedEntries() throws(NetworkError) -> [OutboxEntry] {
        let rows: [Row]
        do {
            rows = try withRecovery { pool in try pool.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM outbox WHERE outcome IS NOT NULL ORDER BY finishedAt, seq")
            } }
        } catch {
            throw NetworkError(.outboxUnavailable, "the outbox in \(directory.path) cannot be read: \(error)", underlying: error)
        }
        return rows.compactMap { row in
            guard let record = OutboxRecord(row: row), let outcome = try? row.decode(String.self, forColumn: "outcome") else {
                return nil
            }
            let finishedAt = (try? row.decode(Double?.self, forColumn: "finishedAt")).flatMap { $0 }
            return record.entry.with(state: outcome == "delivered" ? .delivered : .failedPermanently)
                .with(finishedAt: finishedAt.map(Date.init(timeIntervalSince1970:)))
        }
    }

    /// Puts a dead letter back in line: pending again, its attempts counted from zero, due now, and its
    /// time to live (if it had one) counted again from now. Its place in its lane is kept. `false` when
    /// there is no such dead letter (pending, finished, dropped, or never there).
    func revive(id: String, now: Double) -> Bool {
        onWork {
            (try? pool.write { db in
                try db.execute(sql: """
                    UPDATE outbox SET deadReason = NULL, attempts = 0, nextAttemptAt = ?, lastError = NULL,
                        expiresAt = CASE WHEN expiresAt IS NULL THEN NULL ELSE ? + (expiresAt - createdAt) END
                    WHERE id = ? AND deadReason IS NOT NULL AND deadReason <> 'damaged' AND outcome IS NULL
                    """, arguments: [now, now, id])
                return db.changesCount > 0
            }) ?? false
        }
    }
}
