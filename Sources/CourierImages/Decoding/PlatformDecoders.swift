// The platform's decoders (filled in with the codecs).
let platformDecoders: [any ImageDecoder] = []
