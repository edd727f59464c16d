//! deck.shuffle, deck.draw_to_container.

use crate::action::Action;
use crate::actions::{find, need, need_enabled};
use crate::event::EventKind;
use crate::payload::Payload;
use crate::reject::{reject, RejectCode, Rejection};
use crate::state::{Entity, Id, Placement};
use crate::txn::Txn;

/// An entity with an enabled deck and a container.
fn need_deck(e: &Entity) -> Result<(), Rejection> {
    need(e.components.deck.is_some(), e, "deck")?;
    need_enabled(e.components.deck.is_some_and(|d| d.enabled), e, "deck")?;
    need(e.components.container.is_some(), e, "container")
}

/// Replaces the deck's order with a canonical Fisher–Yates shuffle.
pub(crate) fn shuffle(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["deckId"])?;
    let deck_id = p.str("deckId")?;
    let (key, e) = find(txn.state(), deck_id, "deckId")?;
    need_deck(e)?;
    let mut items = e
        .components
        .container
        .as_ref()
        .map(|c| c.items.clone())
        .unwrap_or_default();
    let deck = e.id.clone();
    txn.rng().shuffle(&mut items);
    if let Some(c) = txn
        .entity_mut(key)
        .and_then(|e| e.components.container.as_mut())
    {
        c.items = items;
    }
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
    let count = count as usize;
    let mut drawn: Vec<Id> = Vec::with_capacity(count);
    if let Some(c) = txn
        .entity_mut(deck_key)
        .and_then(|e| e.components.container.as_mut())
    {
        let keep = c.items.len() - count;
        drawn.extend(c.items.drain(keep..).rev());
    }
    if let Some(c) = txn
        .entity_mut(target_key)
        .and_then(|e| e.components.container.as_mut())
    {
        c.items.extend(drawn.iter().cloned());
    }
    for card in &drawn {
        if let Some(k) = txn.state().key(card) {
            if let Some(e) = txn.entity_mut(k) {
                e.placement = Placement::Container(target.clone());
            }
        }
    }
    txn.emit(EventKind::DeckDrawn {
        deck_id: deck,
        target,
        entity_ids: drawn,
    });
    Ok(())
}
