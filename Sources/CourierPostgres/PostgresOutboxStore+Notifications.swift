import Courier
import Foundation
import NIOConcurrencyHelpers
import PostgresNIO

// Instances tell each other through `LISTEN`/`NOTIFY` on the outbox's channel: a row committed or made
// due wakes every idle replayer at once (no polling loop while idle); a row settled (delivered, refused,
// dead-lettered, dropped) lets an instance whose operation waits for it learn the outcome. While the
// listening connection is lost, the store polls slowly instead (every ``fallbackPoll``), and listens
// again as soon as it can.
extension PostgresOutboxStore {
    /// What a notification says.
    enum Notice: String, Sendable, Hashable {
        /// Rows were added or made due: replayers look for work.
        case due
        /// Rows were settled or removed: waiting operations look at their rows.
        case settled
    }

    /// How often the store looks for work and outcomes while it cannot listen.
    static let fallbackPoll: Duration = .seconds(2)

    /// Tells every instance (this one included, through its own listening connection). One notification
    /// of a kind at a time, and one more after it when more were asked for meanwhile: a stalled server
    /// never collects one of the app's connections per outcome (``NoticeCoalescingStateMachine``). One that
    /// fails (the server away) is asked for again a second later, so other instances are not left waiting
    /// for a notice that never went.
    func notify(_ notice: Notice) {
        guard notices.withLockedValue({ $0.ask(notice) }) else { return }
        let channel = schema.channel
        let timeout = timeout
        Task { [client, notices, weak self] in
            repeat {
                // Not while two of its kind, given up on, still hold connections of a silent server.
                while !notices.withLockedValue({ $0.maySend(notice) }) { try? await Task.sleep(for: .milliseconds(100)) }
                // Waited for at most the store's timeout: one sent on a connection that went silent (a
                // failover) does not hold back the notices after it until TCP gives up.
                let outcome = NIOLockedValueBox<(answered: Bool, gaveUp: Bool)>((false, false))
                let (sent, done) = AsyncStream.makeStream(of: Void.self)
                Task {
                    let delivered = (try? await client.query("SELECT pg_notify(\(channel), \(notice.rawValue))", logger: PostgresOutboxSchema.silent)) != nil
                    outcome.withLockedValue { state in
                        state.answered = true
                        if state.gaveUp { notices.withLockedValue { $0.endedAfterGivingUp(notice) } }
                    }
                    done.finish()
                    if !delivered {
                        try? await Task.sleep(for: .seconds(1))
                        self?.notify(notice)
                    }
                }
                let deadline = Task {
                    try? await Task.sleep(for: timeout)
                    done.finish()
                }
                for await _ in sent {}
                deadline.cancel()
                outcome.withLockedValue { state in
                    state.gaveUp = !state.answered
                    // Told under the same lock as its end is (below), so the end is never counted first.
                    if state.gaveUp { notices.withLockedValue { $0.gaveUp(notice) } }
                }
            } while notices.withLockedValue({ $0.sent(notice) })
        }
    }

    /// Starts the listening task (once, when the store is opened). It holds one of the client's connections
    /// for as long as the process runs.
    func startListening() {
        let channel = schema.channel
        let task = Task { [weak self] in
            while !Task.isCancelled {
                guard let client = self?.client else { return }
                do {
                    try await client.withConnection { connection in
                        try await connection.listen(on: channel) { notifications in
                            self?.listening(true)
                            for try await notification in notifications {
                                self?.heard(Notice(rawValue: notification.payload) ?? .due)
                            }
                        }
                    }
                } catch {
                    self?.logger.debug("courier outbox stopped listening", metadata: ["courier-error": "\(Self.describe(error))"])
                }
                // Lost (a restarted server, a network failure): poll until listening again.
                self?.listening(false)
                self?.heard(.due)
                self?.heard(.settled)
                try? await Task.sleep(for: Self.fallbackPoll)
            }
        }
        notifications.withLockedValue { $0.task = task }
    }

    private func listening(_ isListening: Bool) {
        let wasListening = notifications.withLockedValue { state in
            defer { state.isListening = isListening }
            return state.isListening
        }
        // Back after an outage: what was frozen or settled meanwhile was not announced to this instance.
        if isListening && !wasListening {
            heard(.due)
            heard(.settled)
        }
    }

    func heard(_ notice: Notice) {
        switch notice {
        case .due:
            listeners.wakeReplayers()
        case .settled:
            work.async { [self] in
                guard let ids = listeners.watchedRows(), !ids.isEmpty else { return }
                settle(ids)
            }
        }
    }

    /// Operations wait for rows: notifications of settled rows now concern this instance (nothing to start,
    /// the listening task runs anyway).
    func startWatching() {}

    /// Finishes the waiting operations whose rows another instance settled.
    func settle(_ ids: [String]) {
        guard let found = try? blocking({ [self] in try await schema.rows(ids: ids, client: client, logger: logger) }) else {
            // Not read (the server away, or every place taken): looked at again shortly, or an operation
            // whose row another instance settled meanwhile would wait for a notice that was already sent.
            guard settleAgain.withLockedValue({ scheduled in defer { scheduled = true }; return !scheduled }) else { return }
            work.asyncAfter(deadline: .now() + .seconds(1)) { [self] in
                settleAgain.withLockedValue { $0 = false }
                heard(.settled)
            }
            return
        }
        listeners.settle(ids, found: found)
    }
}
