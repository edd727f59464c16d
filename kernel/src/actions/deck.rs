//! deck.shuffle, deck.draw_to_container, deck.draw_to_world, deck.deal.

use crate::action::Action;
use crate::actions::{find, need, need_enabled};
use crate::event::EventKind;
use crate::payload::Payload;
use crate::placement::recompute_zones;
use crate::reject::{reject, RejectCode, Rejection};
use crate::state::{Entity, Id, Placement};
use crate::txn::Txn;

/// An entity with an enabled deck and a container.
fn need_deck(e: &Entity) -> Result<(), Rejection> {
    need(e.components.deck.is_some(), e, "deck")?;
    need_enabled(e.components.deck.is_some_and(|d| d.enabled), e, "deck")?;
    need(e.components.container.is_some(), e, "container")
}

/// Replaces the deck's order with a canonical Fisher–Yates shuffle; cards
/// someone could follow (revealed ones, face-down ones in a public deck)
/// make a trip.
pub(crate) fn shuffle(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["deckId"])?;
    let deck_id = p.str("deckId")?;
    let (key, e) = find(txn.state(), deck_id, "deckId")?;
    need_deck(e)?;
    let deck = e.id.clone();
    txn.shuffle_items(key);
    txn.trip_shuffled(key);
    txn.emit(EventKind::DeckShuffled { deck_id: deck });
    Ok(())
}

/// Moves `count` cards from the deck's top (its last item) to the end of the
/// target container, all or nothing.
pub(crate) fn draw_to_container(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["deckId", "target", "count"])?;
    let deck_id = p.str("deckId")?;
    let target_id = p.str("target")?;
    let count = p.positive_int("count")?;
    if deck_id == target_id {
        return reject(
            RejectCode::SameContainer,
            format!("deck and target are both \"{deck_id}\""),
        );
    }
    let state = txn.state();
    let (deck_key, deck) = find(state, deck_id, "deckId")?;
    need_deck(deck)?;
    let (target_key, target) = find(state, target_id, "target")?;
    need(target.components.container.is_some(), target, "container")?;
    let available = deck
        .components
        .container
        .as_ref()
        .map_or(0, |c| c.items.len());
    if (available as u64) < count {
        return reject(
            RejectCode::InsufficientCards,
            format!("deck \"{deck_id}\" has {available} cards, the draw needs {count}"),
        );
    }
    let tc = target.components.container.as_ref();
    let held = tc.map_or(0, |c| c.items.len()) as u64;
    if let Some(cap) = tc.and_then(|c| c.capacity) {
        if held + count > cap {
            return reject(
                RejectCode::CapacityExceeded,
                format!("\"{target_id}\" holds {held} of {cap}; {count} more do not fit"),
            );
        }
    }
    let (deck, target) = (deck.id.clone(), target.id.clone());
    let count = crate::num::to_usize(count);
    let mut drawn: Vec<Id> = Vec::with_capacity(count);
    for _ in 0..count {
        if let Some(card) = txn.item_pop(deck_key) {
            txn.item_push(target_key, card.clone());
            drawn.push(card);
        }
    }
    for card in &drawn {
        if let Some(k) = txn.state().key(card) {
            txn.set_placement(k, Placement::Container(target.clone()));
        }
    }
    txn.emit(EventKind::DeckDrawn {
        deck_id: deck,
        target: Some(target),
        entity_ids: drawn,
    });
    Ok(())
}

