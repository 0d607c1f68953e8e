import Courier
import CourierPostgres
import Foundation
import Logging
import NIOSSL
import PostgresNIO

/// `--database postgres://user@host:port/database[?sslmode=disable|prefer|require]`: a PostgreSQL outbox for `post --freezable` and `outbox`.
enum PostgresOutboxOption {
    /// The location of the outbox `name` on the server `url` names; the client runs until the process ends.
    /// The password comes from `passwordFile` (its first line) or `PGPASSWORD`, never from the URL (a
    /// command line is visible to every user of the machine), and is never printed.
    static func location(url text: String, passwordFile: String?, name: String) async throws -> OutboxLocation {
        guard let components = URLComponents(string: text), ["postgres", "postgresql"].contains(components.scheme ?? ""),
            let bracketed = components.host, !bracketed.isEmpty, let user = components.user, !user.isEmpty
        else {
            throw CLIFailure.usage("--database must be postgres://user@host[:port]/database")
        }
        guard components.password == nil else {
            throw CLIFailure.usage("--database must not hold a password: give it in PGPASSWORD or --password-file")
        }
        // An IPv6 literal comes bracketed (`[::1]`), as libpq takes it.
        let host = bracketed.hasPrefix("[") && bracketed.hasSuffix("]") ? String(bracketed.dropFirst().dropLast()) : bracketed
        let port = components.port ?? 5432
        guard (1...65535).contains(port) else { throw CLIFailure.usage("--database: the port must be 1 to 65535, not \(port)") }
        var password = ProcessInfo.processInfo.environment["PGPASSWORD"]
        if let passwordFile {
            guard let contents = try? String(contentsOfFile: passwordFile, encoding: .utf8) else {
                throw CLIFailure(exitCode: 1, message: "cannot read the password file \(passwordFile)")
            }
            password = contents.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        }
        let database = components.path.split(separator: "/").first.map(String.init) ?? user
        // `sslmode` as libpq reads it: `prefer` (the default) tries TLS and falls back, `require` insists
        // on it; neither checks the server's certificate (`verify-ca` checks its chain, `verify-full` its name too).
        var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
        let mode = components.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "prefer"
        switch mode {
        case "disable", "allow", "prefer", "require": tlsConfiguration.certificateVerification = .none
        case "verify-ca": tlsConfiguration.certificateVerification = .noHostnameVerification
        case "verify-full": tlsConfiguration.certificateVerification = .fullVerification
        default: throw CLIFailure.usage("--database: sslmode=\(mode) is not one of disable, allow, prefer, require, verify-ca, verify-full")
        }
        let tls: PostgresClient.Configuration.TLS = switch mode {
        case "disable": .disable
        case "allow", "prefer": .prefer(tlsConfiguration)
        default: .require(tlsConfiguration)
        }
        try await probe(host: host, port: port, user: user, password: password, database: database, mode: mode, tls: tlsConfiguration)
        var configuration = PostgresClient.Configuration(host: host, port: port, username: user, password: password, database: database, tls: tls)
        configuration.options.connectTimeout = .seconds(5)
        let client = PostgresClient(configuration: configuration)
        Task { await client.run() }
        return .postgres(client: client, name: name)
    }

    /// Connects once, directly, so that a server that refuses (nothing on the port, a wrong password, an
    /// unknown database) is reported as what it is, at once, rather than as a pool that waited in vain.
    private static func probe(
        host: String, port: Int, user: String, password: String?, database: String, mode: String, tls: TLSConfiguration
    ) async throws {
        let context: PostgresConnection.Configuration.TLS
        do {
            context = switch mode {
            case "disable": .disable
            case "allow", "prefer": .prefer(try NIOSSLContext(configuration: tls))
            default: .require(try NIOSSLContext(configuration: tls))
            }
        } catch {
            throw CLIFailure(exitCode: 1, message: "cannot set up TLS for the PostgreSQL server: \(error)")
        }
        var configuration = PostgresConnection.Configuration(
            host: host, port: port, username: user, password: password, database: database, tls: context)
        configuration.options.connectTimeout = .seconds(5)
        let logger = Logger(label: "courier.cli.postgres", factory: { _ in SwiftLogNoOpLogHandler() })
        do {
            let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
            try? await connection.close()
        } catch {
            let detail = if let error = error as? PSQLError {
                error.serverInfo?[.message].map { "PostgreSQL: \($0)" } ?? "\(error.code)\(error.underlying.map { ": \($0)" } ?? "")"
            } else {
                "\(error)"
            }
            throw CLIFailure(exitCode: 1, message: "cannot connect to the PostgreSQL server at \(host):\(port): \(detail)")
        }
    }
}
