import CBenchSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Facts about the machine and process, for the report and for measuring.
enum Machine {
    struct Description: Codable, Sendable {
        var cores: Int
        var memoryBytes: UInt64
        var operatingSystem: String
        var swift: String
    }

    static var description: Description {
        Description(
            cores: ProcessInfo.processInfo.activeProcessorCount,
            memoryBytes: ProcessInfo.processInfo.physicalMemory,
            operatingSystem: ProcessInfo.processInfo.operatingSystemVersionString,
            swift: compilerVersion)
    }

    static var compilerVersion: String {
        #if compiler(>=6.3)
        "6.3 or later"
        #else
        "before 6.3"
        #endif
    }

    /// The commit the benchmarks were built from, if this is a git checkout, noting uncommitted changes.
    static func commit(in directory: URL) -> String {
        guard let commit = git(["rev-parse", "--short", "HEAD"], in: directory), !commit.isEmpty else { return "unknown" }
        let isDirty = !(git(["status", "--porcelain", "--untracked-files=no"], in: directory) ?? "").isEmpty
        return commit + (isDirty ? " (with uncommitted changes)" : "")
    }

    /// What `git -C directory arguments...` prints, trimmed; `nil` when git cannot run.
    private static func git(_ arguments: [String], in directory: URL) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["git", "-C", directory.path] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = Pipe()
        guard (try? process.run()) != nil else { return nil }
        process.waitUntilExit()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// CPU time (user + system) this process has used, in microseconds.
    static var cpuMicroseconds: Double {
        var usage = rusage()
        getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
        return microseconds(usage)
    }

    static func microseconds(_ usage: rusage) -> Double {
        Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1_000_000
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
    }

    /// Bytes currently allocated by malloc (glibc's `mallinfo2`: arena chunks in use plus chunks large
    /// enough to be mmapped, such as a big dictionary's storage), the fairest measure of what a data
    /// structure holds; RSS moves in pages and keeps freed memory.
    static var allocatedBytes: Int { Int(bench_allocated_bytes()) }

    /// Whether `mallocCalls` counts (glibc: the executable interposes malloc, calloc and realloc).
    static var countsMallocCalls: Bool { bench_allocation_counting_available() != 0 }

    /// Runs `work` with malloc/calloc/realloc calls counted in every thread of this process, and
    /// returns how many there were (nil where the counter does not work).
    static func mallocCalls<T>(_ work: () async throws -> T) async rethrows -> (T, Int?) {
        guard countsMallocCalls else { return (try await work(), nil) }
        bench_count_allocations(true)
        defer { bench_count_allocations(false) }
        let before = bench_allocation_calls()
        let result = try await work()
        return (result, Int(bench_allocation_calls() - before))
    }

    /// Seconds since an arbitrary point, monotonic.
    static var now: Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}

/// A child process run to completion, with its own resource usage (from `wait4`).
struct ChildRun {
    var status: Int32
    var wallSeconds: Double
    var cpuMicroseconds: Double
    /// Peak resident set size, in bytes: the child's own `VmHWM`, sampled from `/proc` while it runs.
    /// (`wait4`'s `ru_maxrss` is no use here: it keeps the high-water mark of the memory the child
    /// shared with this process before `exec`.)
    var maxRSSBytes: Int

    /// Runs `path` with `arguments`, output discarded, and waits for it.
    static func run(_ path: String, _ arguments: [String]) throws -> ChildRun {
        var pid: pid_t = 0
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let started = Machine.now
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
        guard spawned == 0 else { throw BenchError("could not start \(path): error \(spawned)") }
        // glibc's posix_spawn returns once the child has exec'd, so /proc/PID is the child's own from here on.
        var status: Int32 = 0
        var usage = rusage()
        var peak = 0
        while true {
            let reaped = wait4(pid, &status, WNOHANG, &usage)
            if reaped == pid { break }
            if reaped == -1 && errno != EINTR { throw BenchError("wait4 failed: \(errno)") }
            peak = max(peak, highWaterMark(of: pid))
            usleep(2_000)
        }
        let exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return ChildRun(
            status: exitStatus, wallSeconds: Machine.now - started,
            cpuMicroseconds: Machine.microseconds(usage), maxRSSBytes: peak)
    }

    /// `VmHWM` (peak resident set) of a running process, in bytes; 0 once it has exited.
    static func highWaterMark(of pid: pid_t) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
        else { return 0 }
        let kilobytes = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return kilobytes * 1024
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Finds an executable on PATH.
func which(_ name: String) -> String? {
    for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin:/usr/sbin").split(separator: ":") {
        let path = "\(directory)/\(name)"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}
