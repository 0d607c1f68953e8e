import Testing
@testable import Courier

/// The heap-held optional behind an operation's rarely set state: a value type like any optional
/// (a copy never sees a later change to the original), set, changed and cleared.
@Suite struct HeapOptionalTests {
    @Test func itBehavesAsAnOptionalValue() {
        var value = HeapOptional<[Int]>()
        #expect(value.value == nil)
        value.value = [1, 2]
        #expect(value.value == [1, 2])
        value.value?.append(3)
        #expect(value.value == [1, 2, 3])
        value.value = nil
        #expect(value.value == nil)
        value.value = []
        #expect(value.value == [], "an empty value is set, not nil")
    }

    @Test func aCopyKeepsItsOwnValue() {
        var original = HeapOptional<String>()
        original.value = "first"
        var copy = original
        original.value = "second"
        #expect(copy.value == "first")
        copy.value = nil
        #expect(original.value == "second")
    }

    @Test func anOperationsOutcomeAndInputErrorSurviveBeingHeldThere() async throws {
        let engine = NetworkEngine(baseURL: "http://127.0.0.1:1")
        let invalid = engine.operation(url: "http://exa mple.com/")
        #expect(invalid.inputError?.code == .invalidURL)
        let error = await #expect(throws: NetworkError.self) { try await engine.send(invalid) }
        #expect(error?.code == .invalidURL)
        #expect(invalid.error?.code == .invalidURL, "the outcome is kept after it is delivered")
        #expect(invalid.state == .finished)
    }
}
