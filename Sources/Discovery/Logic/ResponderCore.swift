/// Where a packet the responder sends goes.
public enum MDNSDestination: Sendable, Equatable {
    /// 224.0.0.251:5353 out of one interface.
    case multicast(interface: MDNSInterface)
    /// Straight back to a querier (a legacy query from a port other than 5353, or a QU question).
    case unicast(address: [UInt8], port: UInt16, interface: MDNSInterface)
}

/// One packet to send.
public struct MDNSOutgoing: Sendable, Equatable {
    public var message: DNSMessage
    public var destination: MDNSDestination
}

/// The responder's decisions (RFC 6762), apart from sockets and clocks so that tests drive them: probing for
/// unique names, renaming on conflict, announcing, answering, goodbyes, and the limits on all of it.
///
/// Time is seconds on a monotonic clock, passed in. Every method does work bounded by the number of services
/// and interfaces (a few) and by the packet handed in (at most `DNSMessage.maxRecords` entries).
public struct ResponderCore: Sendable {
    /// TTL of records naming the host (SRV, A): RFC 6762 §10.
    public static let hostTTL: UInt32 = 120
    /// TTL of the other records (PTR, TXT).
    public static let otherTTL: UInt32 = 4500
    /// Probes sent before a name is ours, 250 ms apart (RFC 6762 §8.1).
    static let probes = 3
    static let probeInterval = 0.25
    /// Announcements after probing, the second one second after the first (RFC 6762 §8.3).
    static let announcements = 2
    static let announceInterval = 1.0
    /// Names tried before giving up (a network that answers every name is hostile, not busy).
    public static let maxAttempts = 20
    /// The fewest seconds between two multicasts of one record on one interface (RFC 6762 §6), except probe
    /// defence, which may repeat after 250 ms.
    static let recordInterval = 1.0
    /// Packets sent: a bucket of `sendBurst` refilled at `sendRate` a second, whatever the queries ask.
    static let sendRate = 10.0
    static let sendBurst = 20.0

    public enum Phase: Sendable, Equatable {
        case probing(sent: Int)
        case announcing(sent: Int)
        case running
        /// Every attempt conflicted: the responder stays silent.
        case failed
    }

    public let baseName: String
    public let hostName: String
    public private(set) var services: [ServiceDescription]
    public private(set) var interfaces: [MDNSInterface]
    public private(set) var phase: Phase = .probing(sent: 0)
    /// The instance name's attempt (1: `baseName`, 2: `baseName (2)`…) and the host label's.
    public private(set) var instanceAttempt = 1
    public private(set) var hostAttempt = 1
    /// When the next probe or announcement is due.
    public private(set) var nextAction: Double
    private var lastMulticast: [RecordKey: Double] = [:]
    private var tokens = ResponderCore.sendBurst
    private var tokensAt: Double
    /// Multicast answers of shared records waiting out their random delay (RFC 6762 §6: 20-120 ms, so that the
    /// many responders of one shared name do not answer in step), at most one per interface: what more queries
    /// ask for meanwhile joins it.
    private var pending: [PendingAnswer] = []

    struct PendingAnswer {
        var due: Double
        var interface: MDNSInterface
        var answers: [DNSRecord]
        var additionals: [DNSRecord]
    }

    /// The range of that delay, in seconds.
    public static let sharedAnswerDelay = 0.02...0.12

    /// A record's identity for the rate limit: which interface, and the record's name, type and data.
    struct RecordKey: Hashable {
        var interface: UInt32
        var record: DNSRecord
    }

    /// - Parameter startDelay: seconds before the first probe (RFC 6762 §8.1 asks for a random 0-250 ms, so
    ///   hosts that start together do not probe in step).
    public init(
        name: String, hostName: String, services: [ServiceDescription], interfaces: [MDNSInterface], now: Double,
        startDelay: Double
    ) {
        self.baseName = name
        self.hostName = hostName
        self.services = services
        self.interfaces = interfaces
        self.nextAction = now + max(0, min(startDelay, 0.25))
        self.tokensAt = now
    }

    // MARK: Names and records

    /// The instance name of every service now (`baseName`, renamed after conflicts).
    public var instanceName: String { renamedInstance(baseName, attempt: instanceAttempt) }

    public var host: DNSName {
        DNSName(labels: [Array(hostLabel(hostName, attempt: hostAttempt).utf8), Array("local".utf8)]) ?? .root
    }

    static func typeName(_ type: String) -> DNSName { DNSName(type + ".local") ?? .root }

    public func instance(of service: ServiceDescription) -> DNSName {
        Self.typeName(service.type).prepending(label: Array(instanceName.utf8)) ?? .root
    }

    static let servicesName = DNSName("_services._dns-sd._udp.local") ?? .root