/// The deck's top card goes into the world, at `transform` when given (else
/// where the deck stands, else where the card was).
pub(crate) fn draw_to_world(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["deckId", "transform"])?;
    let deck_id = p.str("deckId")?;
    let transform = if p.has("transform") {
        Some(p.transform("transform")?)
    } else {
        None
    };
    let (deck_key, deck) = find(txn.state(), deck_id, "deckId")?;
    need_deck(deck)?;
    let Some(top) = deck
        .components
        .container
        .as_ref()
        .and_then(|c| c.items.last().cloned())
    else {
        return reject(
            RejectCode::InsufficientCards,
            format!("deck \"{deck_id}\" is empty"),
        );
    };
    let at = transform.or(deck.components.transform);
    let deck = deck.id.clone();
    txn.item_pop(deck_key);
    let Some(card) = txn.state().key(&top) else {
        return Ok(());
    };
    txn.set_placement(card, Placement::World);
    if let Some(t) = at {
        txn.set_transform(card, Some(t));
    }
    txn.emit(EventKind::DeckDrawn {
        deck_id: deck,
        target: None,
        entity_ids: vec![top],
    });
    recompute_zones(txn, &[card]);
    Ok(())
}

/// A deal target: a container entity, or a player's hand (the first
/// container, in id order, tagged `hand` whose `props.owner` is the player).
fn resolve_target(state: &crate::state::State, target: &str) -> Result<Id, Rejection> {
    if let Some(e) = state.entity(target) {
        need(e.components.container.is_some(), e, "container")?;
        return Ok(e.id.clone());
    }
    if state.players.contains_key(target) {
        return match state.hand_of(target) {
            Some(h) => Ok(h.id.clone()),
            None => reject(
                RejectCode::NoHand,
                format!("player \"{target}\" has no hand (a container tagged \"hand\" with props.owner = \"{target}\")"),
            ),
        };
    }
    reject(
        RejectCode::EntityNotFound,
        format!(
            "payload.targets: no container or player \"{}\"",
            crate::observe::shown_name(target)
        ),
    )
}

/// Round-robin over the targets in array order, `cardsEach` rounds, all or
/// nothing.
pub(crate) fn deal(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["deckId", "targets", "cardsEach"])?;
    let deck_id = p.str("deckId")?;
    let targets = p.str_list("targets")?;
    let each = p.positive_int("cardsEach")?;
    if targets.is_empty() {
        return reject(
            RejectCode::InvalidValue,
            "payload.targets must name at least one target",
        );
    }
    let state = txn.state();
    let (deck_key, deck) = find(state, deck_id, "deckId")?;
    need_deck(deck)?;
    let resolved = targets
        .iter()
        .map(|t| resolve_target(state, t))
        .collect::<Result<Vec<Id>, _>>()?;
    if resolved.contains(&deck.id) {
        return reject(RejectCode::SameContainer, "the deck cannot deal to itself");
    }
    let total = each.saturating_mul(resolved.len() as u64);
    let available = deck
        .components
        .container
        .as_ref()
        .map_or(0, |c| c.items.len()) as u64;
    if available < total {
        return reject(
            RejectCode::InsufficientCards,
            format!("deck \"{deck_id}\" has {available} cards, the deal needs {total}"),
        );
    }
    for t in &resolved {
        let receives = each * resolved.iter().filter(|x| *x == t).count() as u64;
        let c = state
            .entity(t)
            .and_then(|e| e.components.container.as_ref());
        let held = c.map_or(0, |c| c.items.len()) as u64;
        if let Some(cap) = c.and_then(|c| c.capacity) {
            if held + receives > cap {
                return reject(
                    RejectCode::CapacityExceeded,
                    format!("\"{t}\" holds {held} of {cap}; {receives} more do not fit"),
                );
            }
        }
    }
    let deck = deck.id.clone();
    let mut dealt = Vec::with_capacity(crate::num::to_usize(total));
    for _ in 0..each {
        for t in &resolved {
            let Some(card) = txn.item_pop(deck_key) else {
                continue;
            };
            if let Some(tk) = txn.state().key(t) {
                txn.item_push(tk, card.clone());
            }
            if let Some(ck) = txn.state().key(&card) {
                txn.set_placement(ck, Placement::Container(t.clone()));
            }
            dealt.push(card);
        }
    }
    txn.emit(EventKind::DeckDealt {
        deck_id: deck,
        cards_each: each,
        targets: resolved,
        entity_ids: dealt,
    });
    Ok(())
}
