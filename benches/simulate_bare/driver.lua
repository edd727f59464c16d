-- The bare floor's matches (benches/simulate.rs). `record(n)` plays n
-- matches with random bots as `simulate` plays them
-- (room/src/matching.rs): each turn the acting seat's candidates are
-- listed — a held piece: a drop where it lies and one on each free cell;
-- a piece of its own neither held nor on the board: a pick-up — and tried
-- in a random order, the first the guards accept played. It calls the
-- script's functions where the engine calls them — both guards on every
-- try, both handlers of a drop, the match's questions at the start and
-- after each drop (the only moves that change storage; the engine asks
-- again only then) — and keeps every call. `replay()` makes those calls
-- again, in order, and nothing else: the script's own cost for those
-- matches, which is what the bench times. No table, no transactions, no
-- budget, no events.
local seed = 12345
local function roll(n)
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed % n + 1
end
local CELL_IDS, CELL_POS = {}, {}
for n = 1, 9 do
  CELL_IDS[n] = "cell_" .. n
  CELL_POS[n] = ENT[CELL_IDS[n]].position
end
local SEATS = { "x", "o" }
local ROT, SCALE = { x = 0, y = 0, z = 0, w = 1 }, { x = 1, y = 1, z = 1 }

-- The seat the game says is acting, or nil once it is over.
-- The calls kept: function, its three arguments (a new match: storage).
local R_f, R_a, R_b, R_c, calls = {}, {}, {}, {}, 0
local NEW_MATCH = {}
local function call(f, a, b, c)
  calls = calls + 1
  R_f[calls], R_a[calls], R_b[calls], R_c[calls] = f, a, b, c
  return f(a, b, c)
end

local function acting_seat()
  if call(is_terminal) then return nil end
  local acting
  for i = 1, 2 do
    if call(participation, SEATS[i]) == "acting" then acting = SEATS[i] end
  end
  return acting
end

-- The candidates of a turn, reused: piece i and its cell (0: where the
-- piece lies; nil: a pick-up), `count` of them.
local cand_piece, cand_cell, count = {}, {}, 0
local function add(piece, c)
  count = count + 1
  cand_piece[count], cand_cell[count] = piece, c or false
end

-- Tries the candidates in a random order; the first the guards accept is
-- played. Answers whether it was a drop.
local function try(player, held, placed)
  for i = count, 2, -1 do
    local j = roll(i)
    cand_piece[i], cand_piece[j] = cand_piece[j], cand_piece[i]
    cand_cell[i], cand_cell[j] = cand_cell[j], cand_cell[i]
  end
  for i = 1, count do
    local piece, c = cand_piece[i], cand_cell[i]
    if c == false then
      if call(can_grab, player, piece) then
        held[piece] = true
        return false
      end
    else
      local at = c == 0 and piece.position or CELL_POS[c]
      local t = { position = { x = at.x, y = 0, z = at.z }, rotation = ROT, scale = SCALE }
      if call(can_drop, player, piece, t) then
        held[piece], placed[piece] = nil, true
        call(on_snap_attached, { data = { snapPointId = CELL_IDS[c], entityId = piece.id } })
        call(on_zone_entered, { data = { zoneId = "board", entityId = piece.id } })
        return true
      end
    end
  end
  error("no candidate was accepted")
end

-- Plays `n` matches, keeping the calls; answers the wins of x and of o
-- and the draws.
function record(n)
  local x, o, draws = 0, 0, 0
  for _ = 1, n do
    calls = calls + 1
    R_f[calls] = NEW_MATCH
    storage = {}
    local held, placed = {}, {}
    local acting = acting_seat()
    while acting do
      local board = storage.board
      count = 0
      for _, p in ipairs(PIECES[acting]) do
        if held[p] then
          add(p, 0)
          for c = 1, 9 do
            if not (board and board[CELL_IDS[c]]) then add(p, c) end
          end
        elseif not placed[p] then
          add(p)
        end
      end
      if try(PLAYERS[acting], held, placed) then acting = acting_seat() end
    end
    local s = call(score)
    if s.x == 1 then x = x + 1 elseif s.o == 1 then o = o + 1 else draws = draws + 1 end
  end
  return x, o, draws
end

-- Makes the kept calls again; answers how many.
function replay()
  for i = 1, calls do
    local f = R_f[i]
    if f == NEW_MATCH then
      storage = {}
    else
      f(R_a[i], R_b[i], R_c[i])
    end
  end
  return calls
end
