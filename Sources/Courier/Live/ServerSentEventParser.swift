/// The WHATWG event stream parser ("Interpreting an event stream", HTML §9.2.6): bytes in, events out.
///
/// A pure value: no I/O, no clock. Chunks may split anything (a line, a CR LF pair, a UTF-8 sequence):
/// only complete lines are decoded (a line break is an ASCII byte, never inside a UTF-8 sequence), so the
/// parser holds at most one line and one event's data between chunks. A line or an event's data longer
/// than `maximumEventSize` stops the parser (``failure``, ``NetworkError/Code/bodyTooLarge``) after the
/// events completed before it: a server cannot make the client hold an endless line.
///
/// One departure from the standard: an `id` with a control character (other than a tab, C1 included) is
/// ignored, as one with NUL is, since it could not be sent back as `Last-Event-ID`.
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
    /// Why the parser stopped (a line or an event over the limit); it parses nothing more.
    private(set) var failure: NetworkError?

    /// The bytes held between chunks (the unfinished line and the pending event's data): stays bounded
    /// however long the stream runs.
    var bufferedBytes: Int { line.count + data.count }

    init(lastEventID: String = "", maximumEventSize: Int = 1 << 20) {
        self.lastEventID = lastEventID
        self.idBuffer = lastEventID
        self.maximumEventSize = max(1, maximumEventSize)
    }

    /// Parses a chunk of the stream.
    /// - Returns: The events the chunk completed, in order: those before a line or an event's data over
    ///   the limit too, after which ``failure`` is set and nothing more is parsed.
    mutating func parse(_ chunk: some Sequence<UInt8>) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        guard failure == nil else { return events }
        do throws(NetworkError) {
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
        } catch {
            failure = error
            line.removeAll(keepingCapacity: false)
            data.removeAll(keepingCapacity: false)
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
            // NUL (the standard), and any other control character but a tab: not a field value.
            let id = String(decoding: value, as: UTF8.self)
            if HeaderValidation.validateValue(id) { idBuffer = id }
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
