-- prelude.lua: the Digipology Lua API v1, written in Lua over a small native
-- core. Loaded once per VM in a privileged environment; scripts never see
-- this file's locals. Reference: docs/lua-api.md.
--
-- The host passes:
--   core   native functions that need no transaction (budget, log, fail)
--   CUR    a table whose field `k` is the native kernel access for the
--          callback now running (`k(op, ...)`, dispatched by name)
--   G      the privileged globals (the real library tables)
--   N      typed native functions for the hot paths (lua-runtime/src/native.rs):
--          read(handle, code), alive(handle, id), lookup(id),
--          items(handle), move_to(handle, id, container_id, index),
--          move_all(handle, id, container_id), submit(type, ...)
local core, CUR, G, N = ...

local type, select, error, rawget, rawset, rawequal, rawlen, next =
  G.type, G.select, G.error, G.rawget, G.rawset, G.rawequal, G.rawlen, G.next
local raw_pairs, raw_ipairs, raw_tostring, tonumber = G.pairs, G.ipairs, G.tostring, G.tonumber
local raw_setmetatable, raw_getmetatable = G.setmetatable, G.getmetatable
local raw_pcall, raw_xpcall, raw_load, assert = G.pcall, G.xpcall, G.load, G.assert
local string, table, math, utf8, coroutine = G.string, G.table, G.math, G.utf8, G.coroutine
local pack, unpack, sort, concat = table.pack, table.unpack, table.sort, table.concat
local sfind, sformat, sgsub, ssub, sbyte, srep = string.find, string.format, string.gsub, string.sub, string.byte, string.rep
local floor, mtype = math.floor, math.type

local K = CUR.k
local N_read, N_alive, N_lookup, N_items, N_move_to, N_move_all, N_submit =
  N.read, N.alive, N.lookup, N.items, N.move_to, N.move_all, N.submit

-- Field name -> the code `N_read` takes (the native side owns the list).
local CODE = {}
for i, name in G.ipairs(N.FIELDS) do CODE[name] = i end

-- A value every proxy's `getmetatable` answers with; the real metatable stays
-- private.
local PROXY = raw_setmetatable({}, {
  __metatable = false,
  __tostring = function() return "proxy" end,
  __newindex = function() error("proxy markers are read-only", 2) end,
})

-- Raises a creator-facing error of a given kind ("sandbox", "budget",
-- "guard_mutation", "subcommand", "runtime") at the caller's line.
local function fail(kind, msg, level)
  core.fail(kind)
  error(msg, (level or 1) + 1)
end

----------------------------------------------------------------------------
-- Determinism and sandbox helpers
----------------------------------------------------------------------------

local BUDGET_MSG = "instruction budget exceeded"

local function budget_check()
  if core.exhausted() then error(BUDGET_MSG, 0) end
end

-- Keys sort numbers first (ascending), then strings (byte order), then
-- false, true. Other key types have no stable order.
local RANK = { number = 1, string = 2, boolean = 3 }
local function key_less(a, b)
  local ra, rb = RANK[type(a)], RANK[type(b)]
  if ra ~= rb then return ra < rb end
  if ra == 3 then return a == false and b == true end
  return a < b
end

local safe_next -- below: `next` in pairs order

local function sorted_pairs(t)
  local mt = raw_getmetatable(t)
  if mt == PROXY or (type(mt) == "table" and rawget(mt, "__pairs")) then
    -- The table's own __pairs decides; without one, the raw `next` must
    -- not reach the script.
    local f, s, c = raw_pairs(t)
    if f == next then f = safe_next end
    return f, s, c
  end
  if type(t) ~= "table" then
    error("bad argument #1 to 'pairs' (table expected, got " .. type(t) .. ")", 2)
  end
  local keys, n = {}, 0
  for k in next, t do
    if not RANK[type(k)] then
      fail("runtime", "pairs: keys must be numbers, strings or booleans (a " .. type(k)
        .. " key has no deterministic order)", 2)
    end
    n = n + 1
    keys[n] = k
  end
  sort(keys, key_less)
  local i = 0
  return function()
    i = i + 1
    local k = keys[i]
    if k ~= nil then return k, t[k] end
  end, nil, nil  -- no state: the table walked may be a private one
end

local function safe_tostring(v)
  local tv = type(v)
  if tv == "table" or tv == "userdata" then
    local mt = raw_getmetatable(v)
    if mt == PROXY then
      -- One of the runtime's own tables (scripts cannot set __metatable):
      -- its __tostring names it; one without prints as "table".
      local s = raw_tostring(v)
      if sfind(s, "^table: ") then return "table" end
      return s
    end
    if type(mt) == "table" and rawget(mt, "__tostring") then
      local s = raw_tostring(v)
      return s
    end
    return tv
  elseif tv == "function" or tv == "thread" then
    return tv
  end
  return raw_tostring(v)
end