    /// Every record this responder owns on `interface`, with `ttl` (nil: the usual TTLs; 0: goodbyes).
    public func records(on interface: MDNSInterface, ttl: UInt32? = nil) -> [DNSRecord] {
        var records: [DNSRecord] = []
        for service in services {
            let type = Self.typeName(service.type)
            let instance = instance(of: service)
            records.append(DNSRecord(name: Self.servicesName, data: .ptr(type), ttl: ttl ?? Self.otherTTL))
            records.append(DNSRecord(name: type, data: .ptr(instance), ttl: ttl ?? Self.otherTTL))
            records.append(
                DNSRecord(
                    name: instance, data: .srv(priority: 0, weight: 0, port: service.port, target: host),
                    ttl: ttl ?? Self.hostTTL, cacheFlush: true))
            records.append(
                DNSRecord(name: instance, data: .txt(service.txtStrings), ttl: ttl ?? Self.otherTTL, cacheFlush: true))
        }
        records.append(DNSRecord(name: host, data: .a(interface.address), ttl: ttl ?? Self.hostTTL, cacheFlush: true))
        return records
    }

    /// The unique names probed: each instance and the host.
    var uniqueNames: [DNSName] { services.map { instance(of: $0) } + [host] }

    /// Every record this responder owns on any interface (for telling its own looped-back packets from others').
    private var allOwnRecords: Set<DNSRecord> {
        Set(interfaces.flatMap { records(on: $0) }.map { Self.normalized($0) })
    }

    static func normalized(_ record: DNSRecord) -> DNSRecord {
        DNSRecord(name: record.name, data: record.data, ttl: 0, cacheFlush: false)
    }

    // MARK: Time

    /// Probes and announcements due at `now`, and the next time to call again.
    public mutating func tick(now: Double) -> [MDNSOutgoing] {
        flushPending(now: now) + timers(now: now)
    }

    /// When `tick` has something to do next: a probe, an announcement or a delayed answer.
    public var nextWake: Double { min(nextAction, pending.map(\.due).min() ?? .infinity) }

    /// The delayed answers that are due, each record still at most once a second on its interface.
    private mutating func flushPending(now: Double) -> [MDNSOutgoing] {
        guard pending.contains(where: { $0.due <= now }) else { return [] }
        var out: [MDNSOutgoing] = []
        var waiting: [PendingAnswer] = []
        for answer in pending {
            guard answer.due <= now else {
                waiting.append(answer)
                continue
            }
            if let sent = multicastAnswer(answer.answers, answer.additionals, answer.interface, now: now) {
                out.append(sent)
            }
        }
        pending = waiting
        return out
    }

    private mutating func timers(now: Double) -> [MDNSOutgoing] {
        guard now >= nextAction else { return [] }
        switch phase {
        case .probing(let sent):
            if sent >= Self.probes {
                phase = .announcing(sent: 0)
                return timers(now: now)
            }
            phase = .probing(sent: sent + 1)
            nextAction = now + Self.probeInterval
            return interfaces.compactMap { interface in
                var probe = DNSMessage()
                // The first probe asks for unicast answers (RFC 6762 §8.1).
                probe.questions = uniqueNames.map { DNSQuestion(name: $0, type: .any, unicastResponse: sent == 0) }
                let names = Set(uniqueNames)
                probe.authorities = records(on: interface).filter { names.contains($0.name) }
                return send(probe, .multicast(interface: interface), now: now)
            }
        case .announcing(let sent):
            guard sent < Self.announcements else {
                phase = .running
                nextAction = .infinity
                return []
            }
            phase = .announcing(sent: sent + 1)
            nextAction = now + Self.announceInterval * Double(sent + 1)
            return interfaces.compactMap { interface in
                announcement(records(on: interface), interface, now: now)
            }
        case .running, .failed:
            nextAction = .infinity
            return []
        }
    }

    /// The records with TTL 0 on every interface: sent on exit so peers forget us at once (RFC 6762 §10.1).
    public mutating func goodbyes(now: Double) -> [MDNSOutgoing] {
        pending.removeAll()
        guard phase != .failed, !isProbing else { return [] }
        return interfaces.compactMap { announcement(records(on: $0, ttl: 0), $0, now: now, limited: false) }
    }

    /// New addresses or interfaces: announce again (RFC 6762 §8.4), with goodbyes for the address records of
    /// interfaces that went away.
    public mutating func update(interfaces new: [MDNSInterface], now: Double) -> [MDNSOutgoing] {
        guard new != interfaces else { return [] }
        pending.removeAll { !new.contains($0.interface) }
        var out: [MDNSOutgoing] = []
        if !isProbing && phase != .failed {
            for old in interfaces where !new.contains(old) {
                let gone = DNSRecord(name: host, data: .a(old.address), ttl: 0, cacheFlush: true)
                if let sent = announcement([gone], old, now: now, limited: false) { out.append(sent) }
            }
        }
        interfaces = new
        if !isProbing && phase != .failed {
            phase = .announcing(sent: 0)
            nextAction = now
        }
        return out
    }

