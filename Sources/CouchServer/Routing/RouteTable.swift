import CouchWire

/// The route table: every path couchlite answers, who may call it, what they may send, and its handler. Rows are
/// tried in order and the first whose pattern matches names the path; the rows with that same pattern answer it,
/// each for its methods. So specific rows come before the general ones they narrow (`_users` before `{db}`,
/// `_design/{design}/_view/{view}` before a design document's attachments).
///
/// Adding an endpoint is one row here and one handler function.
extension App {
    /// A product's rows, then CouchDB's without the rows it takes over: a product row of a CouchDB pattern replaces
    /// every CouchDB row of that pattern sharing one of its methods (the gallery's `GET /`, a page for browsers and
    /// CouchDB's welcome for JSON clients), so no row of the joined table is shadowed.
    package static func joined(_ product: [Route], _ couchDB: [Route]) -> [Route] {
        product
            + couchDB.filter { row in
                !product.contains { $0.pattern == row.pattern && !Set($0.methods).isDisjoint(with: row.methods) }
            }
    }

    static let routeTable: [Route] = {
        let read: [HTTPMethod] = [.GET, .HEAD]
        let every = HTTPMethod.allCases
        let users = App.usersDatabase
        return [
            // MARK: Server
            Route(read, "/", .anyone, drop: .open) { app, c in
                try app.server.root(c)
            },
            Route(read, "/_up", .anyone) { app, c in try app.server.up(c) },
            Route(read, "/_all_dbs", .serverAdmin) { app, c in try app.server.allDatabases(c) },
            Route(read, "/_dbs_info", .serverAdmin, notAllowedReason: "GET,HEAD,POST") { app, c in
                try app.databases.databasesInfo(c)
            },
            Route([.POST], "/_dbs_info", .serverAdmin, body: .small) { app, c in
                try app.databases.databasesInfoForKeys(c)
            },
            Route(read, "/_db_updates", .serverAdmin, notAllowedReason: "GET") { app, c in
                var feed = try DatabaseUpdatesFeed(c.request, reply: c.reply, updates: app.databaseUpdates)
                try feed.run()
            },
            Route(read, "/_uuids", .anyone, notAllowedReason: "GET") { app, c in try app.server.uuids(c) },
            Route(read, "/_session", .anyone, drop: .open, notAllowedReason: "GET,HEAD,POST,DELETE") {
                app, c in try app.sessions.session(c)
            },
            Route([.POST], "/_session", .anyone, drop: .open, body: .small) { app, c in try app.sessions.logIn(c) },
            Route([.DELETE], "/_session", .anyone, drop: .open) { app, c in try app.sessions.logOut(c) },
            Route([.POST], "/_replicate", .serverAdmin, body: .small) { app, c in
                try app.replicationJobs.replicate(c)
            },
            Route(read, "/_active_tasks", .serverAdmin) { app, c in try app.replicationJobs.activeTasks(c) },
            Route(read, "/_membership", .serverAdmin, notAllowedReason: "GET") { app, c in
                try app.node.membership(c)
            },
            Route(read, "/_scheduler/jobs", .serverAdmin) { app, c in try app.replicationJobs.schedulerJobs(c) },
            Route(read, "/_scheduler/jobs/{id}", .serverAdmin) { app, c in try app.replicationJobs.schedulerJob(c) },
            Route(read, "/_scheduler/docs", .serverAdmin) { app, c in try app.replicationJobs.schedulerDocs(c) },
            Route(read, "/_scheduler/docs/{replicator}", .serverAdmin) { app, c in
                try app.replicationJobs.schedulerDocs(c)
            },
            Route(read, "/_scheduler/docs/{replicator}/{doc…}", .serverAdmin) { app, c in
                try app.replicationJobs.schedulerDocs(c)
            },

            // MARK: Node
            Route(every, "/_node", .serverAdmin) { _, _ in
                throw CouchError.badRequest("Incomplete path to _node request")
            },
            Route(read, "/_node/{node}", .serverAdmin, notAllowedReason: "GET") { app, c in
                try app.node.root(c)
            },
            Route(read, "/_node/{node}/_stats", .metricsReader, notAllowedReason: "GET") { app, c in
                try app.node.stats(c)
            },
            Route(read, "/_node/{node}/_stats/{path…}", .metricsReader, notAllowedReason: "GET") { app, c in
                try app.node.stats(c)
            },
            Route(read, "/_node/{node}/_prometheus", .metricsReader, notAllowedReason: "GET") { app, c in
                try app.node.prometheus(c)
            },
            Route(read, "/_node/{node}/_system", .metricsReader, notAllowedReason: "GET") { app, c in
                try app.node.system(c)
            },
            Route(read, "/_node/{node}/_config", .serverAdmin, notAllowedReason: "GET") { app, c in
                try app.node.config(c)
            },
            Route(read, "/_node/{node}/_config/{section}", .serverAdmin, notAllowedReason: "GET") { app, c in
                try app.node.configSection(c)
            },
            Route(read, "/_node/{node}/_config/{section}/{key}", .serverAdmin, notAllowedReason: "GET,PUT,DELETE") {
                app, c in try app.node.configValue(c)
            },
            Route([.PUT], "/_node/{node}/_config/{section}/{key}", .serverAdmin, body: .small) { app, c in
                try app.node.setConfigValue(c)
            },
            Route([.DELETE], "/_node/{node}/_config/{section}/{key}", .serverAdmin) { app, c in
                try app.node.deleteConfigValue(c)
            },
            Route(every, "/_node/{node}/{path…}", .serverAdmin) { app, c in try app.node.missing(c) },

            // MARK: Databases
            Route(read, "/{db}", .usersMember, drop: .ownDatabase, onlyIn: users) { app, c in
                try app.databases.info(c)
            },
            Route([.POST], "/{db}", .usersMember, body: .document, onlyIn: users) { app, c in
                try app.users.create(c)
            },
            Route([.DELETE], "/{db}", .serverAdmin, notAllowedReason: "DELETE,GET,HEAD,POST") { app, c in
                try app.databases.delete(c)
            },
            Route(read, "/{db}", .member, drop: .ownDatabase) { app, c in try app.databases.info(c) },
            Route([.POST], "/{db}", .member, body: .document) { app, c in try app.documents.post(c) },
            Route([.PUT], "/{db}", .serverAdmin, drop: .exists) { app, c in try app.databases.create(c) },
            Route([.POST], "/{db}/_ensure_full_commit", .member, drop: .ownDatabase) { app, c in
                try app.databases.ensureFullCommit(c)
            },
            Route([.GET, .HEAD], "/{db}/_revs_limit", .member, notAllowedReason: "PUT,GET") { app, c in
                try app.databases.revsLimit(c)
            },
            Route([.PUT], "/{db}/_revs_limit", .databaseAdmin, body: .small) { app, c in
                try app.databases.setRevsLimit(c)
            },
            Route([.POST], "/{db}/_compact", .maintenanceAdmin, body: .small) { app, c in
                try app.databases.compact(c)
            },
            Route([.POST], "/{db}/_compact/{design}", .maintenanceAdmin, body: .small) { app, c in
                try app.databases.compactDesign(c)
            },
            Route([.POST], "/{db}/_view_cleanup", .maintenanceAdmin, body: .small) { app, c in
                try app.designViews.cleanup(c)
            },
            Route(read, "/{db}/_shards", .member, notAllowedReason: "GET") { app, c in try app.databases.shards(c) },
            Route(read, "/{db}/_shards/{doc}", .member, notAllowedReason: "GET") { app, c in
                try app.databases.shard(c)
            },
            Route([.POST], "/{db}/_sync_shards", .serverAdmin, notAllowedReason: "POST") { app, c in
                try app.databases.syncShards(c)
            },
            Route(read, "/{db}/_security", .member, notAllowedReason: "PUT,GET") { app, c in
                try app.databases.securityObject(c)
            },
            Route([.PUT], "/{db}/_security", .databaseAdmin, body: .small) { app, c in
                try app.databases.setSecurityObject(c)
            },
            Route(every, "/{db}/_temp_view", .member) { _, _ in
                throw CouchError.gone("Temporary views are not supported in CouchDB")
            },
            Route([.POST], "/{db}/_purge", .serverAdmin, body: .small, notAllowedReason: "POST") { app, c in
                try app.databases.purge(c)
            },
            Route([.GET], "/{db}/_purged_infos_limit", .serverAdmin, notAllowedReason: "GET,PUT") { app, c in
                try app.databases.purgedInfosLimit(c)
            },
            Route([.PUT], "/{db}/_purged_infos_limit", .serverAdmin, body: .small, notAllowedReason: "GET,PUT") {
                app, c in try app.databases.setPurgedInfosLimit(c)
            },
            // MARK: Mango (members query; an index is a design document, its database admins')
            Route([.POST], "/{db}/_find", .member, body: .bulk, notAllowedReason: "POST") { app, c in
                try app.mango.find(c)
            },
            Route([.POST], "/{db}/_explain", .member, body: .bulk, notAllowedReason: "POST") { app, c in
                try app.mango.explain(c)
            },
            Route(read, "/{db}/_index", .member, notAllowedReason: "GET,POST") { app, c in
                try app.mango.listIndexes(c)
            },
            Route([.POST], "/{db}/_index", .databaseAdmin, body: .small) { app, c in try app.mango.createIndex(c) },
            Route([.POST], "/{db}/_index/_bulk_delete", .databaseAdmin, body: .bulk, notAllowedReason: "POST") {
                app, c in try app.mango.bulkDelete(c)
            },
            Route([.DELETE], "/{db}/_index/{path…}", .databaseAdmin, notAllowedReason: "DELETE") { app, c in
                try app.mango.deleteIndex(c)
            },

            // MARK: Replication protocol
            Route([.POST], "/{db}/_bulk_docs", .usersMember, body: .bulk, onlyIn: users) { app, c in
                try app.users.bulkDocs(c)
            },
            Route([.POST], "/{db}/_bulk_docs", .member, drop: .upload, body: .bulk) { app, c in
                try app.replication.bulkDocs(c)
            },
            Route([.POST], "/{db}/_revs_diff", .member, drop: .ownDatabase, body: .bulk) { app, c in
                try app.replication.revsDiff(c)
            },
            Route([.POST], "/{db}/_missing_revs", .member, drop: .ownDatabase, body: .bulk) { app, c in
                try app.replication.missingRevs(c)
            },
            Route([.POST], "/{db}/_bulk_get", .member, body: .bulk) { app, c in
                try app.replication.bulkGet(c)
            },
            Route(read + [.POST], "/{db}/_all_docs", .memberListing, body: .bulk) { app, c in
                try app.allDocs.list(c)
            },
            Route(read + [.POST], "/{db}/_design_docs", .member, body: .bulk) { app, c in
                try app.allDocs.designDocuments(c)
            },
            Route([.POST], "/{db}/_all_docs/queries", .memberListing, body: .bulk, notAllowedReason: "POST") {
                app, c in
                try app.allDocs.queries(c, designOnly: false)
            },
            Route([.POST], "/{db}/_design_docs/queries", .member, body: .bulk, notAllowedReason: "POST") { app, c in
                try app.allDocs.queries(c, designOnly: true)
            },
            Route(read + [.POST], "/{db}/_changes", .memberListing, body: .bulk, notAllowedReason: "GET,POST,HEAD") {
                app, c in
                try app.changes.feed(c)
            },

            // MARK: Local documents
            Route(every, "/{db}/_local", .member) { _, _ in try Refusal.localAttachment() },
            Route(read, "/{db}/_local/{local}", .member, drop: .checkpoint) { app, c in try app.documents.getLocal(c) },
            Route([.PUT], "/{db}/_local/{local}", .member, drop: .checkpoint, body: .document) { app, c in
                try app.documents.putLocal(c)
            },
            Route([.DELETE], "/{db}/_local/{local}", .member) { app, c in try app.documents.deleteLocal(c) },
            Route(every, "/{db}/_local/{local}/{path…}", .member) { _, _ in try Refusal.localAttachment() },

            // MARK: Design documents and views
            Route(read, "/{db}/_design/{design}/_view/{view}", .member, notAllowedReason: "GET,POST,HEAD") { app, c in
                try app.designViews.query(c)
            },
            Route([.POST], "/{db}/_design/{design}/_view/{view}", .member, body: .bulk) { app, c in
                try app.designViews.query(c)
            },
            Route(
                [.POST], "/{db}/_design/{design}/_view/{view}/queries", .member, body: .bulk, notAllowedReason: "POST"
            ) {
                app, c in
                try app.designViews.queries(c)
            },
            Route([.GET], "/{db}/_design/{design}/_info", .member) { app, c in try app.designViews.info(c) },
            Route(every, "/{db}/_design/{design}/_view", .member) { _, _ in throw CouchError.notFound("missing") },
            Route(every, "/{db}/_design/{design}/_view/{view}/{path…}", .member) { _, _ in
                throw CouchError.notFound("missing")
            },
            Route(every, "/{db}/_design/{design}/_show", .member) { _, _ in try Refusal.invalidPath("show_error") },
            Route(every, "/{db}/_design/{design}/_show/{show}", .member, body: .document) { app, c in
                try app.designRender.show(c)
            },
            Route(every, "/{db}/_design/{design}/_show/{show}/{path…}", .member, body: .document) { app, c in
                try app.designRender.show(c)
            },
            Route(every, "/{db}/_design/{design}/_list", .member) { _, _ in try Refusal.invalidPath("list_error") },
            Route(every, "/{db}/_design/{design}/_list/{list}", .member) { _, _ in
                try Refusal.invalidPath("list_error")
            },
            Route(
                [.GET, .POST, .HEAD], "/{db}/_design/{design}/_list/{list}/{view}", .member, body: .bulk,
                notAllowedReason: "GET,POST,HEAD"
            ) { app, c in try app.designRender.list(c) },
            Route(
                [.GET, .POST, .HEAD], "/{db}/_design/{design}/_list/{list}/{viewDesign}/{view}", .member, body: .bulk,
                notAllowedReason: "GET,POST,HEAD"
            ) { app, c in try app.designRender.list(c) },
            Route(every, "/{db}/_design/{design}/_update", .member) { _, _ in
                try Refusal.invalidPath("update_error")
            },
            Route(every, "/{db}/_design/{design}/_update/{update}", .member, body: .document) { app, c in
                try app.designRender.update(c)
            },
            Route(every, "/{db}/_design/{design}/_update/{update}/{path…}", .member, body: .document) { app, c in
                try app.designRender.update(c)
            },
            Route(every, "/{db}/_design/{design}/_rewrite/{path…?}", .member) { _, _ in
                try Refusal.unsupportedRewrite()
            },
            Route(read, "/{db}/_design/{design}", .usersDesignRead, onlyIn: users) { app, c in
                try app.documents.get(c)
            },
            Route([.DELETE], "/{db}/_design/{design}", .databaseAdmin) { app, c in try app.documents.delete(c) },
            Route(read, "/{db}/_design/{design}", .member) { app, c in try app.documents.get(c) },
            Route([.POST], "/{db}/_design/{design}", .databaseAdmin, body: .attachment) { app, c in
                try app.documents.postForm(c)
            },
            Route([.PUT], "/{db}/_design/{design}", .databaseAdmin, body: .document) { app, c in
                try app.documents.put(c)
            },
            Route([.COPY], "/{db}/_design/{design}", .databaseAdmin) { app, c in try app.documents.copy(c) },
            Route(read, "/{db}/_design/{design}/{path…}", .member) { app, c in try app.attachments.get(c) },
            Route([.PUT], "/{db}/_design/{design}/{path…}", .databaseAdmin, body: .attachment) { app, c in
                try app.attachments.put(c)
            },
            Route([.DELETE], "/{db}/_design/{design}/{path…}", .databaseAdmin) { app, c in
                try app.attachments.delete(c)
            },

            // MARK: Documents and attachments
            Route([.PUT, .DELETE], "/{db}/{doc}", .usersMember, body: .document, onlyIn: users) { app, c in
                try app.users.write(c)
            },
            Route(read, "/{db}/{doc}", .usersOwnDocument, onlyIn: users) { app, c in try app.documents.get(c) },
            Route([.DELETE], "/{db}/{doc}", .member) { app, c in try app.documents.delete(c) },
            Route(read, "/{db}/{doc}", .member) { app, c in try app.documents.get(c) },
            Route([.POST], "/{db}/{doc}", .member, body: .attachment) { app, c in try app.documents.postForm(c) },
            Route([.PUT], "/{db}/{doc}", .member, drop: .upload, body: .document) { app, c in try app.documents.put(c)
            },
            Route([.COPY], "/{db}/{doc}", .member) { app, c in try app.documents.copy(c) },
            Route(read, "/{db}/{doc}/{path…}", .member) { app, c in try app.attachments.get(c) },
            Route([.PUT], "/{db}/{doc}/{path…}", .member, body: .attachment) { app, c in try app.attachments.put(c) },
            Route([.DELETE], "/{db}/{doc}/{path…}", .member) { app, c in try app.attachments.delete(c) },
        ]
    }()
}

/// What the rows that only refuse answer.
private enum Refusal {
    /// couch_httpd_db: `/db/_local` with anything but exactly one more segment.
    static func localAttachment() throws -> Never {
        throw CouchError.badRequest("_local documents do not accept attachments.")
    }

    /// `_rewrite` (deprecated in CouchDB 3: it rewrites URLs rather than serve data): 501 with the reason.
    static func unsupportedRewrite() throws -> Never {
        throw CouchError.notImplemented(
            "couchlite does not run _rewrite rules (deprecated in CouchDB 3): address the database directly.")
    }

    /// couch_mrview_show: a `_show`, `_list` or `_update` path without a function name.
    static func invalidPath(_ error: String) throws -> Never {
        throw CouchError.designFunction(status: 404, error: error, reason: "Invalid path.")
    }
}
