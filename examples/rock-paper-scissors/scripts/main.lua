-- Rock, paper, scissors over N rounds, as a match (docs/match.md).
--
-- Each round both seats get a private prompt. Nobody sees the other's
-- choice until both have chosen: the answers wait in storage (never sent
-- to a seat), and the room tells the game when the round can resolve —
-- `phase_ready` once is_ready() says both chose, or `phase_deadline`.

local BEATS = { rock = "scissors", paper = "rock", scissors = "paper" }
local THROWS = { "rock", "paper", "scissors" }

local function rounds() return game.settings.rounds or 3 end

-- Both seats filled: the first round starts.
local function ask_all()
  storage.asked = {}
  for _, s in ipairs(game.seats()) do
    local id = ui:prompt(s.player, "Round " .. storage.round .. ": your throw", THROWS,
      { callback = "thrown", default = "rock" })
    storage.asked[s.id] = id
  end
end

function on_seat_assigned(event)
  for _, s in ipairs(game.seats()) do
    if not s.player then return end
  end
  storage.round = 1
  storage.choice = {}
  storage.wins = { a = 0, b = 0 }
  ask_all()
  game.entity("status"):set_text("round 1: choose")
end

-- A throw arrived: kept secret until the round resolves.
function thrown(answer, event)
  storage.choice[game.seat_of(event.data.playerId)] = answer
end

-- The round resolves: both throws revealed together, then the next round.
local function resolve()
  local a = storage.choice.a or "rock"
  local b = storage.choice.b or "rock"
  local line = "round " .. storage.round .. ": a " .. a .. ", b " .. b
  if BEATS[a] == b then
    storage.wins.a = storage.wins.a + 1
    game.entity("score_a"):add(1)
  elseif BEATS[b] == a then
    storage.wins.b = storage.wins.b + 1
    game.entity("score_b"):add(1)
  end
  storage.round = storage.round + 1
  storage.choice = {}
  if storage.round > rounds() then
    game.entity("status"):set_text(line .. "; game over")
  else
    game.entity("status"):set_text(line)
    ask_all()
  end
end

-- The match contract -------------------------------------------------------

function current_phase()
  if storage.round == nil then return "lobby" end
  if storage.round > rounds() then return "done" end
  return "choose"
end

function is_ready()
  return storage.choice ~= nil and storage.choice.a ~= nil and storage.choice.b ~= nil
end

function participation(seat)
  if storage.round == nil or storage.round > rounds() then return "waiting" end
  if storage.choice[seat] == nil then return "acting" end
  return "waiting"
end

-- The phase closes: when both chose, or at its deadline (seats that had
-- not chosen got their safe default first: the prompt's default).
function on_host_event(event)
  if event.type == "phase_ready" or event.type == "phase_deadline" then
    if current_phase() == "choose" then resolve() end
  end
end

-- A sensing tool: `{"type":"match.sense","payload":{"name":"oracle"}}`.
-- Read-only; its math.random draws from the match's sensing stream, so
-- asking never changes the game's own randomness. The answer goes only to
-- the seat that asked.
function sense_oracle(seat, input)
  return { suggestion = THROWS[math.random(3)], round = storage.round }
end

function is_terminal()
  return storage.round ~= nil and storage.round > rounds()
end

function score()
  return { a = storage.wins.a, b = storage.wins.b }
end
