/// One complete BLIP message: a request, a reply or an error, with its properties and body.
public struct BlipMessage: Sendable, Equatable {
    public var type: BlipMessageType
    /// The request's number (a reply carries its request's); set by the connection for outgoing requests.
    public var number: UInt64
    public var properties: BlipProperties
    public var body: [UInt8]
    public var isUrgent: Bool
    /// Whether frames pass through the deflate stream (outgoing), or the first frame was compressed (incoming).
    public var isCompressed: Bool
    /// A request that wants no reply.
    public var isNoReply: Bool

    public init(
        type: BlipMessageType, number: UInt64 = 0, properties: BlipProperties = BlipProperties(), body: [UInt8] = [],
        isUrgent: Bool = false, isCompressed: Bool = false, isNoReply: Bool = false
    ) {
        self.type = type
        self.number = number
        self.properties = properties
        self.body = body
        self.isUrgent = isUrgent
        self.isCompressed = isCompressed
        self.isNoReply = isNoReply
    }

    /// A request whose `Profile` property names what it asks (`getCheckpoint`, `changes`, `rev`, …).
    public static func request(
        profile: String, properties: BlipProperties = BlipProperties(), body: [UInt8] = [], urgent: Bool = false,
        compressed: Bool = false, noReply: Bool = false
    ) -> BlipMessage {
        var all: BlipProperties = ["Profile": profile]
        for (name, value) in properties { all.add(name, value) }
        return BlipMessage(
            type: .request, properties: all, body: body, isUrgent: urgent, isCompressed: compressed,
            isNoReply: noReply)
    }

    /// A reply (RPY).
    public static func response(
        properties: BlipProperties = BlipProperties(), body: [UInt8] = [], compressed: Bool = false
    ) -> BlipMessage {
        BlipMessage(type: .response, properties: properties, body: body, isCompressed: compressed)
    }

    /// An error reply (ERR): `Error-Domain`, `Error-Code` (decimal), the message as body. LiteCore maps domain
    /// `HTTP` with code N to its WebSocket domain with N, which its replicator's 403/404/409 logic reads.
    public static func error(domain: String, code: Int, message: String) -> BlipMessage {
        BlipMessage(
            type: .error, properties: ["Error-Domain": domain, "Error-Code": String(code)], body: Array(message.utf8))
    }

    /// The `Profile` property.
    public var profile: String? { properties["Profile"] }

    /// The message data as framed: varint of the properties' length (written even when 0), properties, body.
    func encodedData() throws(BlipError) -> [UInt8] {
        let props = try properties.encoded()
        var data = BlipVarint.encode(UInt64(props.count))
        data.reserveCapacity(data.count + props.count + body.count)
        data += props
        data += body
        return data
    }
}
