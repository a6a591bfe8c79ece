-- Shared helpers for the wrk request generators in this folder.
--
-- Each wrk thread runs its own Lua state, so everything here is per thread. The driver
-- (bench/run) passes workload parameters after `--` on the wrk command line; `setup()`
-- numbers the threads so that generated ids never repeat across threads, and `done()`
-- sums the per-thread counters and prints one machine-readable line:
--
--   BENCHJSON {"requests":…,"ok":…,"bad":…,"units":…,"bytes_out":…, …}
--
-- The driver reads only that line; wrk's own text summary is kept in the log for humans.

local M = {}

local threads = {}
local next_tid = 0

--- Numbers each wrk thread (called by wrk in the main state, once per thread).
function M.setup(thread)
  next_tid = next_tid + 1
  thread:set("tid", next_tid)
  table.insert(threads, thread)
end

--- Per-thread counters; `units` is what the workload counts (docs, photo bytes, …).
M.stats = { ok = 0, bad = 0, units = 0, bytes_out = 0, item_errors = 0, first_error = "" }

--- Records one response. A status outside `ok_statuses` or a body containing an `"error"`
--- member (CouchDB's per-item failure in _bulk_docs / _bulk_get results) counts as bad;
--- only the first failure's text is kept, to keep the report short.
function M.record(status, body, ok_statuses, units)
  local s = M.stats
  if not ok_statuses[status] then
    s.bad = s.bad + 1
    if s.first_error == "" then
      s.first_error = "HTTP " .. tostring(status) .. ": " .. string.sub(body or "", 1, 300)
    end
    return false
  end
  if body and string.find(body, '"error":', 1, true) then
    s.item_errors = s.item_errors + 1
    if s.first_error == "" then
      s.first_error = "HTTP " .. tostring(status) .. " with item error: " .. string.sub(body, 1, 300)
    end
    return false
  end
  s.ok = s.ok + 1
  s.units = s.units + units
  return true
end

--- Builds a raw HTTP/1.1 request. Unlike `wrk.format` this keeps the `-H` headers from the
--- command line (Authorization) when per-request headers are given.
function M.request(method, path, headers, body)
  local lines = { method .. " " .. path .. " HTTP/1.1" }
  for name, value in pairs(wrk.headers) do
    if headers == nil or headers[name] == nil then
      lines[#lines + 1] = name .. ": " .. value
    end
  end
  if headers then
    for name, value in pairs(headers) do
      lines[#lines + 1] = name .. ": " .. value
    end
  end
  if body then
    lines[#lines + 1] = "Content-Length: " .. #body
    M.stats.bytes_out = M.stats.bytes_out + #body
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = body or ""
  return table.concat(lines, "\r\n")
end

--- A 32-hex-digit revision hash that is unique per (thread, counter, salt).
function M.rev_hash(tid, n, salt)
  return string.format("%08x%08x%016x", salt or 0, tid, n)
end

--- Reads a whole file or raises with the path in the message.
function M.read_file(path)
  local f, err = io.open(path, "rb")
  if not f then error("cannot open " .. tostring(path) .. ": " .. tostring(err)) end
  local data = f:read("*a")
  f:close()
  return data
end

--- Reads the driver's photo manifest: one `file md5-base64 length [base64-file]` per line.
function M.read_photos(manifest, with_base64)
  local photos = {}
  for line in io.lines(manifest) do
    local file, digest, length, b64file = string.match(line, "^(%S+)%s+(%S+)%s+(%d+)%s*(%S*)$")
    if file then
      local p = { digest = digest, length = tonumber(length) }
      if with_base64 then
        p.base64 = M.read_file(b64file)
      else
        p.bytes = M.read_file(file)
      end
      photos[#photos + 1] = p
    end
  end
  if #photos == 0 then error("no photos in " .. tostring(manifest)) end
  return photos
end

local function json_string(s)
  return '"' .. string.gsub(s, '[%c"\\]', function(c)
    return string.format("\\u%04x", string.byte(c))
  end) .. '"'
end

--- Sums the per-thread counters and prints the BENCHJSON line (wrk's `done` hook).
function M.done(summary, latency, requests)
  local t = { ok = 0, bad = 0, units = 0, bytes_out = 0, item_errors = 0 }
  local first_error = ""
  for _, thread in ipairs(threads) do
    -- thread:get returns only scalars, so each thread publishes its counters one by one.
    for k, _ in pairs(t) do
      t[k] = t[k] + (thread:get("stat_" .. k) or 0)
    end
    local fe = thread:get("stat_first_error")
    if first_error == "" and fe and fe ~= "" then first_error = fe end
  end
  local e = summary.errors
  local fields = {
    string.format('"requests":%d', summary.requests),
    string.format('"duration_us":%d', summary.duration),
    string.format('"bytes_in":%d', summary.bytes),
    string.format('"bytes_out":%d', t.bytes_out),
    string.format('"ok":%d', t.ok),
    string.format('"bad":%d', t.bad),
    string.format('"item_errors":%d', t.item_errors),
    string.format('"units":%d', t.units),
    string.format('"err_connect":%d', e.connect),
    string.format('"err_read":%d', e.read),
    string.format('"err_write":%d', e.write),
    string.format('"err_status":%d', e.status),
    string.format('"err_timeout":%d', e.timeout),
    string.format('"lat_p50_us":%d', latency:percentile(50)),
    string.format('"lat_p99_us":%d', latency:percentile(99)),
    string.format('"lat_max_us":%d', latency.max),
    '"first_error":' .. json_string(first_error),
  }
  io.write("BENCHJSON {" .. table.concat(fields, ",") .. "}\n")
end

--- Copies this thread's counters into globals so that `done` (main state) can read them
--- with `thread:get`. Called after every response; cheap (a handful of assignments).
function M.publish()
  local s = M.stats
  stat_ok = s.ok
  stat_bad = s.bad
  stat_units = s.units
  stat_bytes_out = s.bytes_out
  stat_item_errors = s.item_errors
  stat_first_error = s.first_error
end

--- Loads this folder's modules regardless of the working directory wrk was started from.
function M.dir()
  local source = debug.getinfo(1, "S").source
  return string.match(source, "^@(.*/)") or "./"
end

return M
