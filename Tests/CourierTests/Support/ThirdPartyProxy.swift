import CourierTestServer
import Foundation
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A proxy nobody here wrote, from Debian's packages: tinyproxy (an HTTP proxy with `CONNECT` and
/// Basic credentials) or microsocks (SOCKS5), started on a vacant 127.0.0.1 port with a configuration
/// written for the test. `scripts/test` installs both.
// @unchecked: every stored property is a `let`; `process` (not Sendable in corelibs Foundation) is only
// used by `stop()`, to kill the child and wait for it, once, by the test that started it.
final class ThirdPartyProxy: @unchecked Sendable {
    enum Kind { case tinyproxy(user: String, password: String), microsocks }

    let port: Int
    private let process: Process
    private let folder: URL
    private let stopped = NIOLockedValueBox(false)

    private init(port: Int, process: Process, folder: URL) {
        self.port = port
        self.process = process
        self.folder = folder
    }

    static func binary(_ name: String) -> String? {
        ["/usr/bin/\(name)", "/usr/sbin/\(name)", "/usr/local/bin/\(name)"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static var isAvailable: Bool { binary("tinyproxy") != nil && binary("microsocks") != nil }

    /// tinyproxy's log (`LogLevel Info`: one line per request it relays, `CONNECT host:port` among them).
    var log: String { (try? String(contentsOf: folder.appendingPathComponent("proxy.log"), encoding: .utf8)) ?? "" }

    static func start(_ kind: Kind) async throws -> ThirdPartyProxy {
        let port = try await TestServer.vacantPort()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-proxy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let process = Process()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        switch kind {
        case .tinyproxy(let user, let password):
            let configuration = """
                Port \(port)
                Listen 127.0.0.1
                Timeout 30
                MaxClients 64
                LogFile "\(folder.appendingPathComponent("proxy.log").path)"
                LogLevel Info
                Allow 127.0.0.1
                BasicAuth \(user) \(password)
                DisableViaHeader Yes

                """
            let file = folder.appendingPathComponent("tinyproxy.conf")
            try Data(configuration.utf8).write(to: file)
            process.executableURL = URL(fileURLWithPath: binary("tinyproxy") ?? "/usr/bin/tinyproxy")
            process.arguments = ["-d", "-c", file.path]
        case .microsocks:
            process.executableURL = URL(fileURLWithPath: binary("microsocks") ?? "/usr/bin/microsocks")
            process.arguments = ["-i", "127.0.0.1", "-p", String(port)]
        }
        try process.run()
        let proxy = ThirdPartyProxy(port: port, process: process, folder: folder)
        guard await offThePool({ Self.waitUntilListening(port: port) }) else {
            proxy.stop()
            throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "\(kind) did not listen on \(port)"])
        }
        return proxy
    }

    /// Blocking: tries to connect every 20 ms for up to 10 s.
    private static func waitUntilListening(port: Int) -> Bool {
        for _ in 0..<500 {
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            close(socket)
            if connected == 0 { return true }
            usleep(20_000)
        }
        return false
    }

    /// Stops the proxy with SIGKILL (the child inherits the test process's blocked signals) and removes
    /// its files.
    func stop() {
        guard !stopped.withLockedValue({ was in defer { was = true }; return was }) else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: folder)
    }
}
