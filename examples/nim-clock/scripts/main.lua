-- Nim under chess clocks, as a match (docs/match.md).
--
-- The seat to move is "acting", so only its clock runs. A seat whose total
-- clock runs out loses: the room raises player_time_exhausted and this
-- game forfeits it (the seed's Chess rule).

local function turn() return storage.turn or "first" end
local function other(seat) return seat == "first" and "second" or "first" end
local function left() return game.entity("pile"):get("counter").value end

-- The general guard: every player action passes here first. Only the seat
-- to move may take, and never more than is left.
function can_act(player, action)
  if storage.winner then return false, "the game is over" end
  if game.seat_of(player) ~= turn() then return false, "wait for your turn" end
  local button = game.entity(action.payload.entityId or "")
  local take = button and button.props.take
  if take and take > left() then return false, "only " .. left() .. " left" end
  return true
end

function on_button_pressed(event)
  local seat = game.seat_of(event.data.playerId)
  game.entity("pile"):add(-game.entity(event.data.entityId).props.take)
  if left() == 0 then
    storage.winner = seat
    game.entity("status"):set_text(seat .. " took the last one and wins")
  else
    storage.turn = other(seat)
    game.entity("status"):set_text(left() .. " left, " .. storage.turn .. " to play")
  end
end

-- The match contract -------------------------------------------------------

function current_phase()
  if storage.winner or storage.forfeit then return "over" end
  return "play"
end

function participation(seat)
  if storage.winner or storage.forfeit then return "finished" end
  return seat == turn() and "acting" or "waiting"
end

function on_host_event(event)
  if event.type == "player_time_exhausted" then
    storage.forfeit = event.seat
    game.entity("status"):set_text(event.seat .. " ran out of time")
    match.finish { scores = { [event.seat] = 0, [other(event.seat)] = 1 } }
  end
end

function is_terminal() return storage.winner ~= nil end

function score()
  return { [storage.winner] = 1, [other(storage.winner)] = 0 }
end
