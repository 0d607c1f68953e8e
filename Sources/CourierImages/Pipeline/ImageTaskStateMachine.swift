import Courier

/// Which image tasks run and who waits for them, as a pure value (no I/O, no locks): requests for the
/// same image and processing share one task, the task runs at the highest priority among its
/// subscribers, and it is cancelled when its last subscriber leaves.
///
/// Tasks are numbered: a task cancelled when its last subscriber left is forgotten at once, so a new
/// request for the same image starts a fresh task, and the old task's late finish reaches nobody.
struct ImageTaskStateMachine<Key: Hashable & Sendable>: Sendable {
    typealias TaskID = UInt64
    typealias SubscriberID = UInt64
    typealias Priority = NetworkOperation.Priority

    private struct Task: Sendable {
        let id: TaskID
        var subscribers: [(id: SubscriberID, priority: Priority)]
        var priority: Priority { subscribers.map(\.priority).max() ?? .veryLow }
    }

    private var tasks: [Key: Task] = [:]
    private var keys: [TaskID: Key] = [:]
    private var subscriptions: [SubscriberID: TaskID] = [:]
    private var nextTaskID: TaskID = 1

    /// What to do after a subscription.
    enum SubscribeAction: Equatable, Sendable {
        /// Start task `id` at `priority`.
        case start(TaskID, Priority)
        /// The subscriber joined running task `id`, whose priority went up to `raisedTo` (or stayed).
        case joined(TaskID, raisedTo: Priority?)
    }

    /// What to do after a subscriber left.
    enum UnsubscribeAction: Equatable, Sendable {
        /// Nothing: it was not waiting (its task had finished), or others still wait and the priority stands.
        case none
        /// Others still wait; the task's priority dropped to this.
        case lowerPriority(TaskID, Priority)
        /// It was the last: cancel task `id` (already forgotten here).
        case cancel(TaskID)
    }

    /// How many tasks run.
    var taskCount: Int { tasks.count }

    /// The subscribers waiting for the task of `key`.
    func subscriberCount(for key: Key) -> Int { tasks[key]?.subscribers.count ?? 0 }

    /// The running task of `key`.
    func taskID(for key: Key) -> TaskID? { tasks[key]?.id }

    /// `subscriber` wants the image of `key` at `priority`.
    mutating func subscribe(_ subscriber: SubscriberID, to key: Key, priority: Priority) -> SubscribeAction {
        if var task = tasks[key] {
            let before = task.priority
            task.subscribers.append((subscriber, priority))
            tasks[key] = task
            subscriptions[subscriber] = task.id
            return .joined(task.id, raisedTo: task.priority > before ? task.priority : nil)
        }
        let id = nextTaskID
        nextTaskID += 1
        tasks[key] = Task(id: id, subscribers: [(subscriber, priority)])
        keys[id] = key
        subscriptions[subscriber] = id
        return .start(id, priority)
    }

    /// `subscriber` no longer wants its image (its caller was cancelled).
    mutating func unsubscribe(_ subscriber: SubscriberID) -> UnsubscribeAction {
        guard let id = subscriptions.removeValue(forKey: subscriber), let key = keys[id], var task = tasks[key] else { return .none }
        let before = task.priority
        task.subscribers.removeAll { $0.id == subscriber }
        if task.subscribers.isEmpty {
            tasks[key] = nil
            keys[id] = nil
            return .cancel(id)
        }
        tasks[key] = task
        return task.priority < before ? .lowerPriority(id, task.priority) : .none
    }

    /// Task `id` ended: returns its subscribers, in the order they came, to deliver the result to (none
    /// when the task had been cancelled).
    mutating func finish(_ id: TaskID) -> [SubscriberID] {
        guard let key = keys.removeValue(forKey: id), let task = tasks.removeValue(forKey: key) else { return [] }
        for subscriber in task.subscribers { subscriptions[subscriber.id] = nil }
        return task.subscribers.map(\.id)
    }
}
