//! entity.grab, entity.flip, entity.set_locked.

use crate::action::Action;
use crate::actions::{find, need, need_enabled, need_stack_top, player_id, run_guard};
use crate::event::EventKind;
use crate::host::{GuardKind, ScriptHost};
use crate::kernel::Failure;
use crate::payload::Payload;
use crate::reject::{RejectCode, Rejection};
use crate::txn::Txn;

/// Enabled grabbable, unheld, unlocked, outside a stack or its top; then
/// `can_grab`.
pub(crate) fn grab(
    txn: &mut Txn<'_>,
    action: &Action,
    host: &mut dyn ScriptHost,
) -> Result<(), Failure> {
    let p = Payload::new(&action.payload, &["entityId"])?;
    let entity_id = p.str("entityId")?;
    let player = action.source.player_id().unwrap_or_default();
    let (key, e) = find(txn.state(), entity_id, "entityId")?;
    need(e.components.grabbable.is_some(), e, "grabbable")?;
    need_enabled(
        e.components.grabbable.is_some_and(|g| g.enabled),
        e,
        "grabbable",
    )?;
    if let Some(holder) = &e.held_by {
        return Err(Rejection::new(
            RejectCode::AlreadyHeld,
            format!("entity \"{entity_id}\" is held by \"{holder}\""),
        )
        .into());
    }
    if e.components.lockable == Some(true) {
        return Err(Rejection::new(
            RejectCode::Locked,
            format!("entity \"{entity_id}\" is locked"),
        )
        .into());
    }
    need_stack_top(txn.state(), e)?;
    let eid = e.id.clone();
    run_guard(txn, host, GuardKind::Grab, player, entity_id, None)?;
    let pid = player_id(txn, player);
    txn.set_held_by(key, Some(pid.clone()));
    txn.emit(EventKind::EntityGrabbed {
        entity_id: eid,
        player_id: pid,
    });
    Ok(())
}

/// Toggles `flipped`; player sources ask `can_flip` first.
pub(crate) fn flip(
    txn: &mut Txn<'_>,
    action: &Action,
    host: &mut dyn ScriptHost,
) -> Result<(), Failure> {
    let p = Payload::new(&action.payload, &["entityId"])?;
    let entity_id = p.str("entityId")?;
    let (key, e) = find(txn.state(), entity_id, "entityId")?;
    need(e.components.flippable.is_some(), e, "flippable")?;
    let flipped = !e.components.flippable.unwrap_or_default();
    let eid = e.id.clone();
    if let Some(player) = action.source.player_id() {
        run_guard(txn, host, GuardKind::Flip, player, entity_id, None)?;
    }
    txn.set_flipped(key, flipped);
    txn.emit(EventKind::EntityFlipped {
        entity_id: eid,
        flipped,
    });
    Ok(())
}

/// Sets `locked`. The registry's emission matrix gives this action no event.
pub(crate) fn set_locked(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["entityId", "locked"])?;
    let entity_id = p.str("entityId")?;
    let locked = p.bool("locked")?;
    let (key, e) = find(txn.state(), entity_id, "entityId")?;
    need(e.components.lockable.is_some(), e, "lockable")?;
    txn.set_locked(key, locked);
    Ok(())
}
