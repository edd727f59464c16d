-- sandbox.lua: the first of the three files of the prelude, the Lua side of
-- the Digipology runtime. The host concatenates them into one chunk, in this
-- order, and runs it once per VM in a privileged environment (scripts never
-- see its locals):
--   sandbox.lua  determinism and sandbox machinery: ordered pairs, metering
--                of library work, read-only library tables, metatable rules,
--                canonical randomness
--   prelude.lua  (at the repository's root) the creator API, as creators
--                read it in docs/lua-api.md:
--                proxies (entities, players, stacks), `game`, `storage`,
--                `ui`, `timer`
--   host.lua     the host protocol: binding environments and the entry points
--                the Rust host calls (new_env, guard, handle, callback,
--                selftest), returned as the chunk's value
-- Later files use the locals of earlier ones.
--
-- The host passes:
--   core   native functions that need no transaction (budget, log, fail)
--   G      the privileged globals (the real library tables)
--   N      the native functions that reach the game from inside a callback,
--          one per operation (lua-runtime/src/native.rs): entity reads
--          by handle (read, alive, lookup, items, component, has), game
--          reads (entities, player, players, seats, stack, settings,
--          sequence, action_id, actor, storage_get/len/keys), writes
--          (move_to, move_all, submit, storage_set, remember_prompt,
--          remember_timer; one-entity actions counter_add, counter_set,
--          die_set_value, flip, roll, set_text, set_locked), next_id,
--          random_float, random_below
--   API    the creator API version the game was written for (game.json's
--          apiVersion, 1 when absent): prelude.lua keeps each documented
--          behaviour as that version had it
local core, G, N, API = ...

-- Marks a Lua function (and every function written inside it) as the
-- runtime's own bookkeeping, whose instructions the budget does not count
-- (the patched VM: third_party/lua-src/PATCHES.md). Used where what the
-- runtime keeps between calls (storage nodes, guard proxies) would make a
-- first use cost the budget more than later ones; the natives those
-- functions call charge a fixed cost instead. Taken out of the globals
-- before any script runs.
local mark_uncounted = G.__digi_uncounted
G.__digi_uncounted = nil

-- Whether a read-only call is running (a view, a game function answering
-- a question, a dry run: the patched VM refuses changes to anything made
-- before it). The runtime keeps nothing new of its own during one either
-- (storage nodes, guard proxies, modules), so no read leaves a trace.
local is_read_only = G.__digi_readonly
G.__digi_readonly = nil
-- Makes a table the runtime's own (never read-only), for what the runtime
-- writes during any call: the environments it builds for each binding.
local mark_system = G.__digi_system
G.__digi_system = nil

local type, select, error, rawget, rawset, rawequal, rawlen, next =
  G.type, G.select, G.error, G.rawget, G.rawset, G.rawequal, G.rawlen, G.next
local raw_pairs, raw_ipairs, raw_tostring, tonumber = G.pairs, G.ipairs, G.tostring, G.tonumber
local raw_setmetatable, raw_getmetatable = G.setmetatable, G.getmetatable
local raw_pcall, raw_xpcall, raw_load, assert = G.pcall, G.xpcall, G.load, G.assert
local string, table, math, utf8, coroutine = G.string, G.table, G.math, G.utf8, G.coroutine
local pack, unpack, sort, concat = table.pack, table.unpack, table.sort, table.concat
local sfind, sformat, sgsub, ssub, sbyte, srep = string.find, string.format, string.gsub, string.sub, string.byte, string.rep
local floor, mtype = math.floor, math.type

local N_read, N_alive, N_lookup, N_items, N_move_to, N_move_all, N_submit, N_placement =
  N.read, N.alive, N.lookup, N.items, N.move_to, N.move_all, N.submit, N.placement

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

-- Charges the bytes of the strings among the values (charge_bytes of
-- their total length), and passes them on: one C function.
local charge_results = core.charge_strings

-- `f`, charged for the bytes of its string arguments and results.
local function metered(f)
  return function(...)
    charge_results(...)
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
-- rep charges itself from C, before it builds anything: its copies (even
-- of an empty string, which copy nothing) and the bytes of its buffer
-- (third_party/lua-src, lstrlib.c and lauxlib.c).
SAFE_STRING.rep = srep
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
  local function draw(native, arg)
    local v, err, kind = native(arg)
    if v == false then fail(kind or "runtime", err, 3) end
    return v
  end
  if m == nil then
    return draw(N.random_float)
  end
  if n == nil then m, n = 1, m end
  if mtype(m) ~= "integer" and (type(m) ~= "number" or m ~= floor(m)) then
    error("bad argument #1 to 'random' (number has no integer representation)", 2)
  end
  if mtype(n) ~= "integer" and (type(n) ~= "number" or n ~= floor(n)) then
    error("bad argument #2 to 'random' (number has no integer representation)", 2)
  end
  if m > n then error("bad argument to 'random' (interval is empty)", 2) end
  return m + draw(N.random_below, n - m + 1)
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
