#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Stops the run when an invariant fails: libFuzzer sees the abort and keeps the input as a crash.
///
/// The harness checks properties (two ways of feeding the same bytes agree, round trips), so a wrong answer is
/// reported as loudly as a memory error.
func require(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
    file: StaticString = #fileID, line: UInt = #line
) {
    guard !condition() else { return }
    let text = "fuzz invariant failed at \(file):\(line): \(message())\n"
    _ = text.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
    abort()
}

/// Cuts `count` bytes into pieces whose sizes follow a small generator seeded by the input itself, so every input
/// is also fed in an arbitrary but reproducible split (1-byte pieces are tried separately by the targets).
func splitPoints(count: Int, seed: [UInt8]) -> [Range<Int>] {
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    for byte in seed.prefix(64) { state = (state ^ UInt64(byte)) &* 0x100_0000_01B3 }
    var ranges: [Range<Int>] = []
    var start = 0
    while start < count {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        let size = 1 + Int((state >> 33) % 97)
        let end = min(count, start + size)
        ranges.append(start..<end)
        start = end
    }
    return ranges
}

/// A number in `0..<count` drawn from the whole input (FNV-1a over its bytes and `salt`).
///
/// Where a target checks one property several equivalent ways (feeding patterns, merge orders, two APIs), each
/// execution does one of them, chosen by this: nearly every mutation of an input draws again, so every way is
/// still checked on every part of the corpus, spread over executions, at a fraction of the cost of all of them
/// on every input.
func inputChoice(_ bytes: [UInt8], among count: Int, salt: UInt64 = 0) -> Int {
    var hash: UInt64 = 0xCBF2_9CE4_8422_2325 ^ salt
    for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
    hash ^= UInt64(bytes.count)
    hash = (hash ^ (hash >> 29)) &* 0xBF58_476D_1CE4_E5B9
    return Int((hash ^ (hash >> 32)) % UInt64(count))
}

/// The most bytes one execution feeds one at a time.
///
/// Byte-at-a-time feeding is what reaches every state a decoder can be left in between two calls, but over a whole
/// 16 KiB input it is 16,384 calls against the whole feeding's one. A window placed by the input still reaches
/// every position over the executions of a corpus, at a cost per execution bounded whatever the input's length.
let bytewiseWindow = 1024

/// One byte at a time: all of an input up to `bytewiseWindow` bytes; of a longer one, a window of that many bytes
/// (from the start for one input out of two, where request lines and headers are, elsewhere placed by the input),
/// with the bytes before and after it fed as one piece each.
func bytewise(_ count: Int, seed: [UInt8]) -> [Range<Int>] {
    let oneByOne = { (range: Range<Int>) in range.map { $0..<($0 + 1) } }
    guard count > bytewiseWindow else { return oneByOne(0..<count) }
    let start =
        inputChoice(seed, among: 2, salt: 1) == 0 ? 0 : inputChoice(seed, among: count - bytewiseWindow + 1, salt: 2)
    let end = start + bytewiseWindow
    return (start > 0 ? [0..<start] : []) + oneByOne(start..<end) + (end < count ? [end..<count] : [])
}

/// Whole feeding, and the pattern a stateful decoder must agree with it on this execution: one byte at a time or
/// an input-derived split, chosen by the input (`inputChoice`; the three were all run on every input, which made
/// the byte-at-a-time pass most of every target's CPU).
func feedingPatterns(_ bytes: [UInt8]) -> [[Range<Int>]] {
    let whole = bytes.isEmpty ? [] : [0..<bytes.count]
    let other =
        inputChoice(bytes, among: 2) == 0
        ? bytewise(bytes.count, seed: bytes) : splitPoints(count: bytes.count, seed: bytes)
    return [whole, other]
}

/// libFuzzer's entry point; each target defines `fuzzOne`.
@_cdecl("LLVMFuzzerTestOneInput")
public func llvmFuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzOne(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

/// Stops the run unconditionally (see `require`).
func fail(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    require(false, message, file: file, line: line)
    abort()
}
