import Foundation
import Synchronization

/// Our own mDNS responder: announces services on chosen interfaces from one thread until `stop()`, which sends
/// the goodbyes. See `ResponderCore` for its decisions; this adds the socket, the clock and the thread.
///
/// Our own rather than Avahi's client library: a drop must work where no Avahi daemon runs (a server, a container,
/// a minimal desktop), and the client library only talks to that daemon; sharing port 5353 with a running Avahi
/// works (SO_REUSEPORT), so both can answer on one machine.
public final class Responder: Sendable {
    /// Packets read per wake-up before the timers are looked at again, so a flood cannot starve them.
    static let packetsPerWake = 32
    /// Seconds between looks at the interfaces' addresses (an address change means announcing again).
    static let interfaceCheckSeconds = 5.0

    private let socket: MDNSSocket
    private let core: Mutex<ResponderCore>
    private let stopping = Mutex(false)
    private let stopped = DispatchSemaphore(value: 0)
    /// Which addresses to follow when the interfaces are looked at again (nil: every LAN interface).
    private let addresses: [String]?
    private let onRename: (@Sendable (String) -> Void)?

    /// Opens the socket and starts probing at once.
    /// - Parameters:
    ///   - addresses: announce only on the interfaces holding these IPv4 addresses (nil: all of them).
    ///   - onRename: called with the new instance name after a conflict renamed it.
    public init(
        name: String, hostName: String, services: [ServiceDescription], addresses: [String]?,
        onRename: (@Sendable (String) -> Void)? = nil
    ) throws(MDNSSocketError) {
        let interfaces = MDNSSocket.interfaces(addresses: addresses)
        guard !interfaces.isEmpty else {
            throw MDNSSocketError(
                description: "no multicast IPv4 interface holds \(addresses?.joined(separator: ", ") ?? "an address")")
        }
        self.socket = try MDNSSocket(interfaces: interfaces)
        self.addresses = addresses
        self.onRename = onRename
        self.core = Mutex(
            ResponderCore(
                name: name, hostName: hostName, services: services, interfaces: interfaces, now: Responder.now(),
                startDelay: Double.random(in: 0..<0.25)))
        let thread = Thread { [self] in run() }
        thread.name = "mdns-responder"
        thread.start()
    }

    static func now() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    /// The instance name now (after any conflict renaming).
    public var instanceName: String { core.withLock { $0.instanceName } }

    /// Whether probing is over and the names are ours.
    public var isAnnounced: Bool { core.withLock { $0.phase == .running } }

    /// Stops the thread and sends the goodbyes (twice, a quarter second apart, as one may be lost). Waits at most
    /// a second for the thread.
    public func stop() {
        let first = stopping.withLock { flag in
            defer { flag = true }
            return !flag
        }
        guard first else { return }
        _ = stopped.wait(timeout: .now() + 1)
        for round in 0..<2 {
            if round > 0 { Thread.sleep(forTimeInterval: 0.25) }
            let goodbyes = core.withLock { $0.goodbyes(now: Responder.now()) }
            for packet in goodbyes { socket.send(packet.message.serialized(), to: packet.destination) }
        }
    }

    private func run() {
        defer { stopped.signal() }
        var lastName = core.withLock { $0.instanceName }
        var nextInterfaceCheck = Responder.now() + Responder.interfaceCheckSeconds
        while !stopping.withLock({ $0 }) {
            let now = Responder.now()
            let due = core.withLock { $0.tick(now: now) }
            for packet in due { socket.send(packet.message.serialized(), to: packet.destination) }
            if now >= nextInterfaceCheck {
                nextInterfaceCheck = now + Responder.interfaceCheckSeconds
                let fresh = MDNSSocket.interfaces(addresses: addresses)
                if !fresh.isEmpty {
                    let gone = core.withLock { $0.update(interfaces: fresh, now: now) }
                    for packet in gone { socket.send(packet.message.serialized(), to: packet.destination) }
                }
            }
            // Wake for the next timer, and at least every 200 ms to see `stop()`.
            let next = core.withLock { $0.nextWake }
            let wait = Int32(max(0, min(200, (next - Responder.now()) * 1000)))
            var budget = Responder.packetsPerWake
            var timeout = wait
            while budget > 0, let packet = socket.receive(milliseconds: timeout) {
                budget -= 1
                timeout = 0
                guard let message = try? DNSMessage.parse(packet.bytes) else { continue }
                let replies = core.withLock {
                    $0.handle(
                        message, from: packet.source, port: packet.port, now: Responder.now(),
                        sharedDelay: Double.random(in: ResponderCore.sharedAnswerDelay))
                }
                for reply in replies { socket.send(reply.message.serialized(), to: reply.destination) }
            }
            let name = core.withLock { $0.instanceName }
            if name != lastName {
                lastName = name
                onRename?(name)
            }
        }
    }
}
