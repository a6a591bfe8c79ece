import CDuktape
import Foundation

/// The worker's half of a conversation inside one request: a list function's `getRow()` (and a flush of what it
/// sent) writes a frame to the server and blocks for the server's answer, then the script goes on. The protocol
/// alternates strictly (the server writes only after it read a frame), so nothing of the answer can already sit in
/// the worker loop's decoder: this reads exactly one frame from standard input.
enum WorkerExchange {
    /// The hook the native `__couchlite_exchange` calls. `DuktapeRuntime` installs it: the C shim's globals are
    /// per Swift file that uses them, so it must be set where the environments are made.
    static let hook: couchlite_duk_exchange_fn = { bytes, length, replyLength in
        guard let bytes, let replyLength else { return nil }
        let message = DuktapeText.fromEngine(UnsafeRawBufferPointer(start: bytes, count: length))
        guard WorkerExchange.writeAll(Frame.encode(message)), let reply = WorkerExchange.readFrame() else {
            return nil
        }
        let text = DuktapeText.forEngine(reply)
        guard let buffer = malloc(max(text.count, 1))?.assumingMemoryBound(to: CChar.self) else { return nil }
        text.withUnsafeBytes { source in
            if let base = source.baseAddress { memcpy(buffer, base, text.count) }
        }
        replyLength.pointee = text.count
        return buffer
    }

    /// Writes all of `bytes` to standard output.
    static func writeAll(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    /// One frame from standard input; nil at its end or for a frame over the payload limit.
    private static func readFrame() -> [UInt8]? {
        guard let prefix = readExactly(4) else { return nil }
        let length = prefix.reduce(0) { ($0 << 8) | Int($1) }
        guard length <= Frame.defaultMaxPayload else { return nil }
        return readExactly(length)
    }

    private static func readExactly(_ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let got = bytes[offset...].withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { return nil }
            offset += got
        }
        return bytes
    }
}
