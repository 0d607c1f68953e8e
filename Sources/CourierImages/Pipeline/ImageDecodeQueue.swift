import Courier
import Dispatch
import NIOConcurrencyHelpers
import Synchronization

/// Runs decoding and processing work off the caller's thread and off Swift's cooperative pool (a
/// 12-megapixel JPEG is tens of milliseconds of CPU), at most ``DecodeLimiterStateMachine/limit`` at
/// once, the highest priority first.
final class ImageDecodeQueue: Sendable {
    private struct State: Sendable {
        var machine: DecodeLimiterStateMachine
        var waiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        var asked: Set<UInt64> = []
        var nextID: UInt64 = 1
    }

    private let state: NIOLockedValueBox<State>
    private let queue = DispatchQueue(label: "courier.images.decode", qos: .userInitiated, attributes: .concurrent)
    /// Work run so far (for diagnostics).
    let completedWork = Atomic<Int>(0)

    init(limit: Int) {
        state = NIOLockedValueBox(State(machine: DecodeLimiterStateMachine(limit: limit)))
    }

    /// Runs `work` when a slot is free.
    /// - Parameter priority: Who goes first when several wait.
    /// - Throws: `.cancelled` when the calling task was cancelled while waiting, or what `work` throws.
    func run<T: Sendable>(
        priority: NetworkOperation.Priority = .normal, _ work: @escaping @Sendable () throws(NetworkError) -> T
    ) async throws(NetworkError) -> T {
        let id = state.withLockedValue { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        let holdsSlot = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let result = state.withLockedValue { state in
                    state.asked.insert(id)
                    let result = state.machine.acquire(id, priority: priority)
                    if result == .wait { state.waiters[id] = continuation }
                    return result
                }
                switch result {
                case .run: continuation.resume(returning: true)
                case .cancelled: continuation.resume(returning: false)
                case .wait: break
                }
            }
        } onCancel: {
            let waiter = state.withLockedValue { state -> CheckedContinuation<Bool, Never>? in
                guard state.machine.cancel(id, hasAsked: state.asked.contains(id)) else { return nil }
                return state.waiters.removeValue(forKey: id)
            }
            waiter?.resume(returning: false)
        }
        state.withLockedValue { _ = $0.asked.remove(id) }
        guard holdsSlot else { throw NetworkError(.cancelled, "cancelled while waiting to decode") }
        let result: Result<T, NetworkError> = await withCheckedContinuation { continuation in
            queue.async {
                continuation.resume(returning: Result { () throws(NetworkError) -> T in try work() })
            }
        }
        completedWork.add(1, ordering: .relaxed)
        let next = state.withLockedValue { state -> CheckedContinuation<Bool, Never>? in
            guard let next = state.machine.release() else { return nil }
            return state.waiters.removeValue(forKey: next)
        }
        next?.resume(returning: true)
        return try result.get()
    }
}
