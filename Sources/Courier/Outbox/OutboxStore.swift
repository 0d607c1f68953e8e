package import Foundation
import NIOConcurrencyHelpers

/// Where an outbox's rows live: SQLite in a data directory (``OutboxDatabase``, the default) or a
/// server that many instances of a service share (`CourierPostgres`). The engine, its replayer and
/// ``Outbox`` see only this.
///
/// Every requirement may block on disk or network I/O: they are called on the store's own queues (its
/// ``work`` queue, ``leases`` queue, or `OutboxDatabase.io`), never on a caller's thread or the cooperative
/// pool, except where ``Outbox``'s synchronous accessors document otherwise. The decisions (which head
/// goes, what an outcome means) are ``ReplayStateMachine``'s; a store only keeps rows and claims them
/// atomically: one instance per row at a time, the oldest pending row of each lane first.
package protocol OutboxStore: AnyObject, Sendable {
    /// What this process tells and remembers about the store's rows.
    var listeners: OutboxListeners { get }
    /// Serial: replays' claims and outcomes, drops, revives and the watch for other processes' outcomes.
    var work: DispatchQueue { get }
    /// Where lease renewals run, so that a renewal never waits behind a claim.
    var leases: DispatchQueue { get }
    /// Where the outbox is (``Outbox/directory``): a data directory, or a server's URL without credentials.
    var location: URL { get }
    /// Damage found and set aside by this process, oldest first (SQLite; none for a server).
    var damageReports: [NetworkError] { get }
    /// Damaged databases set aside beside the outbox (SQLite; none for a server).
    var setAsideDatabases: [URL] { get }

    // MARK: Writing

    /// Keeps the body (`bytes`, or the copies of a file or form `source`, at most `limit` bytes) and commits
    /// the row; returns once it is durable, with the record as stored.
    /// - Throws: ``NetworkError/Code/outboxUnavailable`` (nothing of the row is left),
    ///   ``NetworkError/Code/frozenBodyTooLarge`` or ``NetworkError/Code/fileUnavailable``.
    func insertFrozen(_ record: OutboxRecord, bytes: Data?, source: RequestBodySource?, limit: Int) throws(NetworkError) -> OutboxRecord

    /// The body to replay a row with.
    func requestBody(of record: OutboxRecord) -> RequestBody?

    /// How to check a claimed row's body before its replay's request is built, or `nil` when there is nothing
    /// to check (the body is in the row, or the store finds damage only as it reads the body). A store that
    /// keeps bodies apart from their rows checks them here, so that a damaged copy is found before the origin
    /// gets anything: a server may answer a request's head before it reads the body, and the row would be
    /// recorded delivered. The check runs in a task, off the work queue (other lanes go on meanwhile), and
    /// bounds its own wait.
    /// - Returns: A check whose answer is `nil` when the body can be sent; else
    ///   ``NetworkError/Code/outboxUnavailable``, with ``FrozenBodyDamaged`` as its
    ///   ``NetworkError/underlying`` when the copy is damaged (the row is dead-lettered), without when it could
    ///   not be checked or is no longer this process's to send (the replay is tried again later, not counted
    ///   as an attempt).
    func bodyCheck(for record: OutboxRecord) -> (@Sendable () async -> NetworkError?)?

    // MARK: Reading and managing

    /// Every pending row and dead letter (of one origin, if given), oldest first; unreadable rows left out.
    /// - Throws: ``NetworkError/Code/outboxUnavailable`` when the store cannot be read at all.
    func records(origin: String?) throws(NetworkError) -> [OutboxRecord]
    /// How many rows are pending or dead letters.
    func count() -> Int
    /// The rows delivered or refused for good within the retention, oldest first.
    /// - Throws: ``NetworkError/Code/outboxUnavailable`` when the store cannot be read.
    func finishedEntries() throws(NetworkError) -> [OutboxEntry]
    /// Puts a dead letter back in line (see `Outbox.retry(_:)`).
    func revive(id: String, now: Double) -> Bool
    /// Removes one row (see `Outbox.drop(_:)`); a replay of it on its way decides.
    @discardableResult
    func drop(id: String) -> Bool
    /// ``drop(id:)`` for a user's request (``Outbox/drop(_:)``): a store that may be busy for long (an
    /// outcome waiting for a stalled server) gives up after its timeout and says `false`. A cancelled
    /// operation's drop uses ``drop(id:)``, which always happens.
    func dropAskedByUser(id: String) -> Bool
    /// Removes every row; returns how many.
    func clear() -> Int

    // MARK: Replaying

    /// In one transaction: the head of each lane of the pipeline that `claim` looks at, the one
    /// ``ReplayStateMachine/choose(_:now:claim:)`` picks, and its claim (a lease named for this process) or
    /// dead letter.
    func claimHead(_ pipeline: OutboxPipeline, claim: ReplayStateMachine.Claim, now: Double, lease: Double) -> OutboxClaimResult
    /// Extends this process's lease; `false` when the lease is no longer its own.
    @discardableResult
    func renewLease(id: String, until: Double) -> Bool
    /// Records what became of an attempt (and releases the lease).
    func complete(id: String, _ completion: ReplayStateMachine.Completion, status: Int?, error: String?, counted: Bool, now: Double)
    /// Deletes a row for good.
    func delete(id: String)
    /// Starts watching for outcomes that other processes record for rows this process's operations wait for;
    /// the watch ends by itself once none waits (``OutboxListeners/watchedRows()``).
    func startWatching()
}

