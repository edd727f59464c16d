-- Tic-tac-toe. Each seat's player drags one of their pieces onto an empty
-- cell (a snap point of capacity one); three in a row wins.

local LINES = {
  { 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 },   -- rows
  { 1, 4, 7 }, { 2, 5, 8 }, { 3, 6, 9 },   -- columns
  { 1, 5, 9 }, { 3, 5, 7 },                -- diagonals
}

-- The board lives in storage, as game state always does: storage.board
-- maps a cell's id to the mark on it ("x" or "o"); so does whose turn it is.
local function turn() return storage.turn or "x" end

-- The seat a player sits in ("x" or "o"), or nil.
local seat_of = game.seat_of

-- Cell n's id and place. The top level may read the game; cells never
-- move, so this table is a constant.
local CELLS = {}
for n = 1, 9 do
  local id = "cell_" .. n
  local p = game.entity(id).position
  CELLS[n] = { id = id, x = p.x, z = p.z }
end

-- Guards run before the move commits; a reason tells the player why not.
-- (A piece on the board is locked, so the table refuses to pick it up
-- before any guard is asked; in a match, so does the room for the other
-- seat's pieces: game.json's match.ownership is "seatTags". The check
-- stays here for a room that runs no match.)
function can_grab(player, piece)
  if storage.winner or storage.draw then return false, "the game is over" end
  local seat = seat_of(player)
  if not piece:has_tag(seat or "") then return false, "that is not your piece" end
  if seat ~= turn() then return false, "wait for your turn" end
  return true
end

function can_drop(player, piece, transform)
  local p = transform.position
  local board = storage.board
  for n, c in ipairs(CELLS) do
    local near = (p.x - c.x) ^ 2 + (p.z - c.z) ^ 2 <= 0.81
    if near and not (board and board[c.id]) then return true end
  end
  return false, "drop it on an empty cell"
end

-- The lines through each cell (a constant, like LINES).
local LINES_AT = {}
for _, line in ipairs(LINES) do
  for _, n in ipairs(line) do
    LINES_AT[n] = LINES_AT[n] or {}
    table.insert(LINES_AT[n], line)
  end
end

-- Whether mark m, just put in cell n, completes one of the lines through
-- it. (The board is read from storage once, not once per cell.)
local function wins(n, m)
  local board = storage.board
  for _, line in ipairs(LINES_AT[n]) do
    local full = true
    for _, c in ipairs(line) do
      if board[CELLS[c].id] ~= m then full = false break end
    end
    if full then return true end
  end
  return false
end

-- A piece landed on a cell: that was the move. The piece stays there.
function on_snap_attached(event)
  local cell, m = event.data.snapPointId, event.data.entityId:sub(1, 1)
  game.entity(event.data.entityId):set_locked(true)
  local n = tonumber(cell:sub(6))
  if not storage.board then storage.board = {} end
  storage.board[cell] = m
  storage.moves = (storage.moves or 0) + 1
  if wins(n, m) then
    storage.winner = m
    game.entity("status"):set_text(m .. " wins")
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

-- A bot for `digipology simulate --bots game` (docs/simulate.md): it takes
-- a cell that wins, else one that blocks the other seat, else the centre,
-- else a free cell chosen by `roll`. One action at a time: pick a piece
-- up, then put it down on that cell. Read-only, like every match function.

-- The board as a plain table, cell n -> "x", "o" or nil: read from storage
-- once, since the bot looks at every cell many times.
local function marks()
  local board, out = storage.board, {}
  if board then
    for n = 1, 9 do out[n] = board[CELLS[n].id] end
  end
  return out
end

-- Whether cell n completes a line of two of `m`'s marks on board `b`.
local function completes(b, n, m)
  for _, line in ipairs(LINES_AT[n]) do
    local count = 0
    for _, c in ipairs(line) do
      if c ~= n and b[c] == m then count = count + 1 end
    end
    if count == 2 then return true end
  end
  return false
end

local function target_cell(seat, roll)
  local b, free = marks(), {}
  for n = 1, 9 do
    if not b[n] then free[#free + 1] = n end
  end
  if #free == 0 then return nil end
  local other = seat == "x" and "o" or "x"
  for _, m in ipairs({ seat, other }) do
    for _, n in ipairs(free) do
      if completes(b, n, m) then return n end
    end
  end
  if not b[5] then return 5 end
  return free[roll % #free + 1]
end

function bot(seat, roll)
  if seat ~= turn() or storage.winner or storage.draw then return nil end
  local cell = target_cell(seat, roll)
  if not cell then return nil end
  for _, piece in ipairs(game.entities(seat)) do
    if piece.held_by then
      return { type = "entity.drop", payload = { entityId = piece.id, transform = {
        position = game.entity("cell_" .. cell).position,
        rotation = { x = 0, y = 0, z = 0, w = 1 }, scale = { x = 1, y = 1, z = 1 } } } }
    end
  end
  for _, piece in ipairs(game.entities(seat)) do
    if piece.placement.kind ~= "snap" then
      return { type = "entity.grab", payload = { entityId = piece.id } }
    end
  end
end
