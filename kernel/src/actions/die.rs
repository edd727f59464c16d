//! die.roll, die.set_value.

use crate::action::Action;
use crate::actions::{find, need};
use crate::event::EventKind;
use crate::payload::Payload;
use crate::reject::{reject, RejectCode, Rejection};
use crate::txn::Txn;
use crate::value::Value;

/// Chooses a face index with the canonical RNG.
pub(crate) fn roll(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["entityId"])?;
    let entity_id = p.str("entityId")?;
    let (key, e) = find(txn.state(), entity_id, "entityId")?;
    need(e.components.die.is_some(), e, "die")?;
    let faces = e
        .components
        .die
        .as_ref()
        .map_or(&[][..], |d| d.faces_view());
    let valid =
        |f: &Value| matches!(f, Value::String(_)) || matches!(f, Value::Number(n) if n.is_finite());
    if faces.is_empty() || !faces.iter().all(valid) {
        return reject(
            RejectCode::InvalidFaces,
            format!("die \"{entity_id}\" needs a non-empty list of number or string faces"),
        );
    }
    if let (Some(holder), Some(actor)) = (&e.held_by, action.source.player_id()) {
        if &**holder != actor {
            return reject(
                RejectCode::HeldByOther,
                format!("die \"{entity_id}\" is held by \"{holder}\""),
            );
        }
    }
    let eid = e.id.clone();
    let count = faces.len() as u64;
    let index = txn.rng().below(count);
    let value = txn
        .state()
        .get(key)
        .and_then(|e| e.components.die.as_ref())
        .and_then(|d| d.faces_view().get(crate::num::to_usize(index)))
        .cloned()
        .unwrap_or(Value::Null);
    txn.set_die_value(key, value.clone());
    txn.emit(EventKind::DieRolled {
        entity_id: eid,
        value,
        index,
    });
    Ok(())
}

/// Script only: the value must equal one of the die's faces exactly. The
/// registry's matrix names no event for it: the new face is in the state.
pub(crate) fn set_value(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["entityId", "value"])?;
    let entity_id = p.str("entityId")?;
    let Some(raw) = p.opt("value") else {
        return reject(RejectCode::MissingField, "payload.value is required");
    };
    let value = Value::from_json(&raw)
        .map_err(|e| Rejection::new(RejectCode::NotFinite, format!("payload.value: {e}")))?;
    let (key, e) = find(txn.state(), entity_id, "entityId")?;
    need(e.components.die.is_some(), e, "die")?;
    let faces = e
        .components
        .die
        .as_ref()
        .map(|d| d.effective_faces())
        .unwrap_or_default();
    if !faces.contains(&value) {
        return reject(
            RejectCode::InvalidValue,
            format!(
                "{} is not a face of die \"{entity_id}\"",
                value.to_canonical_json()
            ),
        );
    }
    if let Some(d) = txn.entity_mut(key).and_then(|e| e.components.die.as_mut()) {
        d.value = value;
    }
    Ok(())
}
