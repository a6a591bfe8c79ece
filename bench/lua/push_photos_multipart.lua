-- Workload push-photos (multipart): PUT /{db}/{doc}?new_edits=false with a
-- multipart/related body holding the JSON and one photo, byte-for-byte the way the
-- CouchDB replicator pushes a document with an attachment. Photo bytes and their md5
-- digests come from the driver's manifest and are cycled; ids and revs are unique.
--
-- wrk args (after --): db manifest [salt_hex]

local dir = string.match(debug.getinfo(1, "S").source, "^@(.*/)") or "./"
package.path = dir .. "?.lua;" .. package.path
local common = require("common")

local db, photos, salt
local counter = 0
local ok_statuses = { [200] = true, [201] = true, [202] = true }

setup = common.setup
done = common.done

function init(args)
  db = args[1] or error("usage: push_photos_multipart.lua db manifest [salt_hex]")
  photos = common.read_photos(args[2], false)
  salt = tonumber(args[3] or "0", 16)
end

function request()
  counter = counter + 1
  local photo = photos[(counter + tid) % #photos + 1]
  local hash = common.rev_hash(tid, counter, salt)
  local id = string.format("photo-%d-%d", tid, counter)
  local boundary = common.rev_hash(counter, tid, salt)
  local json = string.format(
    '{"_id":"%s","_rev":"1-%s","_revisions":{"start":1,"ids":["%s"]},"type":"photo",'
      .. '"_attachments":{"photo.jpg":{"content_type":"image/jpeg","revpos":1,'
      .. '"digest":"%s","length":%d,"follows":true}}}',
    id, hash, hash, photo.digest, photo.length)
  local body = table.concat({
    "--", boundary, "\r\nContent-Type: application/json\r\n\r\n", json,
    "\r\n--", boundary,
    '\r\nContent-Disposition: attachment; filename="photo.jpg"\r\nContent-Type: image/jpeg\r\n',
    "Content-Length: ", tostring(photo.length), "\r\n\r\n", photo.bytes,
    "\r\n--", boundary, "--",
  })
  local headers = {
    ["Content-Type"] = 'multipart/related; boundary="' .. boundary .. '"',
    ["Accept"] = "application/json",
  }
  return common.request("PUT", "/" .. db .. "/" .. id .. "?new_edits=false", headers, body)
end

function response(status, _, body)
  common.record(status, body, ok_statuses, photos[1].length)
  common.publish()
end
