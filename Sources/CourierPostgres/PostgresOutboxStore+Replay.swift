import Courier
import Foundation
import NIOConcurrencyHelpers
import PostgresNIO

// Claims, leases and outcomes. Every decision is ReplayStateMachine's; this is the transaction around it.
// A claim reads the head (oldest pending row) of each lane with `FOR UPDATE SKIP LOCKED`: a head another
// instance is claiming at this moment is skipped (its lane is theirs), never waited for; a head claimed
// earlier carries a lease until it expires, and ReplayStateMachine leaves its lane alone until then. So
// one instance replays a row at a time, and rows of one ordering key go in order.
extension PostgresOutboxStore {
    /// How long a finished row is kept, so that an operation of another instance waiting for it learns its outcome.
    static let outcomeRetention: Double = 86_400

    /// How soon a claim that passed over heads other instances were claiming looks again.
    static let passedOverRecheck: Double = 0.05

    /// What the replay state machine needs to know of a row.
    static func head(_ record: OutboxRecord, _ columns: PostgresRandomAccessRow, now: Double) -> ReplayStateMachine.Head {
        let expires = (try? columns["lease_expires"].decode(Double?.self)) ?? nil
        return ReplayStateMachine.Head(
            id: record.id, lane: record.lane, attempts: record.attempts, maximumAttempts: record.maximumAttempts,
            expiresAt: record.expiresAt, nextAttemptAt: record.nextAttemptAt, leasedUntil: expires.flatMap { $0 > now ? $0 : nil },
            isBodyIntact: true)
    }

    /// Whether a row is held by a freeze whose hold lapsed: its caller was never told it is frozen (the
    /// freezing process died, or failed to give it back), so it is deleted, never sent.
    static func isLapsedFreeze(_ columns: PostgresRandomAccessRow, now: Double) -> Bool {
        guard let holder = (try? columns["lease_owner"].decode(String?.self)) ?? nil, holder.hasSuffix("#freeze") else { return false }
        let expires = (try? columns["lease_expires"].decode(Double?.self)) ?? nil
        return (expires ?? 0) <= now
    }

    /// The server's clock, as a claim's rows carry it (``PostgresOutboxSchema/now``).
    static func serverNow(_ columns: PostgresRandomAccessRow) -> Double? {
        guard columns.contains("courier_now") else { return nil }
        return try? columns["courier_now"].decode(Double.self)
    }

    /// A head and its row with their times on this machine's clock (`offset`: the server's clock minus ours),
    /// for the replayer, whose timers run on ours.
    static func local(
        _ head: ReplayStateMachine.Head, _ decision: ReplayStateMachine.HeadDecision, _ record: OutboxRecord, offset: Double
    ) -> OutboxClaimResult {
        var head = head
        var record = record
        head.expiresAt = head.expiresAt.map { $0 - offset }
        head.nextAttemptAt -= offset
        head.leasedUntil = head.leasedUntil.map { $0 - offset }
        record.expiresAt = record.expiresAt.map { $0 - offset }
        record.nextAttemptAt -= offset
        record.createdAt -= offset
        let decision: ReplayStateMachine.HeadDecision = if case .wait(let until) = decision { .wait(until: until - offset) } else { decision }
        return .head(head, decision, record)
    }

    func claimHead(_ pipeline: OutboxPipeline, claim: ReplayStateMachine.Claim, now: Double, lease: Double) -> OutboxClaimResult {
        do {
            // A claim the server commits after this gave up leaves its row leased to nobody sending it, until
            // the lease lapses (it is not given back: a late release could clear a newer lease).
            return try blocking { [self] in try await claimInTransaction(pipeline, claim: claim, localNow: now, lease: lease) }
        } catch {
            logger.debug("courier outbox claim failed", metadata: ["courier-error": "\(Self.describe(error))"])
            return .failed(Self.describe(error))
        }
    }

