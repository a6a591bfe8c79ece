/// The gallery's page, style and script, compiled into the binary (no build step, no CDN, no files
/// to find at run time). The script builds every element with DOM calls and `textContent`: no
/// data ever goes through HTML parsing, and the CSP forbids inline script anyway.
enum GalleryAssets {
    struct Asset {
        let contentType: String
        let body: String
    }

    static let files: [String: Asset] = [
        "index.html": Asset(contentType: "text/html; charset=utf-8", body: index),
        "app.css": Asset(contentType: "text/css; charset=utf-8", body: style),
        "app.js": Asset(contentType: "text/javascript; charset=utf-8", body: script),
        "icon.svg": Asset(contentType: "image/svg+xml", body: icon),
    ]

    /// `GET /` for a browser.
    static let welcome = #"""
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>couchlite</title><link rel="stylesheet" href="/_photos/app.css"></head>
        <body class="welcome"><main><h1>couchlite</h1>
        <p>A CouchDB-compatible server. Its API answers JSON clients here.</p>
        <p><a class="button" id="photos-link" href="/_photos/">Open the photos</a></p></main></body></html>

        """#

    static let index = #"""
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Photos · couchlite</title>
        <link rel="icon" href="/_photos/icon.svg">
        <link rel="stylesheet" href="/_photos/app.css">
        <script src="/_photos/app.js" defer></script></head>
        <body>
        <header class="bar">
          <a class="brand" href="#/">Photos</a><span id="crumb"></span><span class="spacer"></span>
          <span id="who"></span><button id="signout" class="quiet" hidden>Sign out</button>
        </header>
        <main id="main"></main>
        <div id="viewer" hidden>
          <div class="stage" id="stage"></div>
          <aside class="details">
            <div class="nav"><button id="prev" title="Previous (←)">‹</button>
            <button id="close" title="Close (Esc)">✕</button><button id="next" title="Next (→)">›</button></div>
            <h2 id="v-name"></h2><p id="v-meta"></p><table id="v-fields"></table>
            <p class="actions"><a id="download" class="button" href="#">Download</a>
            <button id="delete" class="danger">Delete…</button></p>
          </aside>
        </div>
        <dialog id="confirm"><form method="dialog"><p id="confirm-text"></p>
          <p class="actions"><button value="cancel">Cancel</button>
          <button value="ok" class="danger" id="confirm-ok">Delete</button></p></form></dialog>
        </body></html>

        """#

    static let placeholder = #"""
        <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 100"><rect width="100" height="100" fill="#ddd"/>
        <path d="M25 70l15-20 10 12 8-9 17 17z" fill="#aaa"/><circle cx="66" cy="34" r="7" fill="#aaa"/>
        <path d="M20 20l60 60" stroke="#c55" stroke-width="4"/></svg>

        """#

    static let icon = #"""
        <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#2f6f4f"/>
        <path d="M6 24l7-9 5 6 3-4 5 7z" fill="#fff"/><circle cx="22" cy="10" r="3" fill="#fff"/></svg>

        """#
}
