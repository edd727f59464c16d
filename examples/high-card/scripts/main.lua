-- High card: press "deal" and each seat gets the top card of the deck,
-- face up. The higher rank scores a point; the first seat to reach
-- settings.target wins.

local SEATS = { "north", "south" }

function on_start(event)
  game.entity("deck"):shuffle()
  game.entity("status"):set_text("Press deal to play a round")
end

-- Guards answer true, or false plus a reason the player will see.
function can_press(player, button)
  if storage.winner then
    return false, "the game is over: " .. storage.winner .. " won"
  end
  return true
end

function on_button_pressed(event)
  if event.data.entityId ~= "deal" then return end
  local deck = game.entity("deck")
  if #deck:items() < #SEATS then
    game.entity("status"):set_text("The deck is empty: a draw")
    return
  end
  local ranks = {}
  for _, seat in ipairs(SEATS) do
    local hand = game.entity("hand_" .. seat)
    deck:draw_to(hand, 1)      -- applies at once: the card is in the hand now
    local card = hand:top()
    card:flip()                -- face up
    ranks[seat] = card.props.rank
  end
  local n, s = ranks.north, ranks.south
  if n == s then
    game.entity("status"):set_text("Tie at " .. n)
    return
  end
  local winner = n > s and "north" or "south"
  local score = game.entity("score_" .. winner)
  score:add(1)
  storage.rounds = (storage.rounds or 0) + 1   -- canonical, rolled back on failure
  if score.value >= game.settings.target then
    storage.winner = winner
    game.entity("status"):set_text(winner .. " wins the game!")
  else
    game.entity("status"):set_text(string.format("%s takes the round (%d vs %d)", winner, n, s))
  end
end