    /// Decides on the server's clock (every time in the table is the server's), and answers on ours.
    private func claimInTransaction(
        _ pipeline: OutboxPipeline, claim: ReplayStateMachine.Claim, localNow: Double, lease: Double
    ) async throws -> OutboxClaimResult {
        let table = schema.table
        let silent = PostgresOutboxSchema.silent
        // Finished rows past their retention, a few at a time, skipping any another instance is removing
        // (at most once a minute: not a round trip more for every claim).
        let purges = lastPurge.withLockedValue { last in
            defer { if localNow - last >= 60 { last = localNow } }
            return localNow - last >= 60
        }
        if purges {
            try await client.query("""
                DELETE FROM \(unescaped: table) WHERE seq IN (SELECT seq FROM \(unescaped: table)
                    WHERE outcome IS NOT NULL AND finished_at < \(unescaped: PostgresOutboxSchema.now) - \(Self.outcomeRetention) LIMIT 1000 FOR UPDATE SKIP LOCKED)
                """, logger: silent)
        }
        let owner = owner
        let (result, damaged) = try await schema.transaction(client) { connection -> (OutboxClaimResult, [String]) in
            // The oldest pending row of each lane (rows without an ordering key share the host's lane), read
            // without locks: instances claiming at once each lock only the head they chose, not every lane's.
            var heads: [String: (record: OutboxRecord, fact: ReplayStateMachine.Head)] = [:]
            var facts: [ReplayStateMachine.Head] = []
            var damaged: [String] = []
            var now = localNow
            // A head set aside or deleted here is followed by the next row of its lane: the heads are read
            // again until none is removed (each pass removes a row for good; bounded all the same), so that
            // row is not left waiting for the next wake-up.
            for _ in 0..<256 {
                heads.removeAll()
                facts.removeAll()
                var removedAHead = false
                for try await row in try await connection.query(schema.laneHeads(of: pipeline), logger: silent) {
                    let columns = row.makeRandomAccess()
                    if let serverNow = Self.serverNow(columns) { now = serverNow }
                    guard let record = PostgresOutboxSchema.record(columns) else {
                        // A row this version cannot read is set aside (never deleted, never sent as something else).
                        if let seq = try? columns["seq"].decode(Int.self) {
                            try await connection.query("UPDATE \(unescaped: table) SET dead_reason = 'damaged' WHERE seq = \(seq)", logger: silent)
                            removedAHead = true
                        }
                        if let id = try? columns["id"].decode(String.self) { damaged.append(id) }
                        continue
                    }
                    if Self.isLapsedFreeze(columns, now: now) {
                        try await connection.query("DELETE FROM \(unescaped: table) WHERE id = \(record.id) AND lease_owner LIKE '%#freeze'", logger: silent)
                        removedAHead = true
                        continue
                    }
                    let fact = Self.head(record, columns, now: now)
                    heads[record.id] = (record, fact)
                    facts.append(fact)
                }
                if !removedAHead { break }
            }
            // A lane whose head this process is replaying is busy, whatever its lease says: two engines sharing
            // this store share its lease owner, so a lease that lapsed while one of them checked or sent the row
            // would let the other claim and send it too.
            let replaying = Set(listeners.replaying)
            if !replaying.isEmpty { facts.removeAll { replaying.contains($0.id) } }
            // The head chosen is locked (`SKIP LOCKED`: one another instance is claiming now is passed over,
            // its lane theirs) and read again: settled or claimed meanwhile, it is decided afresh.
            var passedOver: ReplayStateMachine.Head?
            while let (head, decision) = ReplayStateMachine.choose(facts, now: now, claim: claim), var record = heads[head.id]?.record {
                if case .wait(let until) = decision {
                    // Heads passed over are being claimed by others: look again soon (their outcome may free a lane).
                    let soon = passedOver == nil ? until : min(until, now + Self.passedOverRecheck)
                    return (Self.local(head, .wait(until: soon), record, offset: now - localNow), damaged)
                }
                var locked: (OutboxRecord, ReplayStateMachine.Head)?
                for try await row in try await connection.query("""
                    SELECT *, \(unescaped: PostgresOutboxSchema.now) AS courier_now FROM \(unescaped: table)
                    WHERE id = \(head.id) AND outcome IS NULL AND dead_reason IS NULL
                    FOR UPDATE SKIP LOCKED
                    """, logger: silent) {
                    let columns = row.makeRandomAccess()
                    if let serverNow = Self.serverNow(columns) { now = serverNow }
                    if Self.isLapsedFreeze(columns, now: now) { continue }   // deleted at the next claim
                    if let fresh = PostgresOutboxSchema.record(columns) { locked = (fresh, Self.head(fresh, columns, now: now)) }
                }
                facts.removeAll { $0.id == head.id }
                guard let (fresh, freshHead) = locked else {
                    passedOver = head
                    continue
                }
                let freshDecision = ReplayStateMachine.decide(freshHead, now: now, ignoringSchedule: claim.ignoresSchedule(of: freshHead.lane))
                guard freshDecision == decision else {
                    // Claimed by another instance since the heads were read (its lease is set): decided again.
                    facts.append(freshHead)
                    heads[fresh.id] = (fresh, freshHead)
                    if case .wait = freshDecision { passedOver = freshHead }
                    continue
                }
                record = fresh
                switch decision {
                case .send:
                    try await connection.query(
                        "UPDATE \(unescaped: table) SET lease_owner = \(owner), lease_expires = \(now + lease) WHERE id = \(record.id)",
                        logger: silent)
                case .deadLetter(let reason):
                    record.deadReason = reason
                    try await connection.query("""
                        UPDATE \(unescaped: table) SET dead_reason = \(reason.rawValue), lease_owner = NULL, lease_expires = NULL
                        WHERE id = \(record.id)
                        """, logger: silent)
                case .wait:
                    break
                }
                return (Self.local(freshHead, decision, record, offset: now - localNow), damaged)
            }
            if let passedOver, let record = heads[passedOver.id]?.record {
                return (Self.local(passedOver, .wait(until: now + Self.passedOverRecheck), record, offset: now - localNow), damaged)
            }
            return (.empty, damaged)
        }
        for id in damaged {
            listeners.operationLost(id, because: "its outbox entry cannot be read by this version and was set aside; it will not be sent")
        }
        if case .head(_, .deadLetter, _) = result { notify(.settled) }
        return result
    }

