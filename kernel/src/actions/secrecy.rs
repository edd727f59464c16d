//! entity.reveal, container.set_visibility.
//!
//! Hidden information (docs/observations.md): kernel additions to the
//! registry, script and system sources only — what a player may see is the
//! game's to decide.

use crate::action::Action;
use crate::actions::{find, need};
use crate::entity::{Reveal, Visibility};
use crate::event::EventKind;
use crate::payload::Payload;
use crate::reject::{reject, RejectCode, Rejection};
use crate::state::{Id, State};
use crate::txn::Txn;
use crate::value::Value;

/// Shows an entity to some seats (`to`: a list of seat ids) or to
/// everyone (`to`: `"all"`) until its next trip into a hidden place.
pub(crate) fn reveal(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["entityId", "to"])?;
    let entity_id = p.str("entityId")?;
    let to = match p.opt("to") {
        Some(serde_json::Value::String(s)) if s == "all" => Reveal::All,
        Some(serde_json::Value::Array(_)) => {
            let mut seats = seats_of(txn.state(), p.str_list("to")?)?;
            seats.sort_unstable();
            seats.dedup();
            Reveal::Seats(seats)
        }
        Some(_) => {
            return reject(
                RejectCode::InvalidValue,
                "payload.to must be \"all\" or a non-empty list of seat ids",
            )
        }
        None => return reject(RejectCode::MissingField, "payload.to is required"),
    };
    let (key, e) = find(txn.state(), entity_id, "entityId")?;
    let entity_id = e.id.clone();
    let seats = match &to {
        Reveal::All => Value::from("all"),
        Reveal::Seats(s) => Value::Array(s.iter().map(Value::from).collect()),
        Reveal::Nobody => Value::Null,
    };
    txn.reveal(key, to);
    txn.emit(EventKind::EntityRevealed { entity_id, seats });
    Ok(())
}

/// Seat ids, each one of the game's seats, at least one.
fn seats_of(state: &State, list: Vec<&str>) -> Result<Vec<Id>, Rejection> {
    if list.is_empty() {
        return reject(
            RejectCode::InvalidValue,
            "payload.to must name at least one seat (or be \"all\")",
        );
    }
    list.into_iter()
        .map(|s| match state.seats.get_key_value(s) {
            Some((id, _)) => Ok(id.clone()),
            None => reject(
                RejectCode::InvalidValue,
                format!("payload.to: \"{s}\" is not one of the game's seats"),
            ),
        })
        .collect()
}

/// Changes who may see a container's items. Hiding them from anyone who
/// could see them (to private, to hidden, or to another owner) is a trip
/// for each item: their aliases change.
pub(crate) fn set_visibility(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["containerId", "visibility", "owner"])?;
    let container_id = p.str("containerId")?;
    let name = p.str("visibility")?;
    let owner = if p.has("owner") {
        Some(p.id("owner")?)
    } else {
        None
    };
    let visibility = match (name, owner) {
        ("public", None) => Visibility::Public,
        ("hidden", None) => Visibility::Hidden,
        ("private", Some(seat)) => match txn.state().seats.get_key_value(seat) {
            Some((id, _)) => Visibility::Private(id.clone()),
            None => {
                return reject(
                    RejectCode::InvalidValue,
                    format!("payload.owner: \"{seat}\" is not one of the game's seats"),
                )
            }
        },
        ("private", None) => {
            return reject(
                RejectCode::MissingField,
                "payload.owner is required for a private container",
            )
        }
        ("public" | "hidden", Some(_)) => {
            return reject(
                RejectCode::InvalidValue,
                "payload.owner: only a private container has an owner",
            )
        }
        (other, _) => {
            return reject(
                RejectCode::InvalidValue,
                format!("payload.visibility: \"{other}\" is not public, private or hidden"),
            )
        }
    };
    let (key, e) = find(txn.state(), container_id, "containerId")?;
    need(e.components.container.is_some(), e, "container")?;
    let container_id = e.id.clone();
    txn.set_visibility(key, visibility.clone());
    txn.emit(EventKind::ContainerVisibilityChanged {
        container_id,
        visibility: visibility.name().to_owned(),
        owner: visibility.owner().cloned(),
    });
    Ok(())
}
