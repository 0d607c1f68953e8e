import Foundation
import GRDB

// The replayer's side of the outbox: choosing and claiming heads, leases, recording outcomes. Every
// decision is ReplayStateMachine's; this is the transaction around it.
extension OutboxDatabase {
    /// How long a finished row is kept, so that an operation of another process waiting for it learns
    /// its outcome (see OutboxDatabase+Watch) before it is swept away.
    static let outcomeRetention: Double = 86_400

    /// Reads the head (oldest pending row) of each lane of a pipeline's rows that `claim` looks at and,
    /// in the same transaction, acts on the one ``ReplayStateMachine/choose(_:now:claim:)`` picks: claims
    /// it (lease) or dead-letters it. Attempts are counted when a request really reaches the server
    /// (``complete(id:_:status:error:counted:now:)``), not here. A pipeline replays the rows it froze and
    /// the rows of its origin that earlier versions wrote without a pipeline; never another pipeline's.
    func claimHead(_ pipeline: OutboxPipeline, claim: ReplayStateMachine.Claim, now: Double, lease: Double) -> OutboxClaimResult {
        let origin = pipeline.origin
        followIfSetAside()
        do {
            var damaged: [String] = []
            defer {
                // An operation of this process waiting for a damaged row hears about it.
                for id in damaged {
                    detachOperation(for: id)?.finish(.failure(NetworkError(
                        .outboxUnavailable, "its outbox entry is damaged and was set aside; it will not be sent", url: nil)))
                }
            }
            return try pool.writeWithoutTransaction { db in
                var result = OutboxClaimResult.empty
                try db.inTransaction(.immediate) {
                    try db.execute(sql: "DELETE FROM outbox WHERE outcome IS NOT NULL AND finishedAt < ?",
                                   arguments: [now - Self.outcomeRetention])
                    try Self.reviveRowsOlderVersionsCouldNotRead(db, origin: origin)
                    var heads: [(row: Row, record: OutboxRecord)] = []
                    var readAll = false
                    while !readAll {
                        // The oldest pending row of each lane (rows without an ordering key share the host's).
                        let rows = try Row.fetchAll(db, sql: """
                            SELECT * FROM outbox WHERE seq IN (
                                SELECT min(seq) FROM outbox
                                WHERE (pipeline = ? OR (pipeline IS NULL AND origin = ?) OR (? AND origin = ?))
                                    AND deadReason IS NULL AND outcome IS NULL
                                GROUP BY coalesce(orderingKey, ''))
                            ORDER BY seq
                            """, arguments: [pipeline.identity, origin, pipeline.replaysEveryRow, origin])
                        heads = []
                        readAll = true
                        for row in rows {
                            if let record = OutboxRecord(row: row) {
                                heads.append((row, record))
                            } else {
                                // A row that cannot be read is set aside (never deleted: it may be all the app
                                // has) and the next one of its lane becomes the head.
                                let seq = try row.decode(Int64.self, forColumn: "seq")
                                try db.execute(sql: "UPDATE outbox SET deadReason = 'damaged' WHERE seq = ?", arguments: [seq])
                                if let id = try? row.decode(String.self, forColumn: "id") { damaged.append(id) }
                                readAll = false
                            }
                        }
                    }
                    // What is wrong with a head's copied body, if anything (a few `stat`s).
                    var bodyProblems: [String: String] = [:]
                    let facts = heads.map { row, record in
                        let leaseOwner: String? = try? row.decode(String?.self, forColumn: "leaseOwner")
                        let leaseExpires: Double? = try? row.decode(Double?.self, forColumn: "leaseExpires")
                        var leasedUntil: Double?
                        if let leaseOwner, let leaseExpires, leaseExpires > now, Self.isAlive(leaseOwner) { leasedUntil = leaseExpires }
                        if let layout = record.frozenBody { bodyProblems[record.id] = bodies.problem(with: layout, id: record.id) }
                        return ReplayStateMachine.Head(
                            id: record.id, lane: record.lane, attempts: record.attempts, maximumAttempts: record.maximumAttempts,
                            expiresAt: record.expiresAt, nextAttemptAt: record.nextAttemptAt, leasedUntil: leasedUntil,
                            isBodyIntact: bodyProblems[record.id] == nil)
                    }
                    guard let (head, decision) = ReplayStateMachine.choose(facts, now: now, claim: claim),
                        var record = heads.first(where: { $0.record.id == head.id })?.record
                    else { return .commit }
                    switch decision {
                    case .send:
                        try db.execute(sql: "UPDATE outbox SET leaseOwner = ?, leaseExpires = ? WHERE id = ?",
                                       arguments: [owner, now + lease, record.id])
                    case .deadLetter(let reason):
                        // Kept, copy included (a dead letter stays until dropped); a body that is unavailable says why.
                        record.deadReason = reason
                        if reason == .bodyUnavailable { record.lastError = bodyProblems[record.id] }
                        try db.execute(sql: "UPDATE outbox SET deadReason = ?, lastError = ?, leaseOwner = NULL WHERE id = ?",
                                       arguments: [reason.rawValue, record.lastError, record.id])
                    case .wait:
                        break
                    }
                    result = .head(head, decision, record)
                    return .commit
                }
                return result
            }
        } catch {
            noteIfDamaged(error)
            return .failed("\(error)")
        }
    }

