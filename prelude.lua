-- prelude.lua: the creator API, the part of Digipology's Lua runtime that
-- creators read to see what their scripts can call (docs/lua-api.md is its
-- reference). The runtime (lua-runtime/src/vm.rs) runs it as the second of
-- three files of one chunk: lua-runtime/src/lua/sandbox.lua before it
-- (determinism and sandbox machinery, whose locals this file uses) and
-- lua-runtime/src/lua/host.lua after it (binding environments and the entry
-- points the Rust host calls).

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

-- Guards reuse proxies made by earlier calls: making one must cost the
-- budget what reusing one does (nothing; P.guard is uncounted too).
mark_uncounted(entity_proxy)
mark_uncounted(player_proxy)

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
  local live, v = N_read(e[0], CODE[what])
  if not live then gone(e[1]) end
  return v
end

-- A read through a native that also checks the proxy's id (component, has).
local function read_checked(native, e, name)
  local live, v = native(e[0], e[1], name)
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

-- Entity fields computed from a read (the fields read as they are stored
-- are in DIRECT, below, which the proxy checks first).
local FIELDS = {
  position = function(e) local t = read(e, "transform"); return t and t.position end,
  rotation = function(e) local t = read(e, "transform"); return t and t.rotation end,
  held_by = function(e)
    local p = read(e, "heldBy")
    if p then
      local who = N.player(p)
      return player_proxy(p, who and who.name)
    end
  end,
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
  return read_checked(N.component, self, safe_tostring(component))
end

function Entity:has(component)
  return read_checked(N.has, self, safe_tostring(component))
end

function Entity:has_tag(tag)
  local live, has = N.has_tag(self[0], tag)
  if not live then gone(self[1], 3) end
  return has
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

-- Where an entity lies, `{kind = …, id = …}`: the native answers the two
-- values (no table to build on the native side).
local function placement(e, level)
  local live, kind, id = N_placement(e[0])
  if not live then gone(e[1], level) end
  return { kind = kind, id = id }
end

function Entity:stack()
  local p = placement(self)
  if p.kind == "stack" then return stack_proxy(p.id) end
end

-- A one-entity action in one native call (`N.flip`, `N.counter_add`, …):
-- the handle check and the subcommand. Called as a statement by the
-- methods below, so errors point at their caller.
local function act(native, e, value)
  local ok, err, kind = native(e[0], e[1], value)
  if ok then return end
  if ok == nil then gone(e[1], 4) end
  fail(kind or "subcommand", err, 3)
end

function Entity:flip() act(N.flip, self) end
function Entity:set_locked(b) act(N.set_locked, self, b) end
function Entity:roll() act(N.roll, self) end
-- A counter's value, or (for a die without a counter) the face showing.
function Entity:set_value(v)
  key_of(self)
  if read_checked(N.has, self, "counter") or not read_checked(N.has, self, "die") then
    act(N.counter_set, self, v)
  else
    act(N.die_set_value, self, v)
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
function Entity:add(n) act(N.counter_add, self, n) end
function Entity:set_text(s) act(N.set_text, self, s) end
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

-- Hidden information: e:reveal() shows e to everyone, e:reveal_to(seat or
-- {seats}) to those seats, until e next goes into a private or hidden
-- container; c:peek(seat) shows every item of container c to the seat;
-- c:set_visibility("public" | "hidden") or ("private", seat).
function Entity:reveal() key_of(self); submit("entity.reveal", { entityId = self[1], to = "all" }) end
function Entity:reveal_to(seats)
  key_of(self)
  if type(seats) == "string" then seats = { seats } end
  submit("entity.reveal", { entityId = self[1], to = seats })
end
-- A peek reveals in id order, not the container's: the order of the
-- reveals would tell others where each card lies (docs/observations.md,
-- Positions).
local function id_less(a, b) return a[1] < b[1] end
function Entity:peek(seat)
  if type(seat) ~= "string" then error("peek expects a seat id", 2) end
  local items = self:items()
  sort(items, id_less)
  for _, item in raw_ipairs(items) do item:reveal_to(seat) end
end
-- c:reorder({item, …}): container c's items in a new order, bottom first,
-- each once (proxies or ids): container.reorder. c:sort(less): the items
-- sorted by less(a, b) (proxies), then c:reorder — a game sorting a hand.
function Entity:reorder(items)
  key_of(self)
  if type(items) ~= "table" then error("reorder expects a list of the container's items", 2) end
  local ids = {}
  for i = 1, #items do ids[i] = id_of(items[i], "an item") end
  submit("container.reorder", { entityId = self[1], items = ids })
end
function Entity:sort(less)
  if type(less) ~= "function" then error("sort expects a function less(a, b)", 2) end
  local items = self:items()
  sort(items, less)
  self:reorder(items)
end
function Entity:set_visibility(visibility, owner)
  key_of(self)
  submit("container.set_visibility", { containerId = self[1], visibility = visibility, owner = owner })
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
  for i, id in raw_ipairs(N.stack(self[1]) or {}) do out[i] = entity_proxy(id, N_lookup(id)) end
  return out
end
function Stack:top() local items = self:items(); return items[#items] end
function Stack:exists() return N.stack(self[1]) ~= nil end
function Stack:add(e) submit("stack.add", { stackId = self[1], entityId = id_of(e, "an entity") }) end
function Stack:merge(other) submit("stack.merge", { targetStackId = self[1], sourceStackId = id_of(other, "a stack") }) end
function Stack:dissolve() submit("stack.dissolve", { stackId = self[1] }) end
function Stack:remove_top() submit("stack.remove_top", { stackId = self[1] }) end

-- Fields read straight from the entity, by code: one native call.
local DIRECT = {
  flipped = CODE.flipped, locked = CODE.locked, value = CODE.value, text = CODE.text,
  transform = CODE.transform, tags = CODE.tags, props = CODE.props,
  faces = CODE.faces,
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
    -- A tail call: `gone` is then two levels below the reading line.
    if k == "placement" then return placement(e, 3) end
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
  return entity_list(N.entities(tag))
end

function game.player(id)
  local p = N.player(id)
  if p then return player_proxy(p.id, p.name) end
end

function game.players()
  local out = {}
  for i, p in raw_ipairs(N.players()) do out[i] = player_proxy(p.id, p.name) end
  return out
end

-- Seats in seat order (the manifest's order): {{id = "north", player = "p1"}, {id = "south"}}.
function game.seats() return N.seats() end

-- API 1 (docs/lua-api.md, API versions): game.seats() is the map it was
-- documented as, {seatId = playerId or false} — what `seats[seat]` and
-- `pairs` read — that also answers `ipairs` and `#` as the API 2 list does
-- (games written against API 2's docs before versions existed name no
-- apiVersion either).
if API == 1 then
  function game.seats()
    local list = N.seats()
    local map = {}
    for i = 1, #list do
      local s = list[i]
      map[s.id] = s.player or false
    end
    return raw_setmetatable(map, { __index = list, __len = function() return #list end })
  end
  mark_uncounted(game.seats)
end

-- The player sitting in a seat, or nil.
function game.seat(id) return N.seat_player(id) end

-- The first seat (in seat order) a player sits in, or nil.
function game.seat_of(player)
  local pid = type(player) == "table" and player.id or player
  return N.seat_of(pid)
end

function game.stack(id)
  if N.stack(id) then return stack_proxy(id) end
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

----------------------------------------------------------------------------
-- match: the match contract (docs/match.md)
----------------------------------------------------------------------------

local MATCH = {}

-- Ends the match with scores (seat -> number); takes effect when the
-- action commits.
function MATCH.finish(opts)
  if type(opts) ~= "table" or type(opts.scores) ~= "table" then
    error("match.finish expects {scores = {seat = number, ...}}", 2)
  end
  submit("match.finish", { scores = opts.scores })
end

-- Ends the match without a result.
function MATCH.abort(reason)
  if type(reason) ~= "string" then error("match.abort expects a reason (a string)", 2) end
  submit("match.abort", { reason = reason })
end

-- A copy of the match's bookkeeping (phase, clocks, balances, result), or
-- nil in a room that runs no match.
function MATCH.info() return N.match_book() end

-- The phase the room tracks (nil without a match or phases).
function MATCH.phase()
  local m = N.match_book()
  return m and m.phase
end

local MATCH_PROXY = readonly("match", MATCH)

local GAME_FIELDS = {
  settings = function() return N.settings() end,
  sequence = function() return N.sequence() end,
  action_id = function() return N.action_id() end,
  actor = function() return N.actor() end,
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

-- The nodes `storage` keeps for its top-level tables (`storage.board`): a
-- node is a view of a path, whatever the path holds now, so one serves
-- every later read. Only the root keeps them, at most this many, and a
-- room starting another match drops them (STORAGE_ROOTS, P.forget).
local NODE_CHILDREN_MAX = 64
local STORAGE_ROOTS = {}
-- The read caches of the roots and of the nodes they keep (raw.rs,
-- `storage_meta`), which the host empties whenever the storage changed
-- outside the callbacks that keep them right; the roots' alone.
local STORAGE_CACHES, ROOT_CACHES = {}, {}
-- Under this key (a light userdata no script can make), a cache counts the
-- entries it filled; `false` there retires it.
local ABSENT = N.storage_absent

-- Drops the nodes the roots keep (P.forget): every cache is emptied, a
-- dropped node's is retired — a script may still hold the node, which
-- then reads the state every time — and only the roots' stay listed.
local function forget_storage_nodes()
  for _, reset in raw_ipairs(STORAGE_ROOTS) do reset() end
  for i = #STORAGE_CACHES, 1, -1 do
    local cache = STORAGE_CACHES[i]
    for k in next, cache do cache[k] = nil end
    cache[ABSENT] = false
    STORAGE_CACHES[i] = nil
  end
  for i, cache in raw_ipairs(ROOT_CACHES) do
    cache[ABSENT] = nil
    STORAGE_CACHES[i] = cache
  end
end

-- `cached`: the node keeps a read cache (the root; a top-level node the
-- root keeps). `kept_by`: the root's table of kept nodes (nil for the root).
local function storage_node(script_id, path, cached, kept_by)
  local node = {}
  local root = #path == 0
  -- A table at a top-level key reads its own keys in one native call too.
  local top = #path == 1 and type(path[1]) == "string" and path[1] or nil
  local children, kept = {}, 0
  if root then
    -- Emptied in place: the C `__index` below holds the table.
    STORAGE_ROOTS[#STORAGE_ROOTS + 1] = function()
      for k in next, children do children[k] = nil end
      kept = 0
    end
  end
  local function child_path(k)
    if type(k) ~= "string" and mtype(k) ~= "integer" then
      error("storage keys must be strings or integers, not " .. type(k), 3)
    end
    local p = { unpack(path) }
    p[#p + 1] = k
    return p
  end
  local function child(k, p)
    local c = root and children[k]
    if not c then
      -- A read-only call keeps no node: which nodes the root keeps (and so
      -- a node's identity) depends on the game's actions alone.
      local keep = root and kept < NODE_CHILDREN_MAX and not is_read_only()
      c = storage_node(script_id, p or child_path(k), keep, root and children or nil)
      if keep then
        children[k] = c
        kept = kept + 1
      end
    end
    return c
  end
  local mt = {
    __metatable = PROXY,
    __index = function(_, k)
      -- The common read, a top-level key, skips the path table.
      if root and type(k) == "string" then
        local v, is_table = N.storage_get_key(script_id, k)
        if is_table then return child(k, nil) end
        return v
      end
      if top and (type(k) == "string" or mtype(k) == "integer") then
        local v, is_table = N.storage_get_key(script_id, k, top)
        if is_table then return child(k, nil) end
        return v
      end
      local p = child_path(k)
      local v, is_table = N.storage_get(script_id, p)
      if is_table then return child(k, p) end
      return v
    end,
    __newindex = function(_, k, v, level)
      local ok, err, kind
      if root and type(k) == "string" then
        ok, err, kind = N.storage_set(script_id, k, v)
      elseif top and (type(k) == "string" or mtype(k) == "integer") then
        ok, err, kind = N.storage_set(script_id, k, v, top)
      else
        ok, err, kind = N.storage_set(script_id, child_path(k), v)
      end
      if not ok then fail(kind or "runtime", err, level or 2) end
    end,
    __len = function() return N.storage_len(script_id, path) end,
    __pairs = function()
      local keys = N.storage_keys(script_id, path)
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
  -- The root and top-level nodes read a key, and write a scalar to one,
  -- with C functions (`N.storage_meta`) that do what the Lua metamethods
  -- above do, charged the same, and hand them anything else.
  if root or top then
    mt.__index, mt.__newindex = N.storage_meta(script_id, top, mt.__index,
      function(k) return child(k, nil) end, mt.__newindex, fail,
      root and children or kept_by, cached)
    if cached then STORAGE_CACHES[#STORAGE_CACHES + 1] = mt.__index end
    if root then ROOT_CACHES[#ROOT_CACHES + 1] = mt.__index end
  end
  return raw_setmetatable(node, mt)
end
-- Whether a node was kept from an earlier call or is made now must not
-- change what a read costs the budget: the natives charge it instead.
mark_uncounted(storage_node)

-- A script's `storage`: one root for all its bindings, since they share
-- its storage — and the root's read cache, which a write through one
-- binding's root would otherwise leave stale in another's.
local ROOTS_BY_SCRIPT = {}
local function storage_root(script_id)
  local root = ROOTS_BY_SCRIPT[script_id]
  if root == nil then
    root = storage_node(script_id, {}, true)
    ROOTS_BY_SCRIPT[script_id] = root
  end
  return root
end

----------------------------------------------------------------------------
-- ui and timer: prompts and one-shot timers whose callbacks are stored by
-- name (with the binding) in canonical state, so a response or a fire
-- reaches the right function after a replay or a hot reload.
----------------------------------------------------------------------------

-- `native` stores the record (N.remember_prompt or N.remember_timer).
local function remember(native, ...)
  local ok, err, k = native(...)
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
    local id = opts.id or N.next_id("prompt")
    local payload = { id = id, kind = kind, playerId = id_of(player, "a player"), title = title, default = opts.default }
    for k, v in next, extra do payload[k] = v end
    submit("prompt.create", payload)
    local cb = callback_name(opts, "ui:" .. kind)
    if cb then remember(N.remember_prompt, id, cb, spec.script, spec.binding) end
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
    local id = N.next_id("timer")
    submit("timer.register", { timerId = id, delay = ms, callback = callback, scriptId = spec.script,
      bindingId = spec.binding, entityId = spec.entity_id })
    if data ~= nil then remember(N.remember_timer, id, data) end
    return id
  end
  function t.cancel(id)
    submit("timer.cancel", { timerId = id })
  end
  return raw_setmetatable({}, { __metatable = PROXY, __index = t,
    __newindex = function() fail("sandbox", "timer is read-only", 2) end })
end
