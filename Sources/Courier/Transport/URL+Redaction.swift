import Foundation

extension URL {
    /// The URL as it may appear in logs: scheme, host, port and path only. User info and the query
    /// (where API keys and tokens often travel) are left out.
    var redactedForLogs: String {
        guard var components = URLComponents(url: self, resolvingAgainstBaseURL: true) else { return "<invalid URL>" }
        components.user = nil
        components.password = nil
        let hadQuery = components.query != nil
        components.query = nil
        components.fragment = nil
        return (components.string ?? "<invalid URL>") + (hadQuery ? "?…" : "")
    }
}
