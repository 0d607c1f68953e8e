public import Courier
import Foundation
public import PostgresNIO

extension OutboxLocation {
    /// An outbox on a PostgreSQL server, shared by every instance of a service that names it: what one
    /// instance froze is delivered by whichever instance is alive, each row by one instance at a time.
    ///
    /// The outbox is a table of its own, `courier_outbox_<name>`, created (or brought up to date) when the
    /// outbox is first used. Credentials are never written to it. Run the client as your service runs it
    /// (`client.run()` in your `ServiceGroup`, or a task of its own) for as long as engines use the outbox.
    ///
    /// ```swift
    /// let client = PostgresClient(configuration: .init(
    ///     host: "db.internal", username: "orders", password: secret, database: "orders", tls: .disable))
    /// Task { await client.run() }
    /// let engine = NetworkEngine(host: "payments.example.com", configuration: .init {
    ///     $0.outbox = .postgres(client: client, name: "payments")
    /// })
    /// ```
    ///
    /// Delivery is at least once: an instance killed after the server answered but before the outcome was
    /// recorded leaves its row to be sent again once its lease expires. Send an `Idempotency-Key` the
    /// server deduplicates (every frozen request has one) to make that exactly once.
    ///
    /// A body in memory is kept in the row; a file or form body is kept in 256 KiB chunks beside it
    /// (`courier_outbox_<name>$bodies`), written with the row in one transaction.
    /// - Parameters:
    ///   - client: The client to reach the server with (its pool is shared with the rest of your app).
    ///   - name: The outbox's name: 1 to 40 characters of `a`–`z`, `0`–`9` and `_`.
    ///   - timeout: How long one operation on the outbox may wait for the server before it fails: a
    ///     freeze while the server is down fails with `outboxUnavailable` after this long (a client's pool
    ///     waits for a connection rather than failing at once), and a replay pauses. A freeze whose row the
    ///     server commits only after this is removed again, so it is never sent. The first engine to open
    ///     an outbox name in a process sets it.
    /// - Returns: The location.
    public static func postgres(client: PostgresClient, name: String, timeout: Duration = .seconds(15)) -> OutboxLocation {
        let location = URL(string: "postgres:outbox/\(name)") ?? URL(fileURLWithPath: "/")
        return OutboxLocation(
            description: "PostgreSQL outbox \(name)", url: location, listenersKey: PostgresOutboxStore.key(client: client, name: name),
            exists: { true },
            open: { logger throws(NetworkError) in
                try PostgresOutboxStore.open(client: client, name: name, location: location, timeout: timeout, logger: logger)
            })
    }
}
