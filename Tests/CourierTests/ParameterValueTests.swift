import Foundation
import Testing
@testable import Courier

@Suite("ParameterValue")
struct ParameterValueTests {
    @Test func literalsMapToCases() {
        let string: ParameterValue = "hi"
        let int: ParameterValue = 42
        let double: ParameterValue = 1.5
        let bool: ParameterValue = true
        let array: ParameterValue = [1, "a"]
        let dictionary: ParameterValue = ["k": false]
        let null: ParameterValue = nil
        #expect(string == .string("hi"))
        #expect(int == .int(42))
        #expect(double == .double(1.5))
        #expect(bool == .bool(true))
        #expect(array == .array([.int(1), .string("a")]))
        #expect(dictionary == .dictionary(["k": .bool(false)]))
        #expect(null == .null)
    }

    @Test func duplicateDictionaryLiteralKeysKeepLastValue() {
        let value: ParameterValue = ["a": 1, "a": 2]
        #expect(value == .dictionary(["a": .int(2)]))
    }

    @Test func descriptionIsDeterministicJSONLike() {
        let value: ParameterValue = ["b": [1, true, nil], "a": "x\"y\n", "c": 2.5]
        #expect(value.description == #"{"a": "x\"y\n", "b": [1, true, null], "c": 2.5}"#)
        #expect(ParameterValue.string("\u{01}").description == #""\u0001""#)
        #expect(ParameterValue.null.description == "null")
    }

    @Test func jsonObjectSerializesWithJSONSerialization() throws {
        let value: ParameterValue = ["s": "x", "i": 3, "d": 0.5, "t": true, "f": false, "n": nil, "a": [1, [2]], "o": ["k": "v"]]
        let data = try JSONSerialization.data(withJSONObject: value.jsonObject, options: [.sortedKeys])
        #expect(String(decoding: data, as: UTF8.self)
            == #"{"a":[1,[2]],"d":0.5,"f":false,"i":3,"n":null,"o":{"k":"v"},"s":"x","t":true}"#)
        #expect(ParameterValue.null.jsonObject is NSNull)
    }

    @Test func jsonDataRejectsNonFiniteNumbersInsteadOfTrapping() throws {
        #expect(throws: ParameterValueJSONError.self) { try ParameterValue.double(.nan).jsonData() }
        #expect(throws: ParameterValueJSONError.self) { try ParameterValue.array([["x": .double(.infinity)]]).jsonData() }
        let data = try ParameterValue.string("é").jsonData()
        #expect(String(decoding: data, as: UTF8.self) == #""é""#)
    }

    @Test func encodableProducesNaturalJSON() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let value: ParameterValue = ["name": "Ann", "age": 30, "score": 9.5, "admin": false, "tags": ["a"], "boss": nil]
        let json = String(decoding: try encoder.encode(value), as: UTF8.self)
        #expect(json == #"{"admin":false,"age":30,"boss":null,"name":"Ann","score":9.5,"tags":["a"]}"#)
        #expect(String(decoding: try encoder.encode(ParameterValue.int(7)), as: UTF8.self) == "7")
        #expect(String(decoding: try encoder.encode(ParameterValue.null), as: UTF8.self) == "null")
    }

    @Test func encodableThrowsForNaN() {
        #expect(throws: (any Error).self) { try JSONEncoder().encode(ParameterValue.double(.nan)) }
    }

    @Test func hashableDistinguishesCases() {
        let set: Set<ParameterValue> = [.int(1), .double(1), .string("1"), .bool(true), .int(1)]
        #expect(set.count == 4)
    }
}
