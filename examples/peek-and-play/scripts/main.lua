-- Peek and play: two private hands, a face-down draw pile, a face-up
-- discard pile. On your turn choose one: play a card (face up onto the
-- discard pile, scoring its rank), draw a card, peek at your opponent's
-- hand, or mulligan (your hand goes back into the pile, the pile is
-- shuffled, and you draw as many). After `turns` turns the higher score
-- wins.
--
-- What each seat sees is the kernel's business (docs/observations.md): a
-- hand shows its cards to its owner and a count to everyone else, the pile
-- shows a count, and a peek reveals a hand to one seat until its cards next
-- go into a hidden place. This script only keeps public things in public
-- places: the status line names cards only once they are face up.

local function say(text) game.entity("status"):set_text(text) end
local function other(seat) return seat == "north" and "south" or "north" end
local function hand(seat) return game.entity("hand_" .. seat) end
local pile = function() return game.entity("draw_pile") end

-- The current player's choices: their own cards (the prompt reaches only
-- them), then the moves that name no card.
local function ask()
  storage.asks = storage.asks + 1
  local seat = storage.seat
  local choices = {}
  for _, card in ipairs(hand(seat):items()) do choices[#choices + 1] = "play:" .. card.id end
  if #pile():items() > 0 then choices[#choices + 1] = "draw" end
  choices[#choices + 1] = "peek"
  if #hand(seat):items() > 0 and #pile():items() > 0 then choices[#choices + 1] = "mulligan" end
  ui:prompt(game.seat(seat), "Your move", choices,
    { id = "ask_" .. storage.asks, default = "peek", callback = "on_choice" })
end

local function finish()
  storage.over = true
  local n, s = game.entity("score_north").value, game.entity("score_south").value
  say(n == s and ("draw at " .. n) or ((n > s and "north" or "south") .. " wins " .. math.max(n, s) .. " to " .. math.min(n, s)))
end

local function next_turn()
  storage.turns = storage.turns + 1
  if storage.turns >= game.settings.turns then return finish() end
  storage.seat = other(storage.seat)
  ask()
end

local function play(seat, id)
  local card = game.entity(id)
  local mine = false
  for _, c in ipairs(hand(seat):items()) do if c.id == id then mine = true end end
  if not mine then error("not in " .. seat .. "'s hand: " .. id) end
  card:move_to(game.entity("discard"))
  if card.flipped then card:flip() end
  game.entity("score_" .. seat):add(card.props.rank)
  say(seat .. " plays a " .. card.props.rank)
end

local function mulligan(seat)
  local n = #hand(seat):items()
  hand(seat):move_all_to(pile())
  pile():shuffle()
  pile():draw_to(hand(seat), n)
  say(seat .. " takes a new hand of " .. n)
end

-- The game starts once both seats have a player: shuffle and deal.
function on_seat_assigned(event)
  if storage.seat or not (game.seat("north") and game.seat("south")) then return end
  storage.seat, storage.turns, storage.asks = "north", 0, 0
  pile():shuffle()
  pile():deal({ hand("north"), hand("south") }, game.settings.handSize)
  say("north to play")
  ask()
end

function on_choice(answer, event)
  local seat = storage.seat
  if answer == "draw" then
    pile():draw_to(hand(seat), 1)
    say(seat .. " draws")
  elseif answer == "peek" then
    hand(other(seat)):peek(seat)
    say(seat .. " peeks at " .. other(seat) .. "'s hand")
  elseif answer == "mulligan" then
    mulligan(seat)
  else
    play(seat, string.sub(answer, 6))
  end
  next_turn()
end

-- What each seat's view carries besides the table (docs/observations.md):
-- whose turn it is and how many cards each hand holds — things every seat
-- may know. These run read-only, after every action a viewer is shown.
function observe(seat)
  return {
    yourTurn = storage.seat == seat and not storage.over,
    turn = storage.turns or 0,
    hand = #hand(seat):items(),
    opponentHand = #hand(other(seat)):items(),
  }
end

function public_view()
  return { toPlay = (not storage.over and storage.seat) or "nobody", turn = storage.turns or 0 }
end
