import CouchWire

/// `/_node/{node}/_config[/section[/key]]`, server admins only: the settings of `ConfigSettings`, read and
/// changed live with CouchDB's answers (a value is a JSON string; `PUT` and `DELETE` answer the old one).
extension NodeHandlers {
    /// `GET /_node/{node}/_config`.
    func config(_ c: RequestContext) throws -> Response {
        try Self.requireNode(c)
        return .json(.ok, configSettings.json())
    }

    /// `GET /_node/{node}/_config/{section}`.
    func configSection(_ c: RequestContext) throws -> Response {
        try Self.requireNode(c)
        return try .json(.ok, configSettings.json(section: c.parameter("section")))
    }

    /// `GET /_node/{node}/_config/{section}/{key}`.
    func configValue(_ c: RequestContext) throws -> Response {
        try Self.requireNode(c)
        let entry = try configSettings.entry(c.parameter("section"), c.parameter("key"))
        return .json(.ok, .string(entry.read()))
    }

    /// `PUT /_node/{node}/_config/{section}/{key}` with a JSON string: the value before the change.
    func setConfigValue(_ c: RequestContext) throws -> Response {
        try Self.requireNode(c)
        let entry = try configSettings.entry(c.parameter("section"), c.parameter("key"))
        guard let value = try c.request.jsonBody(limit: Limits.smallRequestBytes).stringValue else {
            throw CouchError.badRequest("a JSON string expected")
        }
        let old = entry.read()
        try entry.write(value)
        return .json(.ok, .string(old))
    }

    /// `DELETE /_node/{node}/_config/{section}/{key}`: back to the value the server started with; the value
    /// before.
    func deleteConfigValue(_ c: RequestContext) throws -> Response {
        try Self.requireNode(c)
        let entry = try configSettings.entry(c.parameter("section"), c.parameter("key"))
        let old = entry.read()
        entry.reset()
        return .json(.ok, .string(old))
    }
}
