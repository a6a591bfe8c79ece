import CouchServer

/// The gallery's rows of the route table: its page and assets, and its JSON API over the user's databases. Who
/// may call each is its row's, as for CouchDB's rows: the `{db}` rows are the database's members' (`_security`),
/// and the drop credentials reach the page and their own database's uploads only.
package enum GalleryRoutes {
    /// The rows, tried before CouchDB's: a browser's `GET /` gets a page linking to the gallery, JSON clients get
    /// CouchDB's welcome.
    package static func make(_ services: AppServices) -> [any RouteCollection] {
        [
            GalleryHandlers(
                store: services.store, security: services.security, documents: services.documents,
                blobs: services.blobs, state: GalleryState(dataDir: services.options.dataDir),
                serverUUID: services.serverUUID, hosts: services.hosts)
        ]
    }
}

extension GalleryHandlers: RouteCollection {
    var routes: [Route] {
        let read: [HTTPMethod] = [.GET, .HEAD]
        return [
            Route(read, "/", .anyone, drop: .open) { c in
                guard GalleryHandlers.prefersHTML(c.request) else {
                    return .json(.ok, GalleryHandlers.welcome(serverUUID: serverUUID))
                }
                return GalleryHandlers.welcomePage()
            },
            Route(read, "/_photos", .anyone, drop: .open, asset),
            Route(read, "/_photos/{asset}", .anyone, drop: .open, asset),
            Route(read, "/_photos/api/dbs", .anyone, drop: .open, databases),
            Route(read, "/_photos/api/db/{db}/photos", .member, photos),
            Route([.POST], "/_photos/api/db/{db}/upload", .member, drop: .ownDatabase, body: .attachment) { c in
                try GalleryGuard.requireSameOrigin(c.request.head, servedBy: hosts)
                return try upload(c)
            },
            Route([.POST], "/_photos/api/db/{db}/uploads", .member, drop: .ownDatabase) { c in
                try GalleryGuard.requireSameOrigin(c.request.head, servedBy: hosts)
                return try createUpload(c)
            },
            Route(read, "/_photos/api/db/{db}/uploads/{id}", .member, drop: .ownDatabase, uploadStatus),
            // Charged against the drop's `--max-size` as any attachment body is (`.ownDatabase` + `.attachment`).
            Route([.PUT], "/_photos/api/db/{db}/uploads/{id}", .member, drop: .ownDatabase, body: .attachment) { c in
                try GalleryGuard.requireSameOrigin(c.request.head, servedBy: hosts)
                return try appendUpload(c)
            },
            Route([.DELETE], "/_photos/api/db/{db}/uploads/{id}", .member, drop: .ownDatabase) { c in
                try GalleryGuard.requireSameOrigin(c.request.head, servedBy: hosts)
                return try cancelUpload(c)
            },
            Route(read, "/_photos/api/db/{db}/photo/{doc}", .member, photo),
            Route([.DELETE], "/_photos/api/db/{db}/doc/{id}", .member) { c in
                try GalleryGuard.requireSameOrigin(c.request.head, servedBy: hosts)
                return try delete(c)
            },
            Route(read, "/_photos/api/db/{db}/thumb/{id}/{path…}", .member, thumbnail),
            Route(read, "/_photos/api/db/{db}/preview/{id}/{path…}", .member, preview),
            Route(read, "/_photos/api/db/{db}/download/{id}/{path…}", .member, download),
            Route(HTTPMethod.allCases, "/_photos/{path…}", .anyone) { _ in throw CouchError.notFound("missing") },
        ]
    }
}