    var isProbing: Bool {
        if case .probing = phase { return true }
        return false
    }

    // MARK: Packets

    /// What to send in reply to a packet from `source`:`port` (nothing for a packet from outside every
    /// interface's subnet, for a response that does not concern us, or when the limits say no).
    /// - Parameter sharedDelay: how long a multicast answer of shared records only (PTR) waits, from
    ///   `sharedAnswerDelay` at random (`Responder` draws it; 0 answers at once).
    public mutating func handle(
        _ message: DNSMessage, from source: [UInt8], port: UInt16, now: Double, sharedDelay: Double = 0
    ) -> [MDNSOutgoing] {
        guard message.opcode == 0, message.rcode == 0,
            let interface = interfaces.first(where: { $0.contains(source) })
        else { return [] }
        if message.isResponse {
            checkConflict(in: message.answers + message.additionals, now: now)
            return []
        }
        if isProbing {
            checkSimultaneousProbe(message, now: now)
            return []
        }
        guard phase != .failed else { return [] }
        return answer(message, interface, source: source, port: port, now: now, sharedDelay: sharedDelay)
    }

    /// A response naming one of our unique names with other data is a conflict (RFC 6762 §9): while probing or
    /// after, the instance (or host) takes its next name and probing starts again.
    private mutating func checkConflict(in records: [DNSRecord], now: Double) {
        guard phase != .failed else { return }
        let own = allOwnRecords
        let instances = Set(services.map { instance(of: $0) })
        var instanceConflict = false
        var hostConflict = false
        for record in records where record.ttl > 0 && !own.contains(Self.normalized(record)) {
            switch record.data {
            case .srv, .txt: instanceConflict = instanceConflict || instances.contains(record.name)
            // Another IPv4 address for our host name (IPv6 records there would be the machine's own responder's,
            // for a host label we never share: see `hostLabel`).
            case .a: hostConflict = hostConflict || record.name == host
            default: continue
            }
        }
        guard instanceConflict || hostConflict else { return }
        if instanceConflict { instanceAttempt += 1 }
        if hostConflict { hostAttempt += 1 }
        restartProbing(now: now, delay: 0)
    }

    /// Two hosts probing for one name at once: the one whose authority records sort later wins (RFC 6762 §8.2);
    /// the loser waits a second and probes again, and then meets the winner's answer as a conflict.
    private mutating func checkSimultaneousProbe(_ message: DNSMessage, now: Double) {
        let ours = Set(uniqueNames)
        guard let interface = interfaces.first else { return }
        let mine = records(on: interface)
        let key = { (records: [DNSRecord]) in
            records.map { DNSMessage.rdataBytes($0) }.sorted { $0.lexicographicallyPrecedes($1) }
        }
        // Per name, the records sorted by class, type and data are compared in turn; the first difference
        // decides, and a list that is a prefix of the other loses.
        for name in Set(message.authorities.map(\.name)) where ours.contains(name) {
            let (a, b) = (key(mine.filter { $0.name == name }), key(message.authorities.filter { $0.name == name }))
            guard a != b else { continue }  // our own probe, looped back
            if a.lexicographicallyPrecedes(b, by: { $0.lexicographicallyPrecedes($1) }) {
                restartProbing(now: now, delay: 1)
                return
            }
        }
    }

    private mutating func restartProbing(now: Double, delay: Double) {
        pending.removeAll()
        guard instanceAttempt <= Self.maxAttempts, hostAttempt <= Self.maxAttempts else {
            phase = .failed
            nextAction = .infinity
            return
        }
        phase = .probing(sent: 0)
        nextAction = now + delay
    }

