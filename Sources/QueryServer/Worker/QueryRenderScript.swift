/// The rendering half of the runtime script (`QueryRuntimeScript` evaluates it inside its own scope): CouchDB's
/// `share/server/render.js` and `mimeparse.js` as CouchDB 3.4.3 runs them, for `shows`, `lists` and `updates`.
///
/// - A show is `fun.apply(ddoc, [doc, req])`; its answer is a string or `{body|json|base64, headers, code}`, or
///   what the `provides()` branch chosen by `?format=` or `Accept` returns (`registerType` adds types).
/// - An update is `fun.apply(ddoc, [doc, req])` returning `[doc, response]` (GET is refused in here, as CouchDB
///   refuses it).
/// - A list is `fun.apply(ddoc, [head, req])`. `getRow()` sends what the function `send()`s so far (with its
///   `start()` response the first time) to the server and blocks for the next row, through the native exchange;
///   output past `FLUSH_CHARACTERS` is flushed to the server without waiting for a row, so a list holds no more than
///   that whatever it writes. Rows are never held: one at a time crosses.
///
/// A function that throws becomes CouchDB's error: a thrown `{error, reason}` or `["error", name, reason]` as it
/// is, anything else `render_error` with "function raised error: …".
enum QueryRenderScript {
    static let source = #"""
          var FLUSH_CHARACTERS = 65536;
          var mimesByKey = {}, keysByMime = {}, render = null;

          function registerType() {
            var mimes = [], key = arguments[0], i;
            for (i = 1; i < arguments.length; i++) { mimes[mimes.length] = arguments[i]; }
            mimesByKey[key] = mimes;
            for (i = 0; i < mimes.length; i++) { keysByMime[mimes[i]] = key; }
          }
          registerType("all", "*/*");
          registerType("text", "text/plain; charset=utf-8", "txt");
          registerType("html", "text/html; charset=utf-8");
          registerType("xhtml", "application/xhtml+xml", "xhtml");
          registerType("xml", "application/xml", "text/xml", "application/x-xml");
          registerType("js", "text/javascript", "application/javascript", "application/x-javascript");
          registerType("css", "text/css");
          registerType("ics", "text/calendar");
          registerType("csv", "text/csv");
          registerType("rss", "application/rss+xml");
          registerType("atom", "application/atom+xml");
          registerType("yaml", "application/x-yaml", "text/yaml");
          registerType("multipart_form", "multipart/form-data");
          registerType("url_encoded_form", "application/x-www-form-urlencoded");
          registerType("json", "application/json", "text/x-json");

          // mimeparse.js, as CouchDB ships it (its `sort()` compares the arrays as strings; so does this one).
          function strip(text) { return text.replace(/^\s+/, "").replace(/\s+$/, ""); }
          function parseMimeType(mimeType) {
            var params = {}, parts = mimeType.split(";");
            for (var i = 0; i < parts.length; i++) {
              var p = parts[i].split("=");
              if (p.length == 2) { params[strip(p[0])] = strip(p[1]); }
            }
            var fullType = strip(parts[0]);
            if (fullType == "*") { fullType = "*/*"; }
            var typeParts = fullType.split("/");
            return [typeParts[0], typeParts[1], params];
          }
          function parseMediaRange(range) {
            var parsed = parseMimeType(range), q;
            if (!parsed[2].q) {
              parsed[2].q = "1";
            } else {
              q = parseFloat(parsed[2].q);
              if (isNaN(q) || q > 1 || q < 0) { parsed[2].q = "1"; }
            }
            return parsed;
          }
          function fitnessAndQuality(mimeType, ranges) {
            var bestFitness = -1, bestFitQ = 0, target = parseMediaRange(mimeType);
            for (var i = 0; i < ranges.length; i++) {
              var type = ranges[i][0], subtype = ranges[i][1], params = ranges[i][2];
              if ((type == target[0] || type == "*" || target[0] == "*") &&
                  (subtype == target[1] || subtype == "*" || target[1] == "*")) {
                var matchCount = 0;
                for (var param in target[2]) {
                  if (param != "q" && params[param] && params[param] == target[2][param]) { matchCount += 1; }
                }
                var fitness = (type == target[0] ? 100 : 0) + (subtype == target[1] ? 10 : 0) + matchCount;
                if (fitness > bestFitness) { bestFitness = fitness; bestFitQ = params.q; }
              }
            }
            return [bestFitness, parseFloat(bestFitQ)];
          }
          function bestMatch(supported, header) {
            var ranges = [], parts = header.split(","), weighted = [], i;
            for (i = 0; i < parts.length; i++) { ranges[ranges.length] = parseMediaRange(parts[i]); }
            for (i = 0; i < supported.length; i++) {
              weighted[weighted.length] = [fitnessAndQuality(supported[i], ranges), i, supported[i]];
            }
            weighted.sort();
            return weighted[weighted.length - 1][0][1] ? weighted[weighted.length - 1][2] : "";
          }

