import CouchWire

/// `/_node/{node}/_config[/section[/key]]`, server admins only: the settings of `ConfigSettings`, read and
/// changed live with CouchDB's answers (a value is a JSON string; `PUT` and `DELETE` answer the old one).
extension NodeHandlers {
    /// `GET /_node/{node}/_config`.
    func config(_ c: RequestContext) throws {
        try Self.requireNode(c)
        try c.reply.json(200, configSettings.json())
    }

    /// `GET /_node/{node}/_config/{section}`.
    func configSection(_ c: RequestContext) throws {
        try Self.requireNode(c)
        try c.reply.json(200, configSettings.json(section: c.parameter("section")))
    }

    /// `GET /_node/{node}/_config/{section}/{key}`.
    func configValue(_ c: RequestContext) throws {
        try Self.requireNode(c)
        let entry = try configSettings.entry(c.parameter("section"), c.parameter("key"))
        try c.reply.json(200, .string(entry.read()))
    }

    /// `PUT /_node/{node}/_config/{section}/{key}` with a JSON string: the value before the change.
    func setConfigValue(_ c: RequestContext) throws {
        try Self.requireNode(c)
        let entry = try configSettings.entry(c.parameter("section"), c.parameter("key"))
        guard let value = try c.request.jsonBody(limit: Limits.smallRequestBytes).stringValue else {
            throw CouchError.badRequest("a JSON string expected")
        }
        let old = entry.read()
        try entry.write(value)
        try c.reply.json(200, .string(old))
    }

    /// `DELETE /_node/{node}/_config/{section}/{key}`: back to the value the server started with; the value
    /// before.
    func deleteConfigValue(_ c: RequestContext) throws {
        try Self.requireNode(c)
        let entry = try configSettings.entry(c.parameter("section"), c.parameter("key"))
        let old = entry.read()
        entry.reset()
        try c.reply.json(200, .string(old))
    }
}
