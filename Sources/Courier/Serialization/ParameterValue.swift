import Foundation

/// A JSON-like value used for request parameters.
///
/// `ParameterValue` is the currency type for query strings, URL-encoded form bodies
/// and JSON bodies. It can be written with Swift literals:
///
/// ```swift
/// let params: [String: ParameterValue] = [
///     "q": "swift",
///     "page": 2,
///     "ratio": 0.5,
///     "verbose": true,
///     "tags": ["a", "b"],
///     "filter": ["kind": "book"],
///     "cursor": nil,
/// ]
/// ```
public enum ParameterValue: Sendable, Hashable {
    /// A string value.
    case string(String)
    /// An integer value.
    case int(Int)
    /// A floating-point value.
    case double(Double)
    /// A Boolean value.
    case bool(Bool)
    /// An ordered list of values.
    case array([ParameterValue])
    /// A string-keyed map of values.
    case dictionary([String: ParameterValue])
    /// The absence of a value (JSON `null`).
    case null
}

// MARK: - Literal conformances

extension ParameterValue: ExpressibleByStringLiteral {
    /// Creates a `.string` value from a string literal.
    /// - Parameter value: The literal's text.
    public init(stringLiteral value: String) {
        self = .string(value)
    }
}

extension ParameterValue: ExpressibleByIntegerLiteral {
    /// Creates an `.int` value from an integer literal.
    /// - Parameter value: The literal's value.
    public init(integerLiteral value: Int) {
        self = .int(value)
    }
}

extension ParameterValue: ExpressibleByFloatLiteral {
    /// Creates a `.double` value from a floating-point literal.
    /// - Parameter value: The literal's value.
    public init(floatLiteral value: Double) {
        self = .double(value)
    }
}

extension ParameterValue: ExpressibleByBooleanLiteral {
    /// Creates a `.bool` value from a Boolean literal.
    /// - Parameter value: The literal's value.
    public init(booleanLiteral value: Bool) {
        self = .bool(value)
    }
}

extension ParameterValue: ExpressibleByArrayLiteral {
    /// Creates an `.array` value from an array literal.
    /// - Parameter elements: The literal's elements, in order.
    public init(arrayLiteral elements: ParameterValue...) {
        self = .array(elements)
    }
}

extension ParameterValue: ExpressibleByDictionaryLiteral {
    /// Creates a `.dictionary` value from a dictionary literal.
    ///
    /// If a key appears more than once, the last occurrence wins.
    /// - Parameter elements: The literal's key-value pairs.
    public init(dictionaryLiteral elements: (String, ParameterValue)...) {
        self = .dictionary(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension ParameterValue: ExpressibleByNilLiteral {
    /// Creates `.null` from the `nil` literal.
    /// - Parameter nilLiteral: The `nil` literal.
    public init(nilLiteral: ()) {
        self = .null
    }
}

// MARK: - Description

extension ParameterValue: CustomStringConvertible {
    /// A compact, deterministic, JSON-like rendering of the value.
    ///
    /// Strings are double-quoted with JSON escapes, dictionary keys are sorted,
    /// and `.null` renders as `null`. For example `["b": [1, true], "a": "x"]`
    /// renders as `{"a": "x", "b": [1, true]}`.
    public var description: String {
        switch self {
        case .string(let string):
            return Self.quoted(string)
        case .int(let int):
            return String(int)
        case .double(let double):
            return double.description
        case .bool(let bool):
            return bool ? "true" : "false"
        case .array(let array):
            return "[" + array.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(let dictionary):
            let body = dictionary.keys.sorted().map { key in
                Self.quoted(key) + ": " + (dictionary[key]?.description ?? "null")
            }
            return "{" + body.joined(separator: ", ") + "}"
        case .null:
            return "null"
        }
    }

    /// Quotes `string` using JSON string escaping rules.
    private static func quoted(_ string: String) -> String { JSONStringLiteral.quoted(string) }
}

// MARK: - Foundation JSON bridging

extension ParameterValue {
    /// The value as a Foundation JSON object (`String`, `Int`, `Double`, `Bool`,
    /// `[Any]`, `[String: Any]` or `NSNull`), suitable for `JSONSerialization`.
    ///
    /// Non-finite doubles (NaN, ±infinity) are passed through unchanged and make the
    /// object invalid JSON; check `JSONSerialization.isValidJSONObject(_:)` (or use
    /// ``jsonData(options:)``) before serializing untrusted values.
    var jsonObject: Any {
        switch self {
        case .string(let string):
            return string
        case .int(let int):
            return int
        case .double(let double):
            return double
        case .bool(let bool):
            return bool
        case .array(let array):
            return array.map(\.jsonObject)
        case .dictionary(let dictionary):
            return dictionary.mapValues(\.jsonObject)
        case .null:
            return NSNull()
        }
    }

    /// Serializes the value with `JSONSerialization`, throwing instead of trapping
    /// when the value cannot be represented as JSON (for example a NaN double).
    ///
    /// Scalar top-level values are allowed (`.fragmentsAllowed` is always added).
    /// - Parameter options: Writing options such as `.sortedKeys`.
    /// - Returns: The UTF-8 JSON bytes.
    /// - Throws: ``ParameterValueJSONError`` if the value is not valid JSON.
    func jsonData(options: JSONSerialization.WritingOptions = []) throws -> Data {
        guard isValidJSON else { throw ParameterValueJSONError() }
        return try JSONSerialization.data(withJSONObject: jsonObject, options: options.union(.fragmentsAllowed))
    }

    /// Whether every number in the value is finite (the only way a `ParameterValue` can fail to be JSON).
    private var isValidJSON: Bool {
        switch self {
        case .double(let double):
            return double.isFinite
        case .array(let array):
            return array.allSatisfy(\.isValidJSON)
        case .dictionary(let dictionary):
            return dictionary.values.allSatisfy(\.isValidJSON)
        case .string, .int, .bool, .null:
            return true
        }
    }
}

/// Thrown by `ParameterValue.jsonData(options:)` for values that are not representable as JSON.
struct ParameterValueJSONError: Error, Hashable, Sendable {}

// MARK: - Encodable

extension ParameterValue: Encodable {
    /// Encodes the value as its natural JSON value: a string, number, Boolean,
    /// array, object or `null`.
    /// - Parameter encoder: The encoder to write to.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let string):
            try container.encode(string)
        case .int(let int):
            try container.encode(int)
        case .double(let double):
            try container.encode(double)
        case .bool(let bool):
            try container.encode(bool)
        case .array(let array):
            try container.encode(array)
        case .dictionary(let dictionary):
            try container.encode(dictionary)
        case .null:
            try container.encodeNil()
        }
    }
}
