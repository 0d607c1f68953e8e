extension TestServer {
    /// The ports ``vacantPort(on:)`` picks from: below the kernel's ephemeral range (Linux starts it at
    /// 32768, macOS at 49152), so no server started on port 0 and no outgoing connection is given one.
    static let vacantPorts = 20_000..<32_000

    /// A port nobody listens on that stays free until the caller starts a server on it.
    ///
    /// For "the server went away, then came back on the same port": a port taken from a server started
    /// on port 0 and shut down is an ephemeral one, which the kernel may hand to any other socket in the
    /// meantime (a parallel test's server, or the local end of an outgoing connection), so the server
    /// cannot come back. This port is outside the ephemeral range and was bound once to prove it free.
    ///
    /// - Parameter host: The address the port must be free on, `"127.0.0.1"` by default.
    /// - Returns: The port.
    /// - Throws: When 100 random ports in the range are all taken.
    public static func vacantPort(on host: String = "127.0.0.1") async throws -> Int {
        var lastError: (any Error)?
        for _ in 0..<100 {
            let port = Int.random(in: vacantPorts)
            do {
                let probe = try await start(host: host, port: port)
                try await probe.shutdown()
                return port
            } catch {
                lastError = error
            }
        }
        throw lastError ?? TestServerError.noLocalAddress
    }
}