    /// Gives back their place to the rows an earlier version set aside as damaged only because it could
    /// not read them: a body rebuilt from copies is stored so that versions without frozen uploads cannot
    /// read the row (``OutboxRecord/headersColumn(_:requirements:)``), and they mark it `damaged` before
    /// sending anything. This version reads it, so it is pending again, in its place in its lane. A row
    /// this version cannot read either stays set aside.
    static func reviveRowsOlderVersionsCouldNotRead(_ db: Database, origin: String) throws {
        let rows = try Row.fetchAll(db, sql: """
            SELECT * FROM outbox WHERE origin = ? AND deadReason = 'damaged' AND outcome IS NULL
                AND bodyLayout IS NOT NULL AND headers LIKE '{%'
            """, arguments: [origin])
        for row in rows where OutboxRecord(row: row) != nil {
            let seq = try row.decode(Int64.self, forColumn: "seq")
            try db.execute(sql: "UPDATE outbox SET deadReason = NULL WHERE seq = ?", arguments: [seq])
        }
    }

    /// Extends this process's lease on a row it is replaying; `false` when the lease is no longer its own.
    @discardableResult
    func renewLease(id: String, until: Double) -> Bool {
        (try? pool.write { db in
            try db.execute(sql: "UPDATE outbox SET leaseExpires = ? WHERE id = ? AND leaseOwner = ?", arguments: [until, id, owner])
            return db.changesCount > 0
        }) ?? false
    }

    /// Records what became of an attempt: the row keeps its outcome for a while (for other processes'
    /// waiting operations), or waits for a retry at a later time. `counted` says whether the attempt
    /// reached the server (one that could not connect or never went out is not counted against
    /// ``NetworkOperation/maximumAttempts``; see ``ReplayStateMachine/countsAsAttempt(_:)``).
    /// A delivered or refused row's body copies are removed once its outcome is committed.
    func complete(id: String, _ completion: ReplayStateMachine.Completion, status: Int?, error: String?, counted: Bool, now: Double) {
        let finished = (try? pool.write { db -> Bool in
            switch completion {
            case .delivered, .failedPermanently:
                let outcome = completion == .delivered ? "delivered" : "failed"
                try db.execute(sql: """
                    UPDATE outbox SET outcome = ?, finishedAt = ?, lastStatus = ?, lastError = ?, attempts = attempts + ?,
                        body = NULL, bodyLayout = NULL, leaseOwner = NULL, leaseExpires = NULL WHERE id = ?
                    """, arguments: [outcome, now, status, error, counted ? 1 : 0, id])
                return true
            case .deadLettered(let reason):
                // Kept with its body copy, for the app to retry (Outbox.retry) or drop.
                try db.execute(sql: """
                    UPDATE outbox SET deadReason = ?, lastStatus = ?, lastError = ?, attempts = attempts + ?,
                        leaseOwner = NULL, leaseExpires = NULL WHERE id = ?
                    """, arguments: [reason.rawValue, status, error, counted ? 1 : 0, id])
                return false
            case .retry(let at):
                try db.execute(sql: """
                    UPDATE outbox SET nextAttemptAt = ?, lastStatus = ?, lastError = ?, attempts = attempts + ?,
                        leaseOwner = NULL, leaseExpires = NULL WHERE id = ?
                    """, arguments: [at, status, error, counted ? 1 : 0, id])
                return false
            }
        }) ?? false
        if finished { bodies.remove(id) }
    }

    /// Deletes a row for good (a drop asked for while its replay was on the wire, which got no answer),
    /// then its body copies.
    func delete(id: String) {
        let deleted = (try? pool.write { db in try db.execute(sql: "DELETE FROM outbox WHERE id = ?", arguments: [id]) }) != nil
        if deleted { bodies.remove(id) }
    }

}
