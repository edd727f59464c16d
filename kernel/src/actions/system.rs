//! system.game_start, system.player_joined, system.player_left,
//! system.seat_assign, system.player_disconnected, system.player_removed.

use crate::action::Action;
use crate::event::EventKind;
use crate::load::settings_from;
use crate::payload::Payload;
use crate::reject::{reject, RejectCode, Rejection};
use crate::state::{Id, Player};
use crate::txn::Txn;

/// Requires sequence zero; optional flat `settings` replace the room's.
pub(crate) fn game_start(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["settings"])?;
    let settings = match p.opt("settings") {
        None => None,
        Some(v) if !v.is_object() => {
            return reject(
                RejectCode::InvalidType,
                "payload.settings must be an object",
            )
        }
        Some(v) => Some(
            settings_from(&v, "payload.settings")
                .map_err(|e| Rejection::new(RejectCode::InvalidValue, e.to_string()))?,
        ),
    };
    if txn.seq() != 0 {
        return reject(
            RejectCode::SequenceNotZero,
            format!(
                "system.game_start must be sequence 0, this is sequence {}",
                txn.seq()
            ),
        );
    }
    if let Some(s) = settings {
        txn.set_settings(s);
    }
    let settings = txn.state().settings.clone();
    txn.emit(EventKind::GameStarted { settings });
    Ok(())
}

/// Requires a non-empty id not currently in the room.
pub(crate) fn player_joined(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["playerId", "name"])?;
    let player_id = p.id("playerId")?;
    let name = match p.opt("name") {
        None => None,
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(_) => return reject(RejectCode::InvalidType, "payload.name must be a string"),
    };
    if txn.state().players.contains_key(player_id) {
        return reject(
            RejectCode::PlayerExists,
            format!("player \"{player_id}\" is already in the room"),
        );
    }
    let id = Id::from(player_id);
    txn.set_player(id.clone(), Some(Player { name: name.clone() }));
    txn.emit(EventKind::PlayerJoined {
        player_id: id,
        name,
    });
    Ok(())
}

/// The payload's existing player.
fn existing_player(txn: &Txn<'_>, action: &Action) -> Result<Id, Rejection> {
    let p = Payload::new(&action.payload, &["playerId"])?;
    let player_id = p.id("playerId")?;
    match txn.state().players.get_key_value(player_id) {
        Some((id, _)) => Ok(id.clone()),
        None => reject(
            RejectCode::PlayerNotFound,
            format!("player \"{player_id}\" is not in the room"),
        ),
    }
}

/// Releases every entity `id` holds, in EntityId order (`entity.dropped`).
fn release_holds(txn: &mut Txn<'_>, id: &Id) {
    let mut held: Vec<_> = txn
        .state()
        .entities
        .iter()
        .filter(|(_, e)| e.held_by.as_ref() == Some(id))
        .map(|(k, e)| (e.id.clone(), k))
        .collect();
    held.sort_unstable();
    for (entity_id, key) in held {
        txn.set_held_by(key, None);
        txn.emit(EventKind::EntityDropped {
            entity_id,
            player_id: id.clone(),
        });
    }
}

/// Releases holds, clears the player's seats (SeatId order) and deletes the
/// player.
fn depart(txn: &mut Txn<'_>, id: &Id) {
    release_holds(txn, id);
    let seats: Vec<Id> = txn
        .state()
        .seats
        .iter()
        .filter(|(_, occ)| occ.as_ref() == Some(id))
        .map(|(s, _)| s.clone())
        .collect();
    for seat_id in seats {
        txn.set_seat(seat_id.clone(), None);
        txn.emit(EventKind::SeatLeft {
            seat_id,
            player_id: id.clone(),
        });
    }
    txn.set_player(id.clone(), None);
}

/// Releases held objects (EntityId order), clears seats (SeatId order),
/// deletes the player.
pub(crate) fn player_left(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let id = existing_player(txn, action)?;
    depart(txn, &id);
    txn.emit(EventKind::PlayerLeft { player_id: id });
    Ok(())
}

/// A grace-period-expired departure: held objects are released; the player
/// and their seats stay, so they can act again when they are back.
pub(crate) fn player_disconnected(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let id = existing_player(txn, action)?;
    release_holds(txn, &id);
    txn.emit(EventKind::PlayerDisconnected { player_id: id });
    Ok(())
}

/// A kick: like leaving (holds released, seats cleared, player deleted),
/// reported as `player.removed`.
pub(crate) fn player_removed(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let id = existing_player(txn, action)?;
    depart(txn, &id);
    txn.emit(EventKind::PlayerRemoved { player_id: id });
    Ok(())
}

/// Creates or replaces a seat's occupant.
pub(crate) fn seat_assign(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["playerId", "seatId"])?;
    let player_id = p.id("playerId")?;
    let seat_id = p.id("seatId")?;
    let Some((pid, _)) = txn.state().players.get_key_value(player_id) else {
        return reject(
            RejectCode::PlayerNotFound,
            format!("player \"{player_id}\" is not in the room"),
        );
    };
    let pid = pid.clone();
    let sid = Id::from(seat_id);
    txn.set_seat(sid.clone(), Some(pid.clone()));
    txn.emit(EventKind::SeatAssigned {
        seat_id: sid,
        player_id: pid,
    });
    Ok(())
}
