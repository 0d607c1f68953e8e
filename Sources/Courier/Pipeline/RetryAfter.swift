import Foundation

/// The `Retry-After` field (RFC 9110 §10.2.3): delay-seconds (digits only) or an HTTP-date.
enum RetryAfter {
    /// How long from `now` the field asks to wait; `nil` when absent or not valid. A date in the past
    /// is no wait; an absurd number of seconds saturates rather than overflowing.
    static func delay(_ value: String?, now: Date) -> Duration? {
        guard let value = value?.trimmingCharacters(in: CharacterSet(charactersIn: " \t")), !value.isEmpty else { return nil }
        if value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            // More than ~30 years of seconds means "not soon": cap the number instead of overflowing.
            guard value.utf8.count <= 10, let seconds = Int64(value) else { return .seconds(Int64(1) << 30) }
            return .seconds(seconds)
        }
        guard let date = HTTPDate.parse(value) else { return nil }
        let interval = date.timeIntervalSince(now)
        return interval <= 0 ? .zero : .milliseconds(Int64((min(interval, Double(1 << 30)) * 1000).rounded(.up)))
    }
}
