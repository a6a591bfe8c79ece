/// Where a view query's rows go: the JSON body of `_view` (`ViewOutput`) or a list function (`ListRowSink`).
/// `head` is the start of the view's JSON body, up to and including `"rows":[`.
protocol ViewRowSink {
    /// The head, now.
    mutating func start(_ head: [UInt8]) throws
    /// The head, with the first row (or at the end).
    mutating func `defer`(_ head: [UInt8]) throws
    /// One row's JSON. Throws `ViewRowsStop` when no more rows are wanted.
    mutating func row(_ bytes: [UInt8]) throws
    mutating func finish() throws
}

/// Thrown by a sink that wants no more rows (a list function that returned early): the query stops reading.
struct ViewRowsStop: Error {}

/// The body of a view response: the head is sent with the first row (a reduce that fails on its first group is
/// still a clean error response), rows are separated as CouchDB separates them.
struct ViewOutput: ViewRowSink {
    private var writer: FeedWriter
    /// Its place in a multi-query's results, if it is one.
    private let part: ResultPart?
    private var head: [UInt8]?
    private var rows = 0

    init(_ writer: FeedWriter, part: ResultPart? = nil) {
        self.writer = writer
        self.part = part
    }

    /// Starts the response now.
    mutating func start(_ head: [UInt8]) throws {
        try writer.beginListing(part)
        try writer.append(head)
    }

    /// Starts the response with the first row.
    mutating func `defer`(_ head: [UInt8]) { self.head = head }

    mutating func row(_ bytes: [UInt8]) throws {
        if let head {
            self.head = nil
            try start(head)
        }
        if rows > 0 { try writer.append(",\r\n") }
        rows += 1
        try writer.append(bytes)
    }

    package mutating func finish() throws {
        if let head {
            self.head = nil
            try start(head)
        }
        try writer.endListing(part)
    }
}
