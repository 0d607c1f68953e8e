/// The EXIF orientation of a picture (TIFF tag 0x0112): how the stored pixels must be transformed to be
/// shown upright. The raw values are EXIF's, 1 to 8.
enum ExifOrientation: Int, Sendable, CaseIterable {
    /// Stored upright.
    case up = 1
    /// Mirrored left to right.
    case upMirrored = 2
    /// Rotated 180°.
    case down = 3
    /// Mirrored top to bottom.
    case downMirrored = 4
    /// Transposed (mirrored along the top-left to bottom-right diagonal).
    case leftMirrored = 5
    /// Shown after a 90° clockwise rotation (a phone held upright).
    case right = 6
    /// Transversed (mirrored along the top-right to bottom-left diagonal).
    case rightMirrored = 7
    /// Shown after a 90° counter-clockwise rotation.
    case left = 8

    /// Whether showing it swaps width and height.
    var swapsDimensions: Bool { rawValue >= 5 }

    /// Parses the orientation out of a TIFF structure (an APP1 Exif payload after its `Exif\0\0`): the byte
    /// order mark (`II` little endian, `MM` big endian), the first IFD's offset, its entries. Every read is
    /// bounds-checked; `nil` when the structure is broken or has no valid orientation.
    init?(tiff bytes: UnsafeBufferPointer<UInt8>) {
        guard bytes.count >= 8 else { return nil }
        let littleEndian: Bool
        switch (bytes[0], bytes[1]) {
        case (0x49, 0x49): littleEndian = true
        case (0x4D, 0x4D): littleEndian = false
        default: return nil
        }
        func u16(_ offset: Int) -> Int? {
            guard offset >= 0, offset <= bytes.count - 2 else { return nil }
            let a = Int(bytes[offset]), b = Int(bytes[offset + 1])
            return littleEndian ? a | b << 8 : a << 8 | b
        }
        func u32(_ offset: Int) -> Int? {
            guard let first = u16(offset), let second = u16(offset + 2) else { return nil }
            return littleEndian ? first | second << 16 : first << 16 | second
        }
        guard u16(2) == 42, let ifd = u32(4), let count = u16(ifd) else { return nil }
        for index in 0..<count {
            let entry = ifd + 2 + index * 12
            guard let tag = u16(entry), let type = u16(entry + 2) else { return nil }
            guard tag == 0x0112 else { continue }
            // SHORT (3) as the standard says; LONG (4) from a few writers.
            let value: Int?
            switch type {
            case 3: value = u16(entry + 8)
            case 4: value = u32(entry + 8)
            default: value = nil
            }
            guard let value, let orientation = ExifOrientation(rawValue: value) else { return nil }
            self = orientation
            return
        }
        return nil
    }

    /// Parses `bytes` as ``init(tiff:)`` does.
    init?(tiff bytes: [UInt8]) {
        guard let orientation = bytes.withUnsafeBufferPointer({ ExifOrientation(tiff: $0) }) else { return nil }
        self = orientation
    }
}
