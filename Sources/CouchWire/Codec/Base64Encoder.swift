/// Base64-encodes a byte stream fed in chunks of any size, so that a large attachment can be written into
/// a response piece by piece; the concatenated output equals ``Base64/encode(_:into:)-([UInt8],_)`` of the
/// concatenated input.
public struct Base64Encoder: Sendable {
    /// Input bytes (0...2) still waiting to complete a three-byte group.
    private var pending: (UInt8, UInt8) = (0, 0)
    private var pendingCount = 0

    public init() {}

    /// Encodes as much of `chunk` as forms complete groups, appending the text to `output`.
    public mutating func update(_ chunk: UnsafeRawBufferPointer, into output: inout [UInt8]) {
        var start = 0
        if pendingCount > 0 {
            // Complete the pending group first.
            var group: [UInt8] = pendingCount == 1 ? [pending.0] : [pending.0, pending.1]
            while group.count < 3 && start < chunk.count {
                group.append(chunk[start])
                start += 1
            }
            if group.count < 3 {
                store(group)
                return
            }
            group.withUnsafeBytes { Base64.encode($0, into: &output) }
            pendingCount = 0
        }
        let remaining = chunk.count - start
        let whole = remaining - remaining % 3
        Base64.encode(UnsafeRawBufferPointer(rebasing: chunk[start..<(start + whole)]), into: &output)
        store(Array(chunk[(start + whole)...]))
    }

    /// Encodes as much of `chunk` as forms complete groups, appending the text to `output`.
    public mutating func update(_ chunk: [UInt8], into output: inout [UInt8]) {
        chunk.withUnsafeBytes { update($0, into: &output) }
    }

    /// Appends the last group with its padding; the encoder is then empty and may be reused.
    public mutating func finish(into output: inout [UInt8]) {
        let tail: [UInt8] = pendingCount == 0 ? [] : pendingCount == 1 ? [pending.0] : [pending.0, pending.1]
        Base64.encode(tail, into: &output)
        pendingCount = 0
    }

    private mutating func store(_ bytes: [UInt8]) {
        precondition(bytes.count < 3, "Invalid state: a whole group left pending")
        pendingCount = bytes.count
        pending = (bytes.first ?? 0, bytes.count > 1 ? bytes[1] : 0)
    }
}
