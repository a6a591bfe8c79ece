// BLIP framing between two in-process connections (no sockets): small `changes`-sized requests and their replies,
// raw and compressed, and one 8 MiB body split into 16 KiB frames with ACKs flowing; plus the WebSocket frame
// parser over masked 16 KiB frames (what LiteCore sends). The floor the transport adds under the sync protocol.
import Blip
import CouchWire
import Foundation

enum BlipBenchmark {
    static func run() {
        for compressed in [false, true] {
            var sink = 0
            let count = 20_000
            let time = JSONBenchmark.median { sink &+= smallMessages(count, compressed: compressed) }
            print(
                "blip: \(count) requests + replies of ~70 bytes, \(compressed ? "compressed" : "raw"): "
                    + "\(Int(Double(2 * count) / time)) messages/s [\(sink % 2)]")
        }
        for compressed in [false, true] {
            var state: UInt64 = 0x5EED
            let body = (0..<(8 * 1024 * 1024)).map { index -> UInt8 in
                // Half text-like (compressible), half noise, as photos and JSON mixed.
                state = state &* 6_364_136_223_846_793_005 &+ 1
                return index % 2 == 0 ? UInt8(0x61 + index % 26) : UInt8(truncatingIfNeeded: state >> 56)
            }
            var sink = 0
            let time = JSONBenchmark.median { sink &+= bigMessage(body, compressed: compressed) }
            print(
                "blip: one 8 MiB body in 16 KiB frames, \(compressed ? "compressed" : "raw"): "
                    + "\(JSONBenchmark.format(8 / time)) MB/s [\(sink % 2)]")
        }
        let frame = maskedFrame([UInt8](repeating: 0x5A, count: 16384))
        let stream = [UInt8]((0..<512).flatMap { _ in frame })
        var sink = 0
        let time = JSONBenchmark.median {
            var parser = WebSocketFrameParser(role: .server)
            stream.withUnsafeBytes { raw in
                var rest = raw[...]
                while !rest.isEmpty {
                    guard case .event(_, let consumed)? = try? parser.parse(UnsafeRawBufferPointer(rebasing: rest))
                    else { break }
                    sink &+= consumed
                    rest = rest.dropFirst(consumed)
                }
            }
        }
        print("websocket: 512 masked 16 KiB frames parsed: \(JSONBenchmark.format(8 / time)) MB/s [\(sink % 2)]")
    }

    static func pump(_ from: BlipConnection, _ to: BlipConnection, into received: inout [BlipMessage]) -> Bool {
        var moved = false
        while let frame = try? from.nextFrame() {
            moved = true
            if let message = try? to.receive(frame) { received.append(message) }
        }
        return moved
    }

    static func smallMessages(_ count: Int, compressed: Bool) -> Int {
        let client = BlipConnection()
        let server = BlipConnection()
        var total = 0
        for index in 0..<count {
            let body = Array("[[\(index),\"doc-\(index)\",\"1-\(String(index &* 2_654_435_761, radix: 16))\"]]".utf8)
            guard let number = try? client.send(.request(profile: "changes", body: body, compressed: compressed))
            else { return total }
            var requests: [BlipMessage] = []
            _ = pump(client, server, into: &requests)
            try? server.respond(to: number, with: .response(body: Array("[[]]".utf8), compressed: compressed))
            var replies: [BlipMessage] = []
            _ = pump(server, client, into: &replies)
            total &+= requests.count + replies.count
        }
        return total
    }

    static func bigMessage(_ body: [UInt8], compressed: Bool) -> Int {
        let client = BlipConnection()
        let server = BlipConnection()
        _ = try? client.send(.request(profile: "rev", body: body, compressed: compressed))
        var received: [BlipMessage] = []
        var acks: [BlipMessage] = []
        while pump(client, server, into: &received) || pump(server, client, into: &acks) {}
        return received.first?.body.count ?? 0
    }

    static func maskedFrame(_ payload: [UInt8]) -> [UInt8] {
        let key: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
        return [0x82, 0xFE, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + key
            + payload.enumerated().map { $0.element ^ key[$0.offset & 3] }
    }
}