local function safe_format(fmt, ...)
  if type(fmt) == "string" then
    local stripped = sgsub(fmt, "%%%%", "")
    if sfind(stripped, "%%[-+ #0]*%d*%.?%d*p") then
      fail("sandbox", "string.format: %p is not available (it would reveal memory addresses)", 2)
    end
    -- %a writes the C library's hexadecimal spelling of a float, and %q
    -- uses it for floats too: neither is the same on every platform.
    if sfind(stripped, "%%[-+ #0]*%d*%.?%d*[aA]") then
      fail("sandbox", "string.format: %a is not available (its spelling depends on the platform)", 2)
    end
  end
  local n = select("#", ...)
  local args = pack(...)
  for i = 1, n do
    local v = args[i]
    local tv = type(v)
    if tv == "table" or tv == "function" or tv == "thread" or tv == "userdata" then
      args[i] = safe_tostring(v)
    elseif tv == "number" and mtype(v) == "float" and type(fmt) == "string"
      and sfind(sgsub(fmt, "%%%%", ""), "%%q") then
      fail("runtime", "string.format: %q writes floats in the platform's spelling; use %s or %.17g", 2)
    elseif tv == "number" and (v ~= v or v == math.huge or v == -math.huge)
      and type(fmt) == "string" and sfind(sgsub(fmt, "%%%%", ""), "%%[-+ #0]*%d*%.?%d*[aAeEfFgG]") then
      -- The C library spells NaN and the infinities differently by
      -- platform; tostring (and %s) spell them nan, inf, -inf everywhere.
      fail("runtime", "string.format: NaN and infinities have no portable form with %a, %e, %f or %g; use %s", 2)
    end
  end
  return sformat(fmt, unpack(args, 1, n))
end

-- Library work in C is metered too: the instruction hook never fires inside
-- a C function, so each library call that walks or builds strings or lists
-- is charged to the budget by its size — one instruction per BYTE_COST
-- bytes read or written, one per element moved, LOAD_COST per byte of
-- source compiled (measured so that a budget's worth of any of them costs
-- about what a budget of Lua instructions does). The pattern matcher and
-- the `..` operator charge their own work from C (third_party/lua-src).
local BYTE_COST = 4
local LOAD_COST = 2

local function charge(n)
  if n >= 1 then core.charge(floor(n)) end
end

local function charge_bytes(n)
  charge(n / BYTE_COST)
end

-- The bytes of the strings among the values.
local function string_bytes(...)
  local n = 0
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    if type(v) == "string" then n = n + #v end
  end
  return n
end

-- Charges the bytes of the strings among the values, and passes them on.
local function charge_results(...)
  charge_bytes(string_bytes(...))
  return ...
end

-- `f`, charged for the bytes of its string arguments and results.
local function metered(f)
  return function(...)
    charge_bytes(string_bytes(...))
    return charge_results(f(...))
  end
end

-- Pattern cost bound. Lua patterns backtrack: every quantified item that has
-- more pattern after it (and every %b, which scans) can multiply the work by
-- the subject length. The matcher charges the budget for every step it
-- takes (third_party/lua-src), so no call can run long; a call whose worst
-- case (n ^ (backtracking items + 1 when unanchored)) is far out of reach is
-- refused at once with a message that says why.
local PATTERN_COST_MAX = 2e7

local function backtracking_items(p)
  local count, i, len, pending = 0, 1, #p, false
  if ssub(p, 1, 1) == "^" then i = 2 end
  while i <= len do
    local c = ssub(p, i, i)
    local item_end
    if c == "%" then
      item_end = i + 1
      local d = ssub(p, i + 1, i + 1)
      if d == "b" then
        item_end = i + 3
        count = count + 1 -- a balance scans up to the rest of the subject
      elseif d == "f" then
        local j = sfind(p, "]", i + 3, true)
        item_end = j or len
      end
    elseif c == "[" then
      local j = i + 1
      if ssub(p, j, j) == "^" then j = j + 1 end
      if ssub(p, j, j) == "]" then j = j + 1 end
      while j <= len and ssub(p, j, j) ~= "]" do
        if ssub(p, j, j) == "%" then j = j + 1 end
        j = j + 1
      end
      item_end = j
    elseif c == "(" or c == ")" then
      item_end = nil
    else
      item_end = i
    end
    if item_end then
      if pending then count = count + 1; pending = false end
      local q = ssub(p, item_end + 1, item_end + 1)
      if q == "*" or q == "+" or q == "-" or q == "?" then
        pending = true
        i = item_end + 2
      else
        i = item_end + 1
      end
    else
      i = i + 1
    end
  end
  return count
end

local function check_pattern(fname, s, p, init, plain)
  if plain or type(s) ~= "string" or type(p) ~= "string" then return end
  local n = #s
  if type(init) == "number" and init > 1 then n = n - init + 1 end
  if n < 2 then return end
  local q = backtracking_items(p)
  if q == 0 then return end
  local anchored = ssub(p, 1, 1) == "^"
  local cost = n ^ (q + (anchored and 0 or 1))
  if cost > PATTERN_COST_MAX then
    fail("budget", sformat(
      "string.%s: pattern too costly for a %d-character subject (%d backtracking items); "
        .. "split the string or simplify the pattern", fname, n, q), 3)
  end
end

