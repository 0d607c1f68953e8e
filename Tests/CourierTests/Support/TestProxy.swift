import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A proxy for tests, a few lines of Python (asyncio) on a free 127.0.0.1 port: an HTTP proxy that opens
/// `CONNECT` tunnels (optionally demanding Basic credentials, 407 otherwise) or a SOCKS5 proxy without
/// authentication. Each request it is asked to relay is a line of ``log``: `CONNECT host:port <Proxy-Authorization>`
/// or `SOCKS host:port`.
// @unchecked: every stored property is a `let`; `process` (not Sendable in corelibs Foundation) is only
// used by `stop()`, to kill the child and wait for it, once, by the test that started it.
final class TestProxy: @unchecked Sendable {
    enum Kind { case http(credentials: String?), socks5 }

    let port: Int
    private let process: Process
    private let logFile: URL

    private init(port: Int, process: Process, logFile: URL) {
        self.port = port
        self.process = process
        self.logFile = logFile
    }

    /// The lines logged so far.
    var log: [String] {
        ((try? String(contentsOf: logFile, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    /// Starts one, waiting for its port off the cooperative pool.
    static func start(_ kind: Kind) async throws -> TestProxy {
        try await offThePool { try startNow(kind) }
    }

    private static func startNow(_ kind: Kind) throws -> TestProxy {
        let logFile = FileManager.default.temporaryDirectory.appendingPathComponent("courier-proxy-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let mode: String, credentials: String
        switch kind {
        case .http(let given): (mode, credentials) = ("http", given ?? "-")
        case .socks5: (mode, credentials) = ("socks", "-")
        }
        process.arguments = ["python3", "-c", script, mode, credentials, logFile.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let port = Int(line) else {
            kill(process.processIdentifier, SIGKILL)
            throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "the test proxy did not start: \(line)"])
        }
        return TestProxy(port: port, process: process, logFile: logFile)
    }

    /// Stops the proxy. SIGKILL: the child inherits the test process's blocked signals, so SIGTERM would
    /// not reach it.
    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: logFile)
    }

    private static let script = #"""
import asyncio, base64, sys
mode, credentials, log_path = sys.argv[1], sys.argv[2], sys.argv[3]
log = open(log_path, "a", buffering=1)

async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except Exception:
        pass
    finally:
        try:
            writer.close()
        except Exception:
            pass

async def tunnel(reader, writer, host, port, reply):
    try:
        upstream_reader, upstream_writer = await asyncio.open_connection(host, port)
    except Exception:
        writer.close()
        return
    writer.write(reply)
    await writer.drain()
    await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))

async def http(reader, writer):
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    method, target = head[0].split(" ")[:2]
    fields = {line.split(":", 1)[0].strip().lower(): line.split(":", 1)[1].strip() for line in head[1:] if ":" in line}
    given = fields.get("proxy-authorization", "")
    log.write(f"{method} {target} {given}\n")
    if credentials != "-" and given != "Basic " + base64.b64encode(credentials.encode()).decode():
        writer.write(b'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="test"\r\nContent-Length: 0\r\n\r\n')
        await writer.drain()
        writer.close()
        return
    if method != "CONNECT":
        writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()
        return
    host, port = target.rsplit(":", 1)
    await tunnel(reader, writer, host.strip("[]"), int(port), b"HTTP/1.1 200 Connection Established\r\n\r\n")

async def socks(reader, writer):
    _, count = await reader.readexactly(2)
    await reader.readexactly(count)
    writer.write(b"\x05\x00")
    await writer.drain()
    _, _, _, kind = await reader.readexactly(4)
    if kind == 1:
        host = ".".join(str(byte) for byte in await reader.readexactly(4))
    elif kind == 3:
        length = (await reader.readexactly(1))[0]
        host = (await reader.readexactly(length)).decode()
    else:
        raw = await reader.readexactly(16)
        host = ":".join(raw[i:i + 2].hex() for i in range(0, 16, 2))
    port = int.from_bytes(await reader.readexactly(2), "big")
    log.write(f"SOCKS {host}:{port}\n")
    await tunnel(reader, writer, host, port, b"\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00")

async def main():
    server = await asyncio.start_server(http if mode == "http" else socks, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()

asyncio.run(main())
"""#
}
