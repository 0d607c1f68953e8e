import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An nginx of its own for an interop test: a configuration, document root, logs, pid and temporary
/// folders in a fresh temporary folder, listening on a free 127.0.0.1 port, in the foreground
/// (`daemon off; master_process off;`), stopped by ``stop()``. Its access log has one line per request:
/// `METHOD|URI|STATUS|Range|If-Range|BODY-BYTES|ETag|PROTOCOL|CONNECTION` (nginx's connection serial number).
///
/// `scripts/test` installs nginx when it is missing (and sets `COURIER_REQUIRE_INTEROP=1`, which turns a
/// missing nginx into a failure instead of a skip).
final class NginxServer {
    /// The nginx binary: `$NGINX`, else the usual places.
    static var binary: String? {
        let candidates = [ProcessInfo.processInfo.environment["NGINX"], "/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx",
                          "/usr/local/bin/nginx", "/usr/local/nginx/sbin/nginx", "/opt/homebrew/bin/nginx"]
        return candidates.compactMap { $0 }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static var isAvailable: Bool { binary != nil }

    /// The folder holding everything; `root` is the document root.
    let folder: URL
    let root: URL
    let port: Int
    private let process: Process
    private let lifeline: Pipe

    private init(folder: URL, port: Int, process: Process, lifeline: Pipe) {
        self.folder = folder
        self.root = folder.appendingPathComponent("www")
        self.port = port
        self.process = process
        self.lifeline = lifeline
    }

    /// TLS for the server: its certificate chain and key, and optionally the CA a client certificate
    /// must lead to (`ssl_verify_client on`: a request without one is answered 400).
    struct TLS {
        var certificate: String
        var key: String
        var clientCA: String?
        /// Whether HTTP/2 is offered by ALPN beside HTTP/1.1.
        var http2 = false
    }

    /// Starts nginx (a few tries, should another process take the free port first).
    static func start(tls: TLS? = nil) async throws -> NginxServer {
        guard let binary else { throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "nginx is not installed"]) }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-nginx-\(UUID().uuidString)")
        for name in ["www", "logs", "temp"] {
            try FileManager.default.createDirectory(at: folder.appendingPathComponent(name), withIntermediateDirectories: true)
        }
        var lastError = ""
        for _ in 0..<3 {
            let port = try freePort()
            try configuration(folder: folder.path, port: port, tls: tls).write(to: folder.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = ["-p", folder.path + "/", "-c", folder.appendingPathComponent("nginx.conf").path, "-e", folder.appendingPathComponent("logs/error.log").path]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = try FileHandle(forWritingTo: created(folder.appendingPathComponent("logs/stderr.log")))
            try process.run()
            let deadline = ContinuousClock.now + .seconds(10)
            while process.isRunning, ContinuousClock.now < deadline {
                if accepts(port: port) { return NginxServer(folder: folder, port: port, process: process, lifeline: try watch(process)) }
                try await Task.sleep(for: .milliseconds(20))
            }
            kill(process.processIdentifier, SIGKILL)
            await process.exited()
            lastError = (try? String(contentsOf: folder.appendingPathComponent("logs/error.log"), encoding: .utf8)) ?? ""
        }
        try? FileManager.default.removeItem(at: folder)
        throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "nginx did not start: \(lastError)"])
    }

    /// Stops nginx and removes its folder. SIGKILL: nginx inherits the test process's blocked signals,
    /// so SIGTERM would not reach it.
    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? lifeline.fileHandleForWriting.close()
        try? FileManager.default.removeItem(at: folder)
    }

    /// A shell that kills nginx when its standard input closes: should the test process die without
    /// ``stop()``, nginx does not outlive it.
    private static func watch(_ nginx: Process) throws -> Pipe {
        let lifeline = Pipe()
        let watcher = Process()
        watcher.executableURL = URL(fileURLWithPath: "/bin/sh")
        watcher.arguments = ["-c", #"read _; kill -9 "$0" 2>/dev/null"#, String(nginx.processIdentifier)]
        watcher.standardInput = lifeline
        watcher.standardOutput = FileHandle.nullDevice
        watcher.standardError = FileHandle.nullDevice
        try watcher.run()
        return lifeline
    }

    /// The access log's lines so far, split into their fields (empty for a header the request did not have).
    var accessLog: [[String]] {
        let text = (try? String(contentsOf: folder.appendingPathComponent("logs/access.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map { $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init) }
    }

    private static func configuration(folder: String, port: Int, tls: TLS?) -> String {
        var listen = "listen 127.0.0.1:\(port);"
        if let tls {
            listen = "listen 127.0.0.1:\(port) ssl\(tls.http2 ? " http2" : ""); ssl_certificate \(tls.certificate); ssl_certificate_key \(tls.key);"
            if let clientCA = tls.clientCA { listen += " ssl_client_certificate \(clientCA); ssl_verify_client on;" }
        }
        return """
        daemon off;
        master_process off;
        worker_processes 1;
        pid \(folder)/logs/nginx.pid;
        error_log \(folder)/logs/error.log warn;
        events { worker_connections 64; }
        http {
            log_format ranges escape=none '$request_method|$request_uri|$status|$http_range|$http_if_range|$body_bytes_sent|$sent_http_etag|$server_protocol|$connection';
            access_log \(folder)/logs/access.log ranges;
            client_body_temp_path \(folder)/temp/body;
            proxy_temp_path \(folder)/temp/proxy;
            fastcgi_temp_path \(folder)/temp/fastcgi;
            default_type application/octet-stream;
            sendfile on;
            server {
                \(listen)
                root \(folder)/www;
            }
        }
        """
    }

    private static func created(_ url: URL) -> URL {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        return url
    }

    /// A port nothing listens on now (bound to 0, read, closed).
    private static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, streamSocket, 0)
        guard descriptor >= 0 else { throw POSIXError(.EMFILE) }
        defer { close(descriptor) }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
        }
        guard bound else { throw POSIXError(.EADDRINUSE) }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something accepts a TCP connection on 127.0.0.1:`port`.
    private static func accepts(port: Int) -> Bool {
        let descriptor = socket(AF_INET, streamSocket, 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    #if canImport(Glibc)
    private static let streamSocket = Int32(SOCK_STREAM.rawValue)
    #else
    private static let streamSocket = SOCK_STREAM
    #endif

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}

extension NginxServer {
    /// Runs `body` against nginx serving `hello.txt` (`content`) over TLS with a test PKI made for this
    /// call (openssl): its server certificate, HTTP/2 when asked, a client certificate required when
    /// `clientCA`. Records an issue and returns when nginx or openssl is missing (the tests that call
    /// this are enabled only when they are there, or when interop is required).
    static func withTLS(
        clientCA: Bool = false, http2: Bool = false, serving content: String, _ body: (NginxServer, TestPKI) async throws -> Void
    ) async throws {
        guard isAvailable, TestPKI.openssl != nil else {
            Issue.record("COURIER_REQUIRE_INTEROP=1 but nginx or openssl is missing")
            return
        }
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let nginx = try await start(tls: .init(
            certificate: pki.serverCertificate, key: pki.serverKey, clientCA: clientCA ? pki.caCertificate : nil, http2: http2))
        defer { nginx.stop() }
        try Data(content.utf8).write(to: nginx.root.appendingPathComponent("hello.txt"))
        try await body(nginx, pki)
    }
}
