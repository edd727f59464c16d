-- Push your luck: on your turn, roll to add the die to your turn total, or
-- hold to bank it. Rolling a 1 loses the turn total. The turn timer holds
-- for you when it runs out (the safe default move).

local function say(text) game.entity("status"):set_text(text) end

local function seat_player(seat) return game.seat(seat) end

-- Asks the current player, and arms the turn timer.
local function ask()
  storage.asks = storage.asks + 1
  local seat = storage.seat
  local id = ui:prompt(seat_player(seat), "Roll or hold? (turn total " .. game.entity("turn_total").value .. ")",
    { "roll", "hold" }, { id = "ask_" .. storage.asks, default = "hold", callback = "on_choice" })
  storage.prompt = id
  storage.timer = timer.after(game.settings.turnMs, "on_timeout", { prompt = id })
end

local function finish(text)
  storage.over = true
  say(text)
end

local function next_turn()
  game.entity("turn_total"):set_value(0)
  storage.turns = storage.turns + 1
  if storage.turns >= game.settings.maxTurns then
    local n, s = game.entity("score_north").value, game.entity("score_south").value
    return finish(n == s and "Draw after " .. storage.turns .. " turns"
      or (n > s and "north" or "south") .. " wins on points")
  end
  storage.seat = storage.seat == "north" and "south" or "north"
  ask()
end

local function hold()
  local seat = storage.seat
  local score = game.entity("score_" .. seat)
  score:add(game.entity("turn_total").value)
  if score.value >= game.settings.target then
    return finish(seat .. " wins with " .. score.value)
  end
  say(seat .. " holds at " .. score.value)
  next_turn()
end

local function roll()
  local die = game.entity("d6")
  die:roll()
  if die.value == 1 then
    say(storage.seat .. " rolled a 1 and loses the turn")
    return next_turn()
  end
  game.entity("turn_total"):add(die.value)
  ask()
end

-- The game starts once both seats have a player.
function on_seat_assigned(event)
  if storage.seat or not (seat_player("north") and seat_player("south")) then return end
  storage.seat, storage.turns, storage.asks = "north", 0, 0
  ask()
end

-- The answer to a turn prompt (stored by name with the prompt).
function on_choice(answer, event)
  timer.cancel(storage.timer)
  if answer == "roll" then roll() else hold() end
end

-- The turn timer ran out: cancel the question and hold for the player.
function on_timeout(data, event)
  if storage.over or storage.prompt ~= data.prompt then return end
  ui:cancel(data.prompt)
  say(storage.seat .. " ran out of time and holds")
  hold()
end