    /// Extends this instance's lease to `until` (on our clock: the server's is `until - now` from its now).
    /// One renewal of a row at a time: while one is still on its way (a stalled server), another is not
    /// started, so renewals never pile up on the client's connections.
    @discardableResult
    func renewLease(id: String, until: Double) -> Bool {
        guard renewing.withLockedValue({ $0.insert(id).inserted }) else { return true }
        let owner = owner
        let length = until - Date().timeIntervalSince1970
        do {
            return try blocking { [self] in
                defer { renewing.withLockedValue { _ = $0.remove(id) } }
                var renewed = false
                for try await _ in try await client.query("""
                    UPDATE \(unescaped: schema.table) SET lease_expires = \(unescaped: PostgresOutboxSchema.now) + \(length)
                    WHERE id = \(id) AND lease_owner = \(owner) RETURNING id
                    """, logger: PostgresOutboxSchema.silent) {
                    renewed = true
                }
                return renewed
            }
        } catch is StatementsRefused {
            // Never started: the next renewal of the row is not to wait for this one.
            renewing.withLockedValue { _ = $0.remove(id) }
            return false
        } catch {
            return false
        }
    }

    /// How soon an outcome that could not be recorded is tried again, at most.
    static let outcomeRetryCeiling: Double = 2

    /// Records an outcome, trying again (and renewing the lease meanwhile) until the server takes it: an
    /// outcome lost here would let the lease lapse and the row be sent again. The work queue waits: the
    /// lane stays this instance's until its outcome is known, and nothing else can reach the server anyway.
    func complete(id: String, _ completion: ReplayStateMachine.Completion, status: Int?, error: String?, counted: Bool, now: Double) {
        untilRecorded(id: id) { [self] in try await record(id: id, completion, status: status, error: error, counted: counted, now: now) }
        switch completion {
        case .retry:
            notify(.due)
            // A row another instance settled while this replay was on its way (its lease lapsed here) is not
            // this retry's: the notice of that outcome came while the row was being replayed, and was not
            // for its waiting operation then. The operation looks at its row again.
            if listeners.attachedOperation(for: id) != nil { heard(.settled) }
        default:
            notify(.settled)
        }
    }

    /// Deletes a row whose replay was dropped on its way (and the server did not take it), as surely as an outcome.
    func delete(id: String) {
        untilRecorded(id: id) { [self] in _ = try await schema.delete(id: id, onlyPending: false, client: client, logger: logger) }
        notify(.settled)
    }

