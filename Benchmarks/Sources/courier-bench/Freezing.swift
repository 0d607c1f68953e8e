import Courier
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Scenario 6: what freezing costs the caller. An app enqueues a freezable POST while its host is
/// unreachable; the row must be committed (synced to disk) before `.frozen` is reported. Until issue 18
/// that commit ran on the caller's thread inside `enqueue`; now it runs on the outbox's own queue.
/// Measured while another thread keeps the disk busy with fsync-heavy writes (a slow disk).
enum Freezing {
    static func scenario(count: Int) -> Scenario {
        Scenario(
            name: "Freezing",
            details: "\(count) freezable POSTs enqueued one after another while the host is unreachable, with a background thread writing and fsyncing 64 KiB in a loop on the same file system: how long `enqueue` takes to return, against how long the synced commit of the row takes (what `enqueue` used to wait for)",
            metrics: [Metric(name: "latency us", unit: "microseconds per operation, median", higherIsBetter: false)],
            baseline: "synced commit (reported by onFrozen)",
            contenders: [
                Contender("synced commit (reported by onFrozen)") { try await run(count: count).committed },
                Contender("enqueue returns") { try await run(count: count).enqueued },
            ])
    }

    static func run(count: Int) async throws -> (enqueued: Figures, committed: Figures) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-bench-freeze-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let load = DiskLoad(directory: FileManager.default.temporaryDirectory)
        defer { load.stop() }
        let engine = NetworkEngine(baseURL: "https://api.example.com", configuration: .init {
            $0.reachability = ManualReachability(.unreachable)
            $0.dataDirectory = directory
            $0.replaysOutbox = false
        }, queue: NetworkQueue())
        var enqueued: [Double] = []
        var committed: [Double] = []
        for n in 0..<count {
            let op = engine.operation(path: "notes", method: .post, body: .text("note \(n)"))
            op.isFreezable = true
            let started = Machine.now
            let once = Once()
            let frozen: Double = await withCheckedContinuation { continuation in
                op.onFrozen { _ in if once.claim() { continuation.resume(returning: Machine.now) } }
                op.onError { _ in if once.claim() { continuation.resume(returning: .nan) } }
                engine.enqueue(op)
                enqueued.append(Machine.now - started)
            }
            guard !frozen.isNaN else { throw BenchError("operation \(n) was not frozen") }
            committed.append(frozen - started)
        }
        _ = await engine.outbox?.clear()
        return (["latency us": median(enqueued) * 1e6], ["latency us": median(committed) * 1e6])
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }
}

/// True for the first caller only.
final class Once: Sendable {
    private let claimed = Mutex(false)
    func claim() -> Bool { claimed.withLock { claimed in defer { claimed = true }; return !claimed } }
}

/// A thread that keeps the disk busy: writes 64 KiB and fsyncs, in a loop, until stopped.
final class DiskLoad: Sendable {
    private let running = Atomic<Bool>(true)
    private let done = DispatchSemaphore(value: 0)

    init(directory: URL) {
        let path = directory.appendingPathComponent("courier-bench-load-\(UUID().uuidString)").path
        Thread.detachNewThread { [self] in
            let fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0o600)
            let chunk = [UInt8](repeating: 0x5A, count: 64 << 10)
            var written = 0
            while running.load(ordering: .relaxed), fd >= 0 {
                _ = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                _ = fsync(fd)
                written += chunk.count
                if written > 64 << 20 { _ = ftruncate(fd, 0); _ = lseek(fd, 0, SEEK_SET); written = 0 }
            }
            if fd >= 0 { close(fd) }
            unlink(path)
            done.signal()
        }
    }

    func stop() {
        running.store(false, ordering: .relaxed)
        done.wait()
    }
}
