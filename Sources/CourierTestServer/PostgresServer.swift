public import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A throwaway PostgreSQL cluster from Debian's packages (`scripts/test` installs them): `initdb` in a
/// temporary directory, password authentication (SCRAM) for user `courier`, `pg_ctl start` on a vacant
/// 127.0.0.1 port; ``stop()`` removes it all. As root (CI), the server runs as the `postgres` user,
/// which the package creates: PostgreSQL refuses to run as root. Used by Courier's tests and benchmarks.
public final class PostgresServer: Sendable {
    /// The cluster's user.
    public static let user = "courier"
    /// Its password.
    public static let password = "courier-test-password"

    /// The port it listens on (127.0.0.1 only).
    public let port: Int
    /// The folder holding the cluster, its log and ``passwordFile``.
    public let folder: URL
    /// The folder of the server's programs.
    public let bin: URL
    /// Whether commits reach the disk (`fsync` on, as in production); tests run with it off.
    public let isDurable: Bool

    private init(port: Int, folder: URL, bin: URL, isDurable: Bool) {
        self.port = port
        self.folder = folder
        self.bin = bin
        self.isDurable = isDurable
    }

    /// The newest installed server's programs (`/usr/lib/postgresql/<version>/bin`), if any.
    public static var binaries: URL? {
        let root = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? [])
            .compactMap(Int.init).sorted()
        for version in versions.reversed() {
            let bin = root.appendingPathComponent("\(version)/bin")
            if FileManager.default.isExecutableFile(atPath: bin.appendingPathComponent("initdb").path) { return bin }
        }
        return nil
    }

    /// Whether PostgreSQL is installed.
    public static var isAvailable: Bool { binaries != nil }

    /// Whether the tests must not skip for want of PostgreSQL (`scripts/test` sets it).
    public static var isRequired: Bool { ProcessInfo.processInfo.environment["COURIER_REQUIRE_POSTGRES"] == "1" }

    /// The URL the CLI takes (no password: that comes from `PGPASSWORD`).
    public var url: String { "postgres://\(Self.user)@127.0.0.1:\(port)/postgres" }

    /// Makes a cluster and starts its server; `durable`: with `fsync` on (benchmarks), else off (tests).
    public static func start(durable: Bool = false) async throws -> PostgresServer {
        guard let bin = binaries else { throw CocoaError(.executableNotLoadable, userInfo: [NSLocalizedDescriptionKey: "PostgreSQL is not installed"]) }
        let port = try await TestServer.vacantPort()
        let folder = URL(fileURLWithPath: "/tmp").appendingPathComponent("courier-pg-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let passwordFile = folder.appendingPathComponent("pw")
        try Data(Self.password.utf8).write(to: passwordFile)
        let server = PostgresServer(port: port, folder: folder, bin: bin, isDurable: durable)
        if getuid() == 0 { try await run("/bin/chown", ["-R", "postgres", folder.path]) }
        try await server.pg("initdb", ["-D", server.data, "-U", user, "--pwfile", passwordFile.path, "-A", "scram-sha-256",
                                       "-E", "UTF8", "--no-sync", "--no-instructions"])
        try await server.resume()
        return server
    }

    private var data: String { folder.appendingPathComponent("data").path }

    /// Stops the server at once (as a crash would) and starts it again on the same port.
    public func restart() async throws {
        try await pg("pg_ctl", ["-D", data, "-m", "immediate", "-w", "-t", "30", "restart"])
    }

    /// Stops the server (immediately) without starting it again.
    public func halt() async throws {
        try await pg("pg_ctl", ["-D", data, "-m", "immediate", "-w", "-t", "30", "stop"])
    }

    /// Starts the server (first, or again after ``halt()``), on its own port and socket directory
    /// (`pg_ctl start` without them would take the cluster's defaults: port 5432).
    public func resume() async throws {
        try await pg("pg_ctl", ["-D", data, "-l", folder.appendingPathComponent("log").path, "-w", "-t", "30",
                                "-o", "-p \(port) -k \(folder.path) -c listen_addresses=127.0.0.1" + (isDurable ? "" : " -c fsync=off"), "start"])
    }

    /// Stops the server and removes the cluster.
    public func stop() async {
        _ = try? await halt()
        try? FileManager.default.removeItem(at: folder)
    }

    /// Runs SQL with `psql`; returns its output (unaligned, tuples only).
    public func psql(_ sql: String) async throws -> String {
        try await Self.run("/usr/bin/psql", ["-h", "127.0.0.1", "-p", "\(port)", "-U", Self.user, "-d", "postgres", "-At", "-c", sql],
                           environment: ["PGPASSWORD": Self.password])
    }

    private func pg(_ program: String, _ arguments: [String]) async throws {
        let path = bin.appendingPathComponent(program).path
        if getuid() == 0 {
            try await Self.run("/usr/sbin/runuser", ["-u", "postgres", "--", path] + arguments)
        } else {
            try await Self.run(path, arguments)
        }
    }

    /// Runs a program to its end and returns its output (stdout and stderr, through a file). Spawned and
    /// reaped here (`posix_spawn`, `waitpid`): Foundation's `Process` left `runuser` children unreaped and
    /// its `waitUntilExit` waiting forever. The child gets no descriptor of this process but its output.
    @discardableResult
    public static func run(_ path: String, _ arguments: [String], environment: [String: String] = [:]) async throws -> String {
        try await Self.onAThread {
            let output = FileManager.default.temporaryDirectory.appendingPathComponent("courier-pg-run-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: output) }
            let fd = open(output.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw CocoaError(.fileWriteUnknown) }
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_adddup2(&actions, fd, 1)
            posix_spawn_file_actions_adddup2(&actions, fd, 2)
            // Nothing else of this process goes to the child: `pg_ctl start` leaves a server running, and a
            // server holding copies of the tests' sockets kept their connections and listening ports open
            // after the tests closed them (curl timed out instead of seeing the close or a refusal).
            // (glibc's addclosefrom is not imported: each open descriptor is named. One closed meanwhile by
            // another thread is no error: glibc ignores EBADF for a close action.)
            let open = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap { Int32($0) }
            for descriptor in open where descriptor > 2 { posix_spawn_file_actions_addclose(&actions, descriptor) }
            let env = ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { "\($0.key)=\($0.value)" }
            let argv = ([path] + arguments).map { strdup($0) } + [nil]
            let envp = env.map { strdup($0) } + [nil]
            defer { for pointer in argv + envp { free(pointer) } }
            var pid: pid_t = 0
            let spawned = posix_spawn(&pid, path, &actions, nil, argv, envp)
            close(fd)
            guard spawned == 0 else { throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "cannot run \(path): \(spawned)"]) }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            // Exited normally with 0 (WIFEXITED and WEXITSTATUS, which Swift does not import).
            guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
                throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "\(path) \(arguments.joined(separator: " ")) failed (\(status)): \(text)"])
            }
            return text
        }
    }
}

extension PostgresServer {
    /// `pg_dump` of the whole database, as text.
    public func dump() async throws -> String {
        let path = URL(fileURLWithPath: "/usr/lib/postgresql").appendingPathComponent(
            bin.deletingLastPathComponent().lastPathComponent).appendingPathComponent("bin/pg_dump").path
        return try await Self.run(path, ["-h", "127.0.0.1", "-p", "\(port)", "-U", Self.user, "postgres"],
                                  environment: ["PGPASSWORD": Self.password])
    }

    /// A file holding the password, for `courier --password-file`.
    public var passwordFile: String { folder.appendingPathComponent("pw").path }
}

extension PostgresServer {
    /// Runs blocking work (waiting for a child) on a thread of its own, never the cooperative pool's.
    static func onAThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }
}