          function current(name) {
            if (render === null) {
              throw fail("render_error", name + "() is only available in a show, list or update function");
            }
            return render;
          }

          function provides(type, fun) {
            var state = current("provides");
            state.providesUsed = true;
            state.mimeFuns[state.mimeFuns.length] = [type, fun];
          }

          function requestHeader(req, name) {
            var headers = member(req, "headers"), lower = name.toLowerCase();
            if (headers === null || typeof headers !== "object") { return undefined; }
            if (hasOwn.call(headers, name)) { return headers[name]; }
            var names = objectKeys(headers);
            for (var i = 0; i < names.length; i++) {
              if (names[i].toLowerCase() === lower) { return headers[names[i]]; }
            }
            return undefined;
          }

          function runProvides(req, ddoc) {
            var state = render, supported = [], bestFun, bestKey = null, i;
            var accept = requestHeader(req, "Accept"), query = member(req, "query");
            if (query && query.format) {
              bestKey = query.format;
              state.contentType = mimesByKey[bestKey][0];
            } else if (accept) {
              state.mimeFuns.reverse();
              for (i = 0; i < state.mimeFuns.length; i++) {
                if (mimesByKey[state.mimeFuns[i][0]]) { supported = supported.concat(mimesByKey[state.mimeFuns[i][0]]); }
              }
              state.contentType = bestMatch(supported, accept);
              bestKey = keysByMime[state.contentType];
            } else {
              bestKey = state.mimeFuns[0][0];
              state.contentType = mimesByKey[bestKey][0];
            }
            if (bestKey) {
              for (i = 0; i < state.mimeFuns.length; i++) {
                if (state.mimeFuns[i][0] == bestKey) { bestFun = state.mimeFuns[i][1]; break; }
              }
            }
            if (bestFun) { return functionCall.call(bestFun, ddoc); }
            var types = [];
            for (i = 0; i < state.mimeFuns.length; i++) {
              types[types.length] = mimesByKey[state.mimeFuns[i][0]].join(", ") || state.mimeFuns[i][0];
            }
            throw ["error", "not_acceptable",
              "Content-Type " + (accept || bestKey) + " not supported, try one of: " + types.join(", ")];
          }

          function start(resp) {
            var state = current("start");
            state.startResp = resp || {};
            state.newHeader = true;
          }

          function send(chunk) {
            var state = current("send"), text = chunk.toString();
            state.chunks[state.chunks.length] = text;
            state.size += text.length;
            if (state.list && state.gotRow && state.size > FLUSH_CHARACTERS) { flush(state); }
          }

          function talk(message) {
            var reply = parse(exchange(stringify(message)));
            return reply !== null && typeof reply === "object" ? reply : {};
          }

          function flush(state) {
            var chunks = state.chunks;
            state.chunks = [];
            state.size = 0;
            if (talk({ exchange: { flush: chunks } })["continue"] !== true) {
              throw ["error", "list_error", "the list was stopped"];
            }
          }

          function applyContentType(resp, contentType) {
            resp.headers = resp.headers || {};
            if (contentType) { resp.headers["Content-Type"] = resp.headers["Content-Type"] || contentType; }
            return resp;
          }

