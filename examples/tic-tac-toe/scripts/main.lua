-- Tic-tac-toe. Each seat's player drags one of their pieces onto an empty
-- cell (a snap point of capacity one); three in a row wins.

local LINES = {
  { 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 },   -- rows
  { 1, 4, 7 }, { 2, 5, 8 }, { 3, 6, 9 },   -- columns
  { 1, 5, 9 }, { 3, 5, 7 },                -- diagonals
}

local function turn() return storage.turn or "x" end

-- The seat a player sits in ("x" or "o"), or nil.
local seat_of = game.seat_of

-- Guards run before the move commits; a reason tells the player why not.
function can_grab(player, piece)
  if storage.winner or storage.draw then return false, "the game is over" end
  local seat = seat_of(player)
  if not piece:has_tag(seat or "") then return false, "that is not your piece" end
  if seat ~= turn() then return false, "wait for your turn" end
  if piece.placement.kind == "snap" then return false, "pieces on the board stay put" end
  return true
end

function can_drop(player, piece, transform)
  local p = transform.position
  for _, cell in ipairs(game.entities("cell")) do
    local c = cell.position
    local near = (p.x - c.x) ^ 2 + (p.z - c.z) ^ 2 <= 0.81
    if near and #cell:get("snap_point").attached == 0 then return true end
  end
  return false, "drop it on an empty cell"
end

-- The mark ("x", "o" or nil) in cell n.
local function mark(n)
  local piece = game.entity("cell_" .. n):get("snap_point").attached[1]
  if piece then return piece:sub(1, 1) end
end

local function winner()
  for _, line in ipairs(LINES) do
    local a = mark(line[1])
    if a and a == mark(line[2]) and a == mark(line[3]) then return a end
  end
end

-- A piece landed on a cell: that was the move.
function on_snap_attached(event)
  storage.moves = (storage.moves or 0) + 1
  local w = winner()
  if w then
    storage.winner = w
    game.entity("status"):set_text(w .. " wins")
  elseif storage.moves == 9 then
    storage.draw = true
    game.entity("status"):set_text("draw")
  else
    storage.turn = turn() == "x" and "o" or "x"
    game.entity("status"):set_text(storage.turn .. " to play")
  end
end

-- The board zone tracks how many pieces are on the board.
function on_zone_entered(event)
  if event.data.zoneId == "board" then storage.on_board = (storage.on_board or 0) + 1 end
end

-- The match contract (docs/match.md): the seat to move is acting; the
-- result comes from is_terminal/score once a line or a full board ends it.
function participation(seat)
  if storage.winner or storage.draw then return "finished" end
  return seat == turn() and "acting" or "waiting"
end

function is_terminal() return storage.winner ~= nil or storage.draw == true end

function score()
  if storage.draw then return { x = 0.5, o = 0.5 } end
  return { [storage.winner] = 1, [storage.winner == "x" and "o" or "x"] = 0 }
end
