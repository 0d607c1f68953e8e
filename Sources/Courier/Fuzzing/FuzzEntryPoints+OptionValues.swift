extension FuzzEntryPoints {
    /// The `courier` command line's value parsers (``OptionValue``), each input line through every one of
    /// them: whatever the text, nothing traps, and what is accepted is within the range promised.
    static func optionValues(_ text: String) {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for line in lines.count > 1 ? lines + [text] : lines {
            optionValue(line)
        }
    }

    private static func optionValue(_ text: String) {
        if let duration = try? OptionValue.seconds(text) {
            precondition(duration >= .milliseconds(1) && duration <= .seconds(Int64(OptionValue.secondsRange.upperBound)), "seconds out of range")
        }
        if let rate = try? OptionValue.bytesPerSecond(text) {
            precondition(OptionValue.bytesPerSecondRange.contains(rate), "rate out of range")
        }
        for range in [0...100, 1...65_535, 1...(1 << 30), Int.min...Int.max] {
            guard let value = try? OptionValue.integer(text, in: range) else { continue }
            precondition(range.contains(value), "integer out of range")
            precondition((try? OptionValue.integer(String(value), in: range)) == value, "integer does not survive printing")
        }
        if let box = try? OptionValue.pixelBox(text) {
            precondition(OptionValue.pixelSideRange.contains(box.width) && OptionValue.pixelSideRange.contains(box.height), "box out of range")
        }
        if let name = try? OptionValue.downloadFileName(percentEncodedPath: text) {
            precondition(!name.isEmpty && name != "." && name != "..", "a name that is no file")
            precondition(!name.utf8.contains(UInt8(ascii: "/")) && !name.utf8.contains(0), "a name with a separator or NUL")
            precondition(!name.unicodeScalars.contains { $0.properties.generalCategory == .control }, "a name with a control character")
            precondition(name.utf8.count <= OptionValue.maximumFileNameLength, "a name too long")
        }
    }
}
