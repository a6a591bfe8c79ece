-- Workload read: GET /{db}/{doc} for random documents of the seeded database (ids
-- `seed-<i>`, i = 1…count). Run with --latency; the driver reports req/s and p99.
--
-- wrk args (after --): db count

local dir = string.match(debug.getinfo(1, "S").source, "^@(.*/)") or "./"
package.path = dir .. "?.lua;" .. package.path
local common = require("common")

local db, count
local headers = { ["Accept"] = "application/json" }
local ok_statuses = { [200] = true }

setup = common.setup
done = common.done

function init(args)
  db = args[1] or error("usage: read.lua db count")
  count = tonumber(args[2])
  math.randomseed(tid * 7919 + os.time())
end

function request()
  return common.request("GET", string.format("/%s/seed-%d", db, math.random(1, count)), headers, nil)
end

function response(status, _, body)
  common.record(status, body, ok_statuses, 1)
  common.publish()
end
