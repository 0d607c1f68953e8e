/// The bookkeeping of a ``NetworkBatch`` as a pure value: which members finished how, the batch's
/// progress, whether a failure cancels the rest, and when the batch is over.
struct BatchStateMachine {
    enum Outcome: Equatable { case succeeded, failed, cancelled }

    struct Summary: Equatable {
        var succeeded: [OperationID] = []
        var failed: [OperationID] = []
        var cancelled: [OperationID] = []
    }

    struct Action: Equatable {
        /// Members to cancel because another failed.
        var cancel: [OperationID] = []
        /// The batch's progress changed to this.
        var progress: TransferProgress?
        /// Every member has finished: the batch is over.
        var finished: Summary?
    }

    private struct Member {
        var total: Int64?
        var received: Int64 = 0
        var outcome: Outcome?
    }

    enum Phase: Equatable { case collecting, running, finished }

    let cancelsAllOnFailure: Bool
    private(set) var phase = Phase.collecting
    private var order: [OperationID] = []
    private var members: [OperationID: Member] = [:]
    private var isCancellingAll = false
    /// Set while HEAD probes learn the members' sizes (accurate progress): no progress is reported
    /// until they are all in, so the first progress already has the exact total.
    private var isProbing = false

    init(cancelsAllOnFailure: Bool) {
        self.cancelsAllOnFailure = cancelsAllOnFailure
    }

    var memberIDs: [OperationID] { order }

    /// Adds a member; only before ``go()``. Returns whether it was added.
    mutating func add(_ id: OperationID) -> Bool {
        guard phase == .collecting, members[id] == nil else { return false }
        order.append(id)
        members[id] = Member()
        return true
    }

    /// The batch starts. An empty batch is over at once. With `probingSizes`, progress waits for
    /// ``sizesProbed()``.
    mutating func go(probingSizes: Bool = false) -> Action {
        guard phase == .collecting else { return Action() }
        phase = .running
        isProbing = probingSizes && !order.isEmpty
        var action = Action()
        if !isProbing { action.progress = progress }
        if order.isEmpty { finish(into: &action) }
        return action
    }

    /// A member's size became known (from a HEAD probe or its response).
    mutating func learnedSize(_ total: Int64, of id: OperationID) -> Action {
        guard var member = members[id], member.outcome == nil else { return Action() }
        member.total = total
        members[id] = member
        return Action(progress: isProbing ? nil : progress)
    }

    /// Every HEAD probe has answered (or failed): the first progress, with the total as known now.
    mutating func sizesProbed() -> Action {
        guard isProbing else { return Action() }
        isProbing = false
        return Action(progress: phase == .finished ? nil : progress)
    }

    /// A member received body bytes.
    mutating func received(_ progress: TransferProgress, by id: OperationID) -> Action {
        guard var member = members[id], member.outcome == nil else { return Action() }
        member.received = progress.completedBytes
        if let total = progress.totalBytes { member.total = total }
        members[id] = member
        return Action(progress: isProbing ? nil : self.progress)
    }

    /// A member finished.
    mutating func finished(_ id: OperationID, _ outcome: Outcome) -> Action {
        guard phase == .running, var member = members[id], member.outcome == nil else { return Action() }
        member.outcome = outcome
        if outcome == .succeeded, let total = member.total { member.received = total }
        members[id] = member
        var action = Action(progress: isProbing ? nil : progress)
        if outcome != .succeeded, cancelsAllOnFailure, !isCancellingAll {
            isCancellingAll = true
            action.cancel = order.filter { members[$0]?.outcome == nil }
        }
        if order.allSatisfy({ members[$0]?.outcome != nil }) { finish(into: &action) }
        return action
    }

    /// Bytes received over the known total; the total is known once every unfinished member's size is.
    var progress: TransferProgress {
        var received: Int64 = 0
        var total: Int64 = 0
        var isTotalKnown = true
        for id in order {
            guard let member = members[id] else { continue }
            received += member.received
            if let memberTotal = member.total {
                total += memberTotal
            } else if member.outcome == nil {
                isTotalKnown = false
            } else {
                total += member.received
            }
        }
        return TransferProgress(completedBytes: received, totalBytes: isTotalKnown ? total : nil)
    }

    private mutating func finish(into action: inout Action) {
        phase = .finished
        var summary = Summary()
        for id in order {
            switch members[id]?.outcome {
            case .succeeded?: summary.succeeded.append(id)
            case .failed?: summary.failed.append(id)
            case .cancelled?, nil: summary.cancelled.append(id)
            }
        }
        action.finished = summary
    }
}
