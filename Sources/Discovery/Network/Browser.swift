import Foundation

/// Listens for a bounded time and returns the drops and servers heard (`couchlite peers`).
public enum Browser {
    /// Sends PTR queries for `types` at once and again at 1 s and 3 s (RFC 6762 §5.2's doubling), asks for what
    /// is still unresolved, and returns after `seconds`, which is clamped to 0.5-60, or as soon as `enough` says
    /// what was heard will do.
    public static func browse(types: [String], seconds: Double, enough: ([Peer]) -> Bool = { _ in false })
        throws(MDNSSocketError) -> [Peer]
    {
        let interfaces = MDNSSocket.interfaces()
        guard !interfaces.isEmpty else { throw MDNSSocketError(description: "no multicast IPv4 interface is up") }
        let socket = try MDNSSocket(interfaces: interfaces)
        var collector = PeerCollector(types: types)
        let start = Responder.now()
        let end = start + max(0.5, min(seconds, 60))
        var queryTimes = [0.0, 1.0, 3.0, 7.0, 15.0, 31.0].map { start + $0 }
        var lastResolve = start
        while Responder.now() < end {
            let now = Responder.now()
            if let due = queryTimes.first, now >= due {
                queryTimes.removeFirst()
                var query = DNSMessage()
                query.questions = collector.types.map { DNSQuestion(name: $0, type: .ptr) }
                // Known answers: what is already heard need not be sent again (RFC 6762 §7.1).
                query.answers = collector.peers.compactMap { instance, peer in
                    guard !peer.removed, let type = collector.types.first(where: { instance.hasSuffix($0) }) else {
                        return nil
                    }
                    return DNSRecord(name: type, data: .ptr(instance), ttl: ResponderCore.otherTTL)
                }.prefix(64).map { $0 }
                for interface in interfaces { socket.send(query.serialized(), to: .multicast(interface: interface)) }
            }
            if now - lastResolve >= 0.5 {
                lastResolve = now
                let missing = collector.missingQuestions()
                if !missing.isEmpty {
                    var query = DNSMessage()
                    query.questions = missing
                    for interface in interfaces {
                        socket.send(query.serialized(), to: .multicast(interface: interface))
                    }
                }
            }
            let wait = Int32(max(0, min(100, (end - Responder.now()) * 1000)))
            guard let packet = socket.receive(milliseconds: wait) else { continue }
            guard interfaces.contains(where: { $0.contains(packet.source) }),
                let message = try? DNSMessage.parse(packet.bytes)
            else { continue }
            collector.add(message, now: Responder.now())
            if enough(Array(collector.peers.values)) { break }
        }
        return collector.peers.values.sorted { ($0.name, $0.type) < ($1.name, $1.type) }
    }
}

extension Browser {
    /// The clock `Peer.firstSeen` and `lastSeen` are on (monotonic seconds).
    public static func now() -> Double { Responder.now() }
}
