-- The peer workload's two rules, in Lua (the scripted variant).

-- flip is rejected for a locked entity.
function can_flip(player, entity)
  return not entity.locked
end

-- refillDeck: hands e001..e004 in order, each hand's cards in order, go
-- back to the end of the deck.
local HANDS = { "e001", "e002", "e003", "e004" }

function on_button_pressed(event)
  local deck = game.entity("e000")
  for _, h in ipairs(HANDS) do
    for _, card in ipairs(game.entity(h):items()) do
      card:move_to(deck)
    end
  end
end
