import Testing
@testable import Courier

@Suite("MemoryLRU")
struct MemoryLRUTests {
    @Test func evictsLeastRecentlyUsedByBytes() {
        var lru = MemoryLRU<String>(capacity: 100)
        #expect(lru.insert("a", cost: 40).isEmpty)
        #expect(lru.insert("b", cost: 40).isEmpty)
        lru.touch("a")
        let evicted = lru.insert("c", cost: 40)
        #expect(evicted == ["b"])
        #expect(lru.totalCost == 80)
        #expect(lru.contains("a") && lru.contains("c") && !lru.contains("b"))
    }

    @Test func replacingAKeyUpdatesItsCost() {
        var lru = MemoryLRU<String>(capacity: 100)
        _ = lru.insert("a", cost: 90)
        #expect(lru.insert("a", cost: 10).isEmpty)
        #expect(lru.totalCost == 10)
        #expect(lru.insert("b", cost: 90).isEmpty)
    }

    @Test func anEntryLargerThanTheCapacityIsNotKept() {
        var lru = MemoryLRU<String>(capacity: 10)
        #expect(lru.insert("huge", cost: 11) == ["huge"])
        #expect(lru.totalCost == 0 && lru.count == 0)
    }

    @Test func trimAndRemove() {
        var lru = MemoryLRU<Int>(capacity: 1_000)
        for key in 0..<10 { _ = lru.insert(key, cost: 100) }
        lru.remove(3)
        #expect(lru.totalCost == 900)
        #expect(lru.trim(to: 250) == [0, 1, 2, 4, 5, 6, 7])
        #expect(lru.totalCost == 200)
        for _ in 0..<1_000 { lru.touch(8) }
        #expect(lru.trim(to: 100) == [9], "touching many times leaves the order right")
    }
}
