/// An optional value kept on the heap, allocated only while it is set: one word inline in the struct
/// that holds it instead of the whole value. For large state that most of a long-lived struct's life
/// leaves unset: an operation's storage, of which a suspended queue may hold 100,000. Read in place and
/// mutated in place while unshared (it is an array's storage underneath): `holder.value?.field = x`
/// moves the value out and back, it does not copy it.
struct HeapOptional<Wrapped: Sendable>: Sendable {
    private var storage: ContiguousArray<Wrapped> = []

    /// An unset value.
    init() {}

    /// The value, or `nil`.
    var value: Wrapped? {
        get { storage.first }
        _modify {
            // Moved out (the buffer keeps its capacity) and back: no copy, no allocation.
            var value = storage.popLast()
            defer {
                if let value { storage.append(value) } else { storage = [] }
            }
            yield &value
        }
    }

    /// The value, or `initial` while unset; a mutation stores it (starting from `initial`).
    subscript(default initial: @autoclosure () -> Wrapped) -> Wrapped {
        _read {
            if storage.isEmpty { yield initial() } else { yield storage[0] }
        }
        _modify {
            if storage.isEmpty { storage.append(initial()) }
            yield &storage[0]
        }
    }
}
