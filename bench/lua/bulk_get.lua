-- Workload pull (_bulk_get): POST /{db}/_bulk_get?revs=true&latest=true for DOCS_PER_REQUEST
-- random documents of the seeded database, as PouchDB and the CouchDB replicator pull.
-- The driver seeds ids `seed-<i>` (i = 1…count) with rev `1-<salt 16 hex><i as 16 hex>`.
--
-- wrk args (after --): db count salt_hex [docs_per_request]

local dir = string.match(debug.getinfo(1, "S").source, "^@(.*/)") or "./"
package.path = dir .. "?.lua;" .. package.path
local common = require("common")

local db, count, salt_hex, per_request
local headers = { ["Content-Type"] = "application/json", ["Accept"] = "application/json" }
local ok_statuses = { [200] = true }

setup = common.setup
done = common.done

function init(args)
  db = args[1] or error("usage: bulk_get.lua db count salt_hex [docs_per_request]")
  count = tonumber(args[2])
  salt_hex = args[3]
  per_request = tonumber(args[4] or "100")
  math.randomseed(tid * 7919 + os.time())
end

function request()
  local docs = {}
  for i = 1, per_request do
    local n = math.random(1, count)
    docs[i] = string.format('{"id":"seed-%d","rev":"1-%s%016x"}', n, salt_hex, n)
  end
  local body = '{"docs":[' .. table.concat(docs, ",") .. "]}"
  return common.request("POST", "/" .. db .. "/_bulk_get?revs=true&latest=true", headers, body)
end

function response(status, _, body)
  common.record(status, body, ok_statuses, per_request)
  common.publish()
end
