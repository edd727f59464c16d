-- The bare floor of benches/simulate.rs: just enough of the game API for
-- tic-tac-toe's script (examples/tic-tac-toe/scripts/main.lua) to run in
-- plain Lua, with no engine behind it: entities are plain tables, storage
-- is a plain table, methods do nothing but set a field.
storage = {}
ENT = {}
local Entity = {}
Entity.__index = Entity
function Entity:has_tag(t) return self.tags[t] == true end
function Entity:set_locked(b) self.locked = b end
function Entity:set_text(s) self.text = s end
local function ent(id, tags, x, z)
  local e = setmetatable({ id = id, tags = tags, position = { x = x, y = 0, z = z } }, Entity)
  ENT[id] = e
  return e
end
-- The cells where game.json puts them: 2 apart, rows along z.
for n = 1, 9 do ent("cell_" .. n, { cell = true }, ((n - 1) % 3) * 2, ((n - 1) // 3) * 2) end
ent("status", {}, 0, 0)
PIECES = { x = {}, o = {} }
for i = 1, 5 do PIECES.x[i] = ent("x" .. i, { piece = true, x = true }, -3, i) end
for i = 1, 4 do PIECES.o[i] = ent("o" .. i, { piece = true, o = true }, 7, i) end
PLAYERS = { x = { id = "px" }, o = { id = "po" } }
local SEAT = { px = "x", po = "o" }
game = {}
function game.entity(id) return ENT[id] end
function game.seat_of(p) return SEAT[p.id] end
