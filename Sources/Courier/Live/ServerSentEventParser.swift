/// The WHATWG event stream parser ("Interpreting an event stream", HTML §9.2.6): bytes in, events out.
///
/// A pure value: no I/O, no clock. Chunks may split anything (a line, a CR LF pair, a UTF-8 sequence):
/// only complete lines are decoded (a line break is an ASCII byte, never inside a UTF-8 sequence), so the
/// parser holds at most one line and one event's data between chunks. A line or an event's data longer
/// than `maximumEventSize` is refused (``NetworkError/Code/bodyTooLarge``): a server cannot make the
/// client hold an endless line.
///
/// The stream's state that outlives a connection (the last event ID, the reconnection time) is read by
/// the reconnecting loop and given to the next connection's parser.
struct ServerSentEventParser {
    /// The most bytes one line, or one event's data, may hold.
    let maximumEventSize: Int
    /// The stream's last event ID (the `id:` of the last dispatched event, or of an event block with no
    /// data); `""` for none. Sent as `Last-Event-ID` when the stream reconnects.
    private(set) var lastEventID: String
    /// The reconnection time the last valid `retry:` field set, if any.
    private(set) var reconnectionTime: Duration?

    private var line: [UInt8] = []
    /// The previous chunk ended with CR: an LF that starts this one belongs to that line break.
    private var afterCarriageReturn = false
    /// A byte order mark is dropped at the start of the stream only.
    private var atStreamStart = true
    private var data: [UInt8] = []
    private var hasData = false
    private var eventType = ""
    private var idBuffer: String
    private var blockRetry: Duration?

    /// The bytes held between chunks (the unfinished line and the pending event's data): stays bounded
    /// however long the stream runs.
    var bufferedBytes: Int { line.count + data.count }

    init(lastEventID: String = "", maximumEventSize: Int = 1 << 20) {
        self.lastEventID = lastEventID
        self.idBuffer = lastEventID
        self.maximumEventSize = max(1, maximumEventSize)
    }

    /// Parses a chunk of the stream.
    /// - Returns: The events the chunk completed, in order.
    /// - Throws: ``NetworkError/Code/bodyTooLarge`` for a line or an event's data over the limit.
    mutating func parse(_ chunk: some Sequence<UInt8>) throws(NetworkError) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        for byte in chunk {
            if afterCarriageReturn {
                afterCarriageReturn = false
                if byte == 0x0A { continue }
            }
            switch byte {
            case 0x0D:
                afterCarriageReturn = true
                if let event = try endLine() { events.append(event) }
            case 0x0A:
                if let event = try endLine() { events.append(event) }
            default:
                guard line.count < maximumEventSize else { throw tooLarge("a line") }
                line.append(byte)
            }
        }
        return events
    }

    /// The stream ended: an event without its closing blank line is dropped (as the standard says), and
    /// so is an unfinished line. The last event ID and reconnection time stay.
    mutating func reset() {
        line.removeAll(keepingCapacity: false)
        data.removeAll(keepingCapacity: false)
        hasData = false
        eventType = ""
        idBuffer = lastEventID
        blockRetry = nil
        afterCarriageReturn = false
        atStreamStart = true
    }

    private mutating func endLine() throws(NetworkError) -> ServerSentEvent? {
        defer { line.removeAll(keepingCapacity: line.count <= 4096) }
        if atStreamStart {
            atStreamStart = false
            if line.starts(with: [0xEF, 0xBB, 0xBF]) { line.removeFirst(3) }
        }
        guard !line.isEmpty else { return dispatch() }
        if line[0] == UInt8(ascii: ":") { return nil }   // a comment (a keep-alive)
        let colon = line.firstIndex(of: UInt8(ascii: ":"))
        let name = colon.map { line[..<$0] } ?? line[...]
        var value = colon.map { line[($0 + 1)...] } ?? []
        if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
        switch String(decoding: name, as: UTF8.self) {
        case "event":
            eventType = String(decoding: value, as: UTF8.self)
        case "data":
            guard data.count + value.count + 1 <= maximumEventSize else { throw tooLarge("an event's data") }
            data.append(contentsOf: value)
            data.append(0x0A)
            hasData = true
        case "id":
            if !value.contains(0) { idBuffer = String(decoding: value, as: UTF8.self) }
        case "retry":
            if !value.isEmpty, value.allSatisfy({ (0x30...0x39).contains($0) }) {
                // Digits only; a value past what a Duration holds is as good as "never soon".
                let milliseconds = Int64(String(decoding: value, as: UTF8.self)) ?? Int64.max / 1_000_000
                let time = Duration.milliseconds(min(milliseconds, Int64.max / 1_000_000))
                reconnectionTime = time
                blockRetry = time
            }
        default:
            break   // unknown fields are ignored
        }
        return nil
    }

    /// A blank line: the block's event goes out, if it had data.
    private mutating func dispatch() -> ServerSentEvent? {
        lastEventID = idBuffer
        defer {
            data.removeAll(keepingCapacity: data.count <= 4096)
            hasData = false
            eventType = ""
            blockRetry = nil
        }
        guard hasData else { return nil }
        if data.last == 0x0A { data.removeLast() }
        return ServerSentEvent(
            id: lastEventID.isEmpty ? nil : lastEventID, event: eventType.isEmpty ? "message" : eventType,
            data: String(decoding: data, as: UTF8.self), retry: blockRetry)
    }

    private func tooLarge(_ what: String) -> NetworkError {
        NetworkError(.bodyTooLarge, "the event stream sent \(what) longer than \(maximumEventSize) bytes")
    }
}
