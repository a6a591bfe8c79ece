import CZlib
import Foundation

@testable import Blip

/// Both ends of a BLIP conversation in one process: frames move by hand, so a test sees each one.
struct BlipPair {
    let client = BlipConnection()
    let server: BlipConnection

    init(serverLimits: BlipLimits = BlipLimits()) { server = BlipConnection(limits: serverLimits) }

    /// Moves frames both ways until neither side has one to send.
    /// - Parameter dropAcksTo: A side that never receives ACKs (its peer "stops acking").
    /// - Returns: What each side received, and every frame that went client → server.
    @discardableResult
    func exchange(dropAcksTo: BlipConnection? = nil) throws -> (client: [BlipMessage], server: [BlipMessage]) {
        var toClient: [BlipMessage] = []
        var toServer: [BlipMessage] = []
        var moved = true
        while moved {
            moved = false
            while let frame = try client.nextFrame() {
                moved = true
                if dropAcksTo === server && isAck(frame) { continue }
                if let message = try server.receive(frame) { toServer.append(message) }
            }
            while let frame = try server.nextFrame() {
                moved = true
                if dropAcksTo === client && isAck(frame) { continue }
                if let message = try client.receive(frame) { toClient.append(message) }
            }
        }
        return (toClient, toServer)
    }
}

/// The flags of a frame (after its varint number).
func frameFlags(_ frame: [UInt8]) -> UInt8? {
    guard case .value(_, let length) = BlipVarint.read(frame), frame.count > length else { return nil }
    return frame[length]
}

func isAck(_ frame: [UInt8]) -> Bool { (frameFlags(frame) ?? 0) & 0x04 != 0 }

/// The frame's message number.
func frameNumber(_ frame: [UInt8]) -> UInt64? {
    guard case .value(let number, _) = BlipVarint.read(frame) else { return nil }
    return number
}

/// Raw deflate of `count` zero bytes (fed 1 MiB at a time, so the bomb never exists uncompressed), sync-flushed,
/// without the flush's `00 00 FF FF`, as a BLIP sender puts it in a frame.
func deflatedZeros(_ count: Int) -> [UInt8] {
    var stream = z_stream()
    _ = deflateInit2_(
        &stream, 9, Z_DEFLATED, -MAX_WBITS, 9, Z_DEFAULT_STRATEGY, ZLIB_VERSION,
        Int32(MemoryLayout<z_stream>.size))
    defer { deflateEnd(&stream) }
    let zeros = [UInt8](repeating: 0, count: 1 << 20)
    var out: [UInt8] = []
    var scratch = [UInt8](repeating: 0, count: 1 << 16)
    var left = count
    while left > 0 {
        let piece = min(left, zeros.count)
        left -= piece
        zeros.withUnsafeBytes { raw in
            stream.next_in = UnsafeMutablePointer(mutating: raw.baseAddress?.assumingMemoryBound(to: Bytef.self))
            stream.avail_in = uInt(piece)
            repeat {
                scratch.withUnsafeMutableBytes { buffer in
                    stream.next_out = buffer.baseAddress?.assumingMemoryBound(to: Bytef.self)
                    stream.avail_out = uInt(buffer.count)
                    _ = deflate(&stream, left == 0 ? Z_SYNC_FLUSH : Z_NO_FLUSH)
                }
                out += scratch[0..<(scratch.count - Int(stream.avail_out))]
            } while stream.avail_out == 0
        }
    }
    return Array(out.dropLast(4))
}

/// The recorded LiteCore 3.2 frames (`conformance/transcripts/cbl3-3.2-first-frames.txt`): per connection, each
/// frame's bytes as logged (a long frame's hex is cut off by the recorder after its first bytes).
enum LiteCoreFrames {
    static var url: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("conformance/transcripts/cbl3-3.2-first-frames.txt")
    }

    struct Frame {
        var bytes: [UInt8]
        /// The length the recorder gave ("145 bytes"); more than `bytes.count` when the hex was cut.
        var length: Int
        var crcTrailer: String
    }

    static func load() throws -> [[Frame]] {
        let text = try String(contentsOf: url, encoding: .utf8)
        var connections: [[Frame]] = []
        var length = 0
        for line in text.split(separator: "\n") {
            if line.hasPrefix("=== connection ") { connections.append([]) }
            if line.hasPrefix("--- ws frame "), let range = line.range(of: #"(\d+) bytes"#, options: .regularExpression)
            {
                length = Int(line[range].split(separator: " ")[0]) ?? 0
            }
            if line.hasPrefix("  hex: ") {
                let bytes = line.dropFirst(7).split(separator: " ").compactMap { UInt8($0, radix: 16) }
                connections[connections.count - 1].append(Frame(bytes: bytes, length: length, crcTrailer: ""))
            }
            if line.hasPrefix("  crc32 trailer: ") {
                let index = connections.count - 1
                connections[index][connections[index].count - 1].crcTrailer = String(line.dropFirst(17))
            }
        }
        return connections
    }
}

/// Resident set size of this process in bytes, from /proc/self/statm (0 where unavailable).
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

func hex(_ bytes: some Sequence<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
