-- MD5 of "prefix .. tail" from the MD5 state after `prefix` (which the driver computes once per
-- photo) and a 64-byte `tail`, so every request can carry a photo no server has seen before at the
-- cost of three 64-byte compressions instead of hashing 512 KiB in Lua.
--
-- Needs LuaJIT's `bit` library (wrk is built on LuaJIT). The prefix length must be a multiple of 64
-- bytes; the message is then prefix (whole blocks), tail (one block) and one padding block.

local bit = require("bit")
local band, bor, bxor, bnot, rol, tobit = bit.band, bit.bor, bit.bxor, bit.bnot, bit.rol, bit.tobit

local M = {}

-- RFC 1321 constants: K[i] = floor(abs(sin(i + 1)) * 2^32), per-round shifts.
local K = {
  0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
  0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
  0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
  0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
  0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
  0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
  0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
  0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
}
for i = 1, 64 do K[i] = tobit(K[i]) end
local S = { 7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21 }

--- One MD5 compression of the 16 little-endian words `x` (1-based) into `state` {a, b, c, d}.
local function compress(state, x)
  local a, b, c, d = state[1], state[2], state[3], state[4]
  for i = 0, 63 do
    local f, g
    if i < 16 then
      f, g = bor(band(b, c), band(bnot(b), d)), i
    elseif i < 32 then
      f, g = bor(band(d, b), band(bnot(d), c)), (5 * i + 1) % 16
    elseif i < 48 then
      f, g = bxor(b, c, d), (3 * i + 5) % 16
    else
      f, g = bxor(c, bor(b, bnot(d))), (7 * i) % 16
    end
    local s = S[math.floor(i / 16) * 4 + i % 4 + 1]
    a, d, c, b = d, c, b, tobit(b + rol(tobit(a + f + K[i + 1] + x[g + 1]), s))
  end
  state[1], state[2] = tobit(state[1] + a), tobit(state[2] + b)
  state[3], state[4] = tobit(state[3] + c), tobit(state[4] + d)
end

local function words(block)
  local x = {}
  for j = 0, 15 do
    local b1, b2, b3, b4 = string.byte(block, j * 4 + 1, j * 4 + 4)
    x[j + 1] = tobit(b1 + b2 * 0x100 + b3 * 0x10000 + b4 * 0x1000000)
  end
  return x
end

local function le_bytes(word)
  return string.char(band(word, 0xff), band(bit.rshift(word, 8), 0xff), band(bit.rshift(word, 16), 0xff),
    band(bit.rshift(word, 24), 0xff))
end

local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

--- Standard base64 with padding.
function M.base64(bytes)
  local out = {}
  for i = 1, #bytes, 3 do
    local b1, b2, b3 = string.byte(bytes, i, i + 2)
    local n = b1 * 0x10000 + (b2 or 0) * 0x100 + (b3 or 0)
    local chars = {}
    for k = 1, 4 do
      local index = math.floor(n / 2 ^ (6 * (4 - k))) % 64
      chars[k] = string.sub(alphabet, index + 1, index + 1)
    end
    if not b2 then chars[3] = "=" end
    if not b3 then chars[4] = "=" end
    out[#out + 1] = table.concat(chars)
  end
  return table.concat(out)
end

--- Parses the driver's state: 32 hex digits, the four state words as little-endian bytes
--- (the same layout as an MD5 digest).
function M.state(hex)
  local state = {}
  for w = 0, 3 do
    local word = 0
    for k = 3, 0, -1 do
      word = word * 0x100 + tonumber(string.sub(hex, w * 8 + k * 2 + 1, w * 8 + k * 2 + 2), 16)
    end
    state[w + 1] = tobit(word)
  end
  return state
end

--- The raw 16-byte MD5 of prefix .. tail, from the state after `prefix_length` bytes.
function M.digest(prefix_state, prefix_length, tail)
  assert(#tail == 64 and prefix_length % 64 == 0, "md5tail: 64-byte tail after whole blocks only")
  local state = { prefix_state[1], prefix_state[2], prefix_state[3], prefix_state[4] }
  compress(state, words(tail))
  local bits = (prefix_length + 64) * 8
  local pad = { tobit(0x80), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }
  pad[15] = tobit(bits % 0x100000000)
  pad[16] = tobit(math.floor(bits / 0x100000000))
  compress(state, pad)
  return le_bytes(state[1]) .. le_bytes(state[2]) .. le_bytes(state[3]) .. le_bytes(state[4])
end

return M
