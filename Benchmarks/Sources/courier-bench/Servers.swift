import Foundation

/// An HTTP server in a child process, so its CPU time is not the client's.
final class ServerProcess {
    let name: String
    let baseURL: String
    /// The path of a 1 KiB response on this server.
    let smallPath: String
    /// The path of an empty, fast response.
    let emptyPath: String
    private let process: Process
    private let directory: URL?

    private init(name: String, baseURL: String, smallPath: String, emptyPath: String, process: Process, directory: URL?) {
        self.name = name
        self.baseURL = baseURL
        self.smallPath = smallPath
        self.emptyPath = emptyPath
        self.process = process
        self.directory = directory
    }

    /// CourierTestServer, run by this same binary's hidden `serve` command.
    static func courierTestServer() throws -> ServerProcess {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
        process.arguments = ["serve"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        var line = Data()
        while let byte = try pipe.fileHandleForReading.read(upToCount: 1), let first = byte.first, first != 0x0A {
            line.append(first)
        }
        guard let port = Int(String(decoding: line, as: UTF8.self).replacingOccurrences(of: "PORT ", with: "")) else {
            process.terminate()
            throw BenchError("the test server did not report its port")
        }
        return ServerProcess(
            name: "CourierTestServer (SwiftNIO, separate process)", baseURL: "http://127.0.0.1:\(port)",
            smallPath: "/bytes/1024", emptyPath: "/status/204", process: process, directory: nil)
    }

    /// nginx serving static files from a temporary directory, with a configuration written there.
    static func nginx() throws -> ServerProcess? {
        guard let binary = which("nginx") ?? ["/usr/sbin/nginx"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            return nil
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-bench-nginx-\(getpid())")
        let root = directory.appendingPathComponent("root")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try Data((0..<1024).map { UInt8($0 % 251) }).write(to: root.appendingPathComponent("small"))
        try Data().write(to: root.appendingPathComponent("empty"))
        let port = try freePort()
        let configuration = """
            daemon off;
            worker_processes 1;
            pid \(directory.path)/nginx.pid;
            error_log \(directory.path)/error.log warn;
            events { worker_connections 1024; }
            http {
                access_log off;
                client_body_temp_path \(directory.path)/body;
                proxy_temp_path \(directory.path)/proxy;
                fastcgi_temp_path \(directory.path)/fastcgi;
                uwsgi_temp_path \(directory.path)/uwsgi;
                scgi_temp_path \(directory.path)/scgi;
                keepalive_requests 1000000;
                server {
                    listen 127.0.0.1:\(port);
                    root \(root.path);
                    location / { default_type application/octet-stream; }
                }
            }
            """
        let file = directory.appendingPathComponent("nginx.conf")
        try configuration.write(to: file, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["-c", file.path, "-p", directory.path, "-e", "\(directory.path)/error.log"]
        process.standardError = FileHandle.nullDevice
        try process.run()
        let server = ServerProcess(
            name: "nginx (static files, separate process)", baseURL: "http://127.0.0.1:\(port)",
            smallPath: "/small", emptyPath: "/empty", process: process, directory: directory)
        for _ in 0..<100 where !isListening(port: port) { usleep(20_000) }
        guard isListening(port: port) else {
            server.stop()
            throw BenchError("nginx did not start; see \(directory.path)/error.log")
        }
        return server
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }
}

/// A free TCP port on 127.0.0.1 (bound, read, released).
func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
    guard bound == 0 else { throw BenchError("no free port") }
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return Int(UInt16(bigEndian: address.sin_port))
}

func isListening(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
}
