import Foundation
import HTTPTypes

extension HeaderValidation {
    /// A validated header field, or an ``NetworkError/Code/invalidHeader`` error. Values are trimmed of
    /// surrounding spaces and tabs; CR, LF and NUL are rejected, never rewritten.
    static func field(name: String, value: String) -> Result<HTTPField, NetworkError> {
        guard validateName(name), let fieldName = HTTPField.Name(name) else {
            return .failure(NetworkError(.invalidHeader, "\"\(name.debugDescription.dropFirst().dropLast())\" is not a valid header name"))
        }
        guard validateValue(value) else {
            return .failure(NetworkError(.invalidHeader, "the value of header \(name) contains CR, LF or another control character"))
        }
        let trimmed = value.trimmingCharacters(in: [" ", "\t"])
        return .success(HTTPField(name: fieldName, value: trimmed))
    }
}
