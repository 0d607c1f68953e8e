import NIOConcurrencyHelpers

/// Bodies a test registered at fixed paths (``TestServer/serve(_:at:contentType:delay:)``), checked
/// before the built-in routes.
final class ServedFiles: Sendable {
    private let files = NIOLockedValueBox<[String: RouteAction]>([:])

    func set(_ action: RouteAction, at path: String) {
        files.withLockedValue { $0[path] = action }
    }

    func action(for path: String) -> RouteAction? {
        files.withLockedValue { $0[path] }
    }
}

extension TestServer {
    /// Serves `bytes` at `path` (a path without query: `/images/a.png`), `200` with `contentType` and
    /// `headers`, after `delay` if given; replaces what was served there. For fixtures the built-in
    /// routes lack (images, documents).
    public func serve(
        _ bytes: [UInt8], at path: String, contentType: String, headers: [(name: String, value: String)] = [], delay: Duration? = nil
    ) {
        let reply = Reply.bytes(bytes, contentType: contentType, extraHeaders: headers)
        let action: RouteAction = if let delay {
            .delayed(milliseconds: Int64(delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000), reply)
        } else {
            .reply(reply)
        }
        files.set(action, at: path)
    }
}
