-- The peer workload's two rules, in Lua (the scripted variant).

-- flip is rejected for a locked entity.
function can_flip(player, entity)
  return not entity.locked
end

-- refillDeck: hands e001..e004 in order, each hand's cards in order, go
-- back to the end of the deck: one container.move per card, the same moves
-- as `for _, card in ipairs(hand:items()) do card:move_to(deck) end`.
local HANDS = { "e001", "e002", "e003", "e004" }

function on_button_pressed(event)
  local deck = game.entity("e000")
  for _, h in ipairs(HANDS) do
    game.entity(h):move_all_to(deck)
  end
end
