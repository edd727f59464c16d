-- Small Hearts: four seats, 32 cards (7..A in four suits), 8 tricks.
-- The seat to play answers a prompt naming a card of its hand; it must
-- follow the led suit when it can (can_act refuses otherwise). The highest
-- card of the led suit takes the trick and leads the next. Each heart
-- taken is 1 point, the queen of spades 5; after 8 tricks the lowest
-- score wins (game.json: match.scoring = "lowestWins").

local SEATS = { "north", "east", "south", "west" }
local NEXT = { north = "east", east = "south", south = "west", west = "north" }
local QUEEN_OF_SPADES = "spades_Q"

local function hand(seat) return game.entity("hand_" .. seat) end
local function say(text) game.entity("status"):set_text(text) end

local function points_of(card)
  if card.id == QUEEN_OF_SPADES then return 5 end
  if card.props.suit == "hearts" then return 1 end
  return 0
end

-- By suit (clubs, diamonds, spades, hearts), then rank, bottom first.
local function by_suit_then_rank(a, b)
  local pa, pb = a.props, b.props
  if pa.suitOrder ~= pb.suitOrder then return pa.suitOrder < pb.suitOrder end
  return pa.rank < pb.rank
end

-- Whether `seat` holds a card of `suit`.
local function holds_suit(seat, suit)
  for _, c in ipairs(hand(seat):items()) do
    if c.props.suit == suit then return true end
  end
  return false
end

-- The cards `seat` may play now, in hand order.
local function legal_cards(seat)
  local led, cards, all = storage.led, {}, {}
  local follow = led and holds_suit(seat, led)
  for _, c in ipairs(hand(seat):items()) do
    all[#all + 1] = c.id
    if not follow or c.props.suit == led then cards[#cards + 1] = c.id end
  end
  return cards, all
end

local function ask()
  local seat = storage.turn
  storage.asks = storage.asks + 1
  local legal, all = legal_cards(seat)
  storage.prompt = "play_" .. storage.asks
  ui:prompt(game.seat(seat), "Play a card", all,
    { id = storage.prompt, default = legal[1], callback = "on_play" })
  say(seat .. " to play")
end

function on_start(event)
  local deck = game.entity("deck")
  deck:shuffle()
  local hands = {}
  for i, seat in ipairs(SEATS) do hands[i] = hand(seat) end
  deck:deal(hands, game.settings.handSize or 8)
  for _, h in ipairs(hands) do h:sort(by_suit_then_rank) end
  storage.turn, storage.tricks, storage.asks = "north", 0, 0
  storage.played = {}
  say("waiting for four players")
end

-- Play starts once all four seats have a player.
function on_seat_assigned(event)
  if storage.started then return end
  for _, seat in ipairs(SEATS) do
    if not game.seat(seat) then return end
  end
  storage.started = true
  ask()
end

-- The general guard: a seat acts only by answering its prompt (or sorting
-- its own hand), and must follow suit when it can.
function can_act(player, action)
  local t = action.type
  if t == "container.reorder" or t == "match.sense" then return true end
  if t ~= "prompt.respond" then
    return false, "play by answering your prompt"
  end
  local p = action.payload
  -- Other prompts, other players, answers that are not cards: the kernel's
  -- own checks answer those (prompt_closed, wrong_player, invalid_response).
  if p.promptId ~= storage.prompt or game.seat_of(player) ~= storage.turn then return true end
  if type(p.response) ~= "string" then return true end
  local card = game.entity(p.response)
  if not card or card.placement.id ~= "hand_" .. storage.turn then return true end
  local led = storage.led
  if led and card.props.suit ~= led and holds_suit(storage.turn, led) then
    return false, "you must follow " .. led
  end
  return true
end

local function finish_trick()
  local led, best, winner = storage.led, nil, nil
  local points = 0
  for _, play in ipairs(storage.played) do
    local card = game.entity(play.card)
    points = points + points_of(card)
    if card.props.suit == led and (best == nil or card.props.rank > best) then
      best, winner = card.props.rank, play.seat
    end
  end
  game.entity("trick"):move_all_to(game.entity("taken_" .. winner))
  if points > 0 then game.entity("score_" .. winner):add(points) end
  storage.tricks = storage.tricks + 1
  storage.last_trick = { winner = winner, points = points }
  storage.played = {}
  storage.led = nil
  storage.turn = winner
  if storage.tricks >= 8 then
    storage.over = true
    storage.prompt = nil
    say("the hand is over")
    return
  end
  ask()
end

function on_play(answer, event)
  local seat = storage.turn
  local card = game.entity(answer)
  card:move_to(game.entity("trick"))
  if #storage.played == 0 then storage.led = card.props.suit end
  table.insert(storage.played, { seat = seat, card = card.id })
  if #storage.played == 4 then return finish_trick() end
  storage.turn = NEXT[seat]
  ask()
end

-- The match contract (docs/match.md).
function participation(seat)
  if storage.over then return "finished" end
  return seat == storage.turn and "acting" or "waiting"
end

function current_phase() return storage.over and "over" or "play" end

function is_terminal() return storage.over == true end

function score()
  local out = {}
  for _, seat in ipairs(SEATS) do out[seat] = game.entity("score_" .. seat).value end
  return out
end

-- What every seat may know besides the table.
function observe(seat)
  return {
    toPlay = (not storage.over) and storage.turn or nil,
    yourTurn = storage.turn == seat and not storage.over,
    led = storage.led,
    tricks = storage.tricks or 0,
  }
end

function public_view()
  return { toPlay = (not storage.over) and storage.turn or nil, led = storage.led, tricks = storage.tricks or 0 }
end
