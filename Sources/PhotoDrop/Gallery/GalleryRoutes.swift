import CouchServer

/// The gallery's rows of the route table: its page and assets, and its JSON API over the user's databases. Who
/// may call each is its row's, as for CouchDB's rows: the `{db}` rows are the database's members' (`_security`),
/// and the drop credentials reach the page and their own database's uploads only.
package enum GalleryRoutes {
    /// The rows, tried before CouchDB's: a browser's `GET /` gets a page linking to the gallery, JSON clients get
    /// CouchDB's welcome.
    package static func make(_ services: AppServices) -> [Route] {
        let gallery = GalleryHandlers(
            store: services.store, security: services.security, documents: services.documents,
            blobs: services.blobs, state: GalleryState(dataDir: services.options.dataDir))
        let read: [HTTPMethod] = [.GET, .HEAD]
        return [
            Route(read, "/", .anyone, drop: .open) { app, c in
                guard GalleryHandlers.prefersHTML(c.request) else {
                    return try c.reply.json(200, GalleryHandlers.welcome(serverUUID: app.serverUUID))
                }
                try GalleryHandlers.welcome(c.request, c.reply)
            },
            Route(read, "/_photos", .anyone, drop: .open) { _, c in try gallery.asset(c) },
            Route(read, "/_photos/{asset}", .anyone, drop: .open) { _, c in try gallery.asset(c) },
            Route(read, "/_photos/api/dbs", .anyone, drop: .open) { _, c in try gallery.databases(c) },
            Route(read, "/_photos/api/db/{db}/photos", .member) { _, c in try gallery.photos(c) },
            Route([.POST], "/_photos/api/db/{db}/upload", .member, drop: .ownDatabase, body: .attachment) { app, c in
                try GalleryGuard.requireSameOrigin(c.request.head, servedBy: app)
                try gallery.upload(c)
            },
            Route([.POST], "/_photos/api/db/{db}/uploads", .member, drop: .ownDatabase) { app, c in
                try GalleryGuard.requireSameOrigin(c.request.head, servedBy: app)
                try gallery.createUpload(c)
            },
            Route(read, "/_photos/api/db/{db}/uploads/{id}", .member, drop: .ownDatabase) { _, c in
                try gallery.uploadStatus(c)
            },
            // Charged against the drop's `--max-size` as any attachment body is (`.ownDatabase` + `.attachment`).
            Route([.PUT], "/_photos/api/db/{db}/uploads/{id}", .member, drop: .ownDatabase, body: .attachment) {
                app, c in
                try GalleryGuard.requireSameOrigin(c.request.head, servedBy: app)
                try gallery.appendUpload(c)
            },
            Route([.DELETE], "/_photos/api/db/{db}/uploads/{id}", .member, drop: .ownDatabase) { app, c in
                try GalleryGuard.requireSameOrigin(c.request.head, servedBy: app)
                try gallery.cancelUpload(c)
            },
            Route(read, "/_photos/api/db/{db}/photo/{doc}", .member) { _, c in try gallery.photo(c) },
            Route([.DELETE], "/_photos/api/db/{db}/doc/{id}", .member) { app, c in
                try GalleryGuard.requireSameOrigin(c.request.head, servedBy: app)
                try gallery.delete(c)
            },
            Route(read, "/_photos/api/db/{db}/thumb/{id}/{path…}", .member) { _, c in try gallery.thumbnail(c) },
            Route(read, "/_photos/api/db/{db}/preview/{id}/{path…}", .member) { _, c in try gallery.preview(c) },
            Route(read, "/_photos/api/db/{db}/download/{id}/{path…}", .member) { _, c in try gallery.download(c) },
            Route(HTTPMethod.allCases, "/_photos/{path…}", .anyone) { _, _ in throw CouchError.notFound("missing") },
        ]
    }
}
