/// A list that holds a single element without allocating: the queue's effects usually start one flight
/// for one operation, or deliver one outcome, and an `Array` would take a `malloc` for each of those.
struct SmallList<Element>: Sequence {
    fileprivate enum Storage {
        case empty
        case one(Element)
        case many([Element])
    }

    private var storage = Storage.empty

    /// An empty list.
    init() {}

    /// Whether the list holds nothing.
    var isEmpty: Bool {
        if case .empty = storage { return true }
        return false
    }

    /// How many elements the list holds.
    var count: Int {
        switch storage {
        case .empty: 0
        case .one: 1
        case .many(let elements): elements.count
        }
    }

    /// The first element, or `nil` when empty.
    var first: Element? {
        switch storage {
        case .empty: nil
        case .one(let element): element
        case .many(let elements): elements.first
        }
    }

    /// Adds `element` at the end (the second one moves both into an array).
    mutating func append(_ element: Element) {
        switch storage {
        case .empty:
            storage = .one(element)
        case .one(let first):
            storage = .many([first, element])
        case .many(var elements):
            storage = .empty   // the array stays uniquely referenced while it grows
            elements.append(element)
            storage = .many(elements)
        }
    }

    var underestimatedCount: Int { count }

    func makeIterator() -> Iterator { Iterator(list: self) }

    /// Walks the list in order.
    struct Iterator: IteratorProtocol {
        fileprivate let list: SmallList
        private var index = 0

        fileprivate init(list: SmallList) { self.list = list }

        mutating func next() -> Element? {
            defer { index += 1 }
            switch list.storage {
            case .empty: return nil
            case .one(let element): return index == 0 ? element : nil
            case .many(let elements): return index < elements.count ? elements[index] : nil
            }
        }
    }
}

extension SmallList: Sendable where Element: Sendable {}
extension SmallList.Iterator: Sendable where Element: Sendable {}
extension SmallList.Storage: Sendable where Element: Sendable {}

extension SmallList: Equatable where Element: Equatable {
    static func == (lhs: SmallList, rhs: SmallList) -> Bool { lhs.elementsEqual(rhs) }
}