local function bounded(fname, f, plain_arg)
  return function(s, p, init, plain, ...)
    charge_bytes((type(s) == "string" and #s or 0) + (type(p) == "string" and #p or 0))
    check_pattern(fname, s, p, init, plain_arg and plain)
    return charge_results(f(s, p, init, plain, ...))
  end
end

local function forbid(name)
  return function() fail("sandbox", name .. " is not available in the sandbox", 2) end
end

-- Read-only proxy over a copy of a library table.
local function readonly(name, src)
  local copy = {}
  for k, v in raw_pairs(src) do copy[k] = v end
  return raw_setmetatable({}, {
    __metatable = PROXY,
    __index = copy,
    __newindex = function(_, k)
      fail("sandbox", name .. " is read-only (tried to set " .. safe_tostring(k) .. ")", 2)
    end,
    __pairs = function() return sorted_pairs(copy) end,
    __len = function() return #copy end,
  })
end

local SAFE_STRING = {}
for k, v in raw_pairs(string) do
  SAFE_STRING[k] = k == "len" and v or metered(v)
end
SAFE_STRING.dump = forbid("string.dump")
SAFE_STRING.format = metered(safe_format)
-- rep is charged for what it will build, before it builds it.
SAFE_STRING.rep = function(s, n, sep)
  local count = tonumber(n)
  if (type(s) == "string" or type(s) == "number") and count and count > 0 then
    local sl = (type(sep) == "string" or type(sep) == "number") and #raw_tostring(sep) or 0
    charge_bytes((#raw_tostring(s) + sl) * count)
  end
  return srep(s, n, sep)
end
SAFE_STRING.find = bounded("find", string.find, true)
SAFE_STRING.match = bounded("match", string.match, false)
SAFE_STRING.gmatch = function(s, p, init)
  check_pattern("gmatch", s, p, init, false)
  return string.gmatch(s, p, init)
end
SAFE_STRING.gsub = function(s, p, r, n)
  check_pattern("gsub", s, p, 1, false)
  return charge_results(sgsub(s, p, r, n))
end

-- Every string shares one metatable: give it the safe library and hide it.
do
  local smt = raw_getmetatable("")
  smt.__index = SAFE_STRING
  smt.__metatable = false
end

-- Metatables may not carry finalizers or weak modes (collection timing is
-- not deterministic), nor __metatable or __name (the runtime marks its own
-- tables with __metatable, and __name would put an address in tostring) —
-- now or later.
local RESERVED_META = {
  __gc = "finalizers are not deterministic",
  __mode = "weak tables are not deterministic",
  __metatable = "the runtime reserves it for its own tables",
  __name = "it would make tostring show a memory address",
}

local function refuse_meta(k, level)
  local why = type(k) == "string" and RESERVED_META[k]
  if why then
    fail("sandbox", "metatables cannot have " .. k .. " (" .. why .. ")", level + 1)
  end
end

local GUARD_MT = {
  __metatable = "locked",
  __newindex = function(t, k, v)
    refuse_meta(k, 2)
    rawset(t, k, v)
  end,
}

-- A table used as a metatable gets a guard as its own metatable, so a
-- reserved key cannot be added to it later. One that already has a
-- metatable (a class with a parent) gets a guard that keeps that
-- metatable's behaviour (a copy of its fields) and checks new keys first.
local function guard_metatable(mt)
  local inner = raw_getmetatable(mt)
  if inner == "locked" then return end
  if inner == nil then raw_setmetatable(mt, GUARD_MT) return end
  if type(inner) ~= "table" then
    fail("sandbox", "this table's metatable is protected; it cannot be used as a metatable", 3)
  end
  local g = {}
  for k, v in next, inner do g[k] = v end
  local forward = rawget(inner, "__newindex")
  g.__metatable = "locked"
  g.__newindex = function(t, k, v)
    refuse_meta(k, 2)
    if type(forward) == "function" then return forward(t, k, v) end
    if type(forward) == "table" then forward[k] = v return end
    rawset(t, k, v)
  end
  raw_setmetatable(mt, g)
end

local function safe_setmetatable(t, mt)
  if type(mt) == "table" then
    for k in raw_pairs(RESERVED_META) do
      if rawget(mt, k) ~= nil then refuse_meta(k, 2) end
    end
    guard_metatable(mt)
  end
  return raw_setmetatable(t, mt)
end

-- rawset may not reach into the runtime's own tables (game, libraries,
-- proxies, storage, environments: all marked with PROXY) nor add a
-- reserved key to a metatable.
local function safe_rawset(t, k, v)
  if t == PROXY or raw_getmetatable(t) == PROXY then
    fail("sandbox", "rawset cannot change the runtime's tables (game, libraries, proxies, storage, _G)", 2)
  end
  if raw_getmetatable(t) == "locked" then refuse_meta(k, 2) end
  return rawset(t, k, v)
end

-- next in the same order as pairs (numbers, then strings, then booleans):
-- the raw order of keys that are tables or functions depends on memory
-- addresses. Each call scans the table (charged like any Lua loop).
function safe_next(t, k)
  if type(t) ~= "table" then
    error("bad argument #1 to 'next' (table expected, got " .. type(t) .. ")", 2)
  end
  local best
  for key in next, t do
    if not RANK[type(key)] then
      fail("runtime", "next: keys must be numbers, strings or booleans (a " .. type(key)
        .. " key has no deterministic order)", 2)
    end
    if (k == nil or key_less(k, key)) and (best == nil or key_less(key, best)) then best = key end
  end
  if best ~= nil then return best, rawget(t, best) end
  return nil
end

local function reraise(ok, ...)
  if not ok then budget_check() end
  return ok, ...
end

local function safe_pcall(f, ...)
  return reraise(raw_pcall(f, ...))
end

local function safe_xpcall(f, handler, ...)
  return reraise(raw_xpcall(f, function(e)
    if core.exhausted() then return BUDGET_MSG end
    return handler(e)
  end, ...))
end

local COROUTINE_COST = 1000
local SAFE_COROUTINE = {}
for k, v in raw_pairs(coroutine) do SAFE_COROUTINE[k] = v end
SAFE_COROUTINE.create = function(f)
  core.charge(COROUTINE_COST)
  return coroutine.create(f)
end
SAFE_COROUTINE.wrap = function(f)
  core.charge(COROUTINE_COST)
  local co = coroutine.create(f)
  return function(...)
    local r = pack(coroutine.resume(co, ...))
    if not r[1] then
      budget_check()
      error(r[2], 0)
    end
    return unpack(r, 2, r.n)
  end
end
SAFE_COROUTINE.resume = function(co, ...)
  return reraise(coroutine.resume(co, ...))
end
SAFE_COROUTINE.close = function(co)
  return reraise(coroutine.close(co))
end

----------------------------------------------------------------------------
-- Canonical randomness
----------------------------------------------------------------------------

local function random(m, n)
  local function draw(op, arg)
    local v, err, kind = K(op, arg)
    if v == false then fail(kind or "runtime", err, 3) end
    return v
  end
  if m == nil then
    return draw("random_float")
  end
  if n == nil then m, n = 1, m end
  if mtype(m) ~= "integer" and (type(m) ~= "number" or m ~= floor(m)) then
    error("bad argument #1 to 'random' (number has no integer representation)", 2)
  end
  if mtype(n) ~= "integer" and (type(n) ~= "number" or n ~= floor(n)) then
    error("bad argument #2 to 'random' (number has no integer representation)", 2)
  end
  if m > n then error("bad argument to 'random' (interval is empty)", 2) end
  return m + draw("random_below", n - m + 1)
end

-- Table functions charge each element they read from C (third_party/lua-src,
-- ltablib.c); concat is also charged for the bytes it builds.
local SAFE_TABLE = {}
for k, v in raw_pairs(table) do SAFE_TABLE[k] = v end
SAFE_TABLE.concat = function(...)
  return charge_results(concat(...))
end

local SAFE_UTF8 = {}
for k, v in raw_pairs(utf8) do
  SAFE_UTF8[k] = type(v) == "function" and metered(v) or v
end
-- The iterator utf8.codes returns is C too: each call is charged for the
-- bytes it stepped over (to the end of the string when it finishes).
local ucodes = utf8.codes
SAFE_UTF8.codes = function(s, lax)
  charge_bytes(type(s) == "string" and #s or 0)
  local f, st, c = ucodes(s, lax)
  return function(a, i)
    local j, code = f(a, i)
    local len = type(a) == "string" and #a or 0
    charge_bytes((j or len) - (tonumber(i) or 0))
    return j, code
  end, st, c
end

local SAFE_MATH = {}
for k, v in raw_pairs(math) do SAFE_MATH[k] = v end
SAFE_MATH.random = random
SAFE_MATH.randomseed = forbid("math.randomseed")

----------------------------------------------------------------------------
-- Proxies
----------------------------------------------------------------------------

local Entity, Player, Stack = {}, {}, {}
local entity_mt, player_mt, stack_mt

-- Proxies keep their id in slot [1] (and an entity's generational handle
-- in slot [0]); `id` and the other fields are read through __index, so a
-- script cannot reassign them.
local function entity_proxy(id, key)
  if id == nil then return nil end
  return raw_setmetatable({ [0] = key, [1] = id }, entity_mt)
end

-- Player proxies are records: `id` and `name` are plain fields (the most
-- read values in guards); [1] and [2] keep the originals for checks.
local function player_proxy(id, name)
  if id == nil then return nil end
  return raw_setmetatable({ [1] = id, [2] = name, id = id, name = name }, player_mt)
end

local function stack_proxy(id)
  return raw_setmetatable({ [1] = id }, stack_mt)
end

-- A proxy's id, or an id string. One C call for a proxy: only proxies
-- answer `getmetatable` with PROXY (strings answer false).
local function id_of(v, what)
  if raw_getmetatable(v) == PROXY then
    local id = rawget(v, 1)
    if type(id) == "string" then return id end
  elseif type(v) == "string" then
    return v
  end
  error("expected " .. what .. " (a proxy or an id string), got " .. type(v), 3)
end

-- Checks the generational handle: a proxy to an entity that is gone (or a
-- tampered one) errors, and never reaches another entity.
-- Raises the stale-handle error at the level of `key_of`'s or `read`'s
-- caller's caller (the creator's line).
local function gone(id, level)
  error("entity '" .. safe_tostring(id) .. "' no longer exists", level or 4)
end

-- Slots [0] and [1] always exist on an entity proxy, so plain indexing
-- reads them raw (no metamethod, no C call).
local function key_of(e)
  local key, id = e[0], e[1]
  if not N_alive(key, id) then gone(id) end
  return key
end

-- The handle check and the read cross into Rust once, not twice.
local function read(e, what)
  local code = CODE[what]
  local live, v
  if code then
    live, v = N_read(e[0], code)
  else
    live, v = K("readlive", e[0], e[1], what)
  end
  if not live then gone(e[1]) end
  return v
end

-- Issues a subcommand: applies at once, or raises (and dooms the action).
-- The payload goes over as key, value, key, value… so simple payloads need
-- no table conversion on the native side.
local function submit(action_type, payload)
  local args, n = {}, 0
  for k, v in next, payload do
    args[n + 1], args[n + 2] = k, v
    n = n + 2
  end
  local ok, err, kind = N_submit(action_type, unpack(args, 1, n))
  if not ok then fail(kind or "subcommand", err, 3) end
  return err   -- on success: the id of an entity the action produced, if any
end

local FIELDS = {
  position = function(e) local t = read(e, "transform"); return t and t.position end,
  rotation = function(e) local t = read(e, "transform"); return t and t.rotation end,
  transform = function(e) return read(e, "transform") end,
  flipped = function(e) return read(e, "flipped") end,
  locked = function(e) return read(e, "locked") end,
  value = function(e) return read(e, "value") end,
  text = function(e) return read(e, "text") end,
  tags = function(e) return read(e, "tags") end,
  props = function(e) return read(e, "props") end,
  held_by = function(e)
    local p = read(e, "heldBy")
    if p then
      local who = K("player", p)
      return player_proxy(p, who and who.name)
    end
  end,
  placement = function(e) return read(e, "placement") end,
  faces = function(e) return read(e, "faces") end,
}

-- The identity transform at the origin.
local function identity_transform()
  return { position = { x = 0, y = 0, z = 0 }, rotation = { x = 0, y = 0, z = 0, w = 1 }, scale = { x = 1, y = 1, z = 1 } }
end

-- A whole transform from a full or partial one ({position=…, rotation=…,
-- scale=…}) or a bare position ({x=, y=, z=}); missing parts come from `base`.
local function complete_transform(t, base)
  if t.x ~= nil or t.y ~= nil or t.z ~= nil then
    return { position = { x = t.x or base.position.x, y = t.y or base.position.y, z = t.z or base.position.z },
             rotation = base.rotation, scale = base.scale }
  end
  return { position = t.position or base.position, rotation = t.rotation or base.rotation, scale = t.scale or base.scale }
end

function Entity:get(component)
  return read(self, "component:" .. safe_tostring(component))
end

function Entity:has(component)
  return read(self, "has:" .. safe_tostring(component))
end

function Entity:has_tag(tag)
  for _, t in raw_ipairs(read(self, "tags")) do
    if t == tag then return true end
  end
  return false
end

function Entity:exists() return N_alive(self[0], self[1]) end

-- The native side returns `live, n, id1, handle1, id2, handle2, …`.
function Entity:items()
  local r = { N_items(self[0]) }
  if not r[1] then gone(self[1], 3) end
  local out = {}
  for i = 1, r[2] do
    out[i] = raw_setmetatable({ [0] = r[2 * i + 2], [1] = r[2 * i + 1] }, entity_mt)
  end
  return out
end

function Entity:top()
  local items = read(self, "items")
  if items and #items > 0 then
    local id = items[#items]
    return entity_proxy(id, N_lookup(id))
  end
end

function Entity:stack()
  local p = read(self, "placement")
  if p.kind == "stack" then return stack_proxy(p.id) end
end

function Entity:flip() key_of(self); submit("entity.flip", { entityId = self[1] }) end
function Entity:set_locked(b) key_of(self); submit("entity.set_locked", { entityId = self[1], locked = b }) end
function Entity:roll() key_of(self); submit("die.roll", { entityId = self[1] }) end
-- A counter's value, or (for a die without a counter) the face showing.
function Entity:set_value(v)
  key_of(self)
  if read(self, "has:counter") or not read(self, "has:die") then
    submit("counter.set", { entityId = self[1], value = v })
  else
    submit("die.set_value", { entityId = self[1], value = v })
  end
end

function Entity:destroy() key_of(self); submit("entity.destroy", { entityId = self[1] }) end

-- deck:deal({hand_a, "p2", …}, cards_each): round-robin; a player (proxy or
-- id) means that player's hand.
function Entity:deal(targets, cards_each)
  key_of(self)
  local ids = {}
  for i, t in raw_ipairs(targets) do ids[i] = id_of(t, "a container or a player") end
  submit("deck.deal", { deckId = self[1], targets = ids, cardsEach = cards_each or 1 })
end

-- deck:draw_to_world([t]): the top card into the world; returns its proxy.
-- A partial `t` (or a bare position) takes the rest from the deck.
function Entity:draw_to_world(t)
  key_of(self)
  if t ~= nil then
    if type(t) ~= "table" then error("draw_to_world expects a transform or a position table", 2) end
    t = complete_transform(t, read(self, "transform") or identity_transform())
  end
  local id = submit("deck.draw_to_world", { deckId = self[1], transform = t })
  if id then return entity_proxy(id, N_lookup(id)) end
end
function Entity:add(n) key_of(self); submit("counter.add", { entityId = self[1], amount = n }) end
function Entity:set_text(s) key_of(self); submit("text.set", { entityId = self[1], value = s }) end
function Entity:shuffle() key_of(self); submit("deck.shuffle", { deckId = self[1] }) end

function Entity:draw_to(target, count)
  key_of(self)
  submit("deck.draw_to_container", { deckId = self[1], target = id_of(target, "a container"), count = count or 1 })
end

-- e:move(transform): a full or partial transform ({position=..., rotation=...,
-- scale=...}) or just a position ({x=, y=, z=}); missing parts keep their
-- current value.
function Entity:move(t)
  key_of(self)
  if type(t) ~= "table" then error("move expects a transform or a position table", 2) end
  local full = complete_transform(t, read(self, "transform") or identity_transform())
  submit("entity.move", { entityId = self[1], transform = full })
end

-- e:move_to(container [, index]): into a container (at the end by default),
-- or to the world with `nil`.
-- One native call: the handle check, where the entity is, the target's
-- length and the subcommand.
function Entity:move_to(container, index)
  local to = container
  if to ~= nil then to = id_of(to, "a container") end
  local ok, err, kind = N_move_to(self[0], self[1], to, index)
  if ok then return end
  if ok == nil then gone(self[1], 3) end
  fail(kind or "subcommand", err, 2)
end

-- container:move_all_to(other): every item, in order, to the end of
-- `other` (or the world with nil): one container.move per item, in one
-- native call.
function Entity:move_all_to(container)
  local to = container
  if to ~= nil then to = id_of(to, "a container") end
  local ok, err, kind = N_move_all(self[0], self[1], to)
  if ok then return end
  if ok == nil then gone(self[1], 3) end
  fail(kind or "subcommand", err, 2)
end

function Entity:attach(entity)
  key_of(self)
  submit("snap.attach", { snapPointId = self[1], entityId = id_of(entity, "an entity") })
end

function Entity:attach_to(snap_point)
  key_of(self)
  submit("snap.attach", { snapPointId = id_of(snap_point, "a snap point"), entityId = self[1] })
end

function Stack:items()
  local out = {}
  for i, id in raw_ipairs(K("stack", self[1]) or {}) do out[i] = entity_proxy(id, N_lookup(id)) end
  return out
end
function Stack:top() local items = self:items(); return items[#items] end
function Stack:exists() return K("stack", self[1]) ~= nil end
function Stack:add(e) submit("stack.add", { stackId = self[1], entityId = id_of(e, "an entity") }) end
function Stack:merge(other) submit("stack.merge", { targetStackId = self[1], sourceStackId = id_of(other, "a stack") }) end
function Stack:dissolve() submit("stack.dissolve", { stackId = self[1] }) end
function Stack:remove_top() submit("stack.remove_top", { stackId = self[1] }) end

-- Fields read straight from the entity, by code: one native call.
local DIRECT = {
  flipped = CODE.flipped, locked = CODE.locked, value = CODE.value, text = CODE.text,
  transform = CODE.transform, tags = CODE.tags, props = CODE.props,
  placement = CODE.placement, faces = CODE.faces,
}

entity_mt = {
  __metatable = PROXY,
  __proxy = true,
  __index = function(e, k)
    local code = DIRECT[k]
    if code then
      local live, v = N_read(e[0], code)
      if live then return v end
      gone(e[1], 3)
    end
    if k == "id" then return e[1] end
    local m = Entity[k]
    if m then return m end
    local f = FIELDS[k]
    if f then return f(e) end
  end,
  __newindex = function(_, k) error("entity proxies are read-only; use a method (tried to set " .. safe_tostring(k) .. ")", 2) end,
  __eq = function(a, b) return a[1] == b[1] end,
  __tostring = function(e) return "entity " .. e[1] end,
}
player_mt = {
  __metatable = PROXY,
  __proxy = true,
  __index = Player,
  __newindex = function() error("player proxies are read-only", 2) end,
  __eq = function(a, b) return a[1] == b[1] end,
  __tostring = function(p) return "player " .. p[1] end,
}
stack_mt = {
  __metatable = PROXY,
  __proxy = true,
  __index = function(s, k)
    if k == "id" then return s[1] end
    return Stack[k]
  end,
  __newindex = function() error("stack proxies are read-only", 2) end,
  __eq = function(a, b) return a[1] == b[1] end,
  __tostring = function(s) return "stack " .. s[1] end,
}

----------------------------------------------------------------------------
-- game
----------------------------------------------------------------------------

local game = {}

function game.entity(id)
  local key = N_lookup(id)
  if key then return raw_setmetatable({ [0] = key, [1] = id }, entity_mt) end
end

local function entity_list(ids)
  local out = {}
  for i, id in raw_ipairs(ids) do out[i] = entity_proxy(id, N_lookup(id)) end
  return out
end

function game.entities(tag)
  return entity_list(K("entities", tag))
end

function game.player(id)
  local p = K("player", id)
  if p then return player_proxy(p.id, p.name) end
end

function game.players()
  local out = {}
  for i, p in raw_ipairs(K("players")) do out[i] = player_proxy(p.id, p.name) end
  return out
end

-- Seats in seat order (the manifest's order): {{id = "north", player = "p1"}, {id = "south"}}.
function game.seats() return K("seats") end

-- The player sitting in a seat, or nil.
function game.seat(id)
  for _, s in raw_ipairs(K("seats")) do
    if s.id == id then return s.player end
  end
end

-- The first seat (in seat order) a player sits in, or nil.
function game.seat_of(player)
  local pid = type(player) == "table" and player.id or player
  for _, s in raw_ipairs(K("seats")) do
    if s.player ~= nil and s.player == pid then return s.id end
  end
end

function game.stack(id)
  if K("stack", id) then return stack_proxy(id) end
end

-- game.spawn("prefab", {transform = …, position = {x=, y=, z=}, props = {…}}):
-- a new entity from a game.json prefab; returns its proxy.
function game.spawn(prefab, opts)
  opts = opts or {}
  local t = opts.transform
  if t == nil and opts.position then t = { position = opts.position } end
  if t ~= nil then
    if type(t) ~= "table" then error("spawn expects opts.transform to be a transform table", 2) end
    t = complete_transform(t, identity_transform())
  end
  local id = submit("entity.spawn", { prefabId = prefab, transform = t, props = opts.props })
  return entity_proxy(id, N_lookup(id))
end

function game.create_stack(id, items)
  local ids = {}
  for i, e in raw_ipairs(items) do ids[i] = id_of(e, "an entity") end
  submit("stack.create", { stackId = id, items = ids })
  return stack_proxy(id)
end

local GAME_FIELDS = {
  settings = function() return K("settings") end,
  sequence = function() return K("sequence") end,
  action_id = function() return K("action_id") end,
  actor = function() return K("actor") end,
}

local GAME = raw_setmetatable({}, {
  __metatable = PROXY,
  __index = function(_, k)
    local f = game[k]
    if f then return f end
    local g = GAME_FIELDS[k]
    if g then return g() end
  end,
  __newindex = function(_, k) fail("sandbox", "game is read-only (tried to set " .. safe_tostring(k) .. ")", 2) end,
  __pairs = function() return sorted_pairs(game) end,
})

----------------------------------------------------------------------------
-- storage: a plain-looking table whose contents live in canonical state
----------------------------------------------------------------------------

local function storage_node(script_id, path)
  local node = {}
  local function child_path(k)
    if type(k) ~= "string" and mtype(k) ~= "integer" then
      error("storage keys must be strings or integers, not " .. type(k), 3)
    end
    local p = { unpack(path) }
    p[#p + 1] = k
    return p
  end
  local mt = {
    __metatable = PROXY,
    __index = function(_, k)
      local p = child_path(k)
      local v, is_table = K("storage_get", script_id, p)
      if is_table then return storage_node(script_id, p) end
      return v
    end,
    __newindex = function(_, k, v)
      local ok, err, kind = K("storage_set", script_id, child_path(k), v)
      if not ok then fail(kind or "runtime", err, 2) end
    end,
    __len = function() return K("storage_len", script_id, path) end,
    __pairs = function()
      local keys = K("storage_keys", script_id, path)
      local i = 0
      return function()
        i = i + 1
        local k = keys[i]
        if k ~= nil then return k, node[k] end
      end, node, nil
    end,
    __tostring = function() return "storage" end,
    -- Read by the runtime (never by scripts: the metatable is hidden) so a
    -- node stored elsewhere is copied, not stored as the empty table it is.
    __storage = script_id,
    __path = path,
  }
  return raw_setmetatable(node, mt)
end

----------------------------------------------------------------------------
-- ui and timer: prompts and one-shot timers whose callbacks are stored by
-- name (with the binding) in canonical state, so a response or a fire
-- reaches the right function after a replay or a hot reload.
----------------------------------------------------------------------------

local function remember(kind, id, record)
  local ok, err, k = K("runtime_set", kind, id, record)
  if not ok then fail(k or "runtime", err, 3) end
end

local function callback_name(opts, what)
  local cb = opts.callback
  if cb ~= nil and type(cb) ~= "string" then
    error(what .. ": opts.callback must be the name of a function (a string)", 3)
  end
  return cb
end

local function make_ui(spec)
  local ui = {}
  local function create(kind, player, title, opts, extra)
    opts = opts or {}
    local id = opts.id or K("next_id", "prompt")
    local payload = { id = id, kind = kind, playerId = id_of(player, "a player"), title = title, default = opts.default }
    for k, v in next, extra do payload[k] = v end
    submit("prompt.create", payload)
    local cb = callback_name(opts, "ui:" .. kind)
    if cb then remember("prompt", id, { callback = cb, script = spec.script, binding = spec.binding }) end
    return id
  end
  function ui:prompt(player, title, choices, opts)
    return create("choice", player, title, opts, { choices = choices })
  end
  function ui:confirm(player, title, opts)
    return create("confirm", player, title, opts, {})
  end
  function ui:number_prompt(player, title, opts)
    opts = opts or {}
    return create("number", player, title, opts, { min = opts.min, max = opts.max, step = opts.step or 1 })
  end
  function ui:cancel(id)
    submit("prompt.cancel", { promptId = id })
  end
  return raw_setmetatable({}, { __metatable = PROXY, __index = ui,
    __newindex = function() fail("sandbox", "ui is read-only", 2) end })
end

local function make_timer(spec)
  local t = {}
  function t.after(ms, callback, data)
    if type(callback) ~= "string" then
      error("timer.after(ms, \"callback\", data): the callback is a function name (a string)", 2)
    end
    local id = K("next_id", "timer")
    submit("timer.register", { timerId = id, delay = ms, callback = callback, scriptId = spec.script,
      bindingId = spec.binding, entityId = spec.entity_id })
    if data ~= nil then remember("timer", id, { data = data }) end
    return id
  end
  function t.cancel(id)
    submit("timer.cancel", { timerId = id })
  end
  return raw_setmetatable({}, { __metatable = PROXY, __index = t,
    __newindex = function() fail("sandbox", "timer is read-only", 2) end })
end

----------------------------------------------------------------------------
-- Environments
----------------------------------------------------------------------------

local FORBIDDEN = {
  io = true, os = true, debug = true, package = true, dofile = true, loadfile = true,
  collectgarbage = true, loadstring = true, module = true, setfenv = true, getfenv = true,
  newproxy = true,
}

local P = {}

-- A fresh environment for one binding. `spec` = {script, binding, file,
-- entity_id, entity_key, require}.
function P.new_env(spec)
  local script_id = spec.script
  local env, defs = {}, {}
  local base = {
    assert = assert, error = error, ipairs = raw_ipairs, next = safe_next, pairs = sorted_pairs,
    pcall = safe_pcall, xpcall = safe_xpcall, rawequal = rawequal, rawget = rawget,
    rawlen = rawlen, rawset = safe_rawset, select = select, setmetatable = safe_setmetatable,
    getmetatable = raw_getmetatable, tonumber = tonumber, tostring = safe_tostring, type = type,
    _VERSION = G._VERSION,
    string = readonly("string", SAFE_STRING),
    table = readonly("table", SAFE_TABLE),
    math = readonly("math", SAFE_MATH),
    utf8 = readonly("utf8", SAFE_UTF8),
    coroutine = readonly("coroutine", SAFE_COROUTINE),
    game = GAME,
    random = random,
    storage = storage_node(script_id, {}),
    ui = make_ui(spec),
    timer = make_timer(spec),
    print = function(...)
      local n = select("#", ...)
      local parts = {}
      for i = 1, n do parts[i] = safe_tostring((select(i, ...))) end
      core.log(script_id, concat(parts, "\t"))
    end,
    load = function(chunk, name, mode, chunk_env)
      if type(chunk) ~= "string" then
        fail("sandbox", "load accepts source text only", 2)
      end
      if sbyte(chunk, 1) == 27 then
        fail("sandbox", "binary chunks cannot be loaded", 2)
      end
      charge(#chunk * LOAD_COST)
      return raw_load(chunk, name, "t", chunk_env or env)
    end,
    require = (function()
      local cache = {}
      return function(name)
        if type(name) ~= "string" then error("require expects a module name", 2) end
        if cache[name] ~= nil then return cache[name] end
        local src = core.module_source(name)
        if not src then
          fail("sandbox", "require can only load the game's own scripts (no module '" .. name .. "')", 2)
        end
        charge(#src[2] * LOAD_COST)
        local f, err = raw_load(src[2], "=" .. src[1], "t", env)
        if not f then error(err, 2) end
        local r = f(name)
        if r == nil then r = true end
        cache[name] = r
        return r
      end
    end)(),
  }
  base.self = entity_proxy(spec.entity_id, spec.entity_key)
  base._G = env
  raw_setmetatable(base, {
    __index = function(_, k)
      if FORBIDDEN[k] then fail("sandbox", k .. " is not available in the sandbox", 2) end
    end,
  })
  raw_setmetatable(defs, { __index = base })
  local env_mt = {
    __metatable = PROXY,
    __index = defs,
    __newindex = function(_, k, v) rawset(defs, k, v) end,
    __pairs = function() return sorted_pairs(defs) end,
  }
  raw_setmetatable(env, env_mt)
  -- After the top-level chunk ran: no global may be created or changed.
  local function freeze()
    env_mt.__newindex = function(_, k)
      fail("runtime", "global '" .. safe_tostring(k)
        .. "' cannot be created or changed after the script has loaded; keep game state in storage", 2)
    end
  end
  return env, defs, freeze
end

-- Reads a global function of an environment (nil when absent).
function P.lookup(defs, name)
  local f = rawget(defs, name)
  if type(f) == "function" then return f end
end

-- A table in event data (settings, item lists) is built once per event and
-- handed to every handler: each handler gets its own copy, so one script
-- cannot change what another sees.
local function own(v, depth)
  if type(v) ~= "table" then return v end
  local c = {}
  for k, x in next, v do c[k] = (depth < 64) and own(x, depth + 1) or x end
  return c
end

local function owned_data(data)
  for k, v in next, data do
    if type(v) == "table" then data[k] = own(v, 1) end
  end
  return data
end

-- Guard arguments are proxies reused across calls (they are read-only, and
-- every use of an entity proxy re-checks its handle against the live entity,
-- so reuse can never reach a different entity).
local guard_players, guard_entities = {}, {}

function P.guard(f, player_id, player_name, entity_id, entity_key, transform)
  -- Slots [0], [1], [2] always exist on these proxies, so plain indexing
  -- reads them raw (no metamethod) and costs no C call.
  local p = guard_players[player_id]
  -- `name` is only a raw field (which a script could overwrite) when the
  -- player has one; reading an absent one would go through __index.
  if p == nil or p[1] ~= player_id or p[2] ~= player_name or p.id ~= player_id
    or (player_name ~= nil and p.name ~= player_name) then
    p = player_proxy(player_id, player_name)
    guard_players[player_id] = p
  end
  local e = guard_entities[entity_id]
  if e == nil or e[0] ~= entity_key or e[1] ~= entity_id then
    e = entity_proxy(entity_id, entity_key)
    guard_entities[entity_id] = e
  end
  -- A drop's transform table is handed to every can_drop guard: each gets
  -- its own copy.
  if transform ~= nil then transform = own(transform, 1) end
  return f(p, e, transform)
end

-- A handler call. The event's data arrives flattened (key, value, …) so the
-- host pushes only values it already holds; the tables are built here. An
-- assigned action id (`a<seq>`) is only formatted if the handler reads it.
local EVENT_MT = {
  -- Shared by every event table: hidden, so no script can change it.
  __metatable = "event",
  __index = function(ev, k)
    if k == "actionId" then
      local id = "a" .. rawget(ev, "seq")
      rawset(ev, "actionId", id)
      return id
    end
  end,
}

local function fill(data, k, v, ...)
  if k == nil then return data end
  data[k] = v
  return fill(data, ...)
end

-- Table constructors size the table once; most events have 1 to 4 fields.
function P.handle(f, event_type, seq, action_id, n, ...)
  local k1, v1, k2, v2, k3, v3, k4, v4 = ...
  local data
  if n <= 2 then data = n == 0 and {} or { [k1] = v1 }
  elseif n <= 4 then data = { [k1] = v1, [k2] = v2 }
  elseif n <= 6 then data = { [k1] = v1, [k2] = v2, [k3] = v3 }
  elseif n <= 8 then data = { [k1] = v1, [k2] = v2, [k3] = v3, [k4] = v4 }
  else data = fill({ [k1] = v1, [k2] = v2, [k3] = v3, [k4] = v4 }, select(9, ...))
  end
  local ev = { type = event_type, seq = seq, actionId = action_id, data = owned_data(data) }
  if action_id == nil then raw_setmetatable(ev, EVENT_MT) end
  return f(ev)
end

-- A stored callback: a prompt's answer or a timer's data first, then the
-- event.
function P.callback(f, value, event_type, seq, action_id, n, ...)
  local ev = { type = event_type, seq = seq, actionId = action_id, data = owned_data(fill({}, ...)) }
  if action_id == nil then raw_setmetatable(ev, EVENT_MT) end
  return f(value, ev)
end

P.player_proxy = player_proxy
P.entity_proxy = entity_proxy
P.sorted_pairs = sorted_pairs

-- Checks the deterministic build: string keys must iterate in the order
-- pinned below in every process.
function P.selftest()
  local t = {}
  for i = 1, 24 do t["k" .. i] = i end
  local order = {}
  for k in next, t do order[#order + 1] = k end
  return concat(order, ",")
end

return P
