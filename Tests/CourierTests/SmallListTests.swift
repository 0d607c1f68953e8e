import Testing
@testable import Courier

/// Tier 1: the queue's small list keeps every element, in order, however many it holds.
@Suite("SmallList")
struct SmallListTests {
    @Test(arguments: 0...5) func holdsEveryElementInOrder(count: Int) {
        var list = SmallList<Int>()
        for value in 0..<count { list.append(value * 10) }
        #expect(Array(list) == (0..<count).map { $0 * 10 })
        #expect(list.count == count)
        #expect(list.isEmpty == (count == 0))
        #expect(list.first == (count == 0 ? nil : 0))
        #expect(list.contains(where: { $0 == (count - 1) * 10 }) == (count > 0))
        // Walking it twice gives the same elements (an iterator is a copy, not a cursor in the list).
        #expect(Array(list) == Array(list))
    }
}
