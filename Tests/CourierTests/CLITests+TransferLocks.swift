import CourierTestServer
import Foundation
import Testing
@testable import Courier

/// Two processes downloading to one file spelled two ways (issue 23 B2): `courier download` into
/// `real/out.bin` while this process downloads to `link/out.bin`, `link` being a symbolic link to `real`.
extension CLITests {
    @Test func anotherProcessDownloadingTheSameFileIsRefusedNotMixed() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        try await TransferTestSupport.withTemporaryDirectory { (folder: URL) async throws in
            let real = folder.appendingPathComponent("real"), link = folder.appendingPathComponent("link")
            try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real)
            let size = 12_000_000
            // About twelve seconds at 1 MiB/s: long enough for the second writer to meet the first even on
            // a loaded machine (with three, a busy CI run let the first finish before the second started).
            async let cli = courier("download", "\(server.baseURL)/bytes/\(size)", "-o", real.appendingPathComponent("out.bin").path,
                                    "--limit-rate", "1M")
            let partial = DownloadWriter.partialURL(for: real.appendingPathComponent("out.bin"))
            let size0 = { ((try? FileManager.default.attributesOfItem(atPath: partial.path))?[.size] as? NSNumber)?.intValue ?? 0 }
            #expect(await eventually(timeout: .seconds(30)) { size0() > 100_000 }, "the other process is writing")
            let engine = NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: false, configuration: .init {
                $0.dataDirectory = nil
                $0.reachability = ManualReachability()   // no netlink watcher thread for the twelve seconds it lives
            })
            let before = size0()
            let error = await failure(of: engine.operation(path: "/bytes/\(size / 2)").download(to: link.appendingPathComponent("out.bin")))
            #expect(error?.code == .fileUnavailable && error?.message.contains("busy") == true, "\(String(describing: error))")
            // Unless the other process finished meanwhile (its partial then became out.bin, checked below).
            let finished = FileManager.default.fileExists(atPath: real.appendingPathComponent("out.bin").path)
            #expect(size0() >= before || finished, "the other process's partial file was not truncated or removed")
            let run = try await cli
            #expect(run.status == 0, "\(run.stderr)")
            #expect(try Data(contentsOf: real.appendingPathComponent("out.bin")) == Data((0..<size).map { UInt8($0 % 251) }), "one body, whole")
        }
    }
}
