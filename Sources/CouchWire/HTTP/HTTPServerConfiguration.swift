/// Settings of an `HTTPServer`. Every timeout bounds one kind of wait so that no client can hold a thread forever.
public struct HTTPServerConfiguration: Sendable {
    /// Address to bind: an IPv4/IPv6 literal (`"127.0.0.1"`, `"::1"`, `"0.0.0.0"`, `"::"`) or a name such as
    /// `"localhost"` (every address it resolves to is bound on the same port). `"::"` also accepts IPv4.
    public var host: String = "127.0.0.1"
    /// More addresses or names bound on the same port as `host` (`couchlite receive` serves every LAN address
    /// of the machine). One that cannot be bound is skipped once `host` is bound.
    public var extraHosts: [String] = []
    /// TCP port; 0 picks a free one (see `HTTPServer.start()`).
    public var port: Int = 5984
    /// Value of the `Server` response header.
    public var serverHeader: String = "couchlite"
    /// Most open connections (count). Beyond it a new connection is accepted, answered 503 and closed.
    public var maxConnections: Int = 4096
    /// Most open connections from one client address (count; 0 = no limit), so that one host cannot take
    /// every slot. Loopback clients are not counted (they could exhaust the machine anyway, and benchmarks
    /// open thousands of feeds from there). Beyond it a connection is answered 503 and closed.
    public var maxConnectionsPerAddress: Int = 256
    /// Whether loopback clients count towards `maxConnectionsPerAddress` too (for tests).
    public var perAddressLimitCountsLoopback = false
    /// How long a kept-alive connection may wait for the first byte of its next request.
    public var idleTimeout: Duration = .seconds(300)
    /// The idle wait once more than three quarters of `maxConnections` are open: idle keep-alive
    /// connections then yield their slots quickly (new idle waits use it, and older idle connections past
    /// it are closed as new ones arrive).
    public var crowdedIdleTimeout: Duration = .seconds(5)
    /// How long a whole request head may take, from its first byte (or from accept) to its empty line.
    public var headerTimeout: Duration = .seconds(30)
    /// How long one body read may wait for the next bytes before failing with `.timeout`.
    public var bodyStallTimeout: Duration = .seconds(60)
    /// How long a whole request body may take, from the request head, before reads fail with `.timeout`;
    /// extended by one second per `minimumBodyRate` bytes received, so a large upload at any honest speed
    /// finishes while a body trickled a byte per stall timeout is cut off.
    public var bodyTimeout: Duration = .seconds(120)
    /// Bytes per second of body that earn one more second of `bodyTimeout` (bytes/s).
    public var minimumBodyRate: Int = 4096
    /// How long one response write may wait for the peer to make room before failing with `.timeout`.
    public var sendStallTimeout: Duration = .seconds(60)
    /// Where the connections count their bytes and themselves (`_node/_local/_stats`); nil counts nothing.
    public var traffic: HTTPTraffic?

    /// Creates a configuration; every parameter has the documented default.
    public init(
        host: String = "127.0.0.1", port: Int = 5984, serverHeader: String = "couchlite",
        maxConnections: Int = 4096, idleTimeout: Duration = .seconds(300), headerTimeout: Duration = .seconds(30),
        bodyStallTimeout: Duration = .seconds(60), sendStallTimeout: Duration = .seconds(60)
    ) {
        self.host = host
        self.port = port
        self.serverHeader = serverHeader
        self.maxConnections = maxConnections
        self.idleTimeout = idleTimeout
        self.headerTimeout = headerTimeout
        self.bodyStallTimeout = bodyStallTimeout
        self.sendStallTimeout = sendStallTimeout
    }
}