    private mutating func answer(
        _ query: DNSMessage, _ interface: MDNSInterface, source: [UInt8], port: UInt16, now: Double,
        sharedDelay: Double
    ) -> [MDNSOutgoing] {
        let ours = records(on: interface)
        // Known-answer suppression (RFC 6762 §7.1): what the querier holds with at least half its TTL left.
        let known = Set(
            query.answers.filter { record in
                ours.contains { Self.normalized($0) == Self.normalized(record) && record.ttl >= $0.ttl / 2 }
            }.map { Self.normalized($0) })
        var answers: [DNSRecord] = []
        var unicastAsked = false
        for question in query.questions {
            for record in ours where question.isAnswered(by: record) && !known.contains(Self.normalized(record)) {
                if !answers.contains(record) { answers.append(record) }
            }
            unicastAsked = unicastAsked || question.unicastResponse
        }
        guard !answers.isEmpty else { return [] }
        var additionals: [DNSRecord] = []
        for answer in answers {
            switch answer.data {
            case .ptr(let target): additionals += ours.filter { $0.name == target }
            case .srv(_, _, _, let target): additionals += ours.filter { $0.name == target }
            default: continue
            }
        }
        additionals = additionals.reduce(into: []) { list, record in
            if !answers.contains(record) && !list.contains(record) { list.append(record) }
        }
        // The host's address for every SRV answered or added (RFC 6763 §12.2).
        if (answers + additionals).contains(where: { $0.data.type == .srv }) {
            additionals += ours.filter { $0.name == host && !additionals.contains($0) && !answers.contains($0) }
        }
        if port != 5353 {
            // A legacy querier (RFC 6762 §6.7): its id, its questions, short TTLs, no cache-flush bits.
            var reply = DNSMessage()
            reply.id = query.id
            reply.isResponse = true
            reply.authoritative = true
            reply.questions = query.questions
            let legacy = { (record: DNSRecord) in
                DNSRecord(name: record.name, data: record.data, ttl: min(record.ttl, 10), cacheFlush: false)
            }
            reply.answers = answers.map(legacy)
            reply.additionals = additionals.map(legacy)
            return send(reply, .unicast(address: source, port: port, interface: interface), now: now).map { [$0] } ?? []
        }
        if unicastAsked {
            var reply = DNSMessage()
            reply.isResponse = true
            reply.authoritative = true
            reply.answers = answers
            reply.additionals = additionals
            return send(reply, .unicast(address: source, port: port, interface: interface), now: now).map { [$0] } ?? []
        }
        // Shared records only: wait 20-120 ms (RFC 6762 §6), joining an answer already waiting on this interface.
        // Bounded: one waiting answer per interface, holding at most our own records.
        if sharedDelay > 0, answers.allSatisfy({ !$0.cacheFlush }) {
            let delay = min(max(sharedDelay, Self.sharedAnswerDelay.lowerBound), Self.sharedAnswerDelay.upperBound)
            if let index = pending.firstIndex(where: { $0.interface == interface }) {
                for record in answers where !pending[index].answers.contains(record) {
                    pending[index].answers.append(record)
                }
                for record in additionals where !pending[index].additionals.contains(record) {
                    pending[index].additionals.append(record)
                }
            } else {
                pending.append(
                    PendingAnswer(due: now + delay, interface: interface, answers: answers, additionals: additionals))
            }
            return []
        }
        return multicastAnswer(answers, additionals, interface, now: now).map { [$0] } ?? []
    }

    /// Multicast: each record at most once a second on an interface (RFC 6762 §6).
    private mutating func multicastAnswer(
        _ answers: [DNSRecord], _ additionals: [DNSRecord], _ interface: MDNSInterface, now: Double
    ) -> MDNSOutgoing? {
        let fresh = answers.filter { record in
            guard let last = lastMulticast[RecordKey(interface: interface.index, record: record)] else { return true }
            return now - last >= Self.recordInterval
        }
        guard !fresh.isEmpty else { return nil }
        var reply = DNSMessage()
        reply.isResponse = true
        reply.authoritative = true
        reply.answers = fresh
        reply.additionals = additionals.filter { !fresh.contains($0) }
        return send(reply, .multicast(interface: interface), now: now)
    }

    private mutating func announcement(
        _ records: [DNSRecord], _ interface: MDNSInterface, now: Double, limited: Bool = true
    ) -> MDNSOutgoing? {
        var message = DNSMessage()
        message.isResponse = true
        message.authoritative = true
        message.answers = records
        return send(message, .multicast(interface: interface), now: now, limited: limited)
    }

    /// Takes a token for the packet (none left: it is not sent) and notes its multicast records' times.
    private mutating func send(_ message: DNSMessage, _ destination: MDNSDestination, now: Double, limited: Bool = true)
        -> MDNSOutgoing?
    {
        tokens = min(Self.sendBurst, tokens + max(0, now - tokensAt) * Self.sendRate)
        tokensAt = now
        if limited {
            guard tokens >= 1 else { return nil }
            tokens -= 1
        }
        if case .multicast(let interface) = destination, message.isResponse {
            for record in message.answers { lastMulticast[RecordKey(interface: interface.index, record: record)] = now }
            // The map holds at most our own records per interface: old entries of renamed records are dropped.
            if lastMulticast.count > 64 {
                lastMulticast = lastMulticast.filter { now - $0.value < Self.recordInterval }
            }
        }
        return MDNSOutgoing(message: message, destination: destination)
    }
}

extension DNSMessage {
    /// A record's class, type and data as written uncompressed (RFC 6762 §8.2's order for tie-breaking).
    static func rdataBytes(_ record: DNSRecord) -> [UInt8] {
        var message = DNSMessage()
        message.answers = [DNSRecord(name: .root, data: record.data, ttl: 0)]
        return Array(message.serialized().dropFirst(12 + 1))
    }
}
