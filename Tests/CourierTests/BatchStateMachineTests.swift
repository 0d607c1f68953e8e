import Foundation
import Testing
@testable import Courier

@Suite("BatchStateMachine")
struct BatchStateMachineTests {
    private func op(_ n: Int) -> OperationID { OperationID(rawValue: 2_000_000 + UInt64(n)) }

    @Test func finishesOnceEveryMemberFinishedWhateverTheOutcome() {
        var machine = BatchStateMachine(cancelsAllOnFailure: false)
        for n in 1...3 { let added = machine.add(op(n)); #expect(added) }
        let r1 = machine.go()
        #expect(r1.finished == nil)
        let lateAdd = machine.add(op(4))
        #expect(!lateAdd, "no members after go()")
        let r2 = machine.finished(op(2), .failed)
        #expect(r2.finished == nil)
        let r3 = machine.finished(op(1), .succeeded)
        #expect(r3.cancel.isEmpty)
        let last = machine.finished(op(3), .cancelled)
        #expect(last.finished == .init(succeeded: [op(1)], failed: [op(2)], cancelled: [op(3)]))
        #expect(machine.phase == .finished)
        let r4 = machine.finished(op(3), .succeeded)
        #expect(r4 == .init(), "late events are ignored")
    }

    @Test func withProbedSizesTheFirstProgressAlreadyHasTheExactTotal() {
        var machine = BatchStateMachine(cancelsAllOnFailure: false)
        for n in 1...2 { _ = machine.add(op(n)) }
        #expect(machine.go(probingSizes: true).progress == nil, "nothing before the sizes are known")
        #expect(machine.learnedSize(100, of: op(1)).progress == nil)
        #expect(machine.learnedSize(50, of: op(2)).progress == nil)
        #expect(machine.sizesProbed().progress == TransferProgress(completedBytes: 0, totalBytes: 150))
        #expect(machine.received(TransferProgress(completedBytes: 10, totalBytes: 100), by: op(1)).progress?.totalBytes == 150)
        #expect(machine.sizesProbed() == .init(), "only once")
    }

    @Test func theFirstFailureCancelsTheRestOnce() {
        var machine = BatchStateMachine(cancelsAllOnFailure: true)
        for n in 1...4 { _ = machine.add(op(n)) }
        _ = machine.go()
        _ = machine.finished(op(1), .succeeded)
        let r5 = machine.finished(op(3), .failed)
        #expect(r5.cancel == [op(2), op(4)])
        let r6 = machine.finished(op(2), .cancelled)
        #expect(r6.cancel.isEmpty, "the cancellations it caused cancel nothing more")
        let r7 = machine.finished(op(4), .cancelled)
        #expect(r7.finished?.cancelled == [op(2), op(4)])
    }

    @Test func aCancellationAlsoCancelsTheRest() {
        var machine = BatchStateMachine(cancelsAllOnFailure: true)
        for n in 1...2 { _ = machine.add(op(n)) }
        _ = machine.go()
        let r8 = machine.finished(op(1), .cancelled)
        #expect(r8.cancel == [op(2)])
    }

    @Test func anEmptyBatchFinishesAtGo() {
        var machine = BatchStateMachine(cancelsAllOnFailure: true)
        let r9 = machine.go()
        #expect(r9.finished == .init())
    }

    @Test func progressHasATotalOnlyWhenEverySizeIsKnown() {
        var machine = BatchStateMachine(cancelsAllOnFailure: false)
        for n in 1...2 { _ = machine.add(op(n)) }
        let r10 = machine.go()
        #expect(r10.progress == TransferProgress(completedBytes: 0, totalBytes: nil))
        _ = machine.learnedSize(100, of: op(1))
        let r11 = machine.received(TransferProgress(completedBytes: 50, totalBytes: 100), by: op(1))
        #expect(r11.progress
            == TransferProgress(completedBytes: 50, totalBytes: nil))
        let r12 = machine.learnedSize(300, of: op(2))
        #expect(r12.progress == TransferProgress(completedBytes: 50, totalBytes: 400))
        _ = machine.received(TransferProgress(completedBytes: 150, totalBytes: 300), by: op(2))
        #expect(machine.progress.fractionCompleted == 0.5)
        let r13 = machine.finished(op(1), .succeeded)
        #expect(r13.progress == TransferProgress(completedBytes: 250, totalBytes: 400))
    }
}
