-- Workload push-photos (inline): POST /{db}/_bulk_docs with new_edits=false and the
-- photos inline as base64 `data`, the way PouchDB pushes attachments. Each request carries
-- PHOTOS_PER_REQUEST documents with one photo each; units are raw photo bytes.
--
-- wrk args (after --): db manifest [photos_per_request] [salt_hex]

local dir = string.match(debug.getinfo(1, "S").source, "^@(.*/)") or "./"
package.path = dir .. "?.lua;" .. package.path
local common = require("common")

local db, photos, per_request, salt
local counter = 0
local headers = { ["Content-Type"] = "application/json", ["Accept"] = "application/json" }
local ok_statuses = { [201] = true }

setup = common.setup
done = common.done

function init(args)
  db = args[1] or error("usage: push_photos_inline.lua db manifest [photos_per_request] [salt_hex]")
  photos = common.read_photos(args[2], true)
  per_request = tonumber(args[3] or "4")
  salt = tonumber(args[4] or "0", 16)
end

function request()
  local docs = {}
  for i = 1, per_request do
    counter = counter + 1
    local photo = photos[(counter + tid) % #photos + 1]
    local hash = common.rev_hash(tid, counter, salt)
    docs[i] = table.concat({
      string.format('{"_id":"inline-%d-%d","_rev":"1-%s","_revisions":{"start":1,"ids":["%s"]},',
        tid, counter, hash, hash),
      '"type":"photo","_attachments":{"photo.jpg":{"content_type":"image/jpeg","digest":"',
      photo.digest, '","data":"', photo.base64, '"}}}',
    })
  end
  local body = '{"new_edits":false,"docs":[' .. table.concat(docs, ",") .. "]}"
  return common.request("POST", "/" .. db .. "/_bulk_docs", headers, body)
end

function response(status, _, body)
  common.record(status, body, ok_statuses, per_request * photos[1].length)
  common.publish()
end
