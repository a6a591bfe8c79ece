extension DNSMessage {
    /// The message in wire format, names compressed against every name (and name suffix) written before them.
    ///
    /// Names and TXT strings are valid by construction (`DNSName`, and TXT strings longer than 255 bytes are cut
    /// to 255 here), so this cannot fail; a caller that must fit a packet checks `count` of the result.
    public func serialized() -> [UInt8] {
        var writer = DNSWriter()
        writer.u16(id)
        var flags: UInt16 = 0
        if isResponse { flags |= 0x8000 }
        flags |= UInt16(opcode & 0x0F) << 11
        if authoritative { flags |= 0x0400 }
        if truncated { flags |= 0x0200 }
        flags |= UInt16(rcode & 0x0F)
        writer.u16(flags)
        for count in [questions.count, answers.count, authorities.count, additionals.count] {
            writer.u16(UInt16(clamping: count))
        }
        for question in questions.prefix(Int(UInt16.max)) {
            writer.name(question.name)
            writer.u16(question.type.code)
            writer.u16(question.unicastResponse ? 0x8001 : 0x0001)
        }
        for section in [answers, authorities, additionals] {
            for record in section.prefix(Int(UInt16.max)) { writer.record(record) }
        }
        return writer.bytes
    }
}

/// Appends wire-format fields, remembering where each name suffix was written for compression.
struct DNSWriter {
    var bytes: [UInt8] = []
    /// Folded suffix labels → offset of their first length byte (only offsets a pointer can reach, < 0x4000).
    private var suffixes: [[[UInt8]]: Int] = [:]

    mutating func u16(_ value: UInt16) {
        bytes.append(UInt8(value >> 8))
        bytes.append(UInt8(value & 0xFF))
    }

    mutating func u32(_ value: UInt32) {
        u16(UInt16(value >> 16))
        u16(UInt16(value & 0xFFFF))
    }

    mutating func name(_ name: DNSName) {
        let folded = name.folded
        for index in name.labels.indices {
            let suffix = Array(folded[index...])
            if let offset = suffixes[suffix] {
                u16(0xC000 | UInt16(offset))
                return
            }
            if bytes.count < 0x4000 { suffixes[suffix] = bytes.count }
            let label = name.labels[index]
            bytes.append(UInt8(label.count))
            bytes.append(contentsOf: label)
        }
        bytes.append(0)
    }

    mutating func record(_ record: DNSRecord) {
        name(record.name)
        u16(record.data.type.code)
        u16(record.cacheFlush ? 0x8001 : 0x0001)
        u32(record.ttl)
        let lengthAt = bytes.count
        u16(0)
        switch record.data {
        case .a(let address), .aaaa(let address): bytes.append(contentsOf: address)
        case .ptr(let target): name(target)
        case .srv(let priority, let weight, let port, let target):
            u16(priority)
            u16(weight)
            u16(port)
            name(target)
        case .txt(let strings):
            // An empty TXT record still holds one empty string (RFC 6763 §6.1).
            for string in strings.isEmpty ? [[]] : strings {
                let cut = string.prefix(255)
                bytes.append(UInt8(cut.count))
                bytes.append(contentsOf: cut)
            }
        case .opaque(_, let data): bytes.append(contentsOf: data.prefix(Int(UInt16.max)))
        }
        let length = UInt16(clamping: bytes.count - lengthAt - 2)
        bytes[lengthAt] = UInt8(length >> 8)
        bytes[lengthAt + 1] = UInt8(length & 0xFF)
    }
}
