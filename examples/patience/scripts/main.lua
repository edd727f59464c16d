-- Climb: turn cards from the stock onto the waste pile, and move them to
-- the foundation in order, 1 up to 9. Only the waste pile's top card can
-- be taken (stacks only give up their top).

local WASTE = { x = 5, y = 0, z = 0 }

local function say(text) game.entity("status"):set_text(text) end
local function next_rank() return storage.next or 1 end

function on_start(event)
  game.entity("stock"):shuffle()
end

-- The turn button: the stock's top card goes face up onto the waste pile.
function on_button_pressed(event)
  local card = game.entity("stock"):top()
  if not card then return say("The stock is empty") end
  card:move_to(nil)          -- out of the stock, into the world
  card:move(WASTE)
  card:flip()
  local pile = game.stack("waste")
  local loose = storage.loose and game.entity(storage.loose)
  if pile then
    pile:add(card)
  elseif loose and loose.placement.kind == "world" and loose.position.x == WASTE.x then
    game.create_stack("waste", { loose, card })
  end
  storage.loose = card.id
end

function can_grab(player, card)
  if card.flipped then return false, "that card is face down" end
  if card.placement.kind == "snap" then return false, "foundation cards stay there" end
  return true
end

-- Drops near the foundation must continue the climb; elsewhere is free.
function can_drop(player, card, transform)
  local f = game.entity("foundation").position
  local p = transform.position
  local near = (p.x - f.x) ^ 2 + (p.z - f.z) ^ 2 <= 1
  if near and card.props.rank ~= next_rank() then
    return false, "the foundation needs a " .. next_rank()
  end
  return true
end

function on_snap_attached(event)
  if event.data.snapPointId ~= "foundation" then return end
  storage.next = next_rank() + 1
  if storage.next > 9 then say("You win!") else say("Next: " .. storage.next) end
end

-- Players cannot turn cards over by hand: cards turn face up from the stock.
function can_flip(player, card)
  return false, "cards turn face up from the stock only"
end