          function getRow() {
            var state = current("getRow");
            if (!state.list) { throw fail("render_error", "getRow() is only available in a list function"); }
            if (state.lastRow) { return null; }
            var message = { chunks: state.chunks };
            if (!state.gotRow) {
              state.gotRow = true;
              message.start = applyContentType(state.startResp || {}, state.contentType);
            } else if (state.newHeader) {
              message.start = state.startResp;
            }
            state.newHeader = false;
            state.startResp = {};
            state.chunks = [];
            state.size = 0;
            var reply = talk({ exchange: message });
            if (hasOwn.call(reply, "row")) { return reply.row; }
            state.lastRow = true;
            return null;
          }

          function wrap(resp) { return typeof resp === "string" ? { body: resp } : resp; }

          function typeOf(value) {
            if (value === null) { return "null"; }
            if (arrayIsArray(value)) { return "array"; }
            return typeof value;
          }

          function renderError(e) {
            if (e !== null && e !== undefined &&
                ((e.error && e.reason) || e[0] == "error" || e[0] == "fatal")) { throw e; }
            var message = "function raised error: " + String(e) + " \nstacktrace: " +
              (e !== null && e !== undefined ? e.stack : undefined);
            log(message);
            throw ["error", "render_error", message];
          }

          function runShow(fun, ddoc, args) {
            var state = render;
            try {
              var resp = wrap(functionApply.call(fun, ddoc, args) || {});
              if (state.chunks.length > 0) {
                resp.headers = resp.headers || {};
                // CouchDB copies the members of `start()`'s response in as headers; its `headers` are meant.
                var started = member(state.startResp, "headers");
                for (var header in started) { resp.headers[header] = started[header]; }
                resp.body = state.chunks.join("") + (resp.body || "");
                state.chunks = [];
                state.startResp = {};
              }
              if (state.providesUsed) {
                var provided = wrap(runProvides(args[1], ddoc) || {});
                resp.body = (resp.body || "") + state.chunks.join("") + (provided.body || "");
                resp = applyContentType(resp, state.contentType);
                state.chunks = [];
              }
              var type = typeOf(resp);
              if (type === "object" || type === "string") { return ["resp", wrap(resp)]; }
              throw ["error", "render_error", "undefined response from show function"];
            } catch (e) {
              var path = member(args[1], "path");
              if (args[0] === null && arrayIsArray(path) && path.length > 5) {
                throw ["error", "not_found", "document not found"];
              }
              renderError(e);
            }
          }

          function runUpdate(fun, ddoc, args) {
            try {
              if (member(args[1], "method") == "GET") {
                throw ["error", "method_not_allowed", "Update functions do not allow GET"];
              }
              var result = functionApply.call(fun, ddoc, args);
              var doc = result[0], resp = result[1], type = typeOf(resp);
              if (type === "object" || type === "string") { return ["up", doc === undefined ? null : doc, wrap(resp)]; }
              throw ["error", "render_error", "undefined response from update function"];
            } catch (e) {
              renderError(e);
            }
          }

          function runList(fun, ddoc, args) {
            var state = render;
            try {
              var tail = functionApply.call(fun, ddoc, args);
              if (state.providesUsed) { tail = runProvides(args[1], ddoc); }
              if (!state.gotRow) { getRow(); }
              if (tail !== undefined && tail !== null) { state.chunks[state.chunks.length] = String(tail); }
              var end = { end: state.chunks };
              if (state.newHeader) { end.start = state.startResp; }
              return end;
            } catch (e) {
              renderError(e);
            }
          }

          // One render request: `section` names the design document member the function is in.
          function renderOp(section, runner, list) {
            return function (message) {
              var ddoc = entry(message);
              if (ddoc === null) { return { unknown_ddoc: message.key }; }
              var cacheKey = section + "\u0000" + message.name;
              var fn = hasOwn.call(ddoc.renderers, cacheKey) ? ddoc.renderers[cacheKey] : null;
              if (fn === null) {
                fn = compile(member(member(ddoc.ddoc, section), message.name));
                ddoc.renderers[cacheKey] = fn;
              }
              installGlobals(ddoc.require);
              render = {
                list: list, chunks: [], size: 0, startResp: {}, newHeader: false, gotRow: false, lastRow: false,
                providesUsed: false, mimeFuns: [], contentType: null
              };
              try {
                return { ok: runner(fn, ddoc.ddoc, [message.arg, message.req]) };
              } finally {
                render = null;
              }
            };
          }
        """#
}
