/// The JavaScript half of a query-server worker's design environment. A worker gives every design document
/// (database, id and revision) its own Duktape global environment (`duk_push_thread_new_globalenv`: fresh
/// built-ins, a fresh global object) and evaluates this script there before any of the document's code. The
/// script captures what it relies on, freezes every built-in reachable from the global object (constructors,
/// prototypes, `JSON`, `Math`…), removes `Duktape` (finalizers, threads) and evaluates to the environment's
/// handler, which the Swift half keeps on the environment's value stack and calls with each request's JSON text.
/// Requests and answers cross as text only: no object of one environment is ever handed to another, so nothing
/// a design function changes or keeps is seen by another design document's functions.
///
/// What design functions see is what CouchDB's query server gives them: the globals `emit`, `log`,
/// `toJSON`, `isArray`, `sum` and `require` (CommonJS modules stored in the design document, `views/lib`
/// only for map functions); a filter is called as `fun.apply(ddoc, [doc, req])`, a validation as
/// `fun.apply(ddoc, [newDoc, oldDoc, userCtx, secObj])`, a map as `fun(doc)`, a reduce as
/// `fun(keys, values, rereduce)`; shows, lists and updates as `QueryRenderScript` says. The helpers are
/// reinstalled before every request.
enum QueryRuntimeScript {
    static let source = #"""
        (function () {
          "use strict";
          var global = (0, eval)("this");
          var parse = JSON.parse, stringify = JSON.stringify, arrayIsArray = Array.isArray;
          var objectKeys = Object.keys, hasOwn = Object.prototype.hasOwnProperty, ErrorType = Error;
          var functionApply = Function.prototype.apply, functionCall = Function.prototype.call;
          var globalEval = eval;
          var MAX_REDUCERS = 256;
          var found = null, reducers = {}, reducerCount = 0;
          var logs = [], emitted = null;
          // The native exchange of a list's `getRow()` (see `WorkerExchange`): kept here, not left to design code.
          var exchange = global.__couchlite_exchange;
          delete global.__couchlite_exchange;

          // Every built-in reachable from the global object, frozen before any design function runs: a design
          // function cannot replace `Function.prototype.apply`, `Array.prototype.push`, `JSON.stringify`…
          // not even in its own environment. `Duktape` (finalizers, threads, internals) is not theirs.
          (function () {
            var getNames = Object.getOwnPropertyNames, getDescriptor = Object.getOwnPropertyDescriptor;
            var getPrototype = Object.getPrototypeOf, freeze = Object.freeze, isFrozen = Object.isFrozen;
            function walk(value) {
              if (value === null || (typeof value !== "object" && typeof value !== "function")) { return; }
              if (value === global || isFrozen(value)) { return; }
              freeze(value);
              walk(getPrototype(value));
              var names = getNames(value);
              for (var j = 0; j < names.length; j++) {
                var descriptor = getDescriptor(value, names[j]);
                if (descriptor === undefined) { continue; }
                if (hasOwn.call(descriptor, "value")) { walk(descriptor.value); }
                walk(descriptor.get);
                walk(descriptor.set);
              }
            }
            try { delete global.Duktape; } catch (e) { global.Duktape = undefined; }
            var names = getNames(global);
            for (var i = 0; i < names.length; i++) {
              var descriptor = getDescriptor(global, names[i]);
              if (descriptor !== undefined && hasOwn.call(descriptor, "value")) { walk(descriptor.value); }
            }
            walk(getPrototype(global));
            walk(function () {});
            walk((function () { return arguments; })());
          })();

          function fail(error, reason) { return { error: error, reason: reason }; }

          function compile(source) {
            var fn;
            if (typeof source !== "string") {
              throw fail("compilation_error", "Expression does not eval to a function. (" + String(source) + ")");
            }
            try {
              fn = globalEval("(" + source + "\n)");
            } catch (e) {
              throw fail("compilation_error", String(e) + " (" + source + ")");
            }
            if (typeof fn !== "function") {
              throw fail("compilation_error", "Expression does not eval to a function. (" + source + ")");
            }
            return fn;
          }

          function emit(key, value) {
            if (emitted === null) { throw fail("not_a_map", "emit() is only available in a map function"); }
            emitted[emitted.length] = [key === undefined ? null : key, value === undefined ? null : value];
          }

          function log(message) {
            if (typeof message !== "string") { message = stringify(message); }
            if (logs.length < 1000) { logs[logs.length] = String(message).slice(0, 65536); }
          }

          function sum(values) {
            var total = 0;
            for (var i = 0; i < values.length; i++) { total += values[i]; }
            return total;
          }

          // CommonJS modules of `root` (the design document, or `{views: {lib}}` for map functions).
          function makeRequire(root, cache, parentPath) {
            return function (name) {
              if (typeof name !== "string") { throw fail("invalid_require_path", "require() takes a string"); }
              var parts = name.split("/"), path = [], i, node = root;
              if (name.charAt(0) === ".") { path = parentPath.slice(0); }
              for (i = 0; i < parts.length; i++) {
                if (parts[i] === "..") {
                  if (path.length === 0) {
                    throw fail("invalid_require_path", "Object has no parent " + stringify(name));
                  }
                  path.length = path.length - 1;
                } else if (parts[i] !== "." && parts[i] !== "") {
                  path[path.length] = parts[i];
                }
              }
              var id = path.join("/");
              if (hasOwn.call(cache, id)) { return cache[id].exports; }
              for (i = 0; i < path.length; i++) {
                if (node === null || typeof node !== "object" || !hasOwn.call(node, path[i])) {
                  throw fail("invalid_require_path",
                    "Object has no property " + stringify(path[i]) + ". " + stringify(name));
                }
                node = node[path[i]];
              }
              if (typeof node !== "string") {
                throw fail("invalid_require_path", "Module " + stringify(name) + " is not a string of source");
              }
              var module = { id: id, exports: {} };
              cache[id] = module;
              var body;
              try {
                body = globalEval("(function (module, exports, require) {" + node + "\n})");
              } catch (e) {
                delete cache[id];
                throw fail("compilation_error", String(e) + " (module " + id + ")");
              }
              functionCall.call(body, module.exports, module, module.exports, makeRequire(root, cache, path.slice(0, -1)));
              return module.exports;
            };
          }

          function installGlobals(requireFunction) {
            global.emit = emit;
            global.log = log;
            global.sum = sum;
            global.toJSON = function (value) { return stringify(value); };
            global.isArray = function (value) { return arrayIsArray(value); };
            global.require = requireFunction;
            global.send = send;
            global.getRow = getRow;
            global.start = start;
            global.provides = provides;
            global.registerType = registerType;
          }

          // This environment's one design document, compiled on the first request that carries it; its
          // functions are compiled on first use.
          function entry(carrier) {
            if (found === null) {
              if (carrier.ddoc === undefined) { return null; }
              var ddoc = carrier.ddoc, views = ddoc.views;
              var viewLib = views !== null && typeof views === "object" ? views.lib : undefined;
              found = {
                ddoc: ddoc, filters: {}, views: {}, validate: null, renderers: {},
                require: makeRequire(ddoc, {}, []),
                mapRequire: makeRequire({ views: { lib: viewLib } }, {}, [])
              };
            }
            return found;
          }

          function member(object, name) {
            return object !== null && typeof object === "object" && hasOwn.call(object, name)
              ? object[name] : undefined;
          }

          function thrown(e) {
            if (arrayIsArray(e) && (e[0] === "error" || e[0] === "fatal")) {
              return fail(String(e[1]), e[2] === undefined ? null : e[2]);
            }
            if (e instanceof ErrorType) { return fail(e.name || "Error", e.message === undefined ? "" : e.message); }
            if (e !== null && typeof e === "object") {
              if (typeof e.error === "string" && e.reason !== undefined) { return fail(e.error, e.reason); }
              return fail("unnamed_error", e);
            }
            return fail("unnamed_error", e === undefined ? null : e);
          }

        \#(QueryRenderScript.source)
          var ops = {
            show: renderOp("shows", runShow, false),
            update: renderOp("updates", runUpdate, false),
            list: renderOp("lists", runList, true),

            filter: function (message) {
              var ddoc = entry(message);
              if (ddoc === null) { return { unknown_ddoc: message.key }; }
              var fn = hasOwn.call(ddoc.filters, message.name) ? ddoc.filters[message.name] : null;
              if (fn === null) {
                fn = compile(member(member(ddoc.ddoc, "filters"), message.name));
                ddoc.filters[message.name] = fn;
              }
              installGlobals(ddoc.require);
              var docs = message.docs, req = message.req, results = [];
              for (var i = 0; i < docs.length; i++) {
                results[i] = functionCall.call(fn, ddoc.ddoc, docs[i], req) ? true : false;
              }
              return { ok: results };
            },

            map: function (message) {
              var ddoc = entry(message);
              if (ddoc === null) { return { unknown_ddoc: message.key }; }
              var names = message.views, fns = [], i, j;
              for (j = 0; j < names.length; j++) {
                var fn = hasOwn.call(ddoc.views, names[j]) ? ddoc.views[names[j]] : null;
                if (fn === null) {
                  fn = compile(member(member(member(ddoc.ddoc, "views"), names[j]), "map"));
                  ddoc.views[names[j]] = fn;
                }
                fns[j] = fn;
              }
              installGlobals(ddoc.mapRequire);
              var docs = message.docs, results = [];
              for (i = 0; i < docs.length; i++) {
                var perView = [];
                for (j = 0; j < fns.length; j++) {
                  emitted = [];
                  try {
                    fns[j](docs[i]);
                    perView[j] = emitted;
                  } catch (e) {
                    perView[j] = thrown(e);
                  }
                  emitted = null;
                }
                results[i] = perView;
              }
              return { ok: results };
            },

            reduce: function (message) {
              var ddoc = entry(message);
              if (ddoc === null) { return { unknown_ddoc: message.key }; }
              var sources = message.sources, results = [];
              installGlobals(ddoc.mapRequire);
              for (var j = 0; j < sources.length; j++) {
                var fn = hasOwn.call(reducers, sources[j]) ? reducers[sources[j]] : null;
                if (fn === null) {
                  fn = compile(sources[j]);
                  if (reducerCount >= MAX_REDUCERS) { reducers = {}; reducerCount = 0; }
                  reducers[sources[j]] = fn;
                  reducerCount++;
                }
                var value = fn(message.rereduce ? null : message.keys, message.values, message.rereduce ? true : false);
                results[j] = value === undefined ? null : value;
              }
              return { ok: results };
            },

            // `index`: which of `message.ddocs` is this environment's; `decided[i]`: item i was refused by an
            // earlier design document (it is not shown to this one, as CouchDB stops at the first refusal).
            validate: function (message, index, decided) {
              var carrier = message.ddocs[index], ddoc = entry(carrier);
              if (ddoc === null) { return { unknown_ddoc: carrier.key }; }
              if (ddoc.validate === null) { ddoc.validate = compile(member(ddoc.ddoc, "validate_doc_update")); }
              var items = message.items, results = [];
              installGlobals(ddoc.require);
              for (var i = 0; i < items.length; i++) {
                var outcome = null;
                if (decided[i] !== true) {
                  try {
                    functionCall.call(ddoc.validate, ddoc.ddoc, items[i]["new"], items[i].old, message.userCtx,
                      message.secObj);
                  } catch (e) {
                    outcome = validationOutcome(e);
                  }
                }
                results[i] = outcome;
              }
              return { ok: results };
            }
          };

          // couch_query_servers: a thrown object whose only member is `forbidden` or `unauthorized` refuses the
          // write with 403 or 401; an Error is an error named after it; anything else is `unknown_error`.
          function validationOutcome(e) {
            if (e instanceof ErrorType) { return fail(e.name || "Error", e.message === undefined ? "" : e.message); }
            if (e !== null && typeof e === "object" && !arrayIsArray(e)) {
              var keys = objectKeys(e);
              if (keys.length === 1 && keys[0] === "forbidden") { return { forbidden: e.forbidden }; }
              if (keys.length === 1 && keys[0] === "unauthorized") { return { unauthorized: e.unauthorized }; }
            }
            return fail("unknown_error", e === undefined ? null : e);
          }

          return function (text, extra) {
            var response;
            logs = [];
            emitted = null;
            try {
              var message = parse(text), options = parse(extra);
              var op = hasOwn.call(ops, message.op) ? ops[message.op] : null;
              response = op === null
                ? fail("unknown_command", "unknown command " + stringify(message.op))
                : op(message, options.index, options.decided);
            } catch (e) {
              response = thrown(e);
            }
            if (logs.length > 0) { response.log = logs; }
            try {
              return stringify(response);
            } catch (e) {
              return stringify(fail("invalid_result", String(e)));
            }
          };
        })()
        """#
}
