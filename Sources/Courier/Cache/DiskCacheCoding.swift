import Foundation
import HTTPTypes
import Synchronization

/// How entries are written to and read back from the disk index; every reader is lenient and
/// answers `nil` for anything it cannot understand, so a damaged row is a miss.
enum DiskCacheCoding {
    /// Header fields never written to disk: cookies are secrets. An entry holding one stays in memory
    /// (see ``mayWrite(_:)``); the filter below is a second guard.
    static let unwritableHeaders: Set<String> = ["set-cookie", "set-cookie2"]
    /// Request fields whose values must not reach the disk through a `Vary` selection.
    static let secretRequestHeaders = SensitiveHeaders.defaultNames

    /// Whether `id` is a body file name this store writes: a lowercase UUID.
    static func isValidID(_ id: String) -> Bool {
        id.utf8.count == 36 && id.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) || $0 == 0x2D }
    }

    /// A new row and body file id in the shape ``isValidID(_:)`` accepts (a lowercase UUID's), made without
    /// a system call: a random prefix drawn once per process and a counter. (`UUID()` opens, reads and
    /// closes /dev/urandom on Linux for every id: three system calls per stored response.) Another process
    /// sharing the directory draws another prefix, so two ids collide only if two 64-bit draws do.
    static func newID() -> String {
        let serial = idSerial.add(1, ordering: .relaxed).newValue
        return String(unsafeUninitializedCapacity: 36) { buffer in
            var position = 0
            for index in 0..<32 {
                if index == 8 || index == 12 || index == 16 || index == 20 {
                    buffer[position] = 0x2D   // "-"
                    position += 1
                }
                let nibble = UInt8(truncatingIfNeeded: ((index < 16 ? idPrefix : serial) >> UInt64(60 - 4 * (index % 16))) & 0xF)
                buffer[position] = nibble < 10 ? 0x30 + nibble : 0x57 + nibble   // "0"..."9", "a"..."f"
                position += 1
            }
            return position
        }
    }

    private static let idPrefix = UInt64.random(in: .min ... .max)
    private static let idSerial = Atomic<UInt64>(0)

    /// Whether an entry may go to disk at all: not when a credential chose its variant, nor when it
    /// stores a `Set-Cookie` (the stored headers are served whole from memory, RFC 9111 §3.1, and a
    /// cookie is never written in plain text, so such a response lives in memory only).
    static func mayWrite(_ entry: CachedResponseEntry) -> Bool {
        !entry.isMemoryOnly && !entry.varySelectedHeaders.keys.contains { secretRequestHeaders.contains($0.lowercased()) }
            && !entry.headers.contains { unwritableHeaders.contains($0.name.canonicalName) }
    }

    static func writableHeaders(_ headers: HTTPFields) -> HTTPFields {
        guard headers.contains(where: { unwritableHeaders.contains($0.name.canonicalName) }) else { return headers }
        var fields = HTTPFields()
        for field in headers where !unwritableHeaders.contains(field.name.canonicalName) { fields.append(field) }
        return fields
    }

    /// Fields as JSON `[[name, value], ...]`, in order. Written by hand: it runs for every stored
    /// response, and `JSONSerialization` costs more than the rest of the write.
    static func text(of headers: HTTPFields) -> String {
        var text = "["
        for (index, field) in headers.enumerated() {
            if index > 0 { text += "," }
            text += "["
            JSONStringLiteral.append(field.name.rawName, to: &text)
            text += ","
            JSONStringLiteral.append(field.value, to: &text)
            text += "]"
        }
        return text + "]"
    }

    /// The fields of ``text(of:)``'s form, in order; `nil` for damaged text (the row is then a miss).
    static func headers(from text: String) -> HTTPFields? {
        guard let pairs = fieldPairs(text) ?? ((try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [[String]]) else { return nil }
        var fields = HTTPFields()
        for pair in pairs {
            guard pair.count == 2, let name = HTTPField.Name(pair[0]) else { return nil }
            fields.append(HTTPField(name: name, value: pair[1]))
        }
        return fields
    }

    /// The Vary selection as canonical JSON (sorted keys).
    static func varyKey(_ vary: [String: String]) -> String {
        if vary.isEmpty { return "{}" }
        guard let data = try? JSONSerialization.data(withJSONObject: vary, options: [.sortedKeys]) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    static func vary(from text: String) -> [String: String]? {
        if text == "{}" { return [:] }   // most responses have no Vary
        return (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: String]
    }

    /// Reads the header text as ``text(of:)`` writes it (`[["name","value"],...]`, strings without
    /// `\u` escapes), without `JSONSerialization`: every disk hit reads it. `nil` for anything else
    /// (other whitespace, `\u` escapes, a damaged row), which the full JSON parser then reads or refuses.
    static func fieldPairs(_ text: String) -> [[String]]? {
        var copy = text
        return copy.withUTF8 { bytes -> [[String]]? in
            var index = 0
            func expect(_ byte: UInt8) -> Bool {
                guard index < bytes.count, bytes[index] == byte else { return false }
                index += 1
                return true
            }
            func string() -> String? {
                guard expect(UInt8(ascii: "\"")) else { return nil }
                var scalars = [UInt8]()
                var start = index
                while index < bytes.count {
                    let byte = bytes[index]
                    if byte == UInt8(ascii: "\"") {
                        scalars.append(contentsOf: bytes[start..<index])
                        index += 1
                        return String(decoding: scalars, as: UTF8.self)
                    }
                    if byte < 0x20 { return nil }
                    if byte == UInt8(ascii: "\\") {
                        guard index + 1 < bytes.count else { return nil }
                        scalars.append(contentsOf: bytes[start..<index])
                        switch bytes[index + 1] {
                        case UInt8(ascii: "\""): scalars.append(UInt8(ascii: "\""))
                        case UInt8(ascii: "\\"): scalars.append(UInt8(ascii: "\\"))
                        case UInt8(ascii: "/"): scalars.append(UInt8(ascii: "/"))
                        case UInt8(ascii: "n"): scalars.append(0x0A)
                        case UInt8(ascii: "r"): scalars.append(0x0D)
                        case UInt8(ascii: "t"): scalars.append(0x09)
                        default: return nil   // \u and the rest: the full parser
                        }
                        index += 2
                        start = index
                        continue
                    }
                    index += 1
                }
                return nil
            }
            guard expect(UInt8(ascii: "[")) else { return nil }
            var pairs: [[String]] = []
            if expect(UInt8(ascii: "]")) { return index == bytes.count ? pairs : nil }
            repeat {
                guard expect(UInt8(ascii: "[")), let name = string(), expect(UInt8(ascii: ",")), let value = string(),
                    expect(UInt8(ascii: "]"))
                else { return nil }
                pairs.append([name, value])
            } while expect(UInt8(ascii: ","))
            guard expect(UInt8(ascii: "]")), index == bytes.count else { return nil }
            return pairs
        }
    }
}