    /// Runs `write` until the server takes it, renewing the row's lease while a try waits: an outcome lost
    /// here would let the lease lapse and the row be sent again. One try at a time (a try the server is
    /// slow to answer is waited for, up to four timeouts, before another is made), so a stalled server
    /// holds few of the client's connections for it. The work queue waits meanwhile: the lane stays this
    /// instance's until its outcome is known; the other rows' replays keep their leases renewed.
    private func untilRecorded(id: String, _ write: @escaping @Sendable () async throws -> Void) {
        var failures = 0
        while true {
            let done = DispatchSemaphore(value: 0)
            let failure = NIOLockedValueBox<(any Error)?>(nil)
            Task(executorPreference: Self.executor) {
                do {
                    try await write()
                } catch {
                    failure.withLockedValue { $0 = error }
                }
                done.signal()
            }
            let slice = min(Self.interval(timeout), 5)
            // A try that has not ended after four timeouts (at least 20 s) is left and another made: a request
            // the client took while the server restarted was seen never to end, and waiting for it held the
            // lane, and the work queue, forever. A late end of the left try changes nothing the next one does
            // not (an outcome is written where none is yet; a retry only while the lease is this instance's).
            let patience = DispatchTime.now() + max(20, 4 * Self.interval(timeout))
            var ended = true
            while done.wait(timeout: .now() + slice) == .timedOut {
                logger.warning("courier outbox outcome not recorded yet; waiting for the server", metadata: ["courier-outbox-id": "\(id)"])
                renewLease(id: id, until: Date().timeIntervalSince1970 + 30)
                if DispatchTime.now() > patience {
                    ended = false
                    break
                }
            }
            if !ended { failure.withLockedValue { $0 = NetworkError(.outboxUnavailable, "the server did not answer the outcome") } }
            guard let error = failure.withLockedValue({ $0 }) else { return }
            failures += 1
            logger.warning("courier outbox outcome not recorded yet; trying again", metadata: [
                "courier-outbox-id": "\(id)", "courier-error": "\(Self.describe(error))", "courier-attempt": "\(failures)"])
            renewLease(id: id, until: Date().timeIntervalSince1970 + 30)
            Thread.sleep(forTimeInterval: min(Self.outcomeRetryCeiling, 0.1 * Double(1 << min(failures, 5))))
        }
    }

    private func record(
        id: String, _ completion: ReplayStateMachine.Completion, status: Int?, error: String?, counted: Bool, now: Double
    ) async throws {
        let table = schema.table
        let owner = owner
        let added = counted ? 1 : 0
        let silent = PostgresOutboxSchema.silent
        let serverNow = PostgresOutboxSchema.now
        switch completion {
        case .delivered, .failedPermanently:
            let outcome = completion == .delivered ? "delivered" : "failed"
            // Recorded once: an instance whose lease expired and whose row another then delivered adds nothing.
            // The body goes with the outcome (a chunked one too: a finished row is kept only to be read).
            try await client.query("""
                WITH chunks AS (DELETE FROM \(unescaped: schema.bodies) WHERE id = \(id))
                UPDATE \(unescaped: table) SET outcome = \(outcome), finished_at = \(unescaped: serverNow), last_status = \(status),
                    last_error = \(error), attempts = attempts + \(added), body = NULL, lease_owner = NULL, lease_expires = NULL
                WHERE id = \(id) AND outcome IS NULL
                """, logger: silent)
        case .deadLettered(let reason):
            try await client.query("""
                UPDATE \(unescaped: table) SET dead_reason = \(reason.rawValue), last_status = \(status), last_error = \(error),
                    attempts = attempts + \(added), lease_owner = NULL, lease_expires = NULL
                WHERE id = \(id) AND outcome IS NULL AND lease_owner = \(owner)
                """, logger: silent)
        case .retry(let at):
            // Only while the claim is still this instance's: another that took the row over owns its schedule
            // (and a second copy of this write, its answer lost, finds the lease given back and adds nothing).
            // `at` is on our clock: the server's is as far from its now.
            try await client.query("""
                UPDATE \(unescaped: table) SET next_attempt_at = \(unescaped: serverNow) + \(at - now), last_status = \(status),
                    last_error = \(error), attempts = attempts + \(added), lease_owner = NULL, lease_expires = NULL
                WHERE id = \(id) AND outcome IS NULL AND lease_owner = \(owner)
                """, logger: silent)
        }
    }
}
