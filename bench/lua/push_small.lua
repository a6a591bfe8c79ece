-- Workload push-small: POST /{db}/_bulk_docs with new_edits=false, like the CouchDB
-- replicator pushing small documents. Each request carries DOCS_PER_REQUEST new documents
-- (~250 bytes each, half of it the id and the rev hash twice) whose ids and revs are unique per (run salt, thread, counter).
--
-- wrk args (after --): db [docs_per_request] [salt_hex]

local dir = string.match(debug.getinfo(1, "S").source, "^@(.*/)") or "./"
package.path = dir .. "?.lua;" .. package.path
local common = require("common")

local db, docs_per_request, salt
local counter = 0
local headers = { ["Content-Type"] = "application/json", ["Accept"] = "application/json" }
local ok_statuses = { [201] = true }
local filler = "Lorem ipsum dolor sit amet."

setup = common.setup
done = common.done

function init(args)
  db = args[1] or error("usage: push_small.lua db [docs_per_request] [salt_hex]")
  docs_per_request = tonumber(args[2] or "100")
  salt = tonumber(args[3] or "0", 16)
  math.randomseed(tid * 7919 + os.time())
end

function request()
  local docs = {}
  for i = 1, docs_per_request do
    counter = counter + 1
    local hash = common.rev_hash(tid, counter, salt)
    docs[i] = string.format(
      '{"_id":"small-%d-%d","_rev":"1-%s","_revisions":{"start":1,"ids":["%s"]},'
        .. '"type":"note","n":%d,"title":"Benchmark note %d of thread %d",'
        .. '"tags":["bench","small"],"body":"%s"}',
      tid, counter, hash, hash, counter, counter, tid, filler)
  end
  local body = '{"new_edits":false,"docs":[' .. table.concat(docs, ",") .. "]}"
  return common.request("POST", "/" .. db .. "/_bulk_docs", headers, body)
end

function response(status, _, body)
  common.record(status, body, ok_statuses, docs_per_request)
  common.publish()
end
