-- host.lua: binding environments and the entry points the Rust host calls
-- (third file of the prelude; see sandbox.lua).

----------------------------------------------------------------------------
-- Environments
----------------------------------------------------------------------------

local FORBIDDEN = {
  io = true, os = true, debug = true, package = true, dofile = true, loadfile = true,
  collectgarbage = true, loadstring = true, module = true, setfenv = true, getfenv = true,
  newproxy = true,
}

-- The entry points the host calls (vm.rs reads exactly these): new_env,
-- guard, act, handle, callback, query, match_stepper, forget, selftest.
local P = {}

-- What each binding's `require` had loaded when its script finished
-- loading: a room starting another match puts it back (P.forget).
local REQUIRE_RESETS = {}
-- Every binding's `loading` table (below). A call the budget (or the
-- server's watchdog) stopped inside a module's body could not mark it
-- loaded no more: the host empties them all before the next call
-- (host.rs, `LuaHost::call`), with no Lua run.
local LOADING = {}

-- A fresh environment for one binding. `spec` = {script, binding, file,
-- entity_id, entity_key, require}.
function P.new_env(spec)
  local script_id = spec.script
  local env, defs = mark_system({}), mark_system({})
  -- Modules loaded (`cache`) and being loaded (`loading`: a module that
  -- requires itself, directly or round a loop, is an error, not a
  -- recursion as deep as the C stack).
  local cache, loading = mark_system({}), mark_system({})
  LOADING[#LOADING + 1] = loading
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
    match = MATCH_PROXY,
    random = random,
    storage = storage_root(script_id),
    ui = make_ui(spec),
    timer = make_timer(spec),
    print = function(...)
      local n = select("#", ...)
      local parts = {}
      for i = 1, n do parts[i] = safe_tostring((select(i, ...))) end
      -- The line is charged for its bytes like any string work.
      core.log(script_id, charge_results(concat(parts, "\t")))
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
      return function(name)
        if type(name) ~= "string" then error("require expects a module name", 2) end
        if cache[name] ~= nil then return cache[name] end
        local src = core.module_source(name)
        if not src then
          fail("sandbox", "require can only load the game's own scripts (no module '" .. name .. "')", 2)
        end
        if loading[name] then
          fail("runtime", "module '" .. name .. "' requires itself (directly or round a loop of requires); "
            .. "a module cannot be used before it has loaded", 2)
        end
        charge(#src[2] * LOAD_COST)
        local f, err = raw_load(src[2], "=" .. src[1], "t", env)
        if not f then error(err, 2) end
        loading[name] = true
        local done, r = raw_pcall(f, name)
        loading[name] = nil
        if not done then error(r, 0) end
        if r == nil then r = true end
        -- A module first required in a read-only call is not kept: the
        -- game's actions alone decide when a module loads.
        if not is_read_only() then cache[name] = r end
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
  -- After the top-level chunk ran: no global may be created or changed,
  -- and the modules loaded so far are what every match starts with.
  local function freeze()
    local loaded = {}
    for k, v in next, cache do loaded[k] = v end
    REQUIRE_RESETS[#REQUIRE_RESETS + 1] = function()
      cache = mark_system({})
      for k, v in next, loaded do cache[k] = v end
    end
    env_mt.__newindex = function(_, k)
      fail("runtime", "global '" .. safe_tostring(k)
        .. "' cannot be created or changed after the script has loaded; keep game state in storage", 2)
    end
  end
  return env, defs, freeze
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

-- The event entry points run their callback under xpcall (written out in
-- each: a shared helper costs a call per action) and answer
-- `true, r1, r2` or, for an error that is a string (what `error("...")`
-- raises, with its position), `false, message`: the host reads the message
-- without the stack traceback mlua would build and then discard. Any other
-- error object (a native's failure, the budget, a table) is raised again and
-- reaches the host as before. The message handler (`core.located`) notes
-- the line of the innermost script frame, for messages without a position.
local located = core.located

-- Guard arguments are proxies reused across calls (they are read-only, and
-- every use of an entity proxy re-checks its handle against the live entity,
-- so reuse can never reach a different entity).
local guard_players, guard_entities = {}, {}

function P.guard(f, player_id, player_name, entity_id, entity_key, px, py, pz, rx, ry, rz, rw, sx, sy, sz)
  -- Slots [0], [1], [2] always exist on these proxies, so plain indexing
  -- reads them raw (no metamethod) and costs no C call.
  local p = guard_players[player_id]
  -- `name` is only a raw field (which a script could overwrite) when the
  -- player has one; reading an absent one would go through __index.
  if p == nil or p[1] ~= player_id or p[2] ~= player_name or p.id ~= player_id
    or (player_name ~= nil and p.name ~= player_name) then
    p = player_proxy(player_id, player_name)
    -- A guard in a dry run (read-only) keeps no proxy.
    if not is_read_only() then guard_players[player_id] = p end
  end
  local e = guard_entities[entity_id]
  if e == nil or e[0] ~= entity_key or e[1] ~= entity_id then
    e = entity_proxy(entity_id, entity_key)
    if not is_read_only() then guard_entities[entity_id] = e end
  end
  -- A drop's transform arrives as its ten numbers: each can_drop guard
  -- gets its own table.
  local transform
  if px ~= nil then
    transform = { position = { x = px, y = py, z = pz }, rotation = { x = rx, y = ry, z = rz, w = rw },
      scale = { x = sx, y = sy, z = sz } }
  end
  -- A guard says no by returning false (an error is rare): a tail call,
  -- and an error reaches the host through mlua, with its traceback.
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

-- Table constructors size the table once; most events have 1 to 4 fields
-- (`n` values and keys), which arrive as fixed parameters (no varargs to
-- adjust); `P.handle_many` takes the rest. `tables`: whether a value is a
-- table, which each handler gets its own copy of.
function P.handle(f, event_type, seq, action_id, n, tables, k1, v1, k2, v2, k3, v3, k4, v4)
  local data
  if n < 0 then data = k1
  elseif n <= 2 then data = n == 0 and {} or { [k1] = v1 }
  elseif n <= 4 then data = { [k1] = v1, [k2] = v2 }
  elseif n <= 6 then data = { [k1] = v1, [k2] = v2, [k3] = v3 }
  else data = { [k1] = v1, [k2] = v2, [k3] = v3, [k4] = v4 }
  end
  if tables then data = owned_data(data) end
  local ev = { type = event_type, seq = seq, actionId = action_id, data = data }
  if event_type == "match.host_event" then
    -- on_host_event(event): event = {type, seat, phase} (docs/match.md).
    ev.type, ev.seat, ev.phase = data.kind, data.seat, data.phase
  end
  if action_id == nil then raw_setmetatable(ev, EVENT_MT) end
  local ok, a, b = raw_xpcall(f, located, ev)
  if ok then return true, a, b end
  if type(a) == "string" then return false, a end
  error(a, 0)
end

-- A handler call for an event with more than four fields: its data table
-- built here, then handed to `P.handle` (`n` -1).
function P.handle_many(f, event_type, seq, action_id, n, tables, ...)
  return P.handle(f, event_type, seq, action_id, -1, tables, fill({}, ...))
end

-- A stored callback: a prompt's answer or a timer's data first, then the
-- event.
function P.callback(f, value, event_type, seq, action_id, n, ...)
  local ev = { type = event_type, seq = seq, actionId = action_id, data = owned_data(fill({}, ...)) }
  if action_id == nil then raw_setmetatable(ev, EVENT_MT) end
  local ok, a, b = raw_xpcall(f, located, value, ev)
  if ok then return true, a, b end
  if type(a) == "string" then return false, a end
  error(a, 0)
end

-- A game's view of the table for one seat (`observe(seat)`) or for
-- spectators (`public_view()`), run read-only like a guard.
-- A read-only question to the game (`observe`, `current_phase`,
-- `participation`, `safe_default`, `score`, …): its first two results.
function P.query(f, ...)
  local ok, a, b = raw_xpcall(f, located, ...)
  if ok then return true, a, b end
  if type(a) == "string" then return false, a end
  error(a, 0)
end

-- The match layer's questions after an action, in one call (docs/match.md):
-- the phase, whether the phase is ready, whether the match is over, then
-- each seat's participation. An absent function (nil) answers nil. The
-- first failure stops it: `false, message` (the host then asks one by one,
-- to say which failed).
local PARTICIPATION = { acting = 1, waiting = 2, finished = 3 }

function P.match_stepper(phase_f, ready_f, terminal_f, part_f, seats)
  local n = #seats
  -- Answers travel back as booleans and small integers (no strings to
  -- hand over): the phase is `true` when it is still `last_phase`, a
  -- participation its code (0: not one of the three names).
  local function code(p) return PARTICIPATION[p] or 0 end
  local function answers(ask_ready, ask_terminal, last_phase)
    local phase = phase_f and phase_f()
    if phase == last_phase then phase = true end
    local ready, terminal
    -- Answers are read as Lua reads a condition: anything but nil and
    -- false is yes.
    if ask_ready and ready_f then ready = not not ready_f() end
    if ask_terminal and terminal_f then terminal = not not terminal_f() end
    if part_f == nil then return phase, ready, terminal end
    if n == 2 then
      return phase, ready, terminal, code(part_f(seats[1])), code(part_f(seats[2]))
    end
    local out = {}
    for i = 1, n do out[i] = code(part_f(seats[i])) end
    return phase, ready, terminal, unpack(out, 1, n)
  end
  return function(ask_ready, ask_terminal, last_phase)
    return raw_xpcall(answers, located, ask_ready, ask_terminal, last_phase)
  end
end

mark_uncounted(P.guard)

-- The general guard: `can_act(player, action)`, the action a fresh table
-- `{type, payload}` each guard may keep or change without effect.
function P.act(f, player_id, player_name, action_type, payload)
  local p = player_proxy(player_id, player_name)
  return f(p, { type = action_type, payload = own(payload, 1) })
end

-- Forgets what earlier matches left in the runtime's own caches — the
-- modules required during play, the nodes `storage` keeps, the proxies
-- guards reuse — so a room starting another match holds what a new room
-- would (docs/simulate.md). The game's own tables and locals stay: the
-- game treats them as constants.
-- The read caches of `storage`, which the host empties (host.rs,
-- `LuaHost::call`).
P.storage_caches = STORAGE_CACHES
P.loading = LOADING

function P.forget()
  for _, reset in raw_ipairs(REQUIRE_RESETS) do reset() end
  forget_storage_nodes()
  guard_players, guard_entities = {}, {}
end

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
