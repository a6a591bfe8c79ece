-- Workload push-photos (multipart): PUT /{db}/{doc}?new_edits=false with a
-- multipart/related body holding the JSON and one photo, byte-for-byte the way the
-- CouchDB replicator pushes a document with an attachment. Photo bytes and their md5
-- digests come from the driver's manifest and are cycled; ids and revs are unique.
--
-- With mode `unique`, the manifest lines are `file md5-state-hex length` (see bench/run) and every
-- request's photo is new: the photo's last 64 bytes are replaced by ones unique to the thread, request
-- and salt, and md5tail.lua finishes the md5 from the driver's state after the first length - 64 bytes.
-- So the server stores every photo (no dedupe) and still checks each digest as the replicator's.
--
-- wrk args (after --): db manifest [salt_hex] [mode: cycle | unique]

local dir = string.match(debug.getinfo(1, "S").source, "^@(.*/)") or "./"
package.path = dir .. "?.lua;" .. package.path
local common = require("common")
local md5tail = require("md5tail")

local db, photos, salt, unique
local counter = 0
local ok_statuses = { [200] = true, [201] = true, [202] = true }

setup = common.setup
done = common.done

function init(args)
  db = args[1] or error("usage: push_photos_multipart.lua db manifest [salt_hex]")
  salt = tonumber(args[3] or "0", 16)
  unique = args[4] == "unique"
  if unique then
    photos = {}
    for line in io.lines(args[2]) do
      local file, state, length = string.match(line, "^(%S+)%s+(%x+)%s+(%d+)$")
      if file then
        length = tonumber(length)
        local prefix = string.sub(common.read_file(file), 1, length - 64)
        photos[#photos + 1] = { prefix = prefix, state = md5tail.state(state), length = length }
      end
    end
    if #photos == 0 then error("no photos in " .. tostring(args[2])) end
  else
    photos = common.read_photos(args[2], false)
  end
end

function request()
  counter = counter + 1
  local photo = photos[(counter + tid) % #photos + 1]
  local hash = common.rev_hash(tid, counter, salt)
  local id = string.format("photo-%d-%d", tid, counter)
  local boundary = common.rev_hash(counter, tid, salt)
  local head, tail, digest = photo.bytes, "", photo.digest
  if unique then
    head, tail = photo.prefix, hash .. hash
    digest = "md5-" .. md5tail.base64(md5tail.digest(photo.state, photo.length - 64, tail))
  end
  local json = string.format(
    '{"_id":"%s","_rev":"1-%s","_revisions":{"start":1,"ids":["%s"]},"type":"photo",'
      .. '"_attachments":{"photo.jpg":{"content_type":"image/jpeg","revpos":1,'
      .. '"digest":"%s","length":%d,"follows":true}}}',
    id, hash, hash, digest, photo.length)
  local body = table.concat({
    "--", boundary, "\r\nContent-Type: application/json\r\n\r\n", json,
    "\r\n--", boundary,
    '\r\nContent-Disposition: attachment; filename="photo.jpg"\r\nContent-Type: image/jpeg\r\n',
    "Content-Length: ", tostring(photo.length), "\r\n\r\n", head, tail,
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