/// What ``OutboxStore/claimHead(_:claim:now:lease:)`` found.
package enum OutboxClaimResult: Sendable {
    /// The head row, what to do with it, and the record (claimed when the decision is `.send`).
    case head(ReplayStateMachine.Head, ReplayStateMachine.HeadDecision, OutboxRecord)
    /// Nothing pending for the pipeline.
    case empty
    /// The store could not be read or written (busy past its timeout, disk full, damaged, connection lost).
    case failed(String)
}

extension OutboxStore {
    /// The embedded store's bodies are checked as they are read (``OutboxBodyStore``).
    package func bodyCheck(for record: OutboxRecord) -> (@Sendable () async -> NetworkError?)? { nil }

    /// Every pending row and dead letter, oldest first; none when the store cannot be read.
    package func records() -> [OutboxRecord] { (try? records(origin: nil)) ?? [] }

    /// Events about rows of an origin (all origins with `nil`), from now on.
    func events(origin: String?) -> AsyncStream<OutboxEvent> { listeners.events(origin: origin) }

    func publish(_ event: OutboxEvent, origin: String) { listeners.publish(event, origin: origin) }

    /// Remembers a frozen operation whose handlers wait for its outcome.
    func attach(_ operation: NetworkOperation, to id: String) {
        if listeners.attach(operation, to: id) { startWatching() }
    }

    func attachedOperation(for id: String) -> NetworkOperation? { listeners.attachedOperation(for: id) }

    func detachOperation(for id: String) -> NetworkOperation? { listeners.detachOperation(for: id) }

    /// Runs `body` on the work queue (at once when already there) and returns its value.
    package func onWork<Value>(_ body: () -> Value) -> Value {
        if DispatchQueue.getSpecific(key: outboxWorkKey) == ObjectIdentifier(self) { return body() }
        return work.sync(execute: body)
    }

    /// Runs `body` on the work queue (at once when already there), unless it cannot start within `wait`
    /// (the queue is busy recording an outcome a stalled server has not taken yet): then `nil`, and `body`
    /// never runs. A `body` that started is waited for (it bounds its own work).
    package func onWork<Value: Sendable>(startingWithin wait: Double, _ body: @escaping @Sendable () -> Value) -> Value? {
        if DispatchQueue.getSpecific(key: outboxWorkKey) == ObjectIdentifier(self) { return body() }
        // started: nil while waiting, true once running, false when given up.
        let call = NIOLockedValueBox<(started: Bool?, value: Value?)>((nil, nil))
        let done = DispatchSemaphore(value: 0)
        work.async {
            let starts = call.withLockedValue { call -> Bool in
                guard call.started == nil else { return false }
                call.started = true
                return true
            }
            guard starts else { return }
            let value = body()
            call.withLockedValue { $0.value = value }
            done.signal()
        }
        if done.wait(timeout: .now() + wait) == .success { return call.withLockedValue { $0.value } }
        let running = call.withLockedValue { call -> Bool in
            if call.started == nil { call.started = false }
            return call.started == true
        }
        guard running else { return nil }
        done.wait()
        return call.withLockedValue { $0.value }
    }

    /// Marks `queue` as this store's work queue, for ``onWork(_:)``.
    package func claimWorkQueue(_ queue: DispatchQueue) {
        queue.setSpecific(key: outboxWorkKey, value: ObjectIdentifier(self))
    }

    /// Run by a drop on the work queue (in order with claims, sends and outcomes, so a row claimed a moment
    /// ago is already known as in flight): when this process is replaying the row, a replay still waiting
    /// in the queue is cancelled (nothing was sent) and one on the wire decides, so that nothing is
    /// reported cancelled that the server then answered. Returns whether it was such a row.
    package func dropReplayInFlight(_ id: String) -> Bool {
        guard let replay = listeners.noteDropOfReplay(id) else { return false }
        if replay.state == .ready {
            // Not submitted yet (its body is being checked): nothing was sent, and it never will be.
            replay.finish(.failure(.cancelled(url: replay.urlString)))
        } else {
            replay.context.queue.cancelIfNotStarted(replay)
        }
        return true
    }
}

private let outboxWorkKey = DispatchSpecificKey<ObjectIdentifier>()
