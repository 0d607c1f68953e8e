import Courier
import CourierPostgres
import Foundation
import NIOSSL
import PostgresNIO

/// `--database postgres://user@host:port/database[?sslmode=disable|prefer|require]`: a PostgreSQL outbox for `post --freezable` and `outbox`.
enum PostgresOutboxOption {
    /// The location of the outbox `name` on the server `url` names; the client runs until the process ends.
    /// The password comes from `passwordFile` (its first line) or `PGPASSWORD`, never from the URL (a
    /// command line is visible to every user of the machine), and is never printed.
    static func location(url text: String, passwordFile: String?, name: String) throws -> OutboxLocation {
        guard let components = URLComponents(string: text), ["postgres", "postgresql"].contains(components.scheme ?? ""),
            let host = components.host, !host.isEmpty, let user = components.user, !user.isEmpty
        else {
            throw CLIFailure.usage("--database must be postgres://user@host[:port]/database")
        }
        guard components.password == nil else {
            throw CLIFailure.usage("--database must not hold a password: give it in PGPASSWORD or --password-file")
        }
        var password = ProcessInfo.processInfo.environment["PGPASSWORD"]
        if let passwordFile {
            guard let contents = try? String(contentsOfFile: passwordFile, encoding: .utf8) else {
                throw CLIFailure(exitCode: 1, message: "cannot read the password file \(passwordFile)")
            }
            password = contents.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        }
        let database = components.path.split(separator: "/").first.map(String.init) ?? user
        // `sslmode` as libpq reads it: `prefer` (the default) tries TLS and falls back, `require` insists.
        let tls: PostgresClient.Configuration.TLS
        switch components.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "prefer" {
        case "disable": tls = .disable
        case "prefer", "allow": tls = .prefer(.makeClientConfiguration())
        case "require", "verify-ca", "verify-full": tls = .require(.makeClientConfiguration())
        case let mode: throw CLIFailure.usage("--database: sslmode=\(mode) is not one of disable, prefer, require")
        }
        var configuration = PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: user, password: password, database: database, tls: tls)
        configuration.options.connectTimeout = .seconds(5)
        let client = PostgresClient(configuration: configuration)
        Task { await client.run() }
        return .postgres(client: client, name: name)
    }
}
