/// An optional value kept on the heap, allocated only while it is set: one word inline in the struct
/// that holds it instead of the whole value. For large state that most of a long-lived struct's life
/// leaves unset: an operation's storage, of which a suspended queue may hold 100,000. Mutated in place
/// while unshared (it is an array's storage underneath).
struct HeapOptional<Wrapped: Sendable>: Sendable {
    private var storage: ContiguousArray<Wrapped> = []

    /// An unset value.
    init() {}

    /// The value, or `nil`.
    var value: Wrapped? {
        get { storage.first }
        set {
            if let newValue {
                if storage.isEmpty { storage.append(newValue) } else { storage[0] = newValue }
            } else if !storage.isEmpty {
                storage = []
            }
        }
    }
}
