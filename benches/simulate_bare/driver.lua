-- The bare floor's matches (benches/simulate.rs): random bots as
-- `simulate` plays them — the seat the game says is acting picks one of
-- its pieces not yet on the board and drops it on a free cell, both
-- uniformly — calling the script's functions where the engine would:
-- the match's questions, the two guards, the two handlers of a drop.
-- Nothing else runs: no table, no transactions, no budget, no events.
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

-- Plays `n` matches; answers the wins of x and of o and the draws.
function play(n)
  local x, o, draws = 0, 0, 0
  local free_pieces, free_cells, placed = {}, {}, {}
  for _ = 1, n do
    storage = {}
    for k in pairs(placed) do placed[k] = nil end
    while not is_terminal() do
      local acting
      for i = 1, 2 do
        if participation(SEATS[i]) == "acting" then acting = SEATS[i] end
      end
      local np = 0
      for _, p in ipairs(PIECES[acting]) do
        if not placed[p] then np = np + 1 free_pieces[np] = p end
      end
      local piece, player = free_pieces[roll(np)], PLAYERS[acting]
      assert(can_grab(player, piece))
      local nc, board = 0, storage.board
      for c = 1, 9 do
        if not (board and board[CELL_IDS[c]]) then nc = nc + 1 free_cells[nc] = c end
      end
      local c = free_cells[roll(nc)]
      local at = CELL_POS[c]
      assert(can_drop(player, piece, { position = { x = at.x, y = 0, z = at.z }, rotation = ROT, scale = SCALE }))
      placed[piece] = true
      on_snap_attached({ data = { snapPointId = CELL_IDS[c], entityId = piece.id } })
      on_zone_entered({ data = { zoneId = "board", entityId = piece.id } })
    end
    local s = score()
    if s.x == 1 then x = x + 1 elseif s.o == 1 then o = o + 1 else draws = draws + 1 end
  end
  return x, o, draws
end
